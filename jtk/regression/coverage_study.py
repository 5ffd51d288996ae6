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
* ``coverage_e2_lab_per_input.csv`` / ``_summary.csv`` / ``_lemma1.csv`` — E.2 (Fig. 6),
  d = 1, 2 (``--dims``), k = 50, all methods, lab preset; prints the rows at the
  paper's diagonal inputs λ = 0.6 (in distribution) and λ = 0.07 (out of distribution);
* ``coverage_timings.csv`` — seconds per (preset, method): cold (including XLA
  compilation) and warm (the compiled program reused with new training sets);
* ``coverage_e1_truth.csv`` — no training: E.1's truth RMS in distribution and the
  training points per period of its top frequency, f_main = 1–5, both readings of eq. 9.

``--e2-preset paper`` runs the E.2 sweep with the paper preset instead (``--e2-methods``
picks the methods, e.g. BLR BD EnsBS) and writes ``coverage_e2_paper_*.csv``, e.g.
``python -m jtk.regression.coverage_study --skip truth timing sweep e3 paper --e2-preset paper --dims 1 --k 20
--e2-methods BLR BD EnsBS``.

Two options change the E.1 problem or add a method:

* ``--input-scale s`` builds E.1 with features sin(2π f_i x / s + ρ_i)
  (:class:`jtk.envs.regression.SinusoidRegression`): 1 (default) is eq. 9 read
  literally, 8 puts f_main periods on the training range [−4, 4]. Every E.1
  output then carries ``_scale{s}`` in its name (``coverage_e1_lab_scale8_summary.csv``,
  ``coverage_timings_scale8.csv``), so the literal-reading files are kept.
* ``--bootstrap-size b`` (≠ 1) runs EnsBS with resample size b·n as an extra
  method labelled ``EnsBS(b)`` beside the classical EnsBS (b = 1).

Usage: ``JAX_PLATFORMS=cpu python -m jtk.regression.coverage_study [--k 50] [--skip paper ...]``;
e.g. only the E.1 sweep at input_scale 8 and E.2:
``python -m jtk.regression.coverage_study --skip timing paper e3 --input-scale 8 --bootstrap-size 0.5
--f-mains 1 2 3 4 5``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import numpy as np

from jtk import _checks
from jtk.regression import coverage as cv
from jtk.regression.deep import make_regression
from jtk.envs.regression import PolynomialRegression, SinusoidRegression
from jtk._paths import DOCS, RESULTS as OUT

__all__ = ["main", "truth_table"]  # see the package docstring


def timed_study(env, methods, k, preset, seed=0):
    t0 = time.perf_counter()
    res = cv.coverage_study(env, methods, k=k, seed=seed, preset=preset, progress=False)
    return res, time.perf_counter() - t0


def time_method(env, m, k, preset, timings, warm_run=True):
    """Times a study twice: cold (includes XLA compilation) and warm (compiled program reused).

    With ``warm_run=False`` only the cold study runs; the k = 50 extrapolation then uses the cold time.
    """
    res, cold = timed_study(env, [m], k, preset)
    warm = timed_study(env, [m], k, preset, seed=1)[1] if warm_run else float("nan")
    extra = 50 / k
    base = warm if warm_run else cold
    note = "measured" if k == 50 else f"measured with k={k}; k=50 extrapolated linearly (independent sets)"
    if not warm_run:
        note += "; cold only (k=50 figure from the cold time)"
    timings.append({"preset": preset, "method": m, "k": k, "cold_seconds": cold, "warm_seconds": warm,
                    "warm_seconds_k50": base * extra, "note": note})
    print(f"{preset:5s} E.1 f_main=1 k={k:3d} {m:8s} cold {cold:8.2f} s  warm {warm:8.2f} s"
          + ("" if k == 50 else f"  (k=50 ≈ {base * extra:8.1f} s, extrapolated)"), flush=True)
    return res


def scale_tag(input_scale: float) -> str:
    """File-name tag of the E.1 reading: "" for the literal eq. 9, "_scale8" for input_scale 8."""
    return "" if input_scale == 1.0 else f"_scale{input_scale:g}"


def lab_methods(bootstrap_size: float, preset: str = "lab", names=cv.ALL_METHODS) -> list:
    """The methods ``names`` (all seven by default), plus EnsBS with resample size ``bootstrap_size`` · n, built with
    ``preset``, when it is not 1."""
    methods = list(names)
    if bootstrap_size != 1.0:
        methods.append((f"EnsBS({bootstrap_size:g})",
                        make_regression("EnsBS", preset=preset, bootstrap_size=bootstrap_size)))
    return methods


def truth_table(f_mains=(1.0, 2.0, 3.0, 4.0, 5.0), input_scales=(1.0, 8.0)) -> pd.DataFrame:
    """E.1 without training: the truth's RMS over the in-distribution test inputs and the training points per period
    of the top frequency (n / (length of the training range · f_max / s)), per reading s and f_main."""
    f_mains = [_checks.positive(f"f_mains[{i}]", f) for i, f in enumerate(_checks.nonempty("f_mains", f_mains, "frequency"))]
    input_scales = [_checks.positive(f"input_scales[{i}]", s)
                    for i, s in enumerate(_checks.nonempty("input_scales", input_scales, "scale"))]
    rows = []
    for s in input_scales:
        for f in f_mains:
            env = SinusoidRegression(f, seed=0, input_scale=s)
            x = env.test_inputs()
            truth = np.asarray(env.mean(x))[np.asarray(env.in_distribution(x))]
            lo, hi = env.train_range
            rows.append({"input_scale": s, "f_main": f, "truth_rms_in": float(np.sqrt(np.mean(truth ** 2))),
                         "points_per_period": len(env.x_train) / ((hi - lo) * float(np.max(env.freqs)) / s)})
    return pd.DataFrame(rows)


def write_csv(df: pd.DataFrame, name: str) -> None:
    df.to_csv(OUT / name, index=False, float_format="%.6g")


# --- docs/coverage.md: its tables, regenerated from the stored CSVs (``--docs``) -----------------------------------

DOC = DOCS / "coverage.md"


def _minus(value: float) -> str:
    """A coordinate as the page writes it: ``−2.38`` with a true minus sign."""
    return f"{value:g}".replace("-", "−")


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: the first column left-aligned, the numbers right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _methods(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df.method))  # the order the study ran them in


def _summary_table(summary: pd.DataFrame, by: str, columns: list[tuple[str, str, str, float]]) -> str:
    """One row per method; each column (header, region, value column, value of ``by``) is a summary entry."""
    at = summary.set_index([by, "method", "region"])
    rows = [[m] + [f"{at.loc[(v, m, region), col]:.2f}" for _, region, col, v in columns] for m in _methods(summary)]
    return _table(["method"] + [h for h, *_ in columns], rows)


def _named(name: str, columns: list[tuple]) -> list[tuple]:
    """A group of columns whose first header carries the group's name: ``RMSE f=1 | f=2 | f=3``."""
    return [((f"{name} {h}" if i == 0 else h), *rest) for i, (h, *rest) in enumerate(columns)]


def _per_f(fs, region: str, col: str) -> list[tuple]:
    return [(f"f={f:g}", region, col, f) for f in fs]


def _e1_literal(summary: pd.DataFrame) -> dict[str, str]:
    fs = sorted(summary.f_main.unique())
    coverage = [(f"f={f:g} {r}", r, "coverage", f) for f in fs for r in ("out", "in")]
    in_dist = _named("RMSE", _per_f(fs, "in", "rmse")) + _named("uncertainty", _per_f(fs, "in", "uncertainty"))
    return {"coverage-e1-literal-coverage": _summary_table(summary, "f_main", coverage),
            "coverage-e1-literal-in": _summary_table(summary, "f_main", in_dist)}


def _e1_scale8(summary: pd.DataFrame, at: pd.DataFrame, lemma: pd.DataFrame) -> dict[str, str]:
    fs = sorted(summary.f_main.unique())
    out = {"coverage-e1-scale8-coverage": _summary_table(
        summary, "f_main", [(f"f={f:g} {r}", r, "coverage", f) for r in ("in", "out") for f in fs])}
    for region in ("in", "out"):
        out[f"coverage-e1-scale8-{region}"] = _summary_table(
            summary, "f_main", _named("RMSE", _per_f(fs, region, "rmse")) + _named("unc.", _per_f(fs, region,
                                                                                                  "uncertainty")))
    points = list(dict.fromkeys(at.requested))
    cov = at.set_index(["requested", "f_main", "method"]).coverage
    header = ["method"] + [(f"x={_minus(x)}: f={f:g}" if i == 0 else f"{f:g}") for x in points
                           for i, f in enumerate(fs)]  # "x=−2.38: f=1 | 2 | 3"
    out["coverage-e1-scale8-at-inputs"] = _table(
        header, [[m] + [f"{cov[(x, f, m)]:.2f}" for x in points for f in fs] for m in _methods(at)])
    lem = lemma.set_index(["f_main", "method"])
    out["coverage-e1-scale8-lemma1"] = _table(
        ["method"] + [f"f={f:g}" for f in fs],
        [[m] + [f"{lem.loc[(f, m), 'frac_unc_ge_blr']:.2f} / {lem.loc[(f, m), 'median_ratio']:.2f}" for f in fs]
         for m in _methods(lemma)])
    return out


def _e2(summary: pd.DataFrame, at: pd.DataFrame, name: str = "coverage-e2") -> dict[str, str]:
    dims = sorted(summary.dim.unique())
    per_d = lambda col: [(f"d={d} in", "in", col, d) for d in dims]  # noqa: E731
    columns = (_named("coverage", [(f"d={d} {r}", r, "coverage", d) for d in dims for r in ("in", "out")])
               + _named("RMSE", per_d("rmse")) + _named("unc.", per_d("uncertainty")))
    size = lambda v: f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"  # noqa: E731  three significant digits
    points = list(dict.fromkeys(at.requested))
    rows = at.set_index(["requested", "dim", "method"])
    cells = lambda r: f"{r.coverage:.2f} / {size(r.rmse)} / {size(r.uncertainty)}"  # noqa: E731
    return {f"{name}-summary": _summary_table(summary, "dim", columns),
            f"{name}-at-inputs": _table(["method"] + [f"λ={lam:g}, d={d}" for lam in points for d in dims],
                                            [[m] + [cells(rows.loc[(lam, d, m)]) for lam in points for d in dims]
                                             for m in _methods(at)])}


def _truth(truth: pd.DataFrame) -> dict[str, str]:
    """E.1's truth RMS in distribution and training points per period, one row per reading, one column per f_main."""
    fs = sorted(truth.f_main.unique())
    at = truth.set_index(["input_scale", "f_main"])
    reading = lambda s: "literal" if s == 1 else f"input_scale {s:g}"  # noqa: E731
    rows = [[f"{what}, {reading(s)}"] + [fmt.format(at.loc[(s, f), col]) for f in fs]
            for what, col, fmt in (("truth RMS in distribution", "truth_rms_in", "{:.2f}"),
                                   ("training points per period of the top frequency", "points_per_period", "{:.1f}"))
            for s in sorted(truth.input_scale.unique())]
    return {"coverage-e1-truth": _table(["f_main"] + [f"{f:g}" for f in fs], rows)}


def _paper_e1(summary: pd.DataFrame, name: str) -> dict[str, str]:
    """A paper-preset E.1 study at f_main = 1: coverage, RMSE and uncertainty per method, with its k."""
    at = summary.set_index(["method", "region"])
    cols = [("coverage in", "in", "coverage"), ("coverage out", "out", "coverage"), ("RMSE in", "in", "rmse"),
            ("uncertainty in", "in", "uncertainty"), ("uncertainty out", "out", "uncertainty")]
    rows = [[m] + [f"{at.loc[(m, region), col]:.2f}" for _, region, col in cols] + [f"{at.loc[(m, 'in'), 'k']:d}"]
            for m in _methods(summary)]
    return {name: _table(["method"] + [h for h, *_ in cols] + ["k"], rows)}


def _e3(summary: pd.DataFrame) -> dict[str, str]:
    """E.3 (Fig. 7): per method coverage ± its standard error over the inputs, the worst input's coverage, RMSE and
    uncertainty, in and out of distribution, with k and the number of inputs of each region."""
    at = summary.set_index(["method", "region"])
    size = lambda v: f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"  # noqa: E731
    rows = [[m] + [f"{at.loc[(m, r), 'coverage']:.2f} ± {at.loc[(m, r), 'coverage_se']:.2f}" for r in ("in", "out")]
            + [f"{at.loc[(m, r), 'min_coverage']:.2f}" for r in ("in", "out")]
            + [size(at.loc[(m, r), col]) for col in ("rmse", "uncertainty") for r in ("in", "out")]
            + [f"{int(at.loc[(m, 'in'), 'k']):d}"] for m in _methods(summary)]
    n_in, n_out = (int(summary[summary.region == r].num_inputs.iloc[0]) for r in ("in", "out"))
    header = ["method", f"coverage in ({n_in} inputs)", f"coverage out ({n_out} inputs)", "worst input in",
              "worst out", "RMSE in", "RMSE out", "unc. in", "unc. out", "k"]
    return {"coverage-e3-summary": _table(header, rows)}


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _timings(tim: pd.DataFrame) -> dict[str, str]:
    """Seconds of one E.1 study per method and preset: warm and cold (lab), warm or extrapolated to k = 50 (paper)."""
    methods = list(dict.fromkeys(tim.method))
    at = tim.set_index(["preset", "method"])
    rows = []
    for preset in dict.fromkeys(tim.preset):
        have = [m for m in methods if (preset, m) in at.index]
        if preset == "paper":
            ks = sorted({int(at.loc[(preset, m), "k"]) for m in have} - {50})
            label = "paper, warm (s" + (f", ensembles extrapolated from k = {ks[0]})" if ks else ")")
            rows.append([label] + [_seconds(at.loc[(preset, m), "warm_seconds_k50"]) if m in have else "—"
                                   for m in methods])
            continue
        for col, what in (("warm_seconds", "warm"), ("cold_seconds", "cold")):
            rows.append([f"{preset}, {what} (s)"] + [_seconds(at.loc[(preset, m), col]) if m in have else "—"
                                                      for m in methods])
    return {"coverage-timings": _table(["preset"] + methods, rows)}


def doc_tables(results: Path = OUT) -> dict[str, str]:
    """The tables of docs/coverage.md made from the CSVs in ``results``: section name → Markdown table."""
    read = lambda name: pd.read_csv(results / name)  # noqa: E731
    return {**_truth(read("coverage_e1_truth.csv")),
            **_e1_literal(read("coverage_e1_lab_summary.csv")),
            **_paper_e1(read("coverage_e1_paper_summary.csv"), "coverage-e1-paper"),
            **_paper_e1(read("coverage_e1_paper_scale8_summary.csv"), "coverage-e1-paper-scale8"),
            **_e1_scale8(read("coverage_e1_lab_scale8_summary.csv"), read("coverage_e1_lab_scale8_at_inputs.csv"),
                         read("coverage_e1_lab_scale8_lemma1.csv")),
            **_e2(read("coverage_e2_lab_summary.csv"), read("coverage_e2_lab_at_inputs.csv")),
            **_e2(read("coverage_e2_paper_summary.csv"), read("coverage_e2_paper_at_inputs.csv"), "coverage-e2-paper"),
            **_e3(read("coverage_e3_lab_summary.csv")),
            **_timings(read("coverage_timings.csv"))}


def write_docs() -> None:
    """Rewrites every table of docs/coverage.md that is made from the stored CSVs (each in its marked section)."""
    from jtk._docs import write_section

    for name, text in doc_tables(OUT).items():
        write_section(name, text, DOC)


def write_sweep(results, by: str, prefix: str, coordinates, with_rmse: bool = False, **columns) -> None:
    """Writes and prints a sweep's per-input table (plus ``columns``), summary, Lemma 1 check and the rows at
    ``coordinates``: ``{prefix}_per_input.csv``, ``_summary.csv``, ``_lemma1.csv``, ``_at_inputs.csv``."""
    table = cv.per_input_table(results).assign(**columns)
    write_csv(table, f"{prefix}_per_input.csv")
    for name, df in (("summary", cv.summary_table(results, by=(by,))), ("lemma1", cv.lemma1_check(results, by=by))):
        write_csv(df, f"{prefix}_{name}.csv")
        print(df.round(3).to_string(index=False), flush=True)
    cols = [by, "method", "requested", "coordinate", "coverage", "coverage_se", "deviation",
            *(["rmse"] if with_rmse else []), "uncertainty"]
    at = cv.at_inputs(table, coordinates)[cols]
    write_csv(at, f"{prefix}_at_inputs.csv")
    print(at.round(3).to_string(index=False), flush=True)


def main(argv=None):
    argv = _checks.argv(argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--f-mains", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    ap.add_argument("--input-scale", type=float, default=1.0,
                    help="E.1 features sin(2π f x / s + ρ): 1 = eq. 9 literally, 8 = f_main periods on [−4, 4]")
    ap.add_argument("--bootstrap-size", type=float, default=1.0,
                    help="if not 1, also run EnsBS with this resample fraction, labelled EnsBS(b)")
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 2], help="E.2 input dimensions")
    ap.add_argument("--e2-preset", default="lab", choices=["lab", "paper"],
                    help="deep-model preset of the E.2 sweep; its files are coverage_e2_{preset}_*.csv")
    ap.add_argument("--e2-methods", nargs="+", default=list(cv.ALL_METHODS), choices=list(cv.ALL_METHODS),
                    help="methods of the E.2 sweep (plus EnsBS(b) with --bootstrap-size b)")
    ap.add_argument("--e3-k", type=int, default=20)
    ap.add_argument("--e3-methods", nargs="+", default=["BLR", "BD", "VD", "EnsBS"])
    ap.add_argument("--paper-ens-k", type=int, default=2)
    ap.add_argument("--paper-methods", nargs="+", default=list(cv.ALL_METHODS), choices=list(cv.ALL_METHODS))
    ap.add_argument("--cold-only", action="store_true",
                    help="time each study once (cold, with compilation) instead of cold and warm")
    ap.add_argument("--skip", nargs="*", default=[], choices=["truth", "timing", "sweep", "e2", "e3", "paper"])
    ap.add_argument("--docs", action="store_true",
                    help="no run: rewrite docs/coverage.md's tables from the stored CSVs (each in its marked section)")
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="read and write the CSVs, and coverage.md, here instead of benchmarks/results and docs/")
    args = ap.parse_args(argv)
    global OUT, DOC
    if args.out_dir is not None:
        OUT, DOC = args.out_dir, args.out_dir / "coverage.md"
    if args.docs:
        write_docs()
        return
    k = args.k
    scale = args.input_scale
    if not (np.isfinite(scale) and scale > 0):
        ap.error(f"--input-scale must be a finite number > 0, got {scale}")
    if not 0.0 < args.bootstrap_size <= 1.0:
        ap.error(f"--bootstrap-size must be in (0, 1], got {args.bootstrap_size}")
    tag = scale_tag(scale)
    methods = lab_methods(args.bootstrap_size)
    OUT.mkdir(parents=True, exist_ok=True)
    timings = []
    env = SinusoidRegression(1.0, seed=0, input_scale=scale)
    reading = f"input_scale={scale:g}"

    # 0. E.1's truth RMS and sampling density (no training).
    if "truth" not in args.skip:
        truth = truth_table()
        write_csv(truth, "coverage_e1_truth.csv")
        print(truth.round(3).to_string(index=False), flush=True)

    # 1. One study (E.1, f_main = 1, k = 50) per method, lab preset: cold (with compilation) and warm.
    if "timing" not in args.skip:
        for m in cv.ALL_METHODS:
            time_method(env, m, k, "lab", timings, warm_run=not args.cold_only)

    # 2. Lab sweep over f_main (Fig. 3).
    if "sweep" not in args.skip:
        t0 = time.perf_counter()
        f_mains = [float(f) for f in args.f_mains]
        sweep = cv.sweep_f_main(f_mains, methods, k=k, seed=0, preset="lab", input_scale=scale, progress=False)
        print(f"lab   E.1 ({reading}) sweep f_main={f_mains} k={k}: {time.perf_counter() - t0:.1f} s", flush=True)
        write_sweep(sweep, "f_main", f"coverage_e1_lab{tag}", [-2.38, 1.2, -5.11], input_scale=scale)

    # 3. Sweep over the input dimension of E.2 (Fig. 6): the diagonal inputs λ = 0.6 (in) and 0.07 (out).
    if "e2" not in args.skip:
        t0 = time.perf_counter()
        pre = args.e2_preset
        e2 = cv.sweep_dim(args.dims, lab_methods(args.bootstrap_size, pre, args.e2_methods), k=k, seed=0, preset=pre,
                          progress=False)
        print(f"{pre:5s} E.2 sweep dim={args.dims} k={k}: {time.perf_counter() - t0:.1f} s", flush=True)
        for d in args.dims:
            secs = {m: r.info["seconds"] for (dd, m), r in e2.items() if dd == d}
            print(f"      d={d}: " + ", ".join(f"{m} {t:.1f} s" for m, t in secs.items()), flush=True)
        write_sweep(e2, "dim", f"coverage_e2_{pre}", [0.6, 0.07], with_rmse=True)

    # 4. E.3 (Fig. 7).
    if "e3" not in args.skip:
        t0 = time.perf_counter()
        e3 = cv.coverage_study(PolynomialRegression(seed=0), args.e3_methods, k=args.e3_k, seed=0, preset="lab",
                               progress=False)
        print(f"lab   E.3 k={args.e3_k} {args.e3_methods}: {time.perf_counter() - t0:.1f} s", flush=True)
        write_csv(cv.per_input_table(e3), "coverage_e3_lab_per_input.csv")
        write_csv(cv.summary_table(e3), "coverage_e3_lab_summary.csv")
        print(cv.summary_table(e3).round(3).to_string(index=False), flush=True)

    # 5. Paper preset, E.1 f_main = 1 (subset: the ensembles on fewer sets, extrapolated to k = 50).
    if "paper" not in args.skip:
        res_all = {}
        for m in args.paper_methods:
            kk = k if m in ("BLR", "BD", "CD", "VD") else min(k, args.paper_ens_k)
            res_all.update(time_method(env, m, kk, "paper", timings, warm_run=not args.cold_only))
        write_csv(cv.per_input_table(res_all).assign(input_scale=scale), f"coverage_e1_paper{tag}_per_input.csv")
        ps = cv.summary_table(res_all)
        write_csv(ps, f"coverage_e1_paper{tag}_summary.csv")
        print(ps.round(3).to_string(index=False), flush=True)
    if timings:
        tim = pd.DataFrame(timings)
        if scale != 1.0:
            tim = tim.assign(input_scale=scale)
        tim = merge_timings(OUT / f"coverage_timings{tag}.csv", tim)
        tim.to_csv(OUT / f"coverage_timings{tag}.csv", index=False, float_format="%.4g")
        print(tim.round(2).to_string(index=False))


def merge_timings(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """The stored timings at ``path`` with the (preset, method) rows of ``new`` replaced in place or added at the end:
    a run of some presets (``--skip paper``) keeps the others' rows."""
    if not path.exists():
        return new
    rows = {(r["preset"], r["method"]): r for r in pd.read_csv(path).to_dict("records")}
    rows.update({(r["preset"], r["method"]): r for r in new.to_dict("records")})  # a known key keeps its place
    return pd.DataFrame(list(rows.values()))


if __name__ == "__main__":
    main()
