"""Which reading of Schmähling et al. brings EnsAdvA's and the ensembles' coverage closest to the paper.

The paper reports, for E.1 (its Fig. 3), ensemble coverage near 0.95 at low complexity and about 1.0 at high
f_main, for EnsAdvA as for EnsBS; jtk's lab study gives EnsAdvA 0.20–0.39 and EnsBS 0.72–0.86 at input_scale 8
(docs/coverage.md). The paper leaves open the settings this sweep varies, one at a time from jtk's lab
configuration (input_scale 8: f_main periods on the training range, 8 members, 100 epochs per unit of complexity,
32-32-16 leaky-ReLU networks, FGSM step 0.01 of the input range):

* **adversarial step** (EnsAdvA only): 0.001, 0.05 and 0.2 of the training-input range;
* **ensemble size**: 32 members (the paper: 120);
* **training length**: 300 epochs per unit of complexity (the paper's);
* **network width**: the paper's 128-64-32;
* **input scaling**: eq. 9 read literally (input_scale 1).

The plain ensemble (Ens, no adversarial term) runs beside the lab configuration, so that a second table (section
``coverage-readings-fgsm`` of the page) sets EnsAdvA at every FGSM step against it: coverage, uncertainty and RMSE.

Each reading is run for EnsAdvA and EnsBS at f_main = 1 and 5 with k = 20 training sets (error bar of a coverage
near 0.95: ±0.05), BLR beside them as the check (its coverage is 0.95 by construction). The distance of a reading
is the mean absolute difference of its in-distribution coverage from the paper's (0.95 at f_main = 1, 1.0 at
f_main = 5). Writes benchmarks/results/coverage_readings.csv and the table between the markers of docs/coverage.md.

Usage: ``JAX_PLATFORMS=cpu python -m jtk.regression.coverage_readings [--k 20] [--no-docs]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks
from jtk._docs import md_table, write_section
from jtk._paths import DOCS, RESULTS
from jtk.regression import coverage as cv
from jtk.envs.regression import SinusoidRegression
from jtk.regression.deep import make_regression

__all__ = ["main", "run", "report"]  # see the package docstring

OUT = RESULTS / "coverage_readings.csv"
PAGE = DOCS / "coverage.md"
PAPER = {1.0: 0.95, 5.0: 1.0}  # the paper's ensemble coverage, in distribution (Fig. 3: ≈ 0.95 low, ≈ 1 high f_main)
METHODS = ("EnsAdvA", "EnsBS")
LAB = "jtk lab (input_scale 8)"
DEFAULT_EPS = 0.01  # jtk's FGSM step (jtk.regression.deep: adversarial_eps), the lab reading's

# reading → (input_scale, overrides of the lab preset, methods it applies to)
READINGS: dict[str, tuple[float, dict, tuple[str, ...]]] = {
    LAB: (8.0, {}, ("Ens", *METHODS)),  # Ens: the plain ensemble, EnsAdvA without its adversarial term
    "FGSM step 0.001": (8.0, {"adversarial_eps": 0.001}, ("EnsAdvA",)),
    "FGSM step 0.05": (8.0, {"adversarial_eps": 0.05}, ("EnsAdvA",)),
    "FGSM step 0.2": (8.0, {"adversarial_eps": 0.2}, ("EnsAdvA",)),
    "32 members": (8.0, {"num_members": 32}, METHODS),
    "300 epochs per unit (paper)": (8.0, {"epochs_per_complexity": 300}, METHODS),
    "128-64-32 networks (paper)": (8.0, {"hidden": (128, 64, 32)}, METHODS),
    "eq. 9 literal (input_scale 1)": (1.0, {}, METHODS),
}


ROW_COLUMNS = ("reading", "f_main", "method", "k", "coverage_in", "rmse_in", "uncertainty_in")  # run()'s, report() reads


def run(k: int, seed: int = 0) -> pd.DataFrame:
    """Every reading of ``READINGS`` at f_main 1 and 5: the in-distribution coverage of its methods (BLR beside
    them as the check) over ``k`` training sets (k ≥ 2) from ``seed`` → one row per reading, f_main and method."""
    k = _checks.integer("k", k, minimum=2)
    seed = _checks.seed_int("seed", seed)
    rows = []
    jobs = [(r, f) for r in READINGS for f in PAPER]
    for reading, f_main in tqdm(jobs, desc="readings × f_main"):
        scale, overrides, methods = READINGS[reading]
        env = SinusoidRegression(f_main=f_main, input_scale=scale)
        models = ["BLR"] + [(m, make_regression(m, preset="lab", **overrides)) for m in methods]
        t0 = time.perf_counter()
        results = cv.coverage_study(env, models, k=k, seed=seed, preset="lab", progress=False)
        summary = cv.summary_table(results)
        for _, r in summary[summary["region"] == "in"].iterrows():
            rows.append({"reading": reading, "f_main": f_main, "method": r["method"], "k": k,
                         "coverage_in": r["coverage"], "rmse_in": r["rmse"], "uncertainty_in": r["uncertainty"],
                         "seconds": results[r["method"]].info["seconds"]})
        rows[-1]["wall_s"] = time.perf_counter() - t0
    return pd.DataFrame(rows)


def report(df: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The docs' readings table from :func:`run`'s rows: per method and reading the coverage and uncertainty at each
    f_main and the distance from the paper's coverage → (the markdown section, the table)."""
    _checks.frame("df", df, ROW_COLUMNS)
    missing = [m for m in METHODS if not ((df["method"] == m) & (df["reading"] == LAB)).any()]
    if missing:
        raise ValueError(f"df must hold run()'s rows of {list(METHODS)} at the reading {LAB!r}; missing {missing}")
    deep = df[df["method"] != "BLR"].copy()
    deep["paper"] = deep["f_main"].map(PAPER)
    deep["gap"] = (deep["coverage_in"] - deep["paper"]).abs()
    dist = deep.groupby(["method", "reading"])["gap"].mean().rename("distance").reset_index()
    wide = deep.pivot_table(index=["method", "reading"], columns="f_main", values=["coverage_in", "uncertainty_in"])
    wide.columns = [f"{'coverage' if a == 'coverage_in' else 'uncertainty'} f={int(f)}" for a, f in wide.columns]
    table = wide.reset_index().merge(dist, on=["method", "reading"]).sort_values(["method", "distance"])
    blr = df[df["method"] == "BLR"]["coverage_in"]
    lines = [f"Made by `python -m jtk.regression.coverage_readings` (k = {int(df['k'].iloc[0])} training sets per "
             f"cell, in-distribution means; {len(df)} rows in benchmarks/results/coverage_readings.csv; BLR, run "
             f"beside every cell as the check, covered {blr.min():.2f}–{blr.max():.2f}). Distance: mean |coverage − "
             "paper| over f_main = 1 (paper ≈ 0.95) and 5 (paper ≈ 1.0); smaller is closer.", "",
             md_table(table, "{:.2f}", index=False), ""]
    for method in METHODS:
        sub = table[table["method"] == method].reset_index(drop=True)
        best, base = sub.iloc[0], sub[sub["reading"] == LAB].iloc[0]
        lines.append(f"* **{method}**: closest reading *{best['reading']}*, distance {best['distance']:.2f} "
                     f"(coverage {best['coverage f=1']:.2f} at f_main = 1, {best['coverage f=5']:.2f} at 5), against "
                     f"{base['distance']:.2f} for jtk's lab configuration.")
    adv = deep[deep["method"] == "EnsAdvA"]
    lines.append(f"* Under every reading EnsAdvA's in-distribution coverage stays at or below "
                 f"{adv['coverage_in'].max():.2f}: its uncertainty ({adv['uncertainty_in'].min():.2f}–"
                 f"{adv['uncertainty_in'].max():.2f}) is a fraction of its RMSE ({adv['rmse_in'].min():.2f}–"
                 f"{adv['rmse_in'].max():.2f}), as for the plain ensemble (the Ens row). "
                 "None of these settings explains the paper's EnsAdvA; its coverage there would need an ensemble "
                 "spread of the size of the error, which adversarial smoothing of mean-only networks does not give.")
    return "\n".join(lines), table


def fgsm_report(df: pd.DataFrame) -> str:
    """EnsAdvA at every FGSM step of the sweep against the plain ensemble (Ens) at jtk's lab configuration."""
    steps = {LAB: DEFAULT_EPS} | {r: o["adversarial_eps"] for r, (_, o, _) in READINGS.items() if "adversarial_eps" in o}
    rows = [(f"EnsAdvA, FGSM step {eps:g}" + (" (default)" if r == LAB else ""), r, "EnsAdvA")
            for r, eps in sorted(steps.items(), key=lambda item: item[1])]
    rows.append(("Ens (no adversarial term)", LAB, "Ens"))
    at = df.set_index(["reading", "method", "f_main"])
    fs = sorted(PAPER)
    cols = [("coverage", "coverage_in"), ("uncertainty", "uncertainty_in"), ("RMSE", "rmse_in")]
    header = ["method"] + [f"{name} f={f:g}" for name, _ in cols for f in fs]
    body = [[label] + [f"{at.loc[(r, m, f), col]:.3f}" for _, col in cols for f in fs] for label, r, m in rows]
    table = pd.DataFrame(body, columns=header)
    adv = df[(df["method"] == "EnsAdvA") & df["reading"].isin(steps)]
    ens = df[(df["method"] == "Ens") & (df["reading"] == LAB)].set_index("f_main")
    return "\n".join([
        f"Made by `python -m jtk.regression.coverage_readings` from the rows of benchmarks/results/coverage_readings.csv "
        f"at jtk's lab configuration (input_scale 8, k = {int(df['k'].iloc[0])} training sets per cell, "
        "in-distribution means).", "", md_table(table, index=False), "",
        f"* Over the four FGSM steps EnsAdvA covers {adv['coverage_in'].min():.2f}–{adv['coverage_in'].max():.2f} "
        f"with uncertainty {adv['uncertainty_in'].min():.3f}–{adv['uncertainty_in'].max():.3f} against RMSE "
        f"{adv['rmse_in'].min():.2f}–{adv['rmse_in'].max():.2f}; the plain ensemble covers "
        + " and ".join(f"{ens.loc[f, 'coverage_in']:.2f} (f_main = {f:g})" for f in fs) + "."])


def main(argv=None) -> int:
    argv = _checks.argv(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=20, help="training sets per cell (≥ 2)")
    ap.add_argument("--no-docs", action="store_true", help="write the CSV only")
    ap.add_argument("--report-only", action="store_true", help="rebuild the docs table from the CSV")
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="read and write coverage_readings.csv, and coverage.md, here instead")
    args = ap.parse_args(argv)
    global OUT, PAGE
    if args.out_dir is not None:
        OUT, PAGE = args.out_dir / "coverage_readings.csv", args.out_dir / "coverage.md"
        args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.k < 2:
        ap.error(f"--k must be at least 2, got {args.k}")
    if args.report_only:
        if not OUT.exists():
            ap.error(f"--report-only needs {OUT} from an earlier run")
        df = pd.read_csv(OUT)
    else:
        df = run(args.k)
        df.to_csv(OUT, index=False)
        print(f"wrote {OUT} ({len(df)} rows, {np.nansum(df.get('wall_s', 0)):.0f} s)")
    text, table = report(df)
    print(text, fgsm_report(df), sep="\n\n")
    if not args.no_docs:
        write_section("coverage-readings", text, PAGE)
        write_section("coverage-readings-fgsm", fgsm_report(df), PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
