"""Known limits of the leaderboard on every problem of a grid: two agents whose scores are known exactly.

    python -m jtk.testbed.known_limits                  # the 420-problem paper grid
    python -m jtk.testbed.known_limits --grid classification

* An agent that knows the true environment (``jtk.testbed.OracleAgent``, exact
  enumeration) must get ``|d_KL^τ| < 1e-5`` on every problem.
* The uniform agent must get the closed form mean over test τ-samples of
  log p(y_1:τ) + τ log K, recomputed here in float64 numpy from the
  environment's logits.

Prints the worst case of each and writes benchmarks/results/known_limits_<grid>.csv.
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
import pandas as pd
from scipy.special import log_softmax

from jtk import _checks
from jtk import testbed
from jtk._paths import RESULTS

__all__ = ["main"]  # see the package docstring


def main(argv=None) -> None:
    argv = _checks.argv(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default="paper", choices=sorted(testbed.GRIDS))
    parser.add_argument("--out-dir", type=pathlib.Path, default=None, help="write the CSV here instead")
    args = parser.parse_args(argv)
    results = RESULTS if args.out_dir is None else args.out_dir
    problems = testbed.problems(args.grid)
    oracle = testbed.evaluate(testbed.OracleAgent(problems), problems, name="oracle")
    uniform = testbed.evaluate("uniform", problems)
    closed = []
    for _, row in uniform.iterrows():
        p = next(q for q in problems if (q.temperature, q.num_train, q.tau, q.seed, q.input_dim) ==
                 (row.temperature, row.num_train, row.tau, row.seed, row.input_dim))
        _, _, test = testbed.load_problem(p)
        logp = log_softmax(np.asarray(test.true_logits, np.float64), -1)
        ll = logp[np.arange(len(test.y)), np.asarray(test.y)].reshape(-1, p.tau).sum(-1)
        closed.append(float(np.mean(ll + p.tau * np.log(p.num_classes))))
    uniform["closed_form"] = closed
    uniform["rel_error"] = (uniform.kl - uniform.closed_form).abs() / uniform.closed_form.abs().clip(lower=1.0)
    out = pd.DataFrame({
        "grid": [args.grid], "problems": [len(problems)],
        "oracle_max_abs_kl": [float(oracle.kl.abs().max())],
        "oracle_all_below_1e-5": [bool((oracle.kl.abs() < 1e-5).all())],
        "uniform_max_rel_error": [float(uniform.rel_error.max())],
        "uniform_mean_kl_1": [float(uniform[uniform.tau == 1].kl.mean())],
        "uniform_mean_kl_10": [float(uniform[uniform.tau == 10].kl.mean())],
    })
    results.mkdir(parents=True, exist_ok=True)
    out.to_csv(results / f"known_limits_{args.grid}.csv", index=False)
    for key, value in out.iloc[0].items():
        print(f"{key:26s} {value}")


if __name__ == "__main__":
    main()
