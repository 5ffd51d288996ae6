"""The ``jtk`` command.

    jtk sweep --agents mlp ensemble ensemble+ --results DIR [--sweep small|paper] [--grid quick|paper]
    jtk exercises build|check
    jtk grade NOTEBOOK.ipynb [...] [--json]
    jtk bandit --agent NAME [--input-dim D] [--horizon T] [--seeds J] [--set KEY=VALUE ...] [--out FILE.csv]

    jtk testbed --agent NAME [--grid paper|quick|classification] [--seeds N] [--out FILE.csv]
                [--set KEY=VALUE ...] [--scheduler local|dask|tcp://HOST:PORT]

prints the leaderboard row (mean d_KL^1 and d_KL^10 with standard errors over
seeds, accuracy, ECE, seconds) and writes one CSV row per problem.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time

import pandas as pd


def _hyperparameter(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = value
    return key.strip(), parsed


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from jtk import agents, testbed

    parser = argparse.ArgumentParser(prog="jtk", description="jtk: joint predictive uncertainty toolkit")
    sub = parser.add_subparsers(dest="command", required=True)
    tb = sub.add_parser("testbed", help="score an agent on the Neural Testbed")
    tb.add_argument("--agent", required=True, choices=agents.names(), help="agent name")
    tb.add_argument("--grid", default="quick", choices=sorted(testbed.GRIDS), help="problem grid (default quick)")
    tb.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: the grid's)")
    tb.add_argument("--out", default=None, help="CSV file for the per-problem rows")
    tb.add_argument("--set", dest="hyperparameters", type=_hyperparameter, action="append", default=[],
                    metavar="KEY=VALUE", help="agent hyperparameter, e.g. --set num_members=10")
    tb.add_argument("--scheduler", default="local",
                    help="local (in-process, default), dask (embedded 2-worker LocalCluster on loopback) "
                         "or tcp://HOST:PORT of a running Dask scheduler")
    tb.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    ex = sub.add_parser("exercises", help="build exercises/ from solutions/, or check it is up to date")
    ex.add_argument("action", choices=["build", "check"])
    ex.add_argument("--solutions", default="solutions", help="directory of solution notebooks")
    ex.add_argument("--exercises", default="exercises", help="directory of generated exercise notebooks")

    gr = sub.add_parser("grade", help="run students' notebooks in a fresh kernel and score each exercise")
    gr.add_argument("notebooks", nargs="+", help="notebooks to grade")
    gr.add_argument("--timeout", type=_positive_int, default=120, help="seconds allowed per cell (default 120)")
    gr.add_argument("--json", action="store_true", help="print the scores as JSON")

    sw = sub.add_parser("sweep", help="resumable hyperparameter sweep; prints each agent's best configuration")
    sw.add_argument("--agents", nargs="+", default=["mlp", "ensemble", "ensemble+"], help="agents to sweep")
    sw.add_argument("--sweep", default="small", choices=["small", "paper"], help="hyperparameter grid")
    sw.add_argument("--grid", default="quick", choices=sorted(testbed.GRIDS), help="problem grid (default quick)")
    sw.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: the grid's)")
    sw.add_argument("--results", required=True, help="directory for per-chunk results (resumes if it exists)")
    sw.add_argument("--set", dest="hyperparameters", type=_hyperparameter, action="append", default=[],
                    metavar="KEY=VALUE", help="fixed hyperparameter for every configuration, e.g. num_steps=200")
    sw.add_argument("--scheduler", default="local", help="local, dask or tcp://HOST:PORT")
    sw.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    bd = sub.add_parser("bandit", help="Thompson sampling with an agent on the neural bandit (§5)")
    bd.add_argument("--agent", required=True, help="oracle, uniform or an agent that can be updated online")
    bd.add_argument("--input-dim", type=_positive_int, default=2, help="action dimension d (default 2)")
    bd.add_argument("--horizon", type=_positive_int, default=1000, help="time steps T (default 1000)")
    bd.add_argument("--seeds", type=_positive_int, default=5, help="number of problems J (default 5)")
    bd.add_argument("--temperature", type=float, default=0.1, help="environment temperature (default 0.1)")
    bd.add_argument("--set", dest="hyperparameters", type=_hyperparameter, action="append", default=[],
                    metavar="KEY=VALUE", help="agent hyperparameter, e.g. --set num_members=10")
    bd.add_argument("--out", default=None, help="CSV file for the cumulative regret curves")
    bd.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def _testbed(args) -> int:
    from jtk import agents, executors, testbed

    try:
        agent = agents.make(args.agent, **dict(args.hyperparameters))
        executors._check_scheduler(args.scheduler)
    except (TypeError, ValueError) as err:
        print(f"jtk testbed: {err}", file=sys.stderr)
        return 2
    problems = testbed.problems(args.grid, seeds=args.seeds)
    start = time.perf_counter()
    with executors.executor(args.scheduler) as ex:
        results = testbed.evaluate(agent, problems, executor=ex, name=args.agent, progress=not args.no_progress)
    wall = time.perf_counter() - start
    if args.out:
        results.to_csv(args.out, index=False)
    table = testbed.summarize(results)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table.round(4).to_string())
    print(f"{len(results)} problems in {wall:.1f} s" + (f"; rows written to {args.out}" if args.out else ""))
    return 0


def _sweep(args) -> int:
    from jtk import executors, sweep, testbed

    try:
        grids = sweep.sweep_by_name(args.sweep)
        fixed = dict(args.hyperparameters)
        configs = [sweep.Config(c.agent, tuple(sorted({**dict(c.hyperparameters), **fixed}.items())))
                   for c in sweep.configs(grids, args.agents)]
        for c in configs:
            c.make()
        executors._check_scheduler(args.scheduler)
    except (TypeError, ValueError) as err:
        print(f"jtk sweep: {err}", file=sys.stderr)
        return 2
    problems = testbed.problems(args.grid, seeds=args.seeds)
    start = time.perf_counter()
    with executors.executor(args.scheduler) as ex:
        results = sweep.run(configs, problems, args.results, executor=ex, progress=not args.no_progress)
    best = sweep.best_configs(results)
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(best.round(4).to_string())
    print(f"{len(configs)} configurations x {len(problems)} problems in {time.perf_counter() - start:.1f} s; "
          f"results in {args.results}")
    return 0


def _bandit(args) -> int:
    import numpy as np

    from jtk import bandit

    try:
        result = bandit.run(args.agent, input_dim=args.input_dim, horizon=args.horizon, seeds=args.seeds,
                            temperature=args.temperature, agent_kwargs=dict(args.hyperparameters),
                            progress=not args.no_progress)
    except (TypeError, ValueError) as err:
        print(f"jtk bandit: {err}", file=sys.stderr)
        return 2
    total = result.total_regret
    uniform = bandit.expected_uniform_regret(result.problems, args.horizon)
    print(f"{args.agent}: total regret {total.mean():.2f} ± {total.std(ddof=1) / np.sqrt(len(total)) if len(total) > 1 else 0:.2f} "
          f"(s.e. over {len(total)} problems; uniform random: {uniform.mean():.2f}) "
          f"at d = {args.input_dim}, T = {args.horizon}, in {result.seconds:.1f} s")
    if args.out:
        result.frame(every=max(1, args.horizon // 100)).to_csv(args.out, index=False)
        print(f"curves written to {args.out}")
    return 0


def _exercises(args) -> int:
    from jtk import exercises

    try:
        if args.action == "build":
            for path in exercises.build(args.solutions, args.exercises):
                print(f"wrote {path}")
            return 0
        stale = exercises.stale(args.solutions, args.exercises)
    except ValueError as err:
        print(f"jtk exercises: {err}", file=sys.stderr)
        return 2
    if stale:
        print("exercises/ is out of date; run `jtk exercises build`. Stale: " + ", ".join(stale), file=sys.stderr)
        return 1
    print(f"exercises/ is up to date with {args.solutions}/")
    return 0


def _grade(args) -> int:
    import json

    from jtk import exercises

    rows, failed_files = [], 0
    for nb in args.notebooks:
        try:
            scores = exercises.grade(nb, timeout=args.timeout)
        except ValueError as err:
            print(f"jtk grade: {err}", file=sys.stderr)
            failed_files += 1
            continue
        rows += [{"notebook": nb, **vars(s)} for s in scores]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif rows:
        table = pd.DataFrame(rows)
        with pd.option_context("display.width", 200, "display.max_colwidth", 70):
            print(table[["notebook", "exercise", "points", "max_points", "status", "message"]].to_string(index=False))
        total = table.groupby("notebook")[["points", "max_points"]].sum()
        for nb, row in total.iterrows():
            print(f"{nb}: {row.points:g} / {row.max_points:g} ({100 * row.points / row.max_points:.0f} %)")
    return 2 if failed_files else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "testbed":
        return _testbed(args)
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "exercises":
        return _exercises(args)
    if args.command == "grade":
        return _grade(args)
    if args.command == "bandit":
        return _bandit(args)
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
