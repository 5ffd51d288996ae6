"""The §5 study: Thompson-sampling regret of the testbed agents, and its correlation with d_KL^1 / d_KL^10.

    python benchmarks/bandit_study.py                    # lab preset (K = 10, T = 2000, 8 problems, 5 seeds)
    python benchmarks/bandit_study.py --preset paper     # App. E: T = 50 000, 20 problems, d ∈ {2, 10, 50}
    python benchmarks/bandit_study.py --speed            # steps per second only (ensemble+ K = 10, d = 2)

For each input dimension d, agent and initialisation seed s it runs the bandit
on J problems (``jtk.bandit.run``, one vmapped scan) and the testbed on
problems at the bandit's temperature 0.1 with the same d and testbed seed s
(num_train ∈ {10, 100, 1000}, τ ∈ {1, 10}). One point per (agent, d, s):
mean total regret over the J problems vs mean d_KL^τ; Pearson correlation on
log scales with bootstrap 5–95 % intervals, per d and pooled (paper Fig. 8/9,
16/17). Writes benchmarks/results/bandit_<preset>_*.csv and prints the tables.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
import pandas as pd

import jtk
from jtk import bandit, testbed

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def speed(horizon: int = 2000, num_problems: int = 8) -> None:
    problems = bandit.make_problems(2, seeds=num_problems)
    for name, kw in (("ensemble+", {"num_members": 10}), ("mlp", {})):
        bandit.run(name, problems=problems, horizon=bandit.CHUNK, agent_kwargs=kw, progress=False)  # compile
        res = bandit.run(name, problems=problems, horizon=horizon, agent_kwargs=kw, progress=False, agent_seed=1)
        steps = horizon * num_problems
        print(f"{name} {kw}: {steps} agent-steps ({num_problems} problems × T = {horizon}) in {res.seconds:.2f} s "
              f"= {steps / res.seconds:.0f} steps/s ({horizon / res.seconds:.0f} time steps/s for all problems)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(bandit.PRESETS), default="lab")
    parser.add_argument("--agents", nargs="+", default=list(bandit.PAPER_AGENTS))
    parser.add_argument("--dims", nargs="+", type=int)
    parser.add_argument("--horizon", type=int)
    parser.add_argument("--problems", type=int, help="bandit problems J per run")
    parser.add_argument("--seeds", type=int, default=5, help="initialisation seeds (points per agent)")
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    if args.speed:
        speed()
        return
    preset = bandit.PRESETS[args.preset]
    dims = args.dims or preset["input_dims"]
    horizon = args.horizon or preset["horizon"]
    num_problems = args.problems or preset["num_seeds"]
    RESULTS.mkdir(exist_ok=True)
    tag = f"bandit_{args.preset}"
    regret_rows, curve_frames, testbed_frames = [], [], []
    for d in dims:
        problems = bandit.make_problems(d, seeds=num_problems)
        for name in args.agents:
            kw = preset["agent_kwargs"].get(name, {})
            agent = jtk.agents.make(name, **kw)
            for s in range(args.seeds):
                res = bandit.run(agent, problems=problems, horizon=horizon, agent_seed=s, name=name)
                for seed, total in zip(problems.seeds, res.total_regret):
                    regret_rows.append({"agent": name, "input_dim": d, "agent_seed": s, "seed": seed,
                                        "total_regret": float(total), "seconds": res.seconds / num_problems})
                curves = res.frame(every=max(1, horizon // 100))
                curve_frames.append(curves.assign(agent_seed=s))
            grid = testbed.grid(temperatures=(bandit.TEMPERATURE,), num_train=(10, 100, 1000),
                                seeds=range(args.seeds), input_dim=d)
            testbed_frames.append(testbed.evaluate(agent, grid, name=name).assign(input_dim=d))
            pd.DataFrame(regret_rows).to_csv(RESULTS / f"{tag}_regret.csv", index=False)
            pd.concat(testbed_frames).to_csv(RESULTS / f"{tag}_testbed.csv", index=False)
    regret = pd.DataFrame(regret_rows)
    tb = pd.concat(testbed_frames)
    curves = pd.concat(curve_frames)
    curves.groupby(["agent", "input_dim", "t"])["cumulative_regret"].agg(["mean", "sem"]).reset_index() \
        .to_csv(RESULTS / f"{tag}_curves.csv", index=False)

    # One point per (agent, d, s): mean regret over the J problems, mean d_KL over the testbed problems of seed s.
    per_run = regret.groupby(["agent", "input_dim", "agent_seed"])["total_regret"].mean()
    tb["kl"] = tb["kl"].clip(lower=1e-6)
    kl = tb.pivot_table(index=["agent", "input_dim", "seed"], columns="tau", values="kl", aggfunc="mean")
    kl.columns = [f"kl_{t}" for t in kl.columns]
    kl.index = kl.index.set_names("agent_seed", level="seed")
    points = kl.join(per_run, how="inner").reset_index()
    points.to_csv(RESULTS / f"{tag}_points.csv", index=False)
    corr_rows = []
    for d, sub in [*points.groupby("input_dim"), ("all", points)]:
        for metric in ("kl_1", "kl_10"):
            c = bandit.regret_correlation(sub, metric)
            corr_rows.append({"input_dim": d, "metric": metric, **c})
    corr = pd.DataFrame(corr_rows)
    corr.to_csv(RESULTS / f"{tag}_correlation.csv", index=False)

    total = regret.groupby(["agent", "input_dim"])["total_regret"].agg(["mean", "sem"])
    total["sec_per_problem"] = regret.groupby(["agent", "input_dim"])["seconds"].mean()
    scores = points.groupby(["agent", "input_dim"])[["kl_1", "kl_10"]].mean()
    table = total.join(scores).reset_index().sort_values(["input_dim", "mean"])
    table.to_csv(RESULTS / f"{tag}_summary.csv", index=False)
    pd.set_option("display.width", 160)
    print(f"\npreset {args.preset}: T = {horizon}, {num_problems} problems × {args.seeds} seeds per agent and d")
    print(table.round(4).to_string(index=False))
    print("\nlog-log Pearson correlation with total regret, bootstrap 5-95 %:")
    print(corr.round(3).to_string(index=False))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\nwall {time.perf_counter() - t0:.0f} s")
