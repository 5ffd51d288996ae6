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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=sorted(AGENTS), default="mlp")
    parser.add_argument("--grid", default="paper")
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--tag", default="", help="a label for the machine (cpu, h200, ...)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "cli_speed.csv")
    args = parser.parse_args(argv)
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
