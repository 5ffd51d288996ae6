"""Timing and full-size results of the deep-regression coverage study (Schmähling et al., §3).

Measures the wall time of one coverage study (k = 50 training sets of E.1) for
every method with the ``lab`` and the ``paper`` preset, and writes per-input
and summary tables to ``benchmarks/results/coverage_*.csv``:

* ``coverage_e1_lab_per_input.csv`` / ``_summary.csv`` / ``_lemma1.csv`` — E.1,
  f_main = 1, 2, 3 (``--f-mains``), k = 50, all seven methods (BLR + six deep), lab preset;
* ``coverage_e3_lab_per_input.csv`` / ``_summary.csv`` — E.3 (Fig. 7), BLR, BD, VD, EnsBS,
  k = 20 (``--e3-k``), lab preset (n = 450 makes E.3 the slowest problem);
* ``coverage_e1_paper_per_input.csv`` / ``_summary.csv`` — E.1, f_main = 1, paper preset.
  The paper preset (128-64-32, K = 120, 300·c epochs) is run for a SUBSET because
  of its cost on a 2-core CPU: BLR and the dropout methods with k = 50, the
  ensembles (120 networks per training set) with k = ``--paper-ens-k`` (default 2);
  their k = 50 time is extrapolated linearly (training sets are independent and
  processed one compiled call per set) and marked as such in the output;
* ``coverage_timings.csv`` — seconds per (preset, method): cold (including XLA
  compilation) and warm (the compiled program reused with new training sets).

Usage: ``JAX_PLATFORMS=cpu python benchmarks/coverage_study.py [--k 50] [--skip paper ...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from jtk import coverage as cv  # noqa: E402
from jtk.envs.regression import PolynomialRegression, SinusoidRegression  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def timed_study(env, methods, k, preset, seed=0):
    t0 = time.perf_counter()
    res = cv.coverage_study(env, methods, k=k, seed=seed, preset=preset, progress=False)
    return res, time.perf_counter() - t0


def time_method(env, m, k, preset, timings, note_k50=True):
    """Times a study twice: cold (includes XLA compilation) and warm (compiled program reused)."""
    res, cold = timed_study(env, [m], k, preset)
    _, warm = timed_study(env, [m], k, preset, seed=1)
    extra = 50 / k
    note = "measured" if k == 50 else f"measured with k={k}; k=50 extrapolated linearly (independent sets)"
    timings.append({"preset": preset, "method": m, "k": k, "cold_seconds": cold, "warm_seconds": warm,
                    "warm_seconds_k50": warm * extra, "note": note})
    print(f"{preset:5s} E.1 f_main=1 k={k:3d} {m:8s} cold {cold:8.2f} s  warm {warm:8.2f} s"
          + ("" if k == 50 else f"  (k=50 warm ≈ {warm * extra:8.1f} s, extrapolated)"), flush=True)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--f-mains", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    ap.add_argument("--e3-k", type=int, default=20)
    ap.add_argument("--e3-methods", nargs="+", default=["BLR", "BD", "VD", "EnsBS"])
    ap.add_argument("--paper-ens-k", type=int, default=2)
    ap.add_argument("--skip", nargs="*", default=[], choices=["timing", "sweep", "e3", "paper"])
    args = ap.parse_args(argv)
    k = args.k
    OUT.mkdir(parents=True, exist_ok=True)
    timings = []
    env = SinusoidRegression(1.0, seed=0)

    # 1. One study (E.1, f_main = 1, k = 50) per method, lab preset: cold (with compilation) and warm.
    if "timing" not in args.skip:
        for m in cv.ALL_METHODS:
            time_method(env, m, k, "lab", timings)

    # 2. Lab sweep over f_main (Fig. 3) and E.3 (Fig. 7).
    if "sweep" not in args.skip:
        t0 = time.perf_counter()
        sweep = cv.sweep_f_main(args.f_mains, cv.ALL_METHODS, k=k, seed=0, preset="lab", progress=False)
        print(f"lab   E.1 sweep f_main={args.f_mains} k={k}: {time.perf_counter() - t0:.1f} s", flush=True)
        cv.per_input_table(sweep).to_csv(OUT / "coverage_e1_lab_per_input.csv", index=False, float_format="%.6g")
        summ = cv.summary_table(sweep, by=("f_main",))
        summ.to_csv(OUT / "coverage_e1_lab_summary.csv", index=False, float_format="%.6g")
        print(summ.round(3).to_string(index=False), flush=True)
        lem = cv.lemma1_check(sweep, by="f_main")
        lem.to_csv(OUT / "coverage_e1_lab_lemma1.csv", index=False, float_format="%.6g")
        print(lem.round(3).to_string(index=False), flush=True)
        at = cv.at_inputs(cv.per_input_table(sweep), [-2.38, 1.2, -5.11])
        print(at[["f_main", "method", "coordinate", "coverage", "coverage_se", "deviation", "uncertainty"]]
              .round(3).to_string(index=False), flush=True)

    if "e3" not in args.skip:
        t0 = time.perf_counter()
        e3 = cv.coverage_study(PolynomialRegression(seed=0), args.e3_methods, k=args.e3_k, seed=0, preset="lab",
                               progress=False)
        print(f"lab   E.3 k={args.e3_k} {args.e3_methods}: {time.perf_counter() - t0:.1f} s", flush=True)
        cv.per_input_table(e3).to_csv(OUT / "coverage_e3_lab_per_input.csv", index=False, float_format="%.6g")
        cv.summary_table(e3).to_csv(OUT / "coverage_e3_lab_summary.csv", index=False, float_format="%.6g")
        print(cv.summary_table(e3).round(3).to_string(index=False), flush=True)

    # 3. Paper preset, E.1 f_main = 1 (subset: the ensembles on fewer sets, extrapolated to k = 50).
    if "paper" not in args.skip:
        res_all = {}
        for m in cv.ALL_METHODS:
            kk = k if m in ("BLR", "BD", "CD", "VD") else min(k, args.paper_ens_k)
            res_all.update(time_method(env, m, kk, "paper", timings))
        cv.per_input_table(res_all).to_csv(OUT / "coverage_e1_paper_per_input.csv", index=False,
                                           float_format="%.6g")
        ps = cv.summary_table(res_all)
        ps.to_csv(OUT / "coverage_e1_paper_summary.csv", index=False, float_format="%.6g")
        print(ps.round(3).to_string(index=False), flush=True)
    if timings:
        pd.DataFrame(timings).to_csv(OUT / "coverage_timings.csv", index=False, float_format="%.4g")
        print(pd.DataFrame(timings).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
