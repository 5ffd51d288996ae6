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
import os
import pathlib
import sys
import time

import numpy as np
import pandas as pd

import jtk
from jtk import bandit, testbed

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
MEASURED = RESULTS  # the lab preset's and the speed run's CSVs, read for comparisons and estimates
PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "bandit.md"


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


def main(argv=None) -> None:
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
    parser.add_argument("--resume", action="store_true",
                        help="keep the (agent, d, seed) runs already in this preset's CSVs (bandit and testbed) and "
                             "run only the missing ones: a long sweep can be split over several calls or restarted")
    parser.add_argument("--report-only", action="store_true",
                        help="no runs: the tables, correlations (and the paper section of docs/bandit.md) from the CSVs")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/bandit.md alone (paper preset)")
    parser.add_argument("--out-dir", type=pathlib.Path, help="write the CSVs (and bandit.md) here instead")
    args = parser.parse_args(argv)
    global RESULTS, PAGE
    if args.out_dir is not None:
        RESULTS, PAGE = args.out_dir, args.out_dir / "bandit.md"
    if args.speed:
        speed()
        return
    preset = bandit.PRESETS[args.preset]
    dims = args.dims or preset["input_dims"]
    horizon = args.horizon or preset["horizon"]
    num_problems = args.problems or preset["num_seeds"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = f"bandit_{args.preset}"
    files = {name: RESULTS / f"{tag}_{name}.csv" for name in ("regret", "testbed")}
    files["curve_runs"] = RESULTS / f"{tag}_curve_runs.csv.gz"  # every run's curve (100 points per problem)
    if args.report_only and not files["regret"].exists():
        parser.error(f"--report-only needs the CSVs of an earlier {args.preset} run; {files['regret']} is missing")
    keep = args.resume or args.report_only
    old = {name: pd.read_csv(f) if keep and f.exists() else pd.DataFrame() for name, f in files.items()}
    regret_rows = old["regret"].to_dict("records")
    curve_frames, testbed_frames = [old["curve_runs"]], [old["testbed"]]
    done = set(zip(old["regret"].agent, old["regret"].input_dim, old["regret"].agent_seed)) if regret_rows else set()
    scored = (set(zip(old["testbed"].agent, old["testbed"].input_dim, old["testbed"].seed))
              if len(old["testbed"]) else set())
    matrix_rate = None  # the machine's 2048² rate, measured once before this invocation's runs, kept with each run
    for d in [] if args.report_only else dims:
        if matrix_rate is None:
            from training_flops import gemm_gflops
            matrix_rate = round(gemm_gflops(), 1)
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
                                        "horizon": horizon, "total_regret": float(total),
                                        "seconds": res.seconds / num_problems,
                                        "load_avg_1min": os.getloadavg()[0],  # at the end of the run
                                        "matrix_gflops": matrix_rate})
                curves = res.frame(every=max(1, horizon // 100))
                curve_frames.append(curves.assign(agent_seed=s))
                pd.DataFrame(regret_rows).to_csv(files["regret"], index=False)  # each run kept as it ends
                pd.concat(curve_frames).to_csv(files["curve_runs"], index=False)
            missing = [s for s in range(args.seeds) if (name, d, s) not in scored]
            if missing:
                grid = testbed.grid(temperatures=(bandit.TEMPERATURE,), num_train=(10, 100, 1000),
                                    seeds=missing, input_dim=d, test_inputs=test_inputs)
                testbed_frames.append(testbed.evaluate(agent, grid, name=name).assign(test_inputs=test_inputs))
                pd.concat(testbed_frames).to_csv(files["testbed"], index=False)
    regret = pd.DataFrame(regret_rows)
    tb = pd.concat(testbed_frames)
    # mean ± s.e. of the cumulative regret over problems and seeds
    pd.concat(curve_frames).groupby(["agent", "input_dim", "t"])["cumulative_regret"].agg(["mean", "sem"]) \
        .reset_index().to_csv(RESULTS / f"{tag}_curves.csv", index=False)

    # One point per (agent, d, s): mean regret over the problems every agent at that d ran (a subset run with
    # --problems J' < J is compared on the same problems), mean d_KL over the testbed problems of seed s.
    common = regret.groupby(["input_dim", "agent"])["seed"].agg(set).groupby(level=0).agg(lambda v: set.intersection(*v))
    shared = regret[[seed in common[d] for d, seed in zip(regret.input_dim, regret.seed)]]
    per_run = shared.groupby(["agent", "input_dim", "agent_seed"])["total_regret"].mean()
    tb["kl"] = tb["kl"].clip(lower=1e-6)
    kl = tb.pivot_table(index=["agent", "input_dim", "seed"], columns="tau", values="kl", aggfunc="mean")
    kl.columns = [f"kl_{t}" for t in kl.columns]
    kl.index = kl.index.set_names("agent_seed", level="seed")
    points = kl.join(per_run, how="inner").reset_index()
    points.to_csv(RESULTS / f"{tag}_points.csv", index=False)
    corr_rows = []
    for d, sub in [*points.groupby("input_dim"), ("all", points)]:
        for metric in ("kl_1", "kl_10"):
            c = bandit.regret_correlation(sub, metric) if len(sub) >= 3 else \
                {"r": float("nan"), "lo": float("nan"), "hi": float("nan"), "num_points": len(sub)}  # too few to correlate
            corr_rows.append({"input_dim": d, "metric": metric, **c})
    corr = pd.DataFrame(corr_rows)
    corr.to_csv(RESULTS / f"{tag}_correlation.csv", index=False)

    total = regret.groupby(["agent", "input_dim"])["total_regret"].agg(["mean", "sem"])
    total["sec_per_problem"] = regret.groupby(["agent", "input_dim"])["seconds"].mean()
    total["runs"] = regret.groupby(["agent", "input_dim"]).size()
    scores = points.groupby(["agent", "input_dim"])[["kl_1", "kl_10"]].mean()
    table = total.join(scores).reset_index().sort_values(["input_dim", "mean"])
    table.to_csv(RESULTS / f"{tag}_summary.csv", index=False)
    pd.set_option("display.width", 160)
    print(f"\npreset {args.preset}: T = {horizon}; runs = problems × seeds per agent and d")
    print(table.round(4).to_string(index=False))
    print("\nlog-log Pearson correlation with total regret, bootstrap 5-95 %:")
    print(corr.round(3).to_string(index=False))
    if args.preset == "paper" and not args.no_docs:  # the lab preset's page section is written by hand
        write_docs(table, corr, regret, common, horizon)


def estimate_hours(agent: str, input_dim: int, measured: pd.DataFrame) -> tuple[float, str]:
    """Hours for one initialisation seed of the paper preset (20 problems × 50 000 steps) on this machine.

    In order of preference: measured at paper scale (this (agent, d) ran; compilation included); the steps per
    second of benchmarks/results/bandit_speed.csv (after compilation; ensembles at K = 100, plain ensembles at
    ensemble+'s rate, whose extra prior networks are evaluated once per action set); the lab preset's seconds per
    problem (T = 2000, 8 problems, compilation included). The last two were measured at d ≤ 10: for d = 50 they
    use d = 10 and are a lower bound.
    """
    paper = bandit.PRESETS["paper"]
    steps = paper["horizon"] * paper["num_seeds"]
    row = measured[(measured.agent == agent) & (measured.input_dim == input_dim)]
    if len(row):
        return float(row.seconds.mean()) * paper["num_seeds"] * paper["horizon"] / float(row.horizon.iloc[0]) / 3600, \
            f"measured at paper scale ({len(row)} run{'s' if len(row) > 1 else ''})"
    d = min(input_dim, 10)
    bound = ", d = 10 rate: a lower bound" if input_dim > 10 else ""
    speed = pd.read_csv(MEASURED / "bandit_speed.csv")
    like, members = ("ensemble+", 100.0) if agent in ("ensemble", "ensemble+") else (agent, None)
    fast = speed[(speed.agent == like) & (speed.input_dim == d)
                 & (speed.num_members == members if members else speed.num_members.isna())]
    if len(fast):
        rate = float(fast.agent_steps_per_s.mean())
        return steps / rate / 3600, f"bandit_speed.csv, {like}{' K = 100' if members else ''}: {rate:.0f} steps/s{bound}"
    lab = pd.read_csv(MEASURED / "bandit_lab_summary.csv")
    lab_row = lab[(lab.agent == agent) & (lab.input_dim == d)]
    if not len(lab_row) or agent in ("ensemble", "ensemble+"):
        return float("nan"), "no measurement"
    per_step = float(lab_row.sec_per_problem.iloc[0]) / bandit.PRESETS["lab"]["horizon"]
    return per_step * steps / 3600, f"lab preset: {per_step * 1e3:.2f} ms per problem-step{bound}"


def training_rate(measured: pd.DataFrame, agent_kwargs: dict) -> pd.DataFrame:
    """Achieved training GFLOP/s of the paper-scale runs, against the matrix-product rate of the machine they ran on
    (``matrix_gflops``, measured before the runs; measured now for runs that lack it)."""
    from training_flops import gemm_gflops, step_flops

    rows = []
    for (name, d), g in measured.groupby(["agent", "input_dim"]):
        agent = jtk.agents.make(name, **agent_kwargs.get(name, {}))
        steps_per_s = float(g.horizon.iloc[0]) / float(g.seconds.mean())  # J problems vmapped: horizon / (s / J)
        mflop = 128 * agent.num_networks * step_flops(agent, d, 2) / 1e6
        rows.append({"agent": name, "d": d, "networks trained per step": agent.num_networks,
                     "MFLOP per step": mflop, "agent-steps/s": steps_per_s, "GFLOP/s": mflop * steps_per_s / 1e3,
                     "load average after the runs": float(g.load_avg_1min.mean()) if "load_avg_1min" in g else np.nan,
                     "matrix rate, GFLOP/s": float(g.matrix_gflops.mean()) if "matrix_gflops" in g else np.nan})
    out = pd.DataFrame(rows)
    if out["matrix rate, GFLOP/s"].isna().any():
        out["matrix rate, GFLOP/s"] = out["matrix rate, GFLOP/s"].fillna(round(gemm_gflops(), 1))
    out["% of the matrix rate"] = 100 * out["GFLOP/s"] / out["matrix rate, GFLOP/s"]
    return out


def write_docs(table: pd.DataFrame, corr: pd.DataFrame, regret: pd.DataFrame, common, horizon: int) -> None:
    """The section 'bandit-paper' of docs/bandit.md: what ran, regret rows, correlations beside the lab preset's."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from _docs import md_table, write_section

    rows = table.assign(**{"problems × seeds": table["runs"].astype(int),
                           "total regret (mean ± s.e.)": [f"{m:.1f} ± {s:.1f}" for m, s in zip(table["mean"], table["sem"])],
                           "seconds per problem": [f"{v:.1f}" for v in table["sec_per_problem"]]})
    rows = rows[["input_dim", "agent", "problems × seeds", "total regret (mean ± s.e.)", "kl_1", "kl_10",
                 "seconds per problem"]].rename(columns={"input_dim": "d", "kl_1": "d_KL^1", "kl_10": "d_KL^10"})
    lab = pd.read_csv(MEASURED / "bandit_lab_correlation.csv")
    both = corr.merge(lab, on=["input_dim", "metric"], how="left", suffixes=("", "_lab"))
    fmt = lambda r, lo, hi: "" if pd.isna(r) else f"{r:.2f} [{lo:.2f}, {hi:.2f}]"  # noqa: E731
    corr_rows = pd.DataFrame({"d": both.input_dim.astype(str), "score": both.metric.map({"kl_1": "d_KL^1",
                                                                                         "kl_10": "d_KL^10"}),
                              "paper preset r [5 %, 95 %]": [fmt(*v) for v in zip(both.r, both.lo, both.hi)],
                              "points": both.num_points,
                              "lab preset r": [fmt(*v) for v in zip(both.r_lab, both.lo_lab, both.hi_lab)]})
    cols = {"seconds": ("seconds", "mean"), "horizon": ("horizon", "first")}
    for column in ("load_avg_1min", "matrix_gflops"):
        if column in regret:
            cols[column] = (column, "mean")
    measured = regret.groupby(["agent", "input_dim", "agent_seed"]).agg(**cols).reset_index()
    profile = training_rate(measured, bandit.PRESETS["paper"].get("agent_kwargs", {}))
    est = []
    for agent in bandit.PAPER_AGENTS:
        for d in bandit.PRESETS["paper"]["input_dims"]:
            h, how = estimate_hours(agent, d, measured)
            est.append({"agent": agent, "d": d, "hours per seed (20 problems × 50 000 steps)": round(h, 2),
                        "from": how})
    wall = regret["seconds"].sum()
    orders = []
    for d, g in table.groupby("input_dim"):
        by = {c: " < ".join(g.sort_values(c)["agent"]) for c in ("mean", "kl_10", "kl_1")}
        orders.append(f"d = {d}: regret {by['mean']}; d_KL^10 {by['kl_10']}"
                      + (" (the same order)" if by["kl_10"] == by["mean"] else "")
                      + f"; d_KL^1 {by['kl_1']}" + (" (the same order)" if by["kl_1"] == by["mean"] else ""))
    lines = [f"Regenerated by `python benchmarks/bandit_study.py --preset paper` (with `--agents`, `--seeds`, "
             f"`--problems` and `--resume` for the subset below; T = {horizon}; 2-core CPU machine). Bandit wall "
             f"time of these runs: {wall / 3600:.2f} h in all.", "",
             md_table(rows, "{:.3f}", index=False), "",
             "The agents in order, lowest first: " + ". ".join(orders) + ".", "",
             "Each point of the correlation is one (agent, d, seed): the mean total regret over the problems "
             "every agent at that d ran (" + "; ".join(f"d = {d}: {len(s)}" for d, s in common.items())
             + " problems) against the mean d_KL^τ on testbed problems at ρ = 0.1 with the same d. Log–log "
             "Pearson r with a bootstrap 5–95 % interval, beside the lab preset's (T = 2000, K = 10):", "",
             md_table(corr_rows, index=False), "",
             "Cost of the whole paper preset per agent, d and initialisation seed: 'measured' rows on the machine "
             "of the runs, the others from the lab preset's or `bandit_speed.csv`'s rates on the machine that "
             "measured them:", "",
             md_table(pd.DataFrame(est), "{:.2f}", index=False), "",
             "Where the time goes: the training FLOPs of a step (3 × 2 × Σ fan_in · fan_out per replay row, × 128 "
             "rows × the networks trained, as `benchmarks/training_flops.py` counts them) at the measured steps per "
             "second, against the float32 2048 × 2048 matrix-product rate of the machine the runs ran on, measured "
             "before them:", "",
             md_table(profile, "{:.1f}", index=False)]
    write_section("bandit-paper", "\n".join(lines), PAGE)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\nwall {time.perf_counter() - t0:.0f} s")
