"""Helpers shared by the agents of the zoo (dropout, bbb, hypermodel, sgmcmc, deep_kernel, bayes_optimal).

Kept here so no agent copies another's code: the reference L2 scale, drawing
M coherent functions in memory-bounded chunks, flattening MLP parameters, and
systematic resampling of weighted particles.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jtk import nets
from jtk.nets import mlp_sizes  # noqa: F401  (one owner: jtk.nets; re-exported for the agents)
from jtk.agents.base import ProblemInfo

# Functions evaluated at once when drawing posterior samples on a test set:
# M = 1000 functions at N·τ = 10 000 points with 50 hidden units would need
# 2 GB in one piece; chunks of 50 keep it near 100 MB.
SAMPLE_CHUNK = 50


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["SAMPLE_CHUNK", "flat_mlp"]


def reference_l2(prior: ProblemInfo, scale: float, num_members: int = 1) -> float:
    """The reference weight decay ``scale · sqrt(ρ) · d / (num_members · n)`` (docs/reference.md, "Agent defaults")."""
    return scale * float(np.sqrt(prior.temperature)) * prior.input_dim / (num_members * max(prior.num_train, 1))


def reference_bandit_l2(prior: ProblemInfo, scale: float, num_members: int = 1) -> float:
    """The reference bandit's weight decay ``scale · 2ρ / num_members`` at t = 1 (annealed as 1/t; App. E)."""
    return scale * 2.0 * prior.temperature / num_members


def chunked_map(fn: Callable[[jax.Array], jax.Array], xs, chunk: int = SAMPLE_CHUNK) -> jax.Array:
    """``jnp.stack([fn(x) for x in xs])`` evaluated ``chunk`` elements at a time (``vmap`` inside, ``lax.map`` outside).

    Args:
      fn: function of one element of ``xs`` (a key, an index vector, ...).
      xs: pytree with leading axis M.
      chunk: elements per vectorised call; M is padded up to a multiple of it.

    Returns:
      Stacked outputs with leading axis M.
    """
    m = jax.tree_util.tree_leaves(xs)[0].shape[0]
    chunk = max(1, min(int(chunk), m))
    num_chunks = -(-m // chunk)
    pad = num_chunks * chunk - m

    def prep(a):
        a = jnp.concatenate([a, a[:pad]], axis=0) if pad else a
        return a.reshape((num_chunks, chunk) + a.shape[1:])

    out = jax.lax.map(jax.vmap(fn), jax.tree_util.tree_map(prep, xs))
    return jax.tree_util.tree_map(lambda a: a.reshape((num_chunks * chunk,) + a.shape[2:])[:m], out)


def sample_keys(key: jax.Array, num_samples: int) -> jax.Array:
    """``num_samples`` independent keys: [M]."""
    return jax.random.split(key, num_samples)


def flat_mlp(key: jax.Array, sizes: tuple[int, ...]) -> tuple[jax.Array, Callable[[jax.Array], nets.Params]]:
    """A freshly initialised MLP (``nets.init_mlp``) as a flat vector [P] and the function unflattening it."""
    params = nets.init_mlp(key, sizes)
    flat = jnp.concatenate([jnp.concatenate([w.reshape(-1), b]) for w, b in params])
    return flat, mlp_unravel(sizes)


def mlp_unravel(sizes: tuple[int, ...]) -> Callable[[jax.Array], nets.Params]:
    """The function turning a flat vector [P] back into MLP parameters of these layer sizes.

    Static slices and reshapes only (layer by layer: w row-major, then b), so
    it composes with ``vmap`` and ``grad`` in any order. (``ravel_pytree``'s
    unflatten gave wrong gradients under ``vmap`` of ``grad`` with jax 0.10.2.)
    """
    sizes = tuple(int(s) for s in sizes)

    def unravel(flat: jax.Array) -> nets.Params:
        out, start = [], 0
        for a, b in zip(sizes[:-1], sizes[1:]):
            w = flat[start:start + a * b].reshape(a, b)
            start += a * b
            out.append((w, flat[start:start + b]))
            start += b
        return tuple(out)

    return unravel


def fan_in_scales(sizes: tuple[int, ...]) -> jax.Array:
    """1/sqrt(fan_in) for every parameter of an MLP, flattened like ``ravel_pytree`` ([P])."""
    return jnp.concatenate([jnp.full((a * b + b,), 1.0 / np.sqrt(a)) for a, b in zip(sizes[:-1], sizes[1:])])


def systematic_resample(key: jax.Array, log_w: jax.Array, num_out: int) -> tuple[jax.Array, jax.Array]:
    """Systematic resampling of weighted particles into a weighted set with merged duplicates.

    Particle i is kept floor(C·w_i) or ceil(C·w_i) times (unbiased, error of
    every weight ≤ 1/C); copies of one particle are merged: the first copy gets
    log(count / C), the others −inf.

    Args:
      key: PRNG key (one uniform offset).
      log_w: [N] unnormalised log weights.
      num_out: C, the number of slots.

    Returns:
      (indices [C] into the particles, log weights [C] normalised over the slots).
    """
    w = jax.nn.softmax(log_w)
    cdf = jnp.cumsum(w)
    u = (jax.random.uniform(key) + jnp.arange(num_out)) / num_out
    idx = jnp.clip(jnp.searchsorted(cdf, u, side="right"), 0, log_w.shape[0] - 1)  # sorted
    first = jnp.concatenate([jnp.array([True]), idx[1:] != idx[:-1]])
    # count of each run, credited to its first slot
    run_id = jnp.cumsum(first) - 1
    counts = jax.ops.segment_sum(jnp.ones(num_out), run_id, num_segments=num_out)
    log_count = jnp.log(jnp.maximum(counts[run_id], 1.0) / num_out)
    return idx, jnp.where(first, log_count, -jnp.inf)


def effective_sample_size(log_w: jax.Array) -> jax.Array:
    """Kish's ESS (Σw)² / Σw² of unnormalised log weights [N] → []."""
    w = jax.nn.softmax(log_w)
    return 1.0 / jnp.sum(jnp.square(w))
