"""Interrupts `jtk testbed --resume --out` at random times and checks that no work is lost or corrupted.

    python benchmarks/interruption.py                                   # mlp, paper grid, 10 interruptions
    python benchmarks/interruption.py --grid quick --trials 3           # a quick check
    python benchmarks/interruption.py --signal int --trials 20 --csv benchmarks/results/interruption_paper.csv

First runs the testbed once without interruption (the reference rows, and its wall time T). Then, N times,
starts `jtk testbed ... --resume --out FILE.csv` and sends SIGINT or SIGKILL (chosen at random, or fixed by
--signal) after a random delay uniform in [0.1 T, T]; a run that finishes before its signal is compared with the
reference and started over. Finally it resumes to completion and compares the rows with the reference: every
column except the timing ones, kl bitwise. Prints the exit codes, the number of segfaults (exit -11 or 139;
should be 0), the problems kept by each SIGINT, and whether the rows are identical. Exits 1 if any segfault or
difference was seen.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from jtk import results, testbed

SEGFAULTS = {-signal.SIGSEGV, 128 + signal.SIGSEGV, -signal.SIGABRT, 128 + signal.SIGABRT}


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    cols = [c for c in a.columns if not c.endswith("seconds")]
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    return bool(a[cols].equals(b[cols]) and np.array_equal(a["kl"].to_numpy().view(np.int64),
                                                            b["kl"].to_numpy().view(np.int64)))


def _saved(out: pathlib.Path) -> int | None:
    """Problems in the finished chunks of ``out``'s parts directory (None if there is none)."""
    parts = results.parts_dir(out)
    if not parts.is_dir():
        return None
    return sum(json.loads(p.read_text()).get("problems", 0) for p in parts.glob("chunk-*.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="mlp")
    parser.add_argument("--grid", default="paper", choices=sorted(testbed.GRIDS))
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--set", dest="hyperparameters", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--trials", type=int, default=10, help="interruptions (default 10)")
    parser.add_argument("--signal", choices=["int", "kill", "mixed"], default="mixed")
    parser.add_argument("--seed", type=int, default=0, help="seeds the delays and signal choices")
    parser.add_argument("--workdir", default=None, help="directory for the runs (default: a temporary one)")
    parser.add_argument("--csv", default=None, help="write one row per trial here")
    args = parser.parse_args()
    if args.trials < 1:
        parser.error(f"--trials: expected a positive integer, got {args.trials}")
    rng = random.Random(args.seed)
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="jtk-interruption-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    base = [sys.executable, "-m", "jtk.cli", "testbed", "--agent", args.agent, "--grid", args.grid, "--no-progress"]
    base += ["--seeds", str(args.seeds)] if args.seeds else []
    for kv in args.hyperparameters:
        base += ["--set", kv]

    ref_path, out = work / "reference.csv", work / "interrupted.csv"
    for p in (ref_path, out):
        for q in (p, results.manifest_path(p), p.with_name(p.name + ".lock")):
            q.unlink(missing_ok=True)
        shutil.rmtree(results.parts_dir(p), ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([*base, "--out", str(ref_path)], env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    reference = results.load_results(ref_path)
    print(f"reference: {len(reference)} problems in {wall:.1f} s (process start-up included)")

    trials, codes, problems_total = [], collections.Counter(), len(reference)
    for trial in range(args.trials):
        sig = {"int": signal.SIGINT, "kill": signal.SIGKILL}.get(args.signal) or rng.choice(
            [signal.SIGINT, signal.SIGKILL])
        delay = rng.uniform(0.1 * wall, wall)
        proc = subprocess.Popen([*base, "--resume", "--out", str(out)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(sig)
        _, err = proc.communicate()
        rc = proc.returncode
        codes[rc] += 1
        match = re.search(r"interrupted: (\d+) of (\d+) problems", err)
        kept = int(match.group(1)) if match else _saved(out)
        row = {"trial": trial, "signal": sig.name, "delay_s": round(delay, 2), "exit": rc,
               "segfault": rc in SEGFAULTS, "kept": kept, "completed": rc == 0, "identical": None}
        if rc == 0:  # finished before the signal: check it, then start over
            row["identical"] = _same_rows(results.load_results(out), reference)
            for q in (out, results.manifest_path(out)):
                q.unlink(missing_ok=True)
        elif sig == signal.SIGINT and rc != 130:
            row["note"] = err.strip().splitlines()[-1:] if err.strip() else ""
        trials.append(row)
        print(f"trial {trial}: {sig.name:7s} after {delay:5.1f} s -> exit {rc}"
              + (f", {kept} of {problems_total} problems saved" if kept is not None else "")
              + (", completed first" if rc == 0 else "") + (" SEGFAULT" if row["segfault"] else ""))

    final = subprocess.run([*base, "--resume", "--out", str(out)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    identical = final.returncode == 0 and _same_rows(results.load_results(out), reference)
    segfaults = sum(t["segfault"] for t in trials)
    bad_completions = sum(t["identical"] is False for t in trials)
    print(f"\n{args.trials} interruptions ({sum(t['signal'] == 'SIGINT' for t in trials)} SIGINT, "
          f"{sum(t['signal'] == 'SIGKILL' for t in trials)} SIGKILL) of `jtk testbed --agent {args.agent} "
          f"--grid {args.grid}`")
    print(f"exit codes: {dict(sorted(codes.items()))}")
    print(f"segfaults: {segfaults}")
    print(f"runs that completed before their signal: {sum(t['completed'] for t in trials)} "
          f"({bad_completions} with rows different from the reference)")
    print(f"final --resume: exit {final.returncode}; rows identical to the uninterrupted run: {identical}")
    if args.csv:
        pd.DataFrame(trials).to_csv(args.csv, index=False)
        print(f"per-trial rows written to {args.csv}")
    return 0 if identical and not segfaults and not bad_completions else 1


if __name__ == "__main__":
    sys.exit(main())
