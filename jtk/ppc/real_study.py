"""Wang, Sun & Grosse (2021), Table 1 and §5.4 on real regression data: XLLR and TAL gain per data set and model.

  python -m jtk.ppc.real_study --preset quick                    # the paper's eight data sets, 10 seeds (docs/ppc.md)
  python -m jtk.ppc.real_study --preset paper                    # the paper's 10 TAL iterations of 1 %
  python -m jtk.ppc.real_study --preset authors                  # ... with the authors' per-data-set settings
  python -m jtk.ppc.real_study --csv my.csv --target y --preset paper   # your own table

The data sets are the paper's eight UCI tables, shipped with jtk and checked against their SHA-256 sums on every
read (:mod:`jtk.envs.uci`); ``--csv`` runs the same protocol on any file.

Protocol (§5.1, the paper's UCI set-up), per data set and seed (10 seeds):

* **Split** (:func:`jtk.ppc.active.split_data`): 20 % initial training set, 20 % test, 60 % pool, standardised with
  the training + pool statistics.
* **Prediction model, the paper's "Oracle".** A GP whose hyperparameters are fitted by ML-II on train + pool (the
  paper's rule), then frozen; it predicts the test set from train + queried points. The paper's kernel is a
  neural kernel network (NKN), which jtk does not have: an ARD RBF kernel with learned noise stands in. Every
  selection model, the acquisition and XLL use this fitted noise variance (median over seeds), as the synthetic
  study gives every model the true one.
* **Selection models**: one setting per family. Presets ``quick`` and ``paper``: derived here from the synthetic
  study's stored runs (:func:`derive_settings`; the rule is :data:`SETTING_RULE`). Preset ``authors``: the
  authors' scripts' own per-data-set settings (:data:`AUTHORS_UCI_HYPERS`, :func:`authors_settings`: 10,000
  epochs, their EM-HMC; the paper's text does not give them). Baselines: random queries, and the Oracle selecting
  for itself.
* **TAL**: ``rounds`` iterations of BatchMIG, each querying ``round_fraction`` of the data set (the paper: 10 of
  1 %), the selection model refitted every round. **TAL gain** = the Oracle's test log-likelihood after the
  model's queries minus after random ones (paired by seed; nats per test point).
* **XLL / XLLR** (:func:`jtk.ppc.xll_table`): the models fitted on the initial training set, every one in turn the
  reference, batches of the 5 most correlated test points; XLLR = mean rank, 0 = best. Table 1 on the page shows
  a data set's XLLR only where TAL rises above noise there (:func:`xllr_shown`); every value is in the CSV.
* **Disagreements** with the paper's claims (:data:`PAPER_CLAIMS`, :func:`disagreements`) are computed from the
  results and listed on the page.

Writes benchmarks/results/ppc_real_<preset>_*.csv and the section ``ppc-real-<preset>`` of docs/ppc.md.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

import jax
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks
from jtk.ppc import synthetic_study as ppc_study
from jtk._docs import md_table, write_section

from jtk import ppc
from jtk.ppc import active
from jtk._numerics import numpy_rng
from jtk.envs.uci import UCI_DATASETS, load_uci
from jtk.regression.gp import GPRegression, rbf_kernel

from jtk._paths import DOCS, RESULTS, ROOT

__all__ = ["main", "derive_settings", "authors_settings", "table", "xllr_shown", "disagreements",
           "DATASETS", "SETTING_RULE", "PAPER_CLAIMS", "AUTHORS_UCI_HYPERS"]  # see the package docstring

PAGE = DOCS / "ppc.md"


# ------------------------------------------------------------------ the paper's eight data sets
class Dataset(NamedTuple):
    load: Callable[[], pd.DataFrame]  # → numeric DataFrame with a "target" column
    source: str


PAPER_DATASETS = tuple(UCI_DATASETS)  # §5.1: boston, concrete, energy, wine, yacht, kin8nm, naval, power_plant
# Shipped with jtk (jtk.envs.uci, SHA-256 checked on every read), read as the authors' loader reads them: the last
# column is the target (for naval the turbine decay coefficient).
DATASETS = {name: Dataset(functools.partial(load_uci, name, "authors"),
                          f"{info.description}; {info.rows} × {info.columns - 1}, target column {info.columns - 1} "
                          "(jtk/envs/uci_data, SHA-256 checked)")
            for name, info in UCI_DATASETS.items()}
DEFAULT_DATASETS = PAPER_DATASETS


# ------------------------------------------------------------------ presets
PRESETS = {
    "paper": dict(seeds=10, rounds=10, round_fraction=0.01, scale_epochs=1.0),
    # The paper's seeds, models and query budget (10 % of the data), in 2 iterations of 5 % instead of 10 of 1 %:
    # each iteration refits every selection model, so this is 5 × cheaper (docs/ppc.md, "Real data").
    "quick": dict(seeds=10, rounds=2, round_fraction=0.05, scale_epochs=1.0),
    # Toy sizes for the tests: the derived settings, shrunk (at most 3 samples, 8 units, 5 % of the epochs).
    "smoke": dict(seeds=2, rounds=1, round_fraction=0.02, scale_epochs=0.05, max_samples=3, units=8),
    # The paper's protocol with the authors' own per-data-set settings (AUTHORS_UCI_HYPERS) and their EM-HMC.
    "authors": dict(seeds=10, rounds=10, round_fraction=0.01, scale_epochs=1.0, settings="authors"),
    # For the tests: the authors' settings, shrunk as smoke shrinks the derived ones (epochs and burn-in × 0.0005).
    "authors_smoke": dict(seeds=2, rounds=1, round_fraction=0.02, scale_epochs=0.0005, max_samples=3, units=8,
                          settings="authors"),
}
FAMILIES = ppc_study.ALL_PAPER_FAMILIES  # the paper's seven: Ensemble, Dropout, BBB, NNG, FBNN, HMC, GP-RBF
BASELINES = ("Oracle", "Random")
# FBNN's GP prior on real data: an ARD RBF kernel fitted by ML-II on each training set (the paper's kind of prior).
# The synthetic study's oracle ReLU kernel correlates every pair of a UCI table's inputs (docs/ppc.md, "FBNN on
# real data").
FBNN_PRIOR = "rbf"
ORACLE_ROW = "Oracle (selects for itself)"


# ------------------------------------------------------------------ the authors' settings of each family
# Their scripts/gen_scripts.py (UCI_HYPERS and the commands built from it), per family and data set: (learning
# rate, hidden units). Every network trains 10,000 epochs; the GP has no entry (ML-II on an ARD kernel).
AUTHORS_UCI_HYPERS = {
    "Ensemble": dict(boston=(0.003, 400), concrete=(0.01, 50), energy=(0.01, 50), wine=(0.001, 50),
                     yacht=(0.01, 50), kin8nm=(0.01, 400), naval=(0.001, 50), power_plant=(0.003, 400)),
    "BBB": dict(boston=(0.003, 400), concrete=(0.01, 50), energy=(0.01, 50), wine=(0.001, 50), yacht=(0.01, 50),
                kin8nm=(0.001, 400), naval=(0.003, 50), power_plant=(0.003, 50)),
    "NNG": dict(boston=(0.003, 50), concrete=(0.001, 50), energy=(0.01, 50), wine=(0.001, 50), yacht=(0.01, 50),
                kin8nm=(0.001, 50), naval=(0.001, 50), power_plant=(0.003, 400)),
    "Dropout": dict(boston=(0.01, 400), concrete=(0.001, 400), energy=(0.003, 400), wine=(0.001, 400),
                    yacht=(0.01, 400), kin8nm=(0.001, 400), naval=(0.001, 400), power_plant=(0.001, 400)),
    "HMC": dict(boston=(0.01, 50), concrete=(0.01, 50), energy=(0.003, 50), wine=(0.001, 50), yacht=(0.001, 50),
                kin8nm=(0.003, 400), naval=(0.001, 400), power_plant=(0.003, 50)),
    "FBNN": dict(boston=(0.003, 400), concrete=(0.01, 400), energy=(0.001, 400), wine=(0.01, 400),
                 yacht=(0.001, 400), kin8nm=(0.003, 400), naval=(0.001, 400), power_plant=(0.01, 400)),
}
AUTHORS_UCI_EPOCHS = 10_000
# Function samples behind each family's covariance in their commands (Ensemble: members; BBB, NNG, Dropout:
# --eval_cov_samples; HMC: --hmc_samples per chain, with 10 chains).
AUTHORS_UCI_SAMPLES = {"Ensemble": 100, "BBB": 5000, "NNG": 5000, "Dropout": 5000, "HMC": 100}
# Their EM-HMC on real data (jtk.regression.hmc, schedule="authors"): 10 chains, 5 leapfrog steps, initial step 0.01,
# 5 transitions an EM iteration all adapting the step, 100 iterations between samples, burn-in 5999 (the setting's
# epochs: exactly 100 states a chain are kept), Adam at the data set's learning rate on η and on the noise, which
# starts at σ = e^-2 (their obs_logstd's initial value) instead of the Oracle's.
AUTHORS_UCI_HMC_BURN_IN = 5999
AUTHORS_UCI_HMC = dict(num_chains=10, steps_per_em=5, adapt_steps=5, thin=100, step_size=0.01,
                       learn_noise_var=True, noise_var=float(np.exp(-4.0)))
# Flags of their commands that jtk's trainers do not take: recorded in the settings table, not applied.
AUTHORS_UCI_NOT_APPLIED = {
    "Ensemble": "batch 100",
    "BBB": "batch 100",
    "NNG": "batch 100; lr × 0.1 every 5,000 epochs",
    "Dropout": {**{d: "batch 100; rate 0.05, τ 0.025" for d in ("boston", "concrete", "power_plant")},
                "energy": "batch 100; rate 0.0025, τ 0.005", "wine": "batch 100; rate 0.05, τ 0.125",
                "yacht": "batch 100; rate 0.0025, τ 0.005", "kin8nm": "batch 100; rate 0.01, τ 0.025",
                "naval": "batch 100; rate 0.0025, τ 0.005"},
    "FBNN": {**{d: f"batch 5000; {nr} measurement points" for d, nr in
                (("boston", 100), ("concrete", 5), ("energy", 5), ("wine", 5), ("yacht", 5))},
             **{d: f"batch 900; {nr} measurement points" for d, nr in
                (("kin8nm", 20), ("naval", 20), ("power_plant", 5))}},
    "GP-RBF": "10,000 epochs of Adam at 0.003 (jtk: ML-II by L-BFGS); SVGP with 1,000 inducing points on kin8nm, "
              "naval and power_plant",
}
AUTHORS_SOURCE = "the authors' scripts/gen_scripts.py (UCI_HYPERS and its commands)"


def authors_settings(dataset: str, families=FAMILIES) -> pd.DataFrame:
    """The authors' setting of each family on ``dataset`` → one row per family (``SETTING_COLUMNS``, the flags of
    their command that jtk does not apply, and ``source``)."""
    _checks.one_of("dataset", dataset, PAPER_DATASETS)
    rows = []
    for fam in _names("families", families):
        if fam == "GP-RBF":  # lr 0: ML-II, ARD
            row = dict(family=fam, setting="GP-RBF ML-II (ard)", samples=0, units=0, lr=0.0, epochs=0)
        else:
            lr, units = AUTHORS_UCI_HYPERS[fam][dataset]
            samples = AUTHORS_UCI_SAMPLES.get(fam, 0)
            epochs = AUTHORS_UCI_HMC_BURN_IN if fam == "HMC" else AUTHORS_UCI_EPOCHS
            label = (f"{fam}{f' S={samples}' if samples else ''} H={units} lr={lr:g} ep={epochs}"
                     + (f" × {AUTHORS_UCI_HMC['num_chains']} chains" if fam == "HMC" else ""))
            row = dict(family=fam, setting=label, samples=samples, units=units, lr=lr, epochs=epochs)
        flags = AUTHORS_UCI_NOT_APPLIED.get(fam, "")
        row["not_applied"] = flags.get(dataset, "") if isinstance(flags, dict) else flags
        rows.append(row)
    out = pd.DataFrame(rows)
    out.insert(0, "dataset", dataset)
    out["source"] = AUTHORS_SOURCE
    return out


# ------------------------------------------------------------------ the setting of each family, derived
STUDY_RUNS = RESULTS / "ppc_quick_all_runs.csv"  # jtk.ppc.synthetic_study's quick run of all seven families (its
# tag quick_all, as `jtk reproduce ppc-fig4` runs it): one row per setting and split
SETTING_COLUMNS = ("family", "setting", "samples", "units", "lr", "epochs")
SETTING_RULE = ("per family, the setting of the synthetic study (jtk.ppc.synthetic_study, Fig. 4) with the highest "
                "mean over its splits of the oracle's test log-likelihood after the setting's BatchMIG queries; "
                "ties go to the first label in sorted order")


def _names(name: str, value) -> list[str]:
    """A non-empty sequence of str (family or model names)."""
    out = _checks.nonempty(name, value, "name")
    for i, v in enumerate(out):
        _checks.instance(f"{name}[{i}]", v, str)
    return out


TAL_COLUMNS = ("dataset", "seed", "round", "selector", "test_ll")  # what table / disagreements read of the TAL rows
XLL_COLUMNS = ("dataset", "seed", "model", "xllr")  # ... of the XLL rows
TABLE_COLUMNS = ("dataset", "model", "xllr", "tal_gain", "tal_gain_se")  # ... of table()'s rows


def derive_settings(runs: pd.DataFrame, families=FAMILIES) -> pd.DataFrame:
    """Applies :data:`SETTING_RULE` to the synthetic study's per-split rows (its ``ppc_<preset>_runs.csv``).

    → one row per family: the chosen setting (``SETTING_COLUMNS``), its mean BatchMIG log-likelihood ± s.e. over
    the splits, its rank among the family's settings (1) and their number, and the margin over the runner-up,
    paired by split (mean ± s.e. of the per-split differences), which says whether the choice is above noise.
    """
    _checks.frame("runs", runs, (*SETTING_COLUMNS, "split", "batchmig_ll"))  # the synthetic study's columns
    families = _names("families", families)
    out = []
    for fam in families:
        rows = runs[runs["family"] == fam]
        if rows.empty:
            raise ValueError(f"the synthetic study has no runs of {fam!r}; families there: "
                             f"{sorted(runs['family'].unique())}")
        per = (rows.groupby(list(SETTING_COLUMNS), dropna=False)["batchmig_ll"]
               .agg(batchmig_ll="mean", batchmig_se="sem", splits="count").reset_index())
        per = per.sort_values(["batchmig_ll", "setting"], ascending=[False, True], kind="mergesort")
        best = per.iloc[0].to_dict()
        row = {**best, "settings_in_family": len(per)}
        if len(per) > 1:
            runner = per.iloc[1]
            wide = rows.pivot_table(index="split", columns="setting", values="batchmig_ll")
            diff = (wide[best["setting"]] - wide[runner["setting"]]).dropna()
            row |= {"runner_up": runner["setting"], "margin": float(diff.mean()),
                    "margin_se": float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else np.nan}
        else:
            row |= {"runner_up": "", "margin": np.nan, "margin_se": np.nan}
        out.append(row)
    return pd.DataFrame(out)


def fingerprint(path: Path) -> str:
    """The first 12 hex digits of the file's SHA-256: which version of the synthetic study a run derived from."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def groups(preset: dict, settings: pd.DataFrame) -> list[ppc_study.Group]:
    """One ppc_study.Group per derived setting (the smoke preset shrinks samples, units and epochs)."""
    out = []
    for r in settings.itertuples(index=False):
        fam = r.family
        if fam == "GP-RBF":  # lr is the fixed lengthscale (0: ML-II, "ard" or "iso" in the label)
            st = ppc_study.Setting(fam, 0, 0, float(r.lr), 0, r.setting)
            out.append(ppc_study.Group(fam, 0, float(r.lr), 0, (st,)))
            continue
        samples = min(int(r.samples), preset.get("max_samples", int(r.samples)))
        units = int(preset.get("units", r.units))
        ep = max(int(round(int(r.epochs) * preset["scale_epochs"])), 1)
        label = f"{fam}{f' S={samples}' if samples else ''} H={units} lr={float(r.lr):g} ep={ep}"  # FBNN: no S
        st = ppc_study.Setting(fam, samples, units, float(r.lr), ep, label)
        out.append(ppc_study.Group(fam, units, float(r.lr), ep, (st,)))
    return out


def oracle_for(split: active.DataSplit, seed: int) -> tuple[GPRegression, dict]:
    """The paper's 'Oracle' prediction model: ARD RBF hyperparameters and noise by ML-II on train + pool, frozen."""
    x = np.concatenate([split.x_train, split.x_pool])
    y = np.concatenate([split.y_train, split.y_pool])
    hp = GPRegression(noise_var=None, ard=True).fit(x, y, seed=seed).hyperparameters
    kernel = functools.partial(rbf_kernel, lengthscale=np.asarray(hp["lengthscale"]), signal_var=float(hp["signal_var"]))
    return GPRegression(kernel=kernel, noise_var=float(hp["noise_var"])), hp


# ------------------------------------------------------------------ one data set
def run_dataset(name: str, df: pd.DataFrame, preset: dict, settings: pd.DataFrame, seed: int = 0
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """→ (TAL rows: selector, seed, round, num_train, test_ll, test_rmse; XLL rows; facts about the data set).

    ``settings``: one row per selection family, as :func:`derive_settings` returns.
    """
    seeds = range(preset["seeds"])
    splits = [active.split_data(df, target="target", seed=s) for s in seeds]
    n = len(df)
    q = max(int(np.floor(preset["round_fraction"] * n)), 1)
    oracles, hps = zip(*(oracle_for(s, i) for i, s in enumerate(splits)))
    noise = float(np.median([hp["noise_var"] for hp in hps]))
    gs = groups(preset, settings)
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
                                          st.epochs, noise_var=noise, fbnn_prior=FBNN_PRIOR,
                                          hmc_authors=AUTHORS_UCI_HMC if preset.get("settings") == "authors" else None)
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
NOISE_Z = 2.0  # "above noise": more than two standard errors from 0


def gains_by_seed(tal: pd.DataFrame) -> pd.DataFrame:
    """(dataset, seed) × selector: the Oracle's test log-likelihood after the last iteration minus after random."""
    last = tal[tal["round"] == tal.groupby("dataset")["round"].transform("max")]
    ll = last.pivot_table(index=["dataset", "seed"], columns="selector", values="test_ll")
    return ll.sub(ll["Random"], axis=0).drop(columns="Random")


def xllr_by_seed(xll: pd.DataFrame) -> pd.DataFrame:
    """(dataset, seed) × model: XLLR averaged over the references."""
    return xll.groupby(["dataset", "seed", "model"])["xllr"].mean().unstack("model")


def table(tal: pd.DataFrame, xll: pd.DataFrame) -> pd.DataFrame:
    """Data set × model: XLLR and TAL gain over random, each mean ± standard error over seeds."""
    _checks.frame("tal", tal, TAL_COLUMNS)
    _checks.frame("xll", xll, XLL_COLUMNS)
    gain = gains_by_seed(tal)
    rows = []
    per_seed_rank = xll.groupby(["dataset", "model", "seed"])["xllr"].mean()  # over references
    for (ds, model), v in per_seed_rank.groupby(level=[0, 1]):
        g = gain.loc[ds, model]
        rows.append({"dataset": ds, "model": model, "xllr": v.mean(), "xllr_se": v.std(ddof=1) / np.sqrt(len(v)),
                     "tal_gain": g.mean(), "tal_gain_se": g.std(ddof=1) / np.sqrt(len(g)), "seeds": len(v)})
    for ds in gain.index.get_level_values(0).unique():
        g = gain.loc[ds, "Oracle"]
        rows.append({"dataset": ds, "model": ORACLE_ROW, "xllr": np.nan, "xllr_se": np.nan,
                     "tal_gain": g.mean(), "tal_gain_se": g.std(ddof=1) / np.sqrt(len(g)), "seeds": len(g)})
    return pd.DataFrame(rows)


def xllr_shown(tab: pd.DataFrame, z: float = NOISE_Z) -> dict[str, bool]:
    """Per data set: is its XLLR given in Table 1? Yes where at least one selection family's TAL gain is more than
    ``z`` standard errors above 0, i.e. where the downstream task that XLLR stands in for separates a family from
    random queries (the Oracle choosing for itself does not count)."""
    _checks.frame("tab", tab, TABLE_COLUMNS)
    z = _checks.positive("z", z)
    fam = tab[tab["model"].isin(FAMILIES)]
    return {ds: bool((g["tal_gain"] > z * g["tal_gain_se"]).any()) for ds, g in fam.groupby("dataset")}


# ------------------------------------------------------------------ the paper's claims, checked
BETTER = ("HMC", "GP-RBF", "FBNN", "Ensemble")  # the paper's better group
WORSE = ("BBB", "NNG", "Dropout")  # its worse group
HMC = "HMC"  # the family the Discussion singles out (jtk.regression.hmc: leapfrog + Metropolis-Hastings)
HMC_BEST_ON = ("boston", "concrete", "energy")  # Discussion: HMC the best by both metrics on these
PAPER_CLAIMS = {
    "xllr_groups": "§5.4: by XLLR, HMC, GP-RBF, FBNN and Ensemble usually outperform BBB, NNG and Dropout",
    "xllr_dropout_worst": "§5.4: Dropout estimates the correlations the worst overall (highest mean XLLR)",
    "hmc_best_xllr": "§5.4 Discussion: on boston, concrete and energy HMC is the best by XLLR",
    "hmc_best_tal": "§5.4 Discussion: on boston, concrete and energy HMC is the best by TAL",
    "tal_groups": "§5.4, Fig. 7: by TAL, HMC, GP-RBF, FBNN and Ensemble do better than the variational BNNs and "
                  "Dropout",
    "oracle_beats_random": "§5.2, Fig. 12: on the UCI data BatchMIG queries (the Oracle's own) beat random ones",
    "xllr_tal_consistent": "§5.4 Discussion: XLLR and TAL present a consistent picture (families ordered alike: "
                           "Spearman ρ(XLLR, TAL gain) < 0, as lower XLLR is better)",
    "family_beats_random": "§5.2 (the premise of TAL): BatchMIG queries from a model's correlations beat random "
                           "ones (TAL gain > 0)",
}


def _paired(a: pd.Series, b: pd.Series) -> tuple[float, float]:
    """Mean ± s.e. over seeds of a − b (paired by seed)."""
    d = (a - b).dropna()
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else np.nan


def _verdict(agrees: bool, value: float, se: float, z: float = NOISE_Z) -> str:
    above = np.isfinite(se) and abs(value) > z * se
    return ("agrees" if agrees else "DISAGREES") + ("" if not np.isfinite(se) else
                                                   f" ({'beyond' if above else 'within'} {z:g} s.e.)")


def _rank_text(values: pd.Series, model: str, ascending: bool) -> str:
    order = list(values.sort_values(ascending=ascending, kind="mergesort").index)
    return f"{order.index(model) + 1} of {len(order)}"


def disagreements(tab: pd.DataFrame, tal: pd.DataFrame, xll: pd.DataFrame, z: float = NOISE_Z) -> pd.DataFrame:
    """Every check of :data:`PAPER_CLAIMS` on every data set it applies to → one row each: claim, dataset, what we
    found, value ± se (the statistic whose sign decides), verdict ("agrees"/"DISAGREES", within or beyond ``z``
    s.e.), and whether the data set's XLLR is in Table 1 (:func:`xllr_shown`)."""
    _checks.frame("tab", tab, TABLE_COLUMNS)
    _checks.frame("tal", tal, TAL_COLUMNS)
    _checks.frame("xll", xll, XLL_COLUMNS)
    z = _checks.positive("z", z)
    gains, ranks = gains_by_seed(tal), xllr_by_seed(xll)
    shown = xllr_shown(tab, z)
    rows = []

    def add(claim, ds, found, value, se, agrees):
        rows.append({"claim": claim, "dataset": ds, "found": found, "value": value, "se": se,
                     "verdict": _verdict(agrees, value, se, z), "disagrees": not agrees,
                     "xllr_in_table": shown.get(ds, np.nan) if ds != "all" else np.nan})

    datasets = sorted(set(tab["dataset"]))
    for ds in datasets:
        r = ranks.loc[ds].dropna(axis=1, how="all")
        g = gains.loc[ds]
        fams = [f for f in FAMILIES if f in r.columns]
        better, worse = [f for f in BETTER if f in fams], [f for f in WORSE if f in fams]
        mean_r = r[fams].mean()
        if better and worse:
            v, se = _paired(r[better].mean(axis=1), r[worse].mean(axis=1))
            add("xllr_groups", ds, f"mean XLLR {', '.join(better)} {mean_r[better].mean():.2f} vs "
                f"{', '.join(worse)} {mean_r[worse].mean():.2f}", v, se, v < 0)
            gf = [f for f in FAMILIES if f in g.columns]
            mean_g = g[gf].mean()
            bg, wg = [f for f in BETTER if f in gf], [f for f in WORSE if f in gf]
            v, se = _paired(g[bg].mean(axis=1), g[wg].mean(axis=1))
            add("tal_groups", ds, f"mean TAL gain {', '.join(bg)} {mean_g[bg].mean():.3f} vs "
                f"{', '.join(wg)} {mean_g[wg].mean():.3f}", v, se, v > 0)
        if ds in HMC_BEST_ON and HMC in fams:
            best = mean_r.idxmin()
            v, se = _paired(r[HMC], r[best]) if best != HMC else (0.0, np.nan)
            add("hmc_best_xllr", ds, f"best by XLLR: {best}; HMC ranks "
                f"{_rank_text(mean_r, HMC, True)}", v, se, best == HMC)
            gf = [f for f in FAMILIES if f in g.columns]
            mean_g = g[gf].mean()
            best = mean_g.idxmax()
            v, se = _paired(g[best], g[HMC]) if best != HMC else (0.0, np.nan)
            add("hmc_best_tal", ds, f"best by TAL gain: {best}; HMC ranks "
                f"{_rank_text(mean_g, HMC, False)}", v, se, best == HMC)
        if "Oracle" in g.columns:
            v, se = _paired(g["Oracle"], 0 * g["Oracle"])
            add("oracle_beats_random", ds, f"the Oracle's TAL gain {v:.3f}", v, se, v > 0)
        both = tab[(tab["dataset"] == ds) & tab["model"].isin(FAMILIES)].dropna(subset=["xllr", "tal_gain"])
        if len(both) > 2:
            rho = float(both[["xllr", "tal_gain"]].corr(method="spearman").iloc[0, 1])
            add("xllr_tal_consistent", ds, f"Spearman ρ {rho:.2f} over {len(both)} families", rho, np.nan,
                bool(rho < 0))
        for f in [f for f in FAMILIES if f in g.columns]:
            v, se = _paired(g[f], 0 * g[f])
            if v <= 0:  # only the failures are rows: a positive gain is the expected case
                add("family_beats_random", ds, f"{f}: TAL gain {v:.3f}", v, se, False)
    # Over the data sets: Dropout the worst by mean XLLR (paired differences, data sets independent).
    per_ds = {ds: ranks.loc[ds].dropna(axis=1, how="all") for ds in datasets}
    fams = [f for f in FAMILIES if all(f in r.columns for r in per_ds.values())]
    if "Dropout" in fams and len(fams) > 1:
        mean_r = pd.Series({f: np.mean([r[f].mean() for r in per_ds.values()]) for f in fams})
        worst = mean_r.idxmax()
        diffs = [_paired(r[worst], r["Dropout"]) for r in per_ds.values()]
        v = float(np.mean([d[0] for d in diffs]))
        se = float(np.sqrt(np.nansum([d[1] ** 2 for d in diffs])) / len(diffs)) if worst != "Dropout" else np.nan
        hidden = [ds for ds in datasets if not shown.get(ds)]
        over = f"over {', '.join(datasets)}" + (f" (XLLR withheld from Table 1: {', '.join(hidden)})" if hidden else "")
        found = f"worst by mean XLLR {over}: {worst} ({mean_r[worst]:.2f})" + (
            "" if worst == "Dropout" else
            f"; Dropout {mean_r['Dropout']:.2f}, {_rank_text(mean_r, 'Dropout', False)} from the worst")
        add("xllr_dropout_worst", "all", found, v, se, worst == "Dropout")
    return pd.DataFrame(rows)


def pm(v: float, se: float) -> str:
    return "" if not np.isfinite(v) else f"{v:.2f} ± {se:.2f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3f} ± {se:.3f}"


def _derived_table(settings: pd.DataFrame, z: float) -> pd.DataFrame:
    """The page's table of the derived settings: each family's choice, its synthetic score and margin."""
    st = settings.assign(**{
        "mean BatchMIG log-lik. (synthetic)": [pm(a, b) for a, b in zip(settings.batchmig_ll, settings.batchmig_se)],
        "rank in family": [f"1 of {n}" for n in settings.settings_in_family],
        "margin over the runner-up (paired)": [
            "" if not np.isfinite(m) else f"{pm(m, s)} over {r}" + (" (beyond 2 s.e.)" if m > z * s else
                                                                     " (within 2 s.e.)")
            for m, s, r in zip(settings.margin, settings.margin_se, settings.runner_up)]})
    st = st[["family", "setting", "mean BatchMIG log-lik. (synthetic)", "rank in family",
             "margin over the runner-up (paired)"]].rename(columns={"setting": "derived setting"})
    if "run_as" in settings.columns and (settings["run_as"] != settings["setting"]).any():
        st["run here as"] = settings["run_as"].values
    return st


def write_docs(tag: str, tab: pd.DataFrame, facts: pd.DataFrame, tal: pd.DataFrame, checks: pd.DataFrame,
               settings: pd.DataFrame, meta: dict, command: str, stale: str = "") -> None:
    shown = xllr_shown(tab)
    z = NOISE_Z
    above = tab["tal_gain"] > z * tab["tal_gain_se"]

    def cell(r, up):
        x = pm(r.xllr, r.xllr_se) if shown.get(r.dataset) and np.isfinite(r.xllr) else ("–" if r.model != ORACLE_ROW
                                                                                          else "")
        return f"{x} / {pm(r.tal_gain, r.tal_gain_se)}{' ↑' if up else ''}"

    wide = tab.assign(cell=[cell(r, u) for r, u in zip(tab.itertuples(index=False), above)])
    grid = wide.pivot(index="model", columns="dataset", values="cell").reindex(
        [f for f in (*FAMILIES, ORACLE_ROW) if f in set(wide.model)]).fillna("")
    grid.index.name = "model (XLLR / TAL gain)"
    in_table = tab[tab["dataset"].map(shown).fillna(False).astype(bool) & tab["model"].isin(FAMILIES)]
    mean_rank = in_table.groupby("model")["xllr"].mean().reindex(list(FAMILIES))
    grid["mean XLLR (data sets shown)"] = [f"{v:.2f}" if np.isfinite(v) else "" for v in mean_rank.reindex(grid.index)]
    random_ll = tal[(tal.selector == "Random")].groupby(["dataset", "round"])["test_ll"].mean().unstack()
    f = facts.set_index("dataset")
    known = lambda d, attr: getattr(DATASETS[d], attr) if d in DATASETS else ""  # noqa: E731
    data_rows = pd.DataFrame({
        "data set": f.index,
        "the paper's?": ["yes" if d in PAPER_DATASETS else "no: a --csv file" for d in f.index],
        "source": [known(d, "source") or "--csv" for d in f.index],
        "train / pool / test": [f"{a} / {b} / {c}" for a, b, c in zip(f.train, f.pool, f.test)],
        "queried per round": f.query_per_round.values,
        "Oracle noise σ² (median, min–max)": [f"{a:.3f} ({b:.3f}–{c:.3f})" for a, b, c in
                                               zip(f.noise_var, f.noise_var_min, f.noise_var_max)],
        "diverged fits (queried at random)": f.get("diverged_selections", 0 * f.rows).values})
    paper_sets = [d for d in f.index if d in PAPER_DATASETS]
    missing = [d for d in PAPER_DATASETS if d not in f.index]
    if "dataset" in settings.columns:  # the authors' settings, per data set
        shrunk = "run_as" in settings.columns and bool((settings["run_as"] != settings["setting"]).any())
        st = settings.pivot(index="family", columns="dataset", values="run_as" if shrunk else "setting").reindex(
            [f for f in FAMILIES if f in set(settings.family)])
        flags = settings[settings["not_applied"].fillna("") != ""]
        settings_text = (f"Selection settings: {AUTHORS_SOURCE}, per data set; every network "
                         f"{AUTHORS_UCI_EPOCHS:,} epochs, HMC their EM-HMC (jtk.regression.hmc, schedule 'authors'). "
                         "Flags of their commands that jtk's trainers do not take (not applied): "
                         + "; ".join(sorted({f"{r.family}: {r.not_applied}" for r in flags.itertuples()})) + "."
                         + (" This preset shrinks them; the table gives the settings as run." if shrunk else ""))
        st_index = True
    else:
        st, settings_text, st_index = _derived_table(settings, z), (
            f"Selection settings, derived by the script from `{settings['source'].iloc[0]}` (SHA-256 "
            f"{settings['source_sha256'].iloc[0]}…). Rule: {SETTING_RULE}." + (f" {stale}" if stale else "")), False
    within = int(np.sum(~above & (np.abs(tab.tal_gain) <= z * tab.tal_gain_se)))
    n_dis = int(checks["disagrees"].sum()) if len(checks) else 0
    n_dis_noise = int(checks["verdict"].str.contains("DISAGREES (beyond", regex=False).sum()) if len(checks) else 0
    chk = checks.assign(claim=checks["claim"].map(PAPER_CLAIMS), value=[
        pm(v, s) if np.isfinite(s) else f"{v:.2f}" for v, s in zip(checks["value"], checks["se"])],
        xllr_in_table=checks["xllr_in_table"].map({True: "yes", False: "no (withheld)"}).fillna(""))
    chk = chk.sort_values(["disagrees", "claim"], ascending=[False, True], kind="mergesort")
    chk = chk[["verdict", "claim", "dataset", "found", "value", "xllr_in_table"]].rename(columns={
        "value": "deciding value ± s.e.", "xllr_in_table": "data set's XLLR in Table 1"})
    rounds = int(meta["rounds"])
    lines = [f"### Preset `{tag}` ({meta['seeds']} seeds, {rounds} TAL iteration{'s' if rounds != 1 else ''} of "
             f"{meta['round_fraction']:.0%} of the data; wall time {float(meta['wall']):.0f} s on {meta['cpus']} CPU "
             f"cores, load average {float(meta['load_start']):.1f} at the start, {float(meta['load_end']):.1f} at the "
             "end)", "",
             f"Regenerated by `{command}`.", "",
             f"Data sets: {len(paper_sets)} of the paper's 8 ({', '.join(paper_sets) or 'none'})"
             + (f"; not run here (`--datasets` adds them): {', '.join(missing)}" if missing else "")
             + (f"; not the paper's: {', '.join(d for d in f.index if d not in paper_sets)}"
                if len(paper_sets) < len(f.index) else "") + ".", "",
             md_table(data_rows, index=False), "",
             settings_text, "",
             md_table(st, index=st_index), "",
             "**Table 1.** Each cell: XLLR (mean rank among the "
             f"{tab[tab.model.isin(FAMILIES)].model.nunique()} families, 0 = best) / TAL gain (the Oracle's test "
             "log-likelihood after the model's BatchMIG queries minus after random queries, nats per standardised "
             f"test point), mean ± standard error over the seeds; ↑ marks a TAL gain more than {z:g} s.e. above 0. "
             f"A data set's XLLR is given only where at least one family's TAL gain is ↑ (TAL, the downstream task "
             "XLLR stands in for, rises above noise there); elsewhere it is withheld (–) and stays in "
             f"`benchmarks/results/ppc_real_{tag}_table.csv`.", "",
             md_table(grid, index=True), "",
             "XLLR given for: " + (", ".join(d for d, s in shown.items() if s) or "no data set") + "; withheld for: "
             + (", ".join(d for d, s in shown.items() if not s) or "none") + ". "
             f"TAL gains within {z:g} standard errors of 0: {within} of {len(tab)} cells (the Oracle's row included).",
             "",
             f"**Checks against the paper** ({n_dis} of {len(checks)} disagree, {n_dis_noise} of them beyond "
             f"{z:g} s.e.; a family's TAL gain is listed only where it is not positive):", "",
             md_table(chk, index=False) if len(chk) else "(no check applies)", "",
             "The Oracle's test log-likelihood after random queries, by iteration:", "",
             md_table(random_ll.rename(columns=lambda c: f"after {c}"), "{:.3f}", index=True), ""]
    write_section(f"ppc-real-{tag}", "\n".join(lines), PAGE)


# ------------------------------------------------------------------ main
def main(argv=None) -> int:
    argv = _checks.argv(argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    p.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DEFAULT_DATASETS),
                   help="default: the paper's eight")
    p.add_argument("--csv", type=Path, help="run on this CSV file instead (numeric columns; see --target)")
    p.add_argument("--target", help="the target column of --csv")
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    p.add_argument("--seeds", type=int, help="override the preset's number of seeds (at least 2)")
    p.add_argument("--out-dir", type=Path, default=None, help="write the CSVs (and ppc.md) here")
    p.add_argument("--no-docs", action="store_true", help="write the CSVs only")
    p.add_argument("--report-only", action="store_true", help="rebuild the table and the page from an earlier run's CSVs")
    p.add_argument("--study-runs", type=Path, default=STUDY_RUNS,
                   help="the synthetic study's per-split rows the settings are derived from (default: %(default)s)")
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
    parts = ("tal", "xll", "data", "meta", "settings")
    by_authors = preset.get("settings") == "authors"
    if not args.report_only and by_authors:  # per data set, from the authors' scripts
        names = [args.csv.stem] if args.csv is not None else list(tables)
        unknown = [n for n in names if n not in PAPER_DATASETS]
        if unknown:
            p.error(f"--preset authors needs the paper's data sets (the authors' settings are per data set), got "
                    f"{unknown}; use --preset quick or paper for other tables")
        settings = pd.concat([authors_settings(n, args.families) for n in names], ignore_index=True)
        settings["run_as"] = [g.settings[0].label for g in groups(preset, settings)]
        settings.insert(1, "source_sha256", "")
    elif not args.report_only:
        if not args.study_runs.is_file():
            p.error(f"--study-runs must name the synthetic study's runs CSV (python -m jtk.ppc.synthetic_study --preset "
                    f"quick writes it), got {str(args.study_runs)!r}")
        settings = derive_settings(pd.read_csv(args.study_runs), args.families)
        settings["run_as"] = [g.settings[0].label for g in groups(preset, settings)]
        try:
            settings.insert(0, "source", str(args.study_runs.resolve().relative_to(ROOT)))
        except ValueError:
            settings.insert(0, "source", str(args.study_runs))
        settings.insert(1, "source_sha256", fingerprint(args.study_runs))
    if args.report_only:
        missing = [f"ppc_real_{tag}_{part}.csv" for part in parts if not (RESULTS / f"ppc_real_{tag}_{part}.csv").exists()]
        if missing:
            p.error(f"--report-only needs the CSVs of a run with preset {args.preset!r} in {RESULTS}; missing: "
                    + ", ".join(missing))
        tal, xll, facts, meta, settings = (pd.read_csv(RESULTS / f"ppc_real_{tag}_{part}.csv") for part in parts)
        meta = meta.to_dict("records")[0]
        if "runner_up" in settings.columns:
            settings["runner_up"] = settings["runner_up"].fillna("")
        settings["not_applied"] = settings.get("not_applied", pd.Series("", index=settings.index)).fillna("")
    else:
        t0, load0 = time.perf_counter(), os.getloadavg()[0]
        tals, xlls, facts = [], [], []
        for name, df in tables.items():
            mine = settings[settings["dataset"] == name].reset_index(drop=True) if by_authors else settings
            tal, xll, fact = run_dataset(name, df, preset, mine)
            tals.append(tal), xlls.append(xll), facts.append(fact)
        tal, xll, facts = pd.concat(tals), pd.concat(xlls), pd.DataFrame(facts)
        meta = {**{k: preset[k] for k in ("seeds", "rounds", "round_fraction")}, "wall": time.perf_counter() - t0,
                "cpus": os.cpu_count(), "load_start": load0, "load_end": os.getloadavg()[0],
                "study_runs": settings["source"].iloc[0]}
        RESULTS.mkdir(parents=True, exist_ok=True)
        for part, frame in zip(parts, (tal, xll, facts, pd.DataFrame([meta]), settings)):
            frame.to_csv(RESULTS / f"ppc_real_{tag}_{part}.csv", index=False)
    tab = table(tal, xll)
    tab.to_csv(RESULTS / f"ppc_real_{tag}_table.csv", index=False)
    checks = disagreements(tab, tal, xll)
    checks.to_csv(RESULTS / f"ppc_real_{tag}_checks.csv", index=False)
    pd.set_option("display.width", 160)
    print(tab.round(3).to_string(index=False))
    print(checks[["claim", "dataset", "found", "verdict"]].to_string(index=False))
    print(f"\nwall {float(meta['wall']):.0f} s")
    if not args.no_docs:
        command = f"python -m jtk.ppc.real_study --preset {args.preset}" + (
            f" --seeds {meta['seeds']}" if int(meta["seeds"]) != PRESETS[args.preset]["seeds"] else "") + (
            f" --csv {args.csv.name} --target {args.target}" if args.csv is not None else
            f" --datasets {' '.join(sorted(set(facts['dataset'])))}"
            if set(facts["dataset"]) != set(DEFAULT_DATASETS) else "")
        src = ROOT / str(settings["source"].iloc[0])
        now = fingerprint(src) if src.is_file() else "missing"
        stale = "" if by_authors or now == str(settings["source_sha256"].iloc[0]) else (
            f"**The synthetic study's runs have changed since this run** (`{settings['source'].iloc[0]}` is now "
            f"{now}): the settings below are those the run used; rerun to derive them again.")
        write_docs(tag, tab, facts, tal, checks, settings, meta, command, stale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
