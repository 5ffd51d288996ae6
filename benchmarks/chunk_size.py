"""Training time per problem against the cache rule's two sizes: problems per chunk and, for ensembles, members per block.

    JAX_PLATFORMS=cpu python benchmarks/chunk_size.py            # prints the table, writes docs/platforms.md's section
    JAX_PLATFORMS=cpu python benchmarks/chunk_size.py --no-docs

For the paper grid's costliest minibatch bucket (num_train ≥ 100: minibatch 100) and a whole-set bucket (num_train
10: minibatch 16) it trains chunks of P groups with the testbed's own programs, the members of an ensemble in
blocks of B, for several (P, B), two chunks at a time in two threads as the testbed runs them on two cores (four
chunks, or two when the bucket has too few groups), and reports the warm time per problem and step (best of two
rounds after a compiling call). The rule of ``jtk.train.cpu_block_size`` (``CPU_BLOCK_ROWS``, ``PARAMETER_ROWS``),
which ``EnsembleAgent.members_per_block`` and ``jtk.testbed``'s chunks follow, was chosen from this table: XLA's CPU
backend runs each program on one core, and small batched products run fastest when the networks trained at once
keep their activations, parameters and Adam moments in the core's cache, with the other core busy beside it.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import jax

import jtk
from jtk import testbed
from jtk.testbed import engine
from jtk.agents.ensemble import EnsembleAgent

from jtk._docs import DOCS, write_section

# (label, agent name, keywords, steps timed, [(problems per chunk P, members per block B or None)])
CASES = [
    ("mlp", "mlp", {}, 1000, [(2, None), (4, None), (8, None), (16, None), (32, None)]),
    ("ensemble+ K=10", "ensemble+", {"num_members": 10}, 300, [(1, 2), (1, 5), (1, 10), (2, 5), (4, 5)]),
    ("ensemble+ K=100", "ensemble+", {"num_members": 100}, 100, [(1, 5), (1, 10), (1, 20), (1, 50), (1, 100),
                                                                  (2, 5)]),
]
NUM_TRAIN = ((100, 300, 1000), (10,))  # minibatch 100 (the costly bucket, 90 groups) and 16 (every row every step)


def time_chunks(agent, groups, size: int, per_block: int | None, threads: int = 2) -> tuple[float, int]:
    """Warm seconds of training four chunks of ``size`` groups (two if the groups are too few), ``threads`` at a
    time, members in blocks of ``per_block``; and the number of problems trained."""
    original = EnsembleAgent.members_per_block
    if per_block is not None:
        EnsembleAgent.members_per_block = lambda self: per_block
    try:
        jax.clear_caches()  # compiled programs are keyed on the agent, not on the patched block size
        count = 4 if 4 * size <= len(groups) else 2
        calls = [engine._train_inputs(agent, groups[i * size:(i + 1) * size], size)[1] for i in range(count)]
        jax.block_until_ready(engine._train_chunk(*calls[0]))  # compile
        best = float("inf")
        for _ in range(2):
            with ThreadPoolExecutor(threads) as pool:
                t0 = time.perf_counter()
                list(pool.map(lambda a: jax.block_until_ready(engine._train_chunk(*a)), calls))
                best = min(best, time.perf_counter() - t0)
    finally:
        EnsembleAgent.members_per_block = original
    return best, count * size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/platforms.md as it is")
    args = parser.parse_args(argv)
    header = (f"device {jax.devices()[0].device_kind} ({jax.default_backend()}), jax {jax.__version__}, "
              f"{len(os.sched_getaffinity(0))} core(s) for this process, load average {os.getloadavg()[0]:.1f}")
    print(header)
    rows = []
    for label, name, kw, steps, sizes in CASES:
        agent = jtk.agents.make(name, **kw, num_steps=steps)
        for bucket in NUM_TRAIN:
            groups = sorted({p.training_problem for p in testbed.problems("paper") if p.num_train in bucket},
                            key=lambda p: (p.num_train, p.temperature, p.seed))
            spec = agent.specialize(groups[0].prior())
            chosen = (engine.make_chunks(groups, agent)[0].size,
                      spec.members_per_block() if hasattr(spec, "members_per_block") else None)
            per = {}
            for size, per_block in sizes:
                if 2 * size > testbed.padded_count(len(groups)):  # not two chunks' worth of groups in this bucket
                    continue
                seconds, problems = time_chunks(agent, groups, size, per_block)
                per[size, per_block] = seconds / problems / steps * 1e3
                print(f"{label:16s} minibatch {spec.batch_size:3d}, {size:2d} problems, blocks of {per_block}: "
                      f"{per[size, per_block]:.4f} ms per problem and step", flush=True)
            best = min(per, key=per.get)

            def cell(key):
                text = f"{key[0]}" + (f" × {key[1]}" if key[1] is not None else "") + f": {per[key]:.3f}"
                text = f"**{text}**" if key == best else text
                rule = key[0] == chosen[0] and key[1] in (None, chosen[1])  # None: a single network, no blocks
                return text + (" (rule)" if rule else "")

            rows.append(f"| {label} | {spec.batch_size} | {steps} | " + ", ".join(cell(k) for k in per) + " |")
    lines = [header + ". Warm milliseconds per problem and training step, chunks trained two at a time in two "
             "threads as the testbed runs them; the fastest is in bold, the testbed's choice marked (rule).", "",
             "| agent | minibatch | steps timed | problems per chunk (× members per block): ms per problem-step |",
             "|---|---|---|---|", *rows]
    text = "\n".join(lines)
    print(text)
    if not args.no_docs:
        write_section("chunk-size", text, DOCS / "platforms.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
