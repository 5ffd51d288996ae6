"""Training time per problem against the number of problems one compiled call vectorises (the testbed's chunk size).

    JAX_PLATFORMS=cpu python benchmarks/chunk_size.py            # prints the table, writes docs/platforms.md's section
    JAX_PLATFORMS=cpu python benchmarks/chunk_size.py --no-docs

For the paper grid's costliest minibatch bucket (num_train ≥ 100: minibatch 100, the 90 training groups that take
most of a run) it trains the first P groups at once with the testbed's own training program, for several P, and
reports the warm time per problem and step (best of two calls after a compiling one). The chunk rule of
``jtk.testbed._chunks`` (``MAX_GROUPS_PER_CHUNK``, ``MEMBER_ROWS_PER_CHUNK``) was chosen from this table: XLA's CPU
backend runs each program on one core, and its batched small matrix products are fastest per problem at a moderate
vmap width, not at the widest one.
"""

from __future__ import annotations

import argparse
import os
import time

import jax

import jtk
from jtk import testbed

try:
    from _docs import DOCS, write_section
except ImportError:  # run from elsewhere
    from benchmarks._docs import DOCS, write_section

# (label, agent name, keywords, steps timed, chunk sizes P)
CASES = [
    ("mlp", "mlp", {}, 1000, (8, 16, 32, 64, 96)),
    ("ensemble+ K=10", "ensemble+", {"num_members": 10}, 300, (4, 8, 16, 32, 64)),
    ("ensemble+ K=100", "ensemble+", {"num_members": 100}, 100, (1, 2, 4, 8, 16)),
]


def time_chunk(agent, groups, size: int) -> float:
    """Warm seconds of one training call on the first ``size`` groups (best of two)."""
    _, args = testbed._train_inputs(agent, groups[:size])
    spec, cfg, seeds, temps, ns, hyper, agent_seeds = args
    _, data = testbed._make_training_batch(cfg, seeds, temps, ns)
    jax.block_until_ready(testbed._train_states(spec, data, hyper, agent_seeds))  # compile
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        jax.block_until_ready(testbed._train_states(spec, data, hyper, agent_seeds))
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/platforms.md as it is")
    args = parser.parse_args(argv)
    groups = sorted({p.training_problem for p in testbed.problems("paper") if p.num_train >= 100},
                    key=lambda p: (p.num_train, p.temperature, p.seed))
    header = (f"device {jax.devices()[0].device_kind} ({jax.default_backend()}), jax {jax.__version__}, "
              f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f}")
    print(header)
    rows = []
    for label, name, kw, steps, sizes in CASES:
        agent = jtk.agents.make(name, **kw, num_steps=steps)
        per = {}
        for size in sizes:
            seconds = time_chunk(agent, groups, size)
            per[size] = seconds / size / steps * 1e3
            print(f"{label:16s} chunk of {size:3d} problems: {seconds:6.2f} s = {per[size]:.3f} ms per problem "
                  f"and step", flush=True)
        best = min(per, key=per.get)
        rows.append(f"| {label} | {steps} | " + ", ".join(
            f"{s}: **{v:.3f}**" if s == best else f"{s}: {v:.3f}" for s, v in per.items()) + " |")
    lines = [header + ". Warm milliseconds per problem and training step (minibatch 100) by chunk size; "
             "the fastest is in bold.", "", "| agent | steps timed | chunk size: ms per problem-step |",
             "|---|---|---|", *rows]
    text = "\n".join(lines)
    print(text)
    if not args.no_docs:
        write_section("chunk-size", text, DOCS / "platforms.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
