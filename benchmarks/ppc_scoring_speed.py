"""Speed of the PPC study's scoring and Fig. 3 TAL, before / after the precomputed oracle kernel (issue #47).

  python benchmarks/ppc_scoring_speed.py [--splits 4] [--repeats 3] [--tal-splits 2] [--tal-dims 1 3 5 7 9]
      [--moment-families Ensemble Dropout BBB NNG FBNN HMC]

At the paper's sizes (d = 9; 45 training, 200 pool, 500 test points; batch 7):

* **scoring**: ``jtk.ppc.synthetic_study.score`` for several settings on each split, ``fast=False`` (the public
  functions one by one: the oracle's covariance re-validated and its correlations recomputed by
  ``ppc.metacorrelation``, the oracle GP refitted by kernel evaluations in ``active.evaluate_prediction``) and
  ``fast=True`` (the split's oracle kernel matrix and correlations from ``contexts``). The settings are models
  whose moments need no training: GP-RBF with fixed lengthscales (exact covariances) and the oracle seen through
  S = 3, 10, 100 draws (sample covariances), plus with ``--moment-families`` one trained group of each named
  family; ``moments`` is timed separately (unchanged by the speed-up) and enters the stage's ratio.
* **Fig. 3**: one ``active.run_tal`` of 10 rounds with the oracle as selection and prediction model, per criterion,
  without and with ``gram`` (its ``prediction_gram`` included in the after time).

Before and after run in one process, interleaved (the order alternates between repeats); each figure is the best of
the repeats. Prints the equivalence (max |difference| of every score column, identical queries) and a Markdown
table with the load average, then the paper preset's estimate scaled from docs/ppc.md's "Measured cost".
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from jtk.envs.gp import NOISE_VAR, ReLUKernelGP
from jtk.ppc import active
from jtk.ppc import synthetic_study as study
from jtk.regression.gp import GPRegression, MonteCarloGP

# docs/ppc.md, preset quick_all, "Measured cost": the paper preset's estimate in minutes
BEFORE_MINUTES = {"training": 38.1, "scoring": 36.1, "Fig. 3": 12.6}
COLUMNS = ("pearson", "variance_pearson", "batchmig_ll", "mig_ll", "tig_ll", "marginal_ll")


def settings(ctx, i):
    """(label, mean, cov, moments seconds) of the untrained settings on one split."""
    s = ctx.split
    exact = ctx.oracle
    out = []
    for label, post, samples in (
            ("GP-RBF l=1", GPRegression(noise_var=NOISE_VAR, lengthscale=1.0, ard=False).fit(s.x_train, s.y_train), 0),
            ("GP-RBF l=4", GPRegression(noise_var=NOISE_VAR, lengthscale=4.0, ard=False).fit(s.x_train, s.y_train), 0),
            *((f"oracle S={m}", MonteCarloGP(exact, m).fit(s.x_train, s.y_train, seed=i), m) for m in (3, 10, 100))):
        t0 = time.perf_counter()
        mean, cov = study.moments(post, ctx.x_all, samples)
        out.append((label, mean, cov, time.perf_counter() - t0))
    return out


def trained_settings(families, splits, ctxs, epochs: int):
    """(ctx, label, mean, cov, moments seconds) of one group per family (H = 50, lr = 1e-3, ``epochs``) on the splits;
    the moments of the first split (which compiles) are timed but left out of the mean."""
    import jax

    preset = dict(study.preset_for("paper"), units=(50,), lrs=(1e-3,), epochs=(epochs,))
    out = []
    for fam in families:
        group = study.grid(preset, [fam])[0]
        posts = study.train_group(group, splits, jax.random.PRNGKey(0), max(preset["samples"]), epochs)
        for st in group.settings:
            for i, ctx in enumerate(ctxs):
                t0 = time.perf_counter()
                mean, cov = study.moments(posts[i][st.samples], ctx.x_all, st.samples)
                out.append((ctx, st.label, mean, cov, time.perf_counter() - t0 if i else np.nan))
    return out


def scoring(num_splits: int, repeats: int, families=(), epochs: int = 20):
    splits = study.make_splits(9, num_splits, "independent", seed=121, num_pool=study.PAPER_NUM_POOL,
                               num_test=study.PAPER_NUM_TEST)
    ctxs = study.contexts(splits)
    oracle = GPRegression(kernel=ReLUKernelGP(9).kernel, noise_var=NOISE_VAR)  # as run_study builds it
    problems = [(ctx, *row) for i, ctx in enumerate(ctxs) for row in settings(ctx, i)]
    trained = trained_settings(families, splits, ctxs, epochs)
    moment_s = float(np.nanmean([p[4] for p in (trained or problems)]))
    problems += trained
    best = {False: np.inf, True: np.inf}
    rows = {}
    loads = []
    for r in range(repeats):
        for fast in ((False, True) if r % 2 == 0 else (True, False)):
            t0 = time.perf_counter()
            rows[fast] = [study.score(ctx, mean, cov, oracle, fast=fast) for ctx, _, mean, cov, _ in problems]
            best[fast] = min(best[fast], (time.perf_counter() - t0) / len(problems))
            loads.append(os.getloadavg()[0])
    diff = {c: max(abs(a[c] - b[c]) for a, b in zip(rows[False], rows[True])) for c in COLUMNS}
    labels = sorted({p[1] for p in problems})
    return best, moment_s, diff, len(problems), labels, float(np.mean(loads)), len(trained)


def tal(num_splits: int, dims, repeats: int):
    times = {False: [], True: []}
    worst_ll, same_queries, runs = 0.0, True, 0
    loads = []
    for d in dims:
        splits = study.make_splits(d, num_splits, "independent", seed=121, num_pool=study.PAPER_NUM_POOL,
                                   num_test=study.PAPER_NUM_TEST)
        exact = GPRegression(kernel=ReLUKernelGP(d).kernel, noise_var=NOISE_VAR)
        for i, sp in enumerate(splits):
            for c in active.CRITERIA:
                best, res = {False: np.inf, True: np.inf}, {}
                for r in range(repeats):
                    for use in ((False, True) if r % 2 == 0 else (True, False)):
                        t0 = time.perf_counter()
                        gram = active.prediction_gram(sp, exact) if use else None
                        res[use] = active.run_tal(sp, exact, exact, c, num_rounds=10, seed=i, gram=gram)
                        best[use] = min(best[use], time.perf_counter() - t0)
                    loads.append(os.getloadavg()[0])
                for use in best:
                    times[use].append(best[use])
                worst_ll = max(worst_ll, float(np.max(np.abs(res[False].test_log_likelihood
                                                             - res[True].test_log_likelihood))))
                same_queries &= bool(np.array_equal(res[False].queried, res[True].queried))
                runs += 1
    return {k: float(np.mean(v)) for k, v in times.items()}, worst_ll, same_queries, runs, float(np.mean(loads))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--splits", type=int, default=4, help="data sets for the scoring (5 settings each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tal-splits", type=int, default=2, help="data sets per dimension for the Fig. 3 runs")
    p.add_argument("--tal-dims", type=int, nargs="+", default=[1, 3, 5, 7, 9])
    p.add_argument("--moment-families", nargs="*", default=[],
                   help="also train one group of these families (H = 50, lr = 1e-3) on the splits: their settings join "
                        "the scoring and their moments give the moments time (the untrained settings' otherwise)")
    p.add_argument("--epochs", type=int, default=20, help="training epochs of --moment-families (moments do not "
                                                          "depend on them)")
    args = p.parse_args(argv)
    if min(args.splits, args.repeats, args.tal_splits) < 1:
        p.error("--splits, --repeats and --tal-splits must be >= 1")
    load0 = os.getloadavg()[0]
    bad = [f for f in args.moment_families if f not in study.PAPER_FAMILIES + study.EXTRA_FAMILIES]
    if bad:
        p.error(f"--moment-families must be among {study.PAPER_FAMILIES + study.EXTRA_FAMILIES}, got {bad}")
    best, moment_s, diff, n_rows, labels, load_s, n_trained = scoring(args.splits, args.repeats,
                                                                      args.moment_families, args.epochs)
    tal_t, tal_ll, tal_same, n_runs, load_t = tal(args.tal_splits, args.tal_dims, args.repeats)
    print(f"equivalence, scoring ({n_rows} rows: {', '.join(labels)} on {args.splits} splits): max |fast - old| "
          + ", ".join(f"{c} {v:.2g}" for c, v in diff.items()))
    print(f"equivalence, Fig. 3 ({n_runs} TAL runs of 10 rounds): identical queries {tal_same}, "
          f"max |test LL difference| {tal_ll:.2g}")
    print()
    print(f"{os.cpu_count()} CPU cores, load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"best of {args.repeats} repeats, before and after interleaved in one process.")
    print()
    print("| stage | unit | before (s) | after (s) | after / before | load average |")
    print("|---|---|---|---|---|---|")
    rs = best[True] / best[False]
    rm = (best[True] + moment_s) / (best[False] + moment_s)
    rt = tal_t[True] / tal_t[False]
    print(f"| scoring: `score` | per setting and data set ({n_rows} rows) | {best[False]:.4f} | {best[True]:.4f} | "
          f"{rs:.3f} | {load_s:.2f} |")
    what = (f"{', '.join(args.moment_families)}: one group each, {n_trained} rows, the first split's compiling call "
            f"left out" if n_trained else "the untrained settings")
    print(f"| scoring: `moments` ({what}) + `score` | per setting and data set | {best[False] + moment_s:.4f} | "
          f"{best[True] + moment_s:.4f} | {rm:.3f} | {load_s:.2f} |")
    print(f"| Fig. 3: `run_tal`, 10 rounds (d = {', '.join(map(str, args.tal_dims))}) | per TAL run ({n_runs} runs, "
          f"4 criteria) | {tal_t[False]:.4f} | {tal_t[True]:.4f} | {rt:.3f} | {load_t:.2f} |")
    print()
    b = BEFORE_MINUTES
    new_score, new_fig3 = b["scoring"] * rm, b["Fig. 3"] * rt
    print("| paper preset (docs/ppc.md, quick_all estimate) | before (min) | after (min) | arithmetic |")
    print("|---|---|---|---|")
    print(f"| training | {b['training']:.1f} | {b['training']:.1f} | unchanged here |")
    print(f"| scoring | {b['scoring']:.1f} | {new_score:.1f} | {b['scoring']} × {rm:.3f} |")
    print(f"| Fig. 3 | {b['Fig. 3']:.1f} | {new_fig3:.1f} | {b['Fig. 3']} × {rt:.3f} |")
    print(f"| total | {sum(b.values()):.1f} | {b['training'] + new_score + new_fig3:.1f} | |")


if __name__ == "__main__":
    main()
