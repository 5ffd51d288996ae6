"""Runs the Neural Testbed for the agent zoo and writes one CSV per agent.

Usage:
    python -m jtk.testbed.zoo --grid quick                       # every zoo agent, 16 problems each
    python -m jtk.testbed.zoo --grid paper --agents dropout bbb  # the 420-problem paper grid
    python -m jtk.testbed.zoo --robustness --agents mlp dropout  # §6 study: activations and widths

Writes benchmarks/results/zoo_<agent>_<grid>.csv (zoo_<agent>_<grid>_seeds<N>.csv
with --seeds; one row per problem, the
columns of ``jtk.testbed.evaluate``; bayes_optimal adds ``ess``, the effective
sample size of its importance weights for that problem's training set) and,
with --robustness, benchmarks/results/zoo_robustness_<agent>.csv with the
columns ``setting`` ("activation=tanh", "hidden=20", ...) added.

Agent names are those of ``jtk.agents.names()`` plus ``sgmcmc_reference``
(the paper's 500 000-step SGLD schedule) and ``<ensemble agent>_K<size>``
(e.g. ``ensemble_K10``: the ensemble with 10 members instead of the reference's 100). Timing columns are seconds per
problem on this machine (jit compilation included, amortised over the chunk).
Run one of these at a time: each uses every core it is given.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from jtk import _checks
import jtk
from jtk import testbed
from jtk._paths import RESULTS

__all__ = ["main", "run"]  # see the package docstring

ZOO = ["dropout", "bbb", "hypermodel", "sgmcmc", "knn", "random_forest", "deep_kernel", "bayes_optimal"]
ROBUST_ACTIVATIONS = ("tanh", "swish", "sigmoid", "selu", "relu", "leaky_relu", "gelu")
ROBUST_HIDDEN = (5, 10, 20, 50, 100)
# The §6 study is many grids: a reduced grid with 250 test τ-samples and 250 posterior samples per problem.
ROBUST_GRID = dict(temperatures=(0.1, 0.5), num_train=(10, 100), seeds=2, num_test=250, num_samples=250)


def split_label(name: str) -> tuple[str, dict]:
    """``"ensemble_K10"`` → ("ensemble", {"num_members": 10}); ``"sgmcmc_reference"`` → the paper's schedule."""
    if name == "sgmcmc_reference":
        return "sgmcmc", {"preset": "reference"}
    m = re.fullmatch(r"(.+)_K(\d+)", name)
    if m and m.group(1) in jtk.agents.names():
        return m.group(1), {"num_members": int(m.group(2))}
    return name, {}


def make_agent(name: str, **overrides):
    """An agent by label (see :func:`split_label`)."""
    base, kw = split_label(name)
    return jtk.agents.make(base, **kw, **overrides)


def bayes_optimal_ess(agent, problems) -> pd.DataFrame:
    """ESS of the bayes_optimal agent per training group, refitting with the testbed's own keys and data."""
    rows, seen = [], set()
    for p in problems:
        key = (p.seed, p.num_train, p.temperature, p.input_dim)
        if key in seen:
            continue
        seen.add(key)
        _, data, _ = testbed.load_problem(p)
        n = p.num_train
        post = agent.fit(np.asarray(data.x[:n]), np.asarray(data.y[:n]), seed=testbed.agent_seed(p, 0),
                         prior=p.prior())
        diag = agent.diagnostics(post.state)
        rows.append(dict(zip(testbed.GROUP_COLUMNS, key), **diag))
    return pd.DataFrame(rows)


def run(name: str, problems, agent=None) -> pd.DataFrame:
    """Scores one agent of the zoo on ``problems`` (a list of :class:`jtk.testbed.Problem`) → the testbed's rows.

    ``name``: the agent's label, e.g. ``"dropout"`` or ``"ensemble_K10"`` (a registered agent, with ``_K<members>``
    for an ensemble's size); ``agent``: the agent itself (an object with ``fit``), else made from ``name``. For
    ``bayes_optimal`` the rows carry its effective sample size per training group.
    """
    _checks.instance("name", name, str, "an agent label (str)")
    problems = testbed.check_problems(problems)
    if agent is not None and not callable(getattr(agent, "fit", None)):
        raise TypeError(f"agent must be an agent (an object with fit) or None, got {type(agent).__name__} {agent!r}")
    agent = make_agent(name) if agent is None else agent
    t0 = time.perf_counter()
    df = testbed.evaluate(agent, problems, name=name, progress=False)
    if name == "bayes_optimal":
        ess = bayes_optimal_ess(agent, problems)
        df = df.merge(ess, on=testbed.GROUP_COLUMNS, how="left")
    print(f"{name}: {len(df)} problems in {time.perf_counter() - t0:.0f} s", flush=True)
    return df


def robustness(name: str) -> pd.DataFrame:
    frames = []
    settings = [("activation", a) for a in ROBUST_ACTIVATIONS] + [("hidden", h) for h in ROBUST_HIDDEN]
    for field, value in settings:
        kwargs = {"activation": value} if field == "activation" else {"hidden": (value, value)}
        problems = testbed.grid(**ROBUST_GRID, **kwargs)
        # The Bayes-optimal reference must use the generative model of the setting to stay exact.
        agent = make_agent(name, **kwargs) if name == "bayes_optimal" else None
        df = run(name, problems, agent)
        df.insert(1, "setting", f"{field}={value}")
        frames.append(df)
    return pd.concat(frames, ignore_index=True)




def main(argv=None) -> int:
    argv = _checks.argv(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", choices=("paper", "quick"), default="quick")
    parser.add_argument("--agents", nargs="+", default=ZOO)
    parser.add_argument("--seeds", type=int, default=None, help="seeds per grid cell (default: the grid's)")
    parser.add_argument("--robustness", action="store_true", help="run the §6 study instead of a grid")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--set", dest="hyperparameters", type=_checks.key_value_arg, action="append", default=[],
                        metavar="KEY=VALUE", help="hyperparameter for the agent, e.g. learning_rate=1e-3")
    parser.add_argument("--label", help="name of the configured agent in the results (one agent only), "
                                        "e.g. sgmcmc_tuned")
    args = parser.parse_args(argv)
    bad = [a for a in args.agents if split_label(a)[0] not in jtk.agents.names()]
    if bad:
        parser.error(f"--agents must be among {sorted(jtk.agents.names())}, sgmcmc_reference or "
                     f"<agent>_K<size>; got {bad}")
    if args.label and len(args.agents) != 1:
        parser.error(f"--label names one configured agent, got --agents {args.agents}")
    if args.hyperparameters and args.robustness:
        parser.error("--set applies to grid runs, not to --robustness")
    if args.hyperparameters and not args.label:
        parser.error("--set changes the agent: give its results a name with --label")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.agents:
        agent = make_agent(name, **dict(args.hyperparameters)) if args.hyperparameters else None
        name = args.label or name
        if args.robustness:
            df, path = robustness(name), args.out_dir / f"zoo_robustness_{name}.csv"
        else:
            problems = testbed.problems(args.grid, seeds=args.seeds)
            tag = args.grid if args.seeds is None else f"{args.grid}_seeds{args.seeds}"
            df, path = run(name, problems, agent), args.out_dir / f"zoo_{name}_{tag}.csv"
        df.to_csv(path, index=False)
        print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
