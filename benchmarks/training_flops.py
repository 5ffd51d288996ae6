"""Achieved training GFLOP/s on the testbed against what this machine's matrix multiply reaches.

    JAX_PLATFORMS=cpu python benchmarks/training_flops.py [--agents mlp ensemble+_K10] [--grid paper]

For every chunk of the grid the script compiles the testbed's training program once (not timed), then times a
second, identical call: pure training compute, data generation included. It then times all chunks again as the
testbed runs them, one chunk per thread (``jtk.executors.local_threads``). The floating-point work is counted
analytically, since XLA's cost analysis counts a loop body once rather than once per step: an MLP step costs
≈ 3 × 2 × Σ(fan_in · fan_out) multiply-adds per example (forward, and a backward pass of twice the work), times the
static minibatch size, the steps, the members and the problems of the chunk (padding included: the program
computes it). ensemble+'s prior networks are evaluated once before training, so they are not counted.

The reference point is measured, not quoted: a 2048 × 2048 float32 matrix product (``jnp.dot``) on the same
device, the rate well-shaped matrix work reaches here. The ratio says how far the small, batched matrices of
testbed training (2 → 50 → 50 → 2 at batch ≤ 100) are from it.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import jax

import jtk
from jtk import executors, testbed
from jtk._info import gemm_gflops
from jtk.testbed import engine

AGENTS = {"mlp": ("mlp", {}), "ensemble+_K10": ("ensemble+", {"num_members": 10}),
          "ensemble+_K100": ("ensemble+", {"num_members": 100})}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def step_flops(agent, input_dim: int, num_classes: int) -> float:
    """Floating-point operations of one training step per example: 3 × 2 × Σ fan_in · fan_out."""
    sizes = (input_dim, *agent.hidden, num_classes)
    return 6.0 * sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))


def grid_training_flops(agent, problems) -> float:
    """Training FLOPs of ``testbed.evaluate(agent, problems)`` as jtk runs them: every chunk's padded training groups
    × networks × steps × minibatch rows × :func:`step_flops` (the padding, computed and dropped, counts too)."""
    total = 0.0
    for chunk in engine.make_chunks(problems, agent):
        heads = [g[0] for g in chunk]
        spec = agent.specialize(heads[0].prior())  # the minibatch bucket of this chunk, as engine._train_inputs
        total += (chunk.size * spec.num_networks * spec.num_steps * spec.batch_size
                  * step_flops(spec, heads[0].input_dim, heads[0].num_classes))
    return total


def measure(label: str, grid: str) -> dict:
    name, kw = AGENTS[label]
    agent = jtk.agents.make(name, **kw)
    problems = testbed.problems(grid)
    seconds = 0.0
    calls = []
    for chunk in engine.make_chunks(problems, agent):
        heads = [g[0] for g in chunk]
        _, args = engine._train_inputs(agent, heads, chunk.size)
        jax.block_until_ready(engine._train_chunk(*args))  # compile (and a first run)
        seconds += _timed(lambda: jax.block_until_ready(engine._train_chunk(*args)))
        calls.append(args)
    # The same calls as the testbed runs them: one chunk per thread (jtk.executors.local_threads), costliest first.
    threads = executors.local_threads(len(calls), [agent])
    with ThreadPoolExecutor(threads) as pool:
        threaded = _timed(lambda: [f.result() for f in [pool.submit(
            lambda a=a: jax.block_until_ready(engine._train_chunk(*a))) for a in calls]])
    flops = grid_training_flops(agent, problems)
    return {"agent": label, "grid": grid, "train_seconds": seconds, "gflop": flops / 1e9,
            "gflops_per_s": flops / seconds / 1e9, "threads": threads, "threaded_seconds": threaded,
            "threaded_gflops_per_s": flops / threaded / 1e9}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=["mlp", "ensemble+_K10"], choices=list(AGENTS))
    parser.add_argument("--grid", default="paper", choices=sorted(testbed.GRIDS))
    args = parser.parse_args(argv)
    peak = gemm_gflops()
    print(f"device {jax.devices()[0].device_kind} ({jax.default_backend()}), jax {jax.__version__}, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"reference: float32 2048 x 2048 matrix product {peak:.1f} GFLOP/s")
    for label in args.agents:
        r = measure(label, args.grid)
        print(f"{label:15s} grid {r['grid']}: {r['gflop']:8.1f} GFLOP of training in {r['train_seconds']:7.1f} s "
              f"one chunk at a time (compiled, warm) = {r['gflops_per_s']:6.1f} GFLOP/s, "
              f"{100 * r['gflops_per_s'] / peak:5.1f} % of the matrix-product rate; {r['threads']} threads: "
              f"{r['threaded_seconds']:7.1f} s = {r['threaded_gflops_per_s']:6.1f} GFLOP/s, "
              f"{100 * r['threaded_gflops_per_s'] / peak:5.1f} %", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
