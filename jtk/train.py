"""The one training loop every gradient-trained jtk agent shares.

Data live in a fixed-capacity padded ``Dataset`` (rows ≥ n are ignored), and
each step draws a minibatch of a *static* size with a validity mask, so the
compiled loop is reused for every num_train up to the capacity and every
temperature (those enter as traced hyperparameters). ``jax.lax.scan`` runs the
steps; callers ``jax.vmap`` the whole loop over ensemble members, problems or
seeds.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jtk import _checks


MIN_CAPACITY = 1024

# On the CPU, training is fastest when the networks trained at once keep their activations, gradients and Adam
# moments in the core's cache. ``cpu_block_size`` counts a network as its minibatch rows plus PARAMETER_ROWS (the
# cache a (50, 50) network's parameters, gradient and two moments take, in rows of activations) and fills
# CPU_BLOCK_ROWS of them. Measured on the testbed's networks (docs/platforms.md, "Chunk size and member blocks").
CPU_BLOCK_ROWS = 700
PARAMETER_ROWS = 32


def cpu_block_size(batch_size: int, limit: int) -> int:
    """How many networks (ensemble members × problems) train at once on the CPU at this minibatch size, 1..limit."""
    _positive_int("batch_size", batch_size), _positive_int("limit", limit)
    return max(1, min(int(limit), CPU_BLOCK_ROWS // (int(batch_size) + PARAMETER_ROWS)))


class Dataset(NamedTuple):
    """A padded training set: only the first ``n`` rows are data."""

    x: jax.Array  # [capacity, d] inputs, zero-padded
    y: jax.Array  # [capacity] labels (int32) or targets (float), zero-padded
    n: jax.Array  # [] int32 number of valid rows


class Batch(NamedTuple):
    """A minibatch of static size B; ``mask`` marks the real rows."""

    x: jax.Array  # [B, d]
    y: jax.Array  # [B]
    mask: jax.Array  # [B] float32, 1 for real rows, 0 for padding
    index: jax.Array  # [B] int32 row indices into the Dataset (for per-example weights)


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """int(value) >= minimum (numpy and concrete JAX integers pass: callers hand over array sizes)."""
    v = int(value)
    if v < minimum or v != value:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return v


def next_pow2(n: int) -> int:
    _positive_int("n", n, minimum=0)
    return 1 << max(int(n) - 1, 0).bit_length()


def capacity_for(n: int) -> int:
    """Padded capacity for n rows: 1024 (the paper grid's largest set) or the next power of two."""
    return max(MIN_CAPACITY, next_pow2(n))


def batch_bucket(n: int, batch_size: int) -> int:
    """Static minibatch size for n rows: min(batch_size, next power of two ≥ n).

    A set smaller than ``batch_size`` is used whole, as in the reference; rounding
    up to a power of two keeps the number of compiled shapes small (≤ 8 for
    batch_size = 100) while wasting at most half a batch on masked rows.
    """
    _positive_int("batch_size", batch_size)
    return min(int(batch_size), next_pow2(max(int(n), 1)))


def pad_dataset(x: np.ndarray, y: np.ndarray, capacity: int | None = None) -> Dataset:
    """Pads validated arrays x [n, d], y [n] to ``capacity`` rows (host side)."""
    n = x.shape[0]
    capacity = capacity_for(n) if capacity is None else capacity
    if capacity < n:
        raise ValueError(f"capacity must be >= the number of rows {n}, got {capacity}")
    xp = np.zeros((capacity,) + x.shape[1:], np.float32)
    xp[:n] = x
    yp = np.zeros((capacity,) + y.shape[1:], y.dtype)
    yp[:n] = y
    return Dataset(jnp.asarray(xp), jnp.asarray(yp), jnp.asarray(n, jnp.int32))


def _check_entry(key, data, batch_size: int) -> None:
    """The static checks of the public entry points (types and static sizes only: traced keys and data pass)."""
    _checks.prng_key("key", key)
    _checks.instance("data", data, Dataset, "a jtk.train.Dataset (padded x, y and n; see pad_dataset)")
    _positive_int("batch_size", batch_size)


def sample_batch(key: jax.Array, data: Dataset, batch_size: int, whole_set: bool = False) -> Batch:
    """Draws ``batch_size`` distinct valid rows uniformly; all of them if n ≤ batch_size.

    Rows are picked as the top-``batch_size`` of uniform keys over the valid
    rows (a fresh shuffle each step), so shapes never depend on n.

    Args:
      key: PRNG key of this step's minibatch.
      data: padded training set.
      batch_size: static minibatch size.
      whole_set: the caller guarantees n ≤ batch_size: rows 0..batch_size-1 are taken (the valid ones are all the
        data), without drawing random numbers. The same rows, in another order, as the draw.
    """
    _check_entry(key, data, batch_size)
    return _batch(data, _indices(key, data, batch_size, whole_set))


def _indices(key: jax.Array, data: Dataset, batch_size: int, whole_set: bool) -> jax.Array:
    capacity = data.x.shape[0]
    if whole_set or batch_size >= capacity:
        return jnp.arange(min(batch_size, capacity), dtype=jnp.int32)
    u = jax.random.uniform(key, (capacity,))
    u = jnp.where(jnp.arange(capacity) < data.n, u, 2.0)
    return jax.lax.top_k(-u, batch_size)[1].astype(jnp.int32)


def _batch(data: Dataset, index: jax.Array) -> Batch:
    mask = (index < data.n).astype(jnp.float32)
    return Batch(data.x[index], data.y[index], mask, index)


def _step_keys(key: jax.Array, num_steps: int) -> tuple[jax.Array, jax.Array]:
    """The minibatch key and the loss key of every step: ([num_steps], [num_steps])."""
    pairs = jax.vmap(jax.random.split)(jax.random.split(key, num_steps))
    return pairs[:, 0], pairs[:, 1]


def batch_indices(key: jax.Array, data: Dataset, batch_size: int, num_steps: int, whole_set: bool = False
                  ) -> jax.Array:
    """The rows every step of :func:`train` draws with this ``key``: [num_steps, batch_size] int32.

    Handed back to :func:`train` as ``indices``, they let several calls on the same minibatches (the blocks of an
    ensemble's members) draw them once.
    """
    _check_entry(key, data, batch_size)
    _positive_int("num_steps", num_steps)
    # 100 steps at a time (vmapped inside lax.map): 5 % faster per step than one draw at a time (ensemble+ K = 100),
    # and all steps at once would hold num_steps × capacity uniform numbers.
    keys = _step_keys(key, num_steps)[0]
    chunk = min(100, num_steps)
    pad = -num_steps % chunk
    keys = jnp.concatenate([keys, keys[:pad]]) if pad else keys
    rows = jax.lax.map(jax.vmap(lambda k: _indices(k, data, batch_size, whole_set)), keys.reshape(-1, chunk))
    return rows.reshape(-1, rows.shape[-1])[:num_steps]


LossFn = Callable[[Any, Batch, Any, jax.Array], jax.Array]


def train(loss_fn: LossFn, params: Any, data: Dataset, hyper: Any, key: jax.Array, *,
          optimizer: optax.GradientTransformation, num_steps: int, batch_size: int,
          active_steps: jax.Array | None = None, whole_set: bool = False,
          indices: jax.Array | None = None) -> tuple[Any, jax.Array]:
    """Runs ``num_steps`` optimiser steps on minibatches (pure; jit / vmap freely).

    Args:
      loss_fn: ``loss_fn(params, batch, hyper, key) -> scalar``.
      params: initial parameters (any pytree).
      data: padded training set.
      hyper: traced hyperparameters handed to ``loss_fn`` (L2 scale, prior scale, ...).
      key: PRNG key for minibatches and any noise inside the loss.
      optimizer: an optax transformation (the reference uses Adam 1e-3).
      num_steps: number of steps (static): the length of the step-key sequence.
      batch_size: static minibatch size (see ``batch_bucket``).
      active_steps: optional *traced* step count ≤ ``num_steps``. Only the first
        ``active_steps`` steps run (a ``while`` loop instead of the scan), with the
        same step keys as the full run, so one compiled program serves every count
        up to ``num_steps`` and costs only the steps it takes. The losses are then
        not collected (zeros are returned).
      whole_set: n ≤ batch_size is guaranteed: every step uses all rows (:func:`sample_batch`).
      indices: the minibatch rows of every step, [num_steps, batch_size], as :func:`batch_indices` draws them
        with the same ``key``, ``batch_size`` and ``whole_set``; drawn here when None.

    Returns:
      (trained params, losses [num_steps]).
    """
    _checks.function("loss_fn", loss_fn, "a function loss_fn(params, batch, hyper, key) -> scalar")
    _check_entry(key, data, batch_size)
    _positive_int("num_steps", num_steps, minimum=0)
    if not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
        raise TypeError(f"optimizer must be an optax.GradientTransformation (e.g. optax.adam(1e-3)), got "
                        f"{type(optimizer).__name__}")
    grad_fn = jax.value_and_grad(loss_fn)
    batch_keys, loss_keys = _step_keys(key, num_steps)

    def step(carry, i):
        params, opt_state = carry
        index = _indices(batch_keys[i], data, batch_size, whole_set) if indices is None else indices[i]
        loss, grads = grad_fn(params, _batch(data, index), hyper, loss_keys[i])
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    carry = (params, optimizer.init(params))
    if active_steps is None:
        (params, _), losses = jax.lax.scan(step, carry, jnp.arange(num_steps))
        return params, losses
    limit = jnp.minimum(jnp.asarray(active_steps, jnp.int32), num_steps)
    params, _ = jax.lax.fori_loop(0, limit, lambda i, c: step(c, i)[0], carry)
    return params, jnp.zeros((num_steps,), jnp.float32)
