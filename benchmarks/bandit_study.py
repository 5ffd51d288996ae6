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

import pandas as pd

import jtk
from jtk import bandit, testbed

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def speed(horizon: int = 2000, num_problems: int = 8) -> None:
    """Steps per second after compilation, d = 2 and 10; writes bandit_speed.csv."""
    import os

    rows = []
    for d in (2, 10):
        problems = bandit.make_problems(d, seeds=num_problems)
        for name, kw in (("ensemble+", {"num_members": 10}), ("mlp", {}), ("ensemble+", {"num_members": 100})):
            t0 = time.perf_counter()
            bandit.run(name, problems=problems, horizon=bandit.CHUNK, agent_kwargs=kw, progress=False)
            compile_s = time.perf_counter() - t0
            res = bandit.run(name, problems=problems, horizon=horizon, agent_kwargs=kw, progress=False,
                             agent_seed=1)
            steps = horizon * num_problems
            rows.append({"agent": name, **kw, "input_dim": d, "problems": num_problems, "horizon": horizon,
                         "seconds": round(res.seconds, 2), "agent_steps_per_s": round(steps / res.seconds),
                         "first_chunk_with_compile_s": round(compile_s, 1),
                         "load_avg_1min": round(os.getloadavg()[0], 2)})
            print(rows[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(RESULTS / "bandit_speed.csv", index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(bandit.PRESETS), default="lab")
    parser.add_argument("--agents", nargs="+", default=list(bandit.PAPER_AGENTS))
    parser.add_argument("--dims", nargs="+", type=int)
    parser.add_argument("--horizon", type=int)
    parser.add_argument("--problems", type=int, help="bandit problems J per run")
    parser.add_argument("--seeds", type=int, default=5, help="initialisation seeds (points per agent)")
    parser.add_argument("--test-inputs", choices=["auto", "iid", "polyadic"], default="auto",
                        help="testbed test inputs: auto = iid for d = 2 (the paper grid), polyadic for d > 2 "
                             "(docs/reference.md, 'The grid': iid inputs in high dimension make τ = 10 nearly marginal)")
    parser.add_argument("--reuse-regret", action="store_true",
                        help="keep the bandit runs already in the regret CSV and rerun only the testbed")
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
    done = set()
    if args.reuse_regret and (RESULTS / f"{tag}_regret.csv").exists():
        old = pd.read_csv(RESULTS / f"{tag}_regret.csv")
        regret_rows = old.to_dict("records")
        done = set(zip(old.agent, old.input_dim, old.agent_seed))
    for d in dims:
        problems = bandit.make_problems(d, seeds=num_problems)
        test_inputs = args.test_inputs if args.test_inputs != "auto" else ("iid" if d == 2 else "polyadic")
        for name in args.agents:
            kw = preset["agent_kwargs"].get(name, {})
            agent = jtk.agents.make(name, **kw)
            for s in range(args.seeds):
                if (name, d, s) in done:
                    continue
                res = bandit.run(agent, problems=problems, horizon=horizon, agent_seed=s, name=name)
                for seed, total in zip(problems.seeds, res.total_regret):
                    regret_rows.append({"agent": name, "input_dim": d, "agent_seed": s, "seed": seed,
                                        "total_regret": float(total), "seconds": res.seconds / num_problems})
                curves = res.frame(every=max(1, horizon // 100))
                curve_frames.append(curves.assign(agent_seed=s))
            grid = testbed.grid(temperatures=(bandit.TEMPERATURE,), num_train=(10, 100, 1000),
                                seeds=range(args.seeds), input_dim=d, test_inputs=test_inputs)
            testbed_frames.append(testbed.evaluate(agent, grid, name=name).assign(test_inputs=test_inputs))
            pd.DataFrame(regret_rows).to_csv(RESULTS / f"{tag}_regret.csv", index=False)
            pd.concat(testbed_frames).to_csv(RESULTS / f"{tag}_testbed.csv", index=False)
    regret = pd.DataFrame(regret_rows)
    tb = pd.concat(testbed_frames)
    if curve_frames:  # mean ± s.e. of the cumulative regret over problems and seeds (kept as is with --reuse-regret)
        pd.concat(curve_frames).groupby(["agent", "input_dim", "t"])["cumulative_regret"].agg(["mean", "sem"]) \
            .reset_index().to_csv(RESULTS / f"{tag}_curves.csv", index=False)

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
