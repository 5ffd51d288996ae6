"""Speed of the PPC study's ensemble trainer: the flat layout against the member-major one it replaced (issue #47).

  python benchmarks/ppc_ensemble_layout.py [--sets 4] [--repeats 3] [--units 50 100] [--members 100]

``jtk.regression.batched.ensemble_snapshots`` trains K members of one hidden layer of width H on each data set with
full-batch Adam. Until issue #47's last speed-up, a step computed the members' hidden units as [K, n, H]
(``einsum("nd,kdh->knh")``); now the first layers sit side by side as one [d, K·H] matrix and a step's tensors are
[n, K, H]. Adam is elementwise, so both give the same members up to float round-off (tests/test_ppc_study.py
compares the trainer with ``jtk.regression.deep``'s own).

At the paper's sizes (d = 9, n = 45 training points, K = 100, 1,000 epochs with snapshots at 100 and 300), each
layout trains ``--sets`` data sets in one compiled program (``lax.map``, as the study does); the two run interleaved
in one process, each figure the best of ``--repeats`` after a compiling call. Prints milliseconds per Adam step
(one data set, all K members), the ratio and the largest difference between the two layouts' members, and writes
``benchmarks/results/ppc_ensemble_layout.csv`` with the load average and the section "ppc-ensemble-layout" of
docs/ppc.md (``--no-docs`` leaves the page alone).
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from jtk import _docs
from jtk.ppc import synthetic_study
from jtk.regression import batched, deep

EPOCHS = (100, 300, 1000)
RESULTS = Path(__file__).resolve().parent / "results"


@functools.partial(jax.jit, static_argnums=(0, 1))
def member_major(hidden: int, num_members: int, keys, x, y, lr, noise_var):
    """The earlier trainer ([K, n, H] tensors; same initialisation and loss) → the trained members, leaves [D, K, ...]."""
    n, d = x.shape[1], x.shape[2]

    def loss(net, xx, yy):
        (w1, b1), (w2, b2) = net
        h = jax.nn.relu(jnp.einsum("nd,kdh->knh", xx, w1) + b1[:, None, :])
        f = jnp.einsum("knh,kh->kn", h, w2[..., 0]) + b2
        nll = jnp.sum(jnp.square(yy[None, :] - f)) / (2.0 * noise_var * n)
        return nll + 0.5 / n * (jnp.sum(jnp.square(w1)) + jnp.sum(jnp.square(w2)))

    def train_one(a):
        key, xx, yy = a
        member_keys = deep._member_keys(jax.random.fold_in(key, 0), num_members)
        net = jax.vmap(lambda k: deep.glorot_mlp(jax.random.split(k, 3)[0], (d, hidden, 1)))(member_keys)
        opt = optax.adam(lr)

        def step(_, carry):
            params, state = carry
            updates, state = opt.update(jax.grad(loss)(params, xx, yy), state, params)
            return optax.apply_updates(params, updates), state

        carry = (net, opt.init(net))
        for start, stop in zip((0,) + EPOCHS[:-1], EPOCHS):
            carry = jax.lax.fori_loop(start, stop, step, carry)
        return carry[0]

    return jax.lax.map(train_one, (keys, x, y))


def moments(net, x):
    """The ensemble's predictive mean and standard deviation over its members at inputs x [D, m, d] → [D, m] each."""
    (w1, b1), (w2, b2) = net  # [D, K, d, H], [D, K, H], [D, K, H, 1], [D, K, 1]
    h = jax.nn.relu(jnp.einsum("Dmd,Dkdh->Dkmh", x, w1) + b1[:, :, None, :])
    f = jnp.einsum("Dkmh,Dkh->Dkm", h, w2[..., 0]) + b2
    return np.asarray(f.mean(1)), np.asarray(f.std(1))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", type=int, default=4, help="data sets per timed call (default 4)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--units", type=int, nargs="+", default=[50, 100], help="hidden widths H (the paper's: 50 100)")
    p.add_argument("--members", type=int, default=100, help="ensemble size K (the paper's largest S: 100)")
    p.add_argument("--no-docs", action="store_true", help="write the CSV, leave docs/ppc.md alone")
    args = p.parse_args(argv)
    for name in ("sets", "repeats", "members"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    splits = synthetic_study.make_splits(9, args.sets, "independent")  # the paper's sizes and data
    xs = np.stack([sp.x_train for sp in splits]).astype(np.float32)
    ys = np.stack([sp.y_train for sp in splits]).astype(np.float32)
    x_test = jnp.asarray(np.stack([sp.x_test for sp in splits]), jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(0), args.sets)
    rows, load0 = [], os.getloadavg()[0]
    for h in args.units:
        runs = {"member-major [K, n, H] (before)": lambda: member_major(h, args.members, keys, xs, ys, 1e-3, 0.01),
                "flat [n, K, H] (now)": lambda: batched.ensemble_snapshots(
                    h, args.members, EPOCHS, keys[None], xs, ys, [1e-3], 0.01, 0.05).net}
        out = {name: jax.block_until_ready(fn()) for name, fn in runs.items()}  # compiles
        best = dict.fromkeys(runs, np.inf)
        for r in range(args.repeats):
            for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                t0 = time.perf_counter()
                jax.block_until_ready(runs[name]())
                best[name] = min(best[name], time.perf_counter() - t0)
        before, now = out[list(runs)[0]], jax.tree_util.tree_map(lambda a: a[-1, 0], out[list(runs)[1]])
        (m0, s0), (m1, s1) = moments(before, x_test), moments(now, x_test)
        diff = {"max_abs_difference_weights": float(max(np.max(np.abs(np.asarray(a) - np.asarray(b))) for a, b in
                                                        zip(jax.tree_util.tree_leaves(before),
                                                            jax.tree_util.tree_leaves(now)))),
                "max_abs_difference_mean": float(np.max(np.abs(m0 - m1))),
                "max_abs_difference_std": float(np.max(np.abs(s0 - s1))), "mean_std": float(s0.mean())}
        for name, sec in best.items():
            rows.append({"units": h, "members": args.members, "layout": name,
                         "ms_per_step": 1e3 * sec / (args.sets * EPOCHS[-1]),
                         **diff, "load_average": os.getloadavg()[0]})
    table = pd.DataFrame(rows)
    slow = table[table["layout"].str.endswith("(before)")].set_index("units")["ms_per_step"]
    table["ratio_to_before"] = table["ms_per_step"] / table["units"].map(slow)
    RESULTS.mkdir(exist_ok=True)
    table.to_csv(RESULTS / "ppc_ensemble_layout.csv", index=False)
    _docs.publish("ppc-ensemble-layout", (
        f"Regenerated by `python benchmarks/ppc_ensemble_layout.py`: milliseconds per full-batch Adam step of one "
        f"data set's K = {args.members} members (d = 9, n = 45, 1,000 epochs with snapshots at 100 and 300), "
        f"{args.sets} data sets of the paper's synthetic protocol per compiled call, best of {args.repeats} after a "
        "compiling call. Beside each: the largest difference between the two layouts' trained members (any "
        "weight) and between the ensembles' predictive mean and standard deviation at the 500 test points "
        "(`mean_std`: the standard deviation's average, for scale). Both layouts sum in another order, and 1,000 "
        "Adam steps amplify float round-off (Adam rescales each gradient, so a near-zero one of either sign moves a "
        "weight by up to the step size): the weights drift apart; the moments the study uses move far less."),
        table, _docs.DOCS / "ppc.md", load_start=load0, write=not args.no_docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
