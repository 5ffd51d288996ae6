"""Why FBNN ranks last by XLLR on real data: the test correlations each family predicts (issue #47).

  python benchmarks/ppc_real_correlations.py [--seeds 3] [--datasets boston concrete] [--no-docs]

In Table 1 (``jtk.ppc.real_study``) FBNN has the worst XLLR under every other family's reference, on every seed.
This script fits each family's derived setting (the Table 1 run's ``derive_settings`` from the synthetic study's
runs, trained by ``jtk.ppc.synthetic_study.train_group`` with the Oracle's noise variance, as the study trains
them) on the first ``--seeds`` splits of each data set, and reports per family the mean correlation between the
predictions at two test points (off-diagonal entries of the predictive correlation matrix of f over the test set),
the mean predictive standard deviation of f, and the test RMSE of the mean. Two rows frame them: the Oracle
(ARD RBF GP by ML-II on train + pool, Table 1's prediction model) and the oracle ReLU-kernel GP *prior* of the
synthetic study, the prior FBNN's functional KL pulled it towards before Table 1's FBNN took an RBF prior fitted by
ML-II (``jtk.ppc.real_study.FBNN_PRIOR``); FBNN is shown with both, and with the RBF prior trained at the grid's
largest learning rate for the paper's 1,000 epochs.

Writes ``benchmarks/results/ppc_real_correlations.csv`` and the section "ppc-real-correlations" of docs/ppc.md.
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np
import pandas as pd

from jtk import _docs
from jtk._paths import RESULTS
from jtk.envs.gp import ReLUKernelGP
from jtk.ppc import active, real_study
from jtk.ppc import synthetic_study as study


def summary(name: str, dataset: str, seed: int, mean, cov, y_test) -> dict:
    """Mean off-diagonal test correlation, mean standard deviation of f, RMSE of the mean."""
    sd = np.sqrt(np.clip(np.diag(cov), 1e-12, None))
    corr = cov / np.outer(sd, sd)
    off = corr[np.triu_indices(len(sd), 1)]
    rmse = float(np.sqrt(np.mean((np.asarray(y_test) - mean) ** 2))) if mean is not None else np.nan
    return {"dataset": dataset, "seed": seed, "model": name, "mean_test_correlation": float(off.mean()),
            "mean_abs_test_correlation": float(np.abs(off).mean()), "mean_sd_f": float(sd.mean()), "rmse": rmse}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=3, help="splits per data set (default 3; Table 1: 10)")
    p.add_argument("--datasets", nargs="+", default=["boston", "concrete"], choices=sorted(real_study.DATASETS))
    p.add_argument("--no-docs", action="store_true", help="write the CSV, leave docs/ppc.md alone")
    args = p.parse_args(argv)
    if args.seeds < 1:
        p.error(f"--seeds must be at least 1, got {args.seeds}")
    settings = real_study.derive_settings(pd.read_csv(real_study.STUDY_RUNS))
    groups = real_study.groups(real_study.PRESETS["quick"], settings)
    rows, load0, t0 = [], os.getloadavg()[0], time.perf_counter()
    for name in args.datasets:
        df = real_study.DATASETS[name].load()
        splits = [active.split_data(df, target="target", seed=s) for s in range(args.seeds)]
        fits = [real_study.oracle_for(s, i) for i, s in enumerate(splits)]
        noise = float(np.median([hp["noise_var"] for _, hp in fits]))
        prior = ReLUKernelGP(splits[0].x_train.shape[1])
        for i, (s, (oracle, _)) in enumerate(zip(splits, fits)):
            rows.append(summary("Oracle (posterior)", name, i,
                                *oracle.fit(s.x_train, s.y_train).mean_and_covariance(s.x_test), s.y_test))
            rows.append(summary("ReLU-kernel GP prior (the oracle's)", name, i, None, prior.kernel(s.x_test), s.y_test))
        for gi, g in enumerate(groups):
            st = g.settings[0]
            variants = [(g.family, g, real_study.FBNN_PRIOR)]
            if g.family == "FBNN":  # the ReLU prior it had before, and the RBF prior trained longer
                longer = g._replace(lr=1e-2, epochs=1000)
                variants += [("FBNN, RELU prior (before)", g, "relu"),
                             ("FBNN, RBF prior, lr 0.01 × 1,000 steps (not the derived setting)", longer, "rbf")]
            for label, group, prior in variants:
                posts = study.train_group(group, splits, jax.random.fold_in(jax.random.PRNGKey(0), gi), st.samples,
                                          group.epochs, noise_var=noise, fbnn_prior=prior)
                for i, s in enumerate(splits):
                    mean, cov = study.moments(posts[i][st.samples], s.x_test, st.samples)
                    rows.append(summary(label, name, i, mean, cov, s.y_test))
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
    runs = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / "ppc_real_correlations.csv", index=False)
    table = runs.groupby(["dataset", "model"], sort=False)[
        ["mean_test_correlation", "mean_abs_test_correlation", "mean_sd_f", "rmse"]].mean().reset_index()
    _docs.publish("ppc-real-correlations", (
        "Regenerated by `python benchmarks/ppc_real_correlations.py`: each family's derived setting (the settings "
        f"of Table 1) fitted on the first {args.seeds} splits of each data set with the Oracle's noise variance, as "
        "`jtk.ppc.real_study` fits them; means over the splits. `mean_test_correlation`: the mean correlation of "
        "f between two test points; `mean_sd_f`: the mean predictive standard deviation of f (targets "
        "standardised); `rmse`: of the predictive mean (empty for the prior)."),
        table, _docs.DOCS / "ppc.md", load_start=load0, write=not args.no_docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
