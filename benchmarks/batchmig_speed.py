"""BatchMIG selection time (Wang et al. 2021): pool 500 / test 200 / batch 7 and pool 5000 / test 2000 / batch 50.

The covariance is the oracle GP posterior (ReLU kernel, d = 9, 45 training
points) over pool ∪ test, as in one round of the synthetic TAL protocol. Times
are the median of ``--repeats`` calls of ``jtk.ppc.active.batch_mig`` including its
input validation (symmetry and a PSD Cholesky check), and separately the greedy
selection alone. Target for the small case: < 0.5 s on 2 cores.

Usage:
  python benchmarks/batchmig_speed.py [--repeats 5]
Writes benchmarks/results/tal_batchmig_speed.csv.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from jtk.ppc import active  # noqa: E402
from jtk.regression.gp import GPRegression  # noqa: E402
from jtk._numerics import serial_blas  # noqa: E402
from jtk.envs.gp import NOISE_VAR, ReLUKernelGP  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def time_case(num_pool: int, num_test: int, batch_size: int, repeats: int, dim: int = 9) -> dict:
    oracle = ReLUKernelGP(dim)
    split = oracle.sample_split(seed=0, num_pool=num_pool, num_test=num_test)
    post = GPRegression(kernel=oracle.kernel, noise_var=NOISE_VAR).fit(split.x_train, split.y_train)
    cov = post.covariance(np.concatenate([split.x_pool, split.x_test]))
    cov = 0.5 * (cov + cov.T)
    pool, test = np.arange(num_pool), num_pool + np.arange(num_test)
    full, core, mig_t = [], [], []
    for _ in range(repeats):
        t = time.perf_counter()
        chosen = active.batch_mig(cov, pool, test, NOISE_VAR, batch_size)
        full.append(time.perf_counter() - t)
        t = time.perf_counter()
        serial_blas(active._batch_mig)(cov, pool, test, NOISE_VAR, batch_size)
        core.append(time.perf_counter() - t)
        t = time.perf_counter()
        active.mig(cov, pool, test, NOISE_VAR, batch_size)
        mig_t.append(time.perf_counter() - t)
    assert len(set(chosen.tolist())) == batch_size
    return {"num_pool": num_pool, "num_test": num_test, "batch_size": batch_size, "repeats": repeats,
            "batchmig_seconds_median": float(np.median(full)), "batchmig_seconds_min": float(np.min(full)),
            "greedy_only_seconds_median": float(np.median(core)), "mig_seconds_median": float(np.median(mig_t)),
            "cpu_count": os.cpu_count()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    rows = [time_case(500, 200, 7, args.repeats), time_case(5000, 2000, 50, max(1, args.repeats // 2))]
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 160, "display.precision", 4):
        print(df.to_string(index=False))
    RESULTS.mkdir(parents=True, exist_ok=True)
    df.to_csv(RESULTS / "tal_batchmig_speed.csv", index=False)
    small = rows[0]["batchmig_seconds_median"]
    print(f"\npool 500 / test 200 / batch 7: {small:.3f} s (target < 0.5 s): {'OK' if small < 0.5 else 'SLOW'}")


if __name__ == "__main__":
    main()
