"""The paper grid for ensemble+ (K = 10) in this process vs on a 2-worker Dask LocalCluster.

    python benchmarks/dask_overhead.py                 # paper grid (420 problems)
    python benchmarks/dask_overhead.py --grid quick

Runs ``jtk.testbed.evaluate`` twice with the same seeds: ``executor=None``
(vectorised, in-process) and through ``jtk.executors.executor("dask")`` (an
embedded LocalCluster with 2 single-threaded worker processes on loopback,
cluster start-up included in its time), both without the persistent
compilation cache. Prints both wall times, the Dask
overhead and whether the per-problem results agree to the last digit; writes
benchmarks/results/dask_overhead_<grid>.csv.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

import numpy as np
import pandas as pd

# Both runs compile from scratch (the workers inherit this), so neither profits from the other's cache.
os.environ["JTK_COMPILATION_CACHE"] = "0"

import jtk  # noqa: E402
from jtk import executors, testbed  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default="paper", choices=sorted(testbed.GRIDS))
    parser.add_argument("--members", type=int, default=10)
    args = parser.parse_args()
    agent = jtk.agents.make("ensemble+", num_members=args.members)
    problems = testbed.problems(args.grid)
    timings, frames = {}, {}
    for scheduler in ("local", "dask"):
        start = time.perf_counter()
        with executors.executor(scheduler) as ex:
            frames[scheduler] = testbed.evaluate(agent, problems, executor=ex, name="ensemble+")
        timings[scheduler] = time.perf_counter() - start
    cols = ["kl", "kl_std", "accuracy", "ece"]
    a, b = frames["local"][cols].to_numpy(), frames["dask"][cols].to_numpy()
    identical = bool(np.array_equal(a, b))
    row = {"grid": args.grid, "problems": len(problems), "members": args.members,
           "local_s": round(timings["local"], 1), "dask_2_workers_s": round(timings["dask"], 1),
           "dask_over_local": round(timings["dask"] / timings["local"], 3),
           "identical": identical, "max_abs_diff": float(np.max(np.abs(a - b))), "cpus": os.cpu_count(),
           "load_avg_1min_end": round(os.getloadavg()[0], 2)}
    RESULTS.mkdir(exist_ok=True)
    pd.DataFrame([row]).to_csv(RESULTS / f"dask_overhead_{args.grid}.csv", index=False)
    print(pd.DataFrame([row]).to_string(index=False))
    print(testbed.summarize(frames["local"]).round(4).to_string())


if __name__ == "__main__":
    main()
