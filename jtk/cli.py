"""The ``jtk`` command.

    jtk sweep --agents mlp ensemble ensemble+ --results DIR [--sweep small|paper] [--grid quick|paper]
    jtk exercises build|check
    jtk grade SUBMISSION [...] [--source DIR] [--json] [--csv FILE] [--feedback DIR] [--workers N] [--timeout S]
              [--memory BYTES] [--sandbox auto|none|user|bwrap] [--seed N] [--salt S]
    jtk info
    jtk bandit --agent NAME [--input-dim D] [--horizon T] [--seeds J] [--set KEY=VALUE ...] [--out FILE.csv]

    jtk testbed --agent NAME [--grid paper|quick|classification] [--seeds N] [--out FILE.csv]
                [--set KEY=VALUE ...] [--scheduler local|dask|tcp://HOST:PORT]

prints the leaderboard row (mean d_KL^1 and d_KL^10 with standard errors over
seeds, accuracy, ECE, seconds) and writes one CSV row per problem.
"""

from __future__ import annotations

import argparse
import ast
import os
import pathlib
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


def _int_at_least(minimum: int):
    """An argparse type: an integer ≥ minimum, with a message that says so."""
    want = "a positive integer" if minimum == 1 else f"an integer ≥ {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {want}, got {value}")
        return value

    return parse


_positive_int, _nonnegative_int = _int_at_least(1), _int_at_least(0)


def _bytes(text: str) -> int:
    units = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    try:
        value = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"expected a size in bytes such as 4G, 512M or 2000000000, got {text!r}") from None
    if value < 256 * 2 ** 20:
        raise argparse.ArgumentTypeError(f"expected at least 256M (a kernel with jtk needs more), got {text!r}")
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

    gr = sub.add_parser("grade", help="grade students' notebooks against the source notebooks (checks, points, "
                                      "hidden cases), each in a fresh contained kernel")
    gr.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                    help="notebooks, or directories: DIR/<student>/<notebook>.ipynb (nbgrader) or DIR/<student>.ipynb")
    gr.add_argument("--source", default="solutions", help="directory of source (solution) notebooks (default solutions/)")
    gr.add_argument("--json", action="store_true", help="print one JSON object per (student, notebook)")
    gr.add_argument("--csv", default=None, help="write grades to this CSV (and the misconception summary beside it)")
    gr.add_argument("--feedback", default=None, help="write one HTML feedback page per student and notebook here")
    gr.add_argument("--workers", type=_positive_int, default=None, help="notebooks graded at once (default: cores)")
    gr.add_argument("--timeout", type=_positive_int, default=30, help="seconds allowed per cell (default 30)")
    gr.add_argument("--memory", type=_bytes, default=4 * 2 ** 30, help="memory per kernel, e.g. 4G (default 4 GiB)")
    gr.add_argument("--sandbox", default="auto", choices=["auto", "none", "user", "bwrap"],
                    help="containment of student code (default auto: bwrap if it works, else user if root, else none)")
    gr.add_argument("--seed", type=_nonnegative_int, default=None, help="one seed of the cases for everybody")
    gr.add_argument("--salt", default="", help="secret mixed into each student's seeds")
    gr.add_argument("--force", action="store_true", help="overwrite an existing --csv file")
    gr.add_argument("--no-progress", action="store_true", help="hide the progress bar")

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

    sub.add_parser("info", help="versions, JAX backend and devices, compilation cache, optional extras")

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

    from jtk import exercises, sandbox

    def fail(message: str) -> int:
        print(f"jtk grade: {message}", file=sys.stderr)
        return 2

    try:
        sources = exercises.load_sources(args.source)
        subs = exercises.collect(args.submissions, sources)
        mode = sandbox.resolve(args.sandbox)
    except ValueError as err:
        return fail(str(err))
    if not subs:
        return fail(f"no .ipynb submissions found in {' '.join(args.submissions)}")
    if args.csv:
        csv = pathlib.Path(args.csv)
        if not csv.parent.is_dir() or not os.access(csv.parent, os.W_OK):
            return fail(f"--csv: directory {str(csv.parent)!r} does not exist or is not writable")
        if csv.exists() and not args.force:
            return fail(f"--csv: {str(csv)!r} exists; pass --force to overwrite it or choose another name")
    if args.feedback:
        fb = pathlib.Path(args.feedback)
        if fb.exists() and not fb.is_dir():
            return fail(f"--feedback: {str(fb)!r} exists and is not a directory")
    if mode == "none":
        print("jtk grade: warning: --sandbox none: student code runs with your rights (see jtk.sandbox)", file=sys.stderr)
    rows = exercises.grade_class(subs, sources, workers=args.workers, timeout=args.timeout, memory=args.memory,
                                 sandbox=mode, seed=args.seed, salt=args.salt,
                                 hide=_hidden_paths([args.source, *args.submissions]),
                                 progress=not args.no_progress)
    out = sys.stderr if args.json else sys.stdout
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    table = exercises.grades_frame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False), file=out)
    summary = exercises.misconception_summary(rows)
    if len(summary):
        print("\nMisconceptions (students per check and code):", file=out)
        print(summary.to_string(index=False), file=out)
    if args.csv:
        exercises.write_csv(rows, args.csv)
        print(f"grades written to {args.csv}", file=out)
    if args.feedback:
        written = exercises.write_feedback(rows, args.feedback)
        print(f"{len(written)} feedback pages written to {args.feedback}", file=out)
    return 0


def _hidden_paths(paths) -> list[str]:
    """Paths a bwrap kernel must not see: directories unless they hold the Python installation or jtk."""
    from jtk import sandbox

    keep = sandbox.runtime_paths()
    out = []
    for raw in paths:
        path = os.path.realpath(raw)
        if os.path.isdir(path) and any(k == path or k.startswith(path + os.sep) for k in keep):
            out += [str(p) for p in pathlib.Path(path).rglob("*.ipynb")]
        elif os.path.exists(path):
            out.append(path)
    return out


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
    if args.command == "info":
        from jtk._info import format_info, info

        print(format_info(info()))
        return 0
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
