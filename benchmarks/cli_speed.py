"""The testbed through the command line, as a user types it: wall time of `jtk testbed --agent A --grid paper`
from a fresh process, cold and warm.

    python benchmarks/cli_speed.py --agent mlp                       # cold, warm, warm without the program store
    python benchmarks/cli_speed.py --agent ensemble+_K100 --runs cold warm

Each run is a new process (``python -m jtk.cli testbed ...``) with ``JTK_CACHE_DIR`` set to one temporary folder:
"cold" starts with it empty (no compiled program anywhere), "warm" finds what the cold run left there (JAX's
persistent compilation cache and jtk's store of compiled programs, ``jtk._compile``), and "warm-nostore" the
same cache with jtk's store turned off (``JTK_EXECUTABLE_CACHE=0``: every program traced and lowered again, as
before the store). Each row: the command's wall time, the CLI's own "420 problems in … s" (the run itself), the
1-minute load average before and after, the device, the date and the commit. Rows are appended to
benchmarks/results/cli_speed.csv (or --out).

    python benchmarks/cli_speed.py --docs    # one table per device, from the stored rows: docs/platforms.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]
AGENTS = {"mlp": ("mlp", []), "ensemble+_K100": ("ensemble+", ["--set", "num_members=100"]),
          "ensemble+_K10": ("ensemble+", ["--set", "num_members=10"])}
RUNS = {"cold": {}, "warm": {}, "warm-nostore": {"JTK_EXECUTABLE_CACHE": "0"}}


def _commit() -> str:
    if os.environ.get("JTK_COMMIT"):
        return os.environ["JTK_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _device(env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", "import jax; d = jax.devices()[0]; print(f'{d.platform}: "
                          "{d.device_kind}')"], env=env, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


# The goals each row is read against (wall time of the whole command, or the CLI's own run time), per device kind.
GOALS = {("gpu", "mlp", "cold", "wall_s"): 5.0, ("gpu", "mlp", "warm", "wall_s"): 3.0,
         ("gpu", "mlp", "warm", "run_s"): 1.0, ("gpu", "ensemble+_K100", "cold", "wall_s"): 4.0,
         ("cpu", "mlp", "cold", "wall_s"): 6.0}


def write_docs(path: pathlib.Path, page: pathlib.Path = ROOT / "docs" / "platforms.md") -> str:
    """Section 'cli-speed' of docs/platforms.md: one table per device from the stored rows, each row with its
    date, commit and load, beside the goal it is read against."""
    sys.path.insert(0, str(ROOT))
    from jtk._docs import md_table, write_section

    rows = pd.read_csv(path)
    parts = ["Written by `python benchmarks/cli_speed.py --docs` from `benchmarks/results/cli_speed.csv`: "
             "`jtk testbed --agent A --grid paper` from a fresh process (`python -m jtk.cli`), cold = empty "
             "caches, warm = the caches the cold run filled, warm-nostore = the same with jtk's store of compiled "
             "programs off (`JTK_EXECUTABLE_CACHE=0`). `wall`: the whole command; `run`: the CLI's own "
             "\"420 problems in … s\". Load: the 1-minute load average before and after the run.", ""]
    for device, table in rows.groupby("device", sort=False):
        kind = "gpu" if device.startswith("gpu") else "cpu"
        goal = [" / ".join(f"{what[:-2]} ≤ {GOALS[(kind, r.agent, r.run, what)]:g} s"
                           for what in ("wall_s", "run_s") if (kind, r.agent, r.run, what) in GOALS)
                for r in table.itertuples()]
        out = table.assign(goal=goal, load=[f"{a:.1f} → {b:.1f}" for a, b in zip(table.load_before,
                                                                               table.load_after)])
        out = out[["date", "commit", "agent", "run", "wall_s", "run_s", "goal", "load", "cpus"]].rename(
            columns={"wall_s": "wall (s)", "run_s": "run (s)"})
        parts += [f"**{device}**", "", md_table(out, "{:.2f}", index=False), ""]
    text = "\n".join(parts)
    write_section("cli-speed", text, page)
    return text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=sorted(AGENTS), default="mlp")
    parser.add_argument("--grid", default="paper")
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--tag", default="", help="a label for the machine (cpu, h200, ...)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "cli_speed.csv")
    parser.add_argument("--docs", action="store_true", help="write docs/platforms.md's tables from --out; run nothing")
    args = parser.parse_args(argv)
    if args.docs:
        print(write_docs(args.out))
        return
    name, extra = AGENTS[args.agent]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    device = _device(env)
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for run in args.runs:
            run_env = {**env, "JTK_CACHE_DIR": cache, **RUNS[run]}
            command = [sys.executable, "-m", "jtk.cli", "testbed", "--agent", name, "--grid", args.grid,
                       "--no-progress", *extra]
            load = os.getloadavg()[0]
            start = time.perf_counter()
            try:
                done = subprocess.run(command, env=run_env, capture_output=True, text=True, timeout=args.timeout)
                output, code = done.stdout + done.stderr, done.returncode
            except subprocess.TimeoutExpired as err:
                output, code = str(err.stdout or "") + str(err.stderr or ""), "timeout"
            wall = time.perf_counter() - start
            found = re.search(r"(\d+) problems in ([\d.]+) s", output)
            rows.append({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                         "commit": _commit(), "tag": args.tag, "device": device, "agent": args.agent,
                         "grid": args.grid, "run": run, "wall_s": round(wall, 2),
                         "run_s": float(found.group(2)) if found else None,
                         "problems": int(found.group(1)) if found else None, "exit": code,
                         "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
                         "cpus": os.cpu_count()})
            print(rows[-1], flush=True)
            if code != 0:
                print(output[-3000:], flush=True)
    table = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists():
        table = pd.concat([pd.read_csv(args.out), table], ignore_index=True)
    table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
