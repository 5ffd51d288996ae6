"""TAL with oracle covariances, and PPC metrics across models of varying quality (Wang et al. 2021, §5).

Part 1 (Fig. 3): on d-dimensional synthetic data (oracle ReLU-kernel GP, 5d / 500 / 200
points, σ² = 0.01), one round of the reference protocol (batch max(⌊0.01 · total⌋, 1))
with the oracle as both selection and prediction model; mean test log-likelihood
after the round for BatchMIG, MIG, TIG and random selection, with standard errors.

Part 2 (Figs. 4, 5): selection models of varying quality (GP-RBF with fitted and
fixed lengthscales, the oracle GP seen through M posterior samples, a ReLU-kernel
GP with wrong constants, BBB and SGLD BNNs, and deep ensemble / MC dropout from
``jtk.regression.deep`` when available). For each: metacorrelations with
the oracle, BatchMIG (and TIG) test log-likelihood with the oracle prediction model,
and XLL / XLLR with every model as reference. Reports the Pearson correlation
between metacorrelation and BatchMIG performance across models (paper: 0.762)
and the Spearman correlation between XLL and metacorrelation ranks.

Usage::

  python -m jtk.ppc.tal_oracle [--splits 25] [--dim 9] [--no-bnn]

Writes benchmarks/results/tal_criteria.csv, tal_models.csv, tal_xll.csv, tal_per_model.csv and
tal_summary.csv (names + --suffix).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import pandas as pd
import scipy.stats

from jtk import _checks
from jtk import ppc
from jtk.ppc import active
from jtk.regression.bnn import BBBRegression, SGLDRegression
from jtk.regression.gp import GPRegression, MonteCarloGP
from jtk.envs.gp import NOISE_VAR, ReLUKernelGP

from jtk._paths import RESULTS  # noqa: F401 (main rebinds it with --out-dir)

__all__ = ["main", "run", "summarize"]  # see the package docstring


def model_zoo(oracle: ReLUKernelGP, with_bnn: bool = True) -> dict:
    """Selection models of varying PPC quality (the paper sweeps sample counts and hyperparameters)."""
    exact = GPRegression(kernel=oracle.kernel, noise_var=NOISE_VAR)
    wrong = ReLUKernelGP(oracle.input_dim, weight0_var=20.0, bias0_var=0.1)
    zoo = {
        "GP-RBF (ML-II)": GPRegression(noise_var=NOISE_VAR),
        "GP-RBF l=2": GPRegression(noise_var=NOISE_VAR, lengthscale=2.0),
        "GP-RBF l=1": GPRegression(noise_var=NOISE_VAR, lengthscale=1.0),
        "GP-ReLU wrong constants": GPRegression(kernel=wrong.kernel, noise_var=NOISE_VAR),
        "oracle, M=5 samples": MonteCarloGP(exact, 5),
        "oracle, M=20 samples": MonteCarloGP(exact, 20),
        "oracle, M=100 samples": MonteCarloGP(exact, 100),
    }
    if with_bnn:
        zoo["BBB"] = BBBRegression()
        zoo["SGLD"] = SGLDRegression()
        zoo["SGLD short chains"] = SGLDRegression(burn_in=500, thin=10, samples_per_chain=10)
        try:  # the deep-regression module is another engineer's; use it when it is there and works
            from jtk.regression.deep import make_regression
            common = dict(preset="lab", noise_std=float(np.sqrt(NOISE_VAR)), complexity=float(oracle.input_dim))
            zoo["Deep ensemble"] = make_regression("Ens", **common)
            zoo["MC dropout"] = make_regression("BD", **common)
        except Exception as err:  # pragma: no cover - depends on the other module
            print(f"(deep_regression unavailable: {err!r})", file=sys.stderr)
    return zoo


def run(num_splits: int, dim: int, with_bnn: bool) -> dict:
    """One TAL round with the oracle as selection and prediction model, and the PPC study of the model zoo, on
    ``num_splits`` data sets of the ``dim``-dimensional ReLU-kernel GP (``with_bnn``: BBB, SGLD and the deep models
    too) → :func:`jtk.ppc.ppc_study`'s dict plus ``"criteria"`` (the oracle's TAL rows)."""
    num_splits = _checks.integer("num_splits", num_splits, minimum=2)
    dim = _checks.integer("dim", dim, minimum=1)
    _checks.instance("with_bnn", with_bnn, bool)
    oracle = ReLUKernelGP(dim)
    exact = GPRegression(kernel=oracle.kernel, noise_var=NOISE_VAR)
    splits = [oracle.sample_split(seed=s) for s in range(num_splits)]
    t0 = time.perf_counter()
    criteria = active.tal_comparison(splits, exact, exact, criteria=active.CRITERIA)
    criteria = criteria[criteria["round"] == 1].reset_index(drop=True)
    print(f"TAL with the oracle: {time.perf_counter() - t0:.1f} s", flush=True)
    study = ppc.ppc_study(splits, model_zoo(oracle, with_bnn), exact, noise_var=NOISE_VAR, verbose=True)
    return {"criteria": criteria, **study}


def summarize(res: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Prints and returns the study's findings from :func:`run`'s dict → (one row per quantity: value ± stderr,
    the per-model means)."""
    _checks.instance("res", res, dict, "the dict run() returns")
    missing = [k for k in ("criteria", "models") if k not in res]
    if missing:
        raise ValueError(f"res must be the dict run() returns, with keys 'criteria' and 'models'; missing {missing}")
    _checks.frame("res['criteria']", res["criteria"], ("split", "criterion", "round", "test_log_likelihood"))
    _checks.frame("res['models']", res["models"], ("model", "fit_seconds", "pearson", "batchmig_log_likelihood"))
    crit, models = res["criteria"], res["models"]
    rows = []
    s = active.summarize(crit, "test_log_likelihood", "criterion")
    print("\nOne TAL round with the oracle (mean test log-likelihood ± stderr over splits):")
    for c, r in s.iterrows():
        print(f"  {c:9s} {r['mean']:+.4f} ± {r['stderr']:.4f}  (n={int(r['n'])})")
        rows.append({"quantity": f"test_ll_{c}", "value": r["mean"], "stderr": r["stderr"], "n": int(r["n"])})
    piv = crit.pivot(index="split", columns="criterion", values="test_log_likelihood")
    for a, b in (("batchmig", "mig"), ("mig", "tig"), ("tig", "random")):
        d = piv[a] - piv[b]
        print(f"  paired {a} - {b}: {d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f}, "
              f"{a} better on {(d > 0).sum()}/{len(d)} splits")
        rows.append({"quantity": f"paired_{a}_minus_{b}", "value": d.mean(),
                     "stderr": d.std(ddof=1) / np.sqrt(len(d)), "n": len(d)})
    per_model = ppc.ppc_per_model(res).join(models.groupby("model")["fit_seconds"].mean())
    print("\nPer model (means over splits):")
    with pd.option_context("display.width", 160, "display.precision", 3):
        print(per_model)
    r_meta = scipy.stats.pearsonr(per_model["pearson"], per_model["batchmig_log_likelihood"])[0]
    r_var = scipy.stats.pearsonr(per_model["variance_pearson"], per_model["tig_log_likelihood"])[0]
    rho_xll = scipy.stats.spearmanr(per_model["xll"], per_model["pearson"])[0]
    rho_xllr = scipy.stats.spearmanr(-per_model["xllr"], per_model["pearson"])[0]
    rho_xll_tal = scipy.stats.spearmanr(per_model["xll"], per_model["batchmig_log_likelihood"])[0]
    pooled = scipy.stats.pearsonr(models["pearson"], models["batchmig_log_likelihood"])[0]
    print(f"\nPearson(metacorrelation, BatchMIG test LL) across {len(per_model)} models: {r_meta:.3f} "
          f"(paper 0.762); pooled over model x split points: {pooled:.3f}")
    print(f"Pearson(variance metacorrelation, TIG test LL) across models: {r_var:.3f}")
    print(f"Spearman(XLL, metacorrelation) across models: {rho_xll:.3f}; (-XLLR, metacorrelation): {rho_xllr:.3f}; "
          f"(XLL, BatchMIG test LL): {rho_xll_tal:.3f}")
    rows += [{"quantity": "pearson_metacorrelation_vs_batchmig", "value": r_meta, "n": len(per_model)},
             {"quantity": "pearson_metacorrelation_vs_batchmig_pooled", "value": pooled, "n": len(models)},
             {"quantity": "pearson_variance_metacorrelation_vs_tig", "value": r_var, "n": len(per_model)},
             {"quantity": "spearman_xll_vs_metacorrelation", "value": rho_xll, "n": len(per_model)},
             {"quantity": "spearman_neg_xllr_vs_metacorrelation", "value": rho_xllr, "n": len(per_model)},
             {"quantity": "spearman_xll_vs_batchmig", "value": rho_xll_tal, "n": len(per_model)}]
    return pd.DataFrame(rows), per_model


def main(argv=None):
    argv = _checks.argv(argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--splits", type=int, default=25)
    p.add_argument("--dim", type=int, default=9)
    p.add_argument("--no-bnn", action="store_true", help="GP-based models only (fast)")
    p.add_argument("--suffix", default="", help="appended to the result file names, e.g. _d5")
    p.add_argument("--out-dir", type=pathlib.Path, default=None, help="write the CSVs here instead")
    args = p.parse_args(argv)
    global RESULTS
    if args.out_dir is not None:
        RESULTS = args.out_dir
    t0 = time.perf_counter()
    res = run(args.splits, args.dim, not args.no_bnn)
    summary, per_model = summarize(res)
    RESULTS.mkdir(parents=True, exist_ok=True)
    res["criteria"].to_csv(RESULTS / f"tal_criteria{args.suffix}.csv", index=False)
    res["models"].to_csv(RESULTS / f"tal_models{args.suffix}.csv", index=False)
    res["xll"].to_csv(RESULTS / f"tal_xll{args.suffix}.csv", index=False)
    per_model.to_csv(RESULTS / f"tal_per_model{args.suffix}.csv")
    summary.to_csv(RESULTS / f"tal_summary{args.suffix}.csv", index=False)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; wrote {RESULTS}/tal_*.csv")


if __name__ == "__main__":
    main()
