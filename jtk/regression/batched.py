"""One regression family trained on a stack of data sets at once: the engine of Wang et al.'s PPC study.

:mod:`jtk.ppc.synthetic_study` trains hundreds of settings, each on 50 data sets. Training them one ``fit`` at a time
would compile and dispatch each data set separately; the functions here train every data set of a stack in one
compiled program, with the owners' own training functions (:mod:`jtk.regression.bnn`, :mod:`jtk.regression.deep`),
so each data set gets the same numbers as that program run alone (tests/test_ppc_study.py compares them).

* By default the data sets run one at a time inside the program (``jax.lax.map``): a step's tensors for one data set
  stay in cache, several times faster per data set than vmapping them on the CPU (docs/ppc.md, "Speed of the
  trainers"), and no linear-algebra call is ever batched (``jtk.regression.bnn.map_datasets`` explains the
  deadlock that batched decompositions can cause). ``vectorize=True`` vmaps over the data sets instead: the way the
  study trained before its speed-up, kept for the speed comparison.
* Data set i is trained with ``keys[i]``; the caller derives the keys (the study: ``jax.random.split(key, D)``).

Every function checks its arguments at entry (the model's type, the stacks' shapes, the keys), never inside the
compiled program.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jtk import _checks, _compile, train as train_lib
from jtk.regression import bnn, deep

__all__ = ["bbb_many", "ensemble_snapshots", "networks_many", "sgld_many"]


# ------------------------------------------------------------------ checks and the map over data sets
def _keys(keys, num: int, shape: tuple[int, ...] = ()) -> jax.Array:
    """keys: an array of PRNG keys of shape ``shape + (num,)`` (raw uint32 keys [..., 2] or typed keys)."""
    arr = keys if isinstance(keys, jax.Array) else np.asarray(keys)
    raw = arr.dtype == np.uint32 and arr.ndim >= 1 and arr.shape[-1] == 2
    lead = arr.shape[:-1] if raw else arr.shape
    if not (raw or jnp.issubdtype(arr.dtype, jax.dtypes.prng_key)) or lead != (*shape, num):
        raise ValueError(f"keys must be {(*shape, num)} PRNG keys (e.g. jax.random.split(key, {num})), one per data "
                         f"set, got an array of shape {arr.shape} and dtype {arr.dtype}")
    return jnp.asarray(arr)


def _vectorize(value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"vectorize must be True or False, got {value!r}")
    return bool(value)


@functools.partial(_compile.jit, static_argnums=0, long_running=True)
def _map_sets(fn, *per_set):
    """``fn(*args)`` for one data set at a time (lax.map over the leading axis of every argument)."""
    return jax.lax.map(lambda a: fn(*a), per_set)


def _with_hyper(fn, hyper, key, data):
    return fn(key, data, hyper)


def _padded(xs: np.ndarray, ys: np.ndarray) -> train_lib.Dataset:
    """The Dataset each model's ``fit`` trains on (train.pad_dataset), stacked: leaves [D, ...]."""
    data = [train_lib.pad_dataset(x.astype(np.float32), y.astype(np.float32)) for x, y in zip(xs, ys)]
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *data)


def _run(fn, hyper, keys, data, vectorize: bool):
    if vectorize:
        return jax.vmap(fn, in_axes=(0, 0, None))(keys, data, hyper)
    return _map_sets(functools.partial(_with_hyper, fn, hyper), keys, data)


# ------------------------------------------------------------------ the weight-space families
def bbb_many(model: bnn.BBBRegression, keys, xs, ys, *, vectorize: bool = False):
    """Bayes by Backprop on every data set of a stack → (mu, sigma), leaves [D, ...].

    The variational parameters :meth:`jtk.regression.bnn.BBBRegression.fit` finds for data set i with key
    ``keys[i]``; ``bnn.GaussianWeightPosterior(mu_i, sigma_i, d, S)`` is its posterior with S moment samples.

    Args:
      model: the :class:`~jtk.regression.bnn.BBBRegression` whose settings are trained.
      keys: [D] PRNG keys, one per data set.
      xs: [D, n, d] inputs; ys: [D, n] targets (every data set the same n).
      vectorize: vmap over the data sets instead of mapping them one at a time.
    """
    _checks.instance("model", model, bnn.BBBRegression)
    xs, ys = _checks.data_stacks(xs, ys)
    keys, vectorize = _keys(keys, len(xs)), _vectorize(vectorize)
    n, d = xs.shape[1], xs.shape[2]
    mu, sigma, _ = _run(model._fn(d, n), model._hyper(n), keys, _padded(xs, ys), vectorize)
    return mu, sigma


def sgld_many(model: bnn.SGLDRegression, keys, xs, ys, *, vectorize: bool = False):
    """SGLD chains on every data set of a stack → raw-parameter samples, leaves [D, chains × samples, ...].

    The samples :meth:`jtk.regression.bnn.SGLDRegression.fit` draws for data set i with key ``keys[i]``;
    ``bnn.ParticlePosterior(samples_i[:S], d)`` is its posterior from the first S of them.

    Args:
      model: the :class:`~jtk.regression.bnn.SGLDRegression` whose chains are run.
      keys: [D] PRNG keys, one per data set.
      xs: [D, n, d] inputs; ys: [D, n] targets (every data set the same n).
      vectorize: vmap over the data sets instead of mapping them one at a time.
    """
    _checks.instance("model", model, bnn.SGLDRegression)
    xs, ys = _checks.data_stacks(xs, ys)
    keys, vectorize = _keys(keys, len(xs)), _vectorize(vectorize)
    n, d = xs.shape[1], xs.shape[2]
    return _run(model._fn(d, n), model._hyper(n), keys, _padded(xs, ys), vectorize)


# ------------------------------------------------------------------ the deep-regression networks
def networks_many(model: deep.DeepRegression, keys, xs, ys, *, vectorize: bool = False) -> deep.Member:
    """The K networks of a deep-regression model (e.g. "BD", MC dropout) on every data set of a stack.

    Data set i's networks are keyed by ``fold_in(keys[i], 0)`` (network j by ``fold_in(that, j)``) and trained by
    the model's own training step; ``deep.DeepRegressionPosterior(model, state_i, d)`` is the posterior. The
    model's data-dependent settings (its step counts) are read from the first data set, as every data set has the
    same n.

    Args:
      model: a :class:`~jtk.regression.deep.DeepRegression` (:func:`~jtk.regression.deep.make_regression`).
      keys: [D] PRNG keys, one per data set.
      xs: [D, n, d] inputs; ys: [D, n] targets.
      vectorize: vmap over the data sets instead of mapping them one at a time.

    Returns:
      The networks, leaves [D, K, ...].
    """
    _checks.instance("model", model, deep.DeepRegression)
    xs, ys = _checks.data_stacks(xs, ys)
    keys, vectorize = _keys(keys, len(xs)), _vectorize(vectorize)
    n, k = xs.shape[1], model.num_networks
    hyper, arch = model._hyper(xs[0].astype(np.float32)), model._arch()
    member_keys = jax.vmap(lambda kk: deep._member_keys(jax.random.fold_in(kk, 0), k))(keys)  # [D, K]
    xs32 = jnp.asarray(xs, jnp.float32)
    ys32 = jnp.asarray(np.stack([np.broadcast_to(y, (k, n)) for y in ys]), jnp.float32)
    if vectorize:
        return jax.vmap(lambda kk, x, y: deep._train_networks(arch, hyper, kk, x, y))(member_keys, xs32, ys32)
    return _map_sets(functools.partial(deep._train_networks, arch, hyper), member_keys, xs32, ys32)


def ensemble_snapshots(hidden: int, num_members: int, epochs, keys, xs, ys, learning_rates, noise_var: float,
                       dropout_rate: float) -> deep.Member:
    """Deep ensembles ("Ens" of :mod:`jtk.regression.deep`) for every data set and learning rate at once, with a
    snapshot at every epoch count.

    The same maths as ``deep``'s own "Ens" training (Gaussian NLL / n plus (1 / n) / 2 · Σ weights², full-batch Adam,
    Glorot initialisation keyed as ``deep`` keys its networks), written for the batch: the K members' first layers
    are one matmul [n, d] × [d, K·H], each step a fused pass over [n, K, H]. Full-batch Adam draws no random
    numbers, so the first 100 of 1,000 steps *are* the 100-epoch run: one run per (learning rate, data set) serves
    every epoch count.

    Args:
      hidden: hidden width H.
      num_members: ensemble size K.
      epochs: ascending epoch counts (full-batch steps) to keep, e.g. (100, 300, 1000).
      keys: [L, D] PRNG keys, per learning rate one per data set.
      xs: [D, n, d] inputs; ys: [D, n] targets.
      learning_rates: [L] Adam step sizes.
      noise_var: the Gaussian likelihood's variance.
      dropout_rate: the rate the members' (unused) noise layer records, for
        :class:`~jtk.regression.deep.DeepRegressionPosterior` of a "BD"-shaped model.

    Returns:
      The members, leaves [E, L, D, K, ...].
    """
    hidden = _checks.integer("hidden", hidden, minimum=1)
    num_members = _checks.integer("num_members", num_members, minimum=1)
    if isinstance(epochs, (str, bytes)) or not isinstance(epochs, (tuple, list)) or not epochs:
        raise TypeError(f"epochs must be a non-empty tuple of ascending epoch counts, got {epochs!r}")
    epochs = tuple(_checks.integer("epochs", e, minimum=1) for e in epochs)
    if list(epochs) != sorted(set(epochs)):
        raise ValueError(f"epochs must be strictly ascending, got {epochs}")
    xs, ys = _checks.data_stacks(xs, ys)
    lrs = _checks.as_float_array("learning_rates", learning_rates, ndim=1)
    if not lrs.size or np.any(lrs <= 0):
        raise ValueError(f"learning_rates must be a non-empty array of positive step sizes, got {lrs}")
    keys = _keys(keys, len(xs), (len(lrs),))
    noise_var = _checks.positive("noise_var", noise_var)
    dropout_rate = float(dropout_rate)
    if not 0 < dropout_rate < 1:
        raise ValueError(f"dropout_rate must be in (0, 1), got {dropout_rate!r}")
    return _ensemble_snapshots(hidden, num_members, epochs, dropout_rate, keys, jnp.asarray(xs, jnp.float32),
                               jnp.asarray(ys, jnp.float32), jnp.asarray(lrs, jnp.float32), jnp.float32(noise_var))


@functools.partial(_compile.jit, static_argnums=(0, 1, 2, 3), long_running=True)
def _ensemble_snapshots(hidden: int, num_members: int, epochs: tuple[int, ...], dropout_rate: float, keys: jax.Array,
                        x: jax.Array, y: jax.Array, lrs: jax.Array, noise_var: jax.Array) -> deep.Member:
    n, d = x.shape[1], x.shape[2]

    def init(key):  # deep._train_one's keys: member j ← fold_in(fold_in(key, 0), j) → split(·, 3)[0]
        member_keys = deep._member_keys(jax.random.fold_in(key, 0), num_members)
        return jax.vmap(lambda k: deep.glorot_mlp(jax.random.split(k, 3)[0], (d, hidden, 1)))(member_keys)

    # Training runs on a flat layout: the K members' first layers side by side as one [d, K·H] matrix, so the first
    # layer is one matmul [n, d] × [d, K·H] and each step's tensors are [n, K, H], faster per step than [K, n, H]
    # on the CPU (benchmarks/ppc_ensemble_layout.py; docs/ppc.md, "Speed of the trainers"). Adam is elementwise, so
    # the layout does not change the updates; the members are returned in deep's layout.
    def to_flat(net):  # deep's [K, d, H], [K, H], [K, H, 1], [K, 1] → [d, K·H], [K·H], [K, H], [K]
        (w1, b1), (w2, b2) = net
        return (jnp.moveaxis(w1, 0, 1).reshape(d, num_members * hidden), b1.reshape(-1)), (w2[..., 0], b2[:, 0])

    def from_flat(net):
        (w1, b1), (w2, b2) = net
        return ((jnp.moveaxis(w1.reshape(d, num_members, hidden), 1, 0), b1.reshape(num_members, hidden)),
                (w2[..., None], b2[:, None]))

    def loss(net, xx, yy):  # Σ over members of deep._loss for "Ens": Gaussian NLL / n + (1 / n) / 2 · Σ weights²
        (w1, b1), (w2, b2) = net
        h = jax.nn.relu(xx @ w1 + b1).reshape(n, num_members, hidden)
        f = jnp.einsum("nkh,kh->nk", h, w2) + b2
        nll = jnp.sum(jnp.square(yy[:, None] - f)) / (2.0 * noise_var * n)
        return nll + 0.5 / n * (jnp.sum(jnp.square(w1)) + jnp.sum(jnp.square(w2)))

    def train_one(key, xx, yy, lr):
        net = to_flat(init(key))
        opt = optax.adam(lr)
        grad = jax.grad(loss)

        def step(_, carry):
            params, state = carry
            updates, state = opt.update(grad(params, xx, yy), state, params)
            return optax.apply_updates(params, updates), state

        carry, snaps, done = (net, opt.init(net)), [], 0
        for e in epochs:
            carry = jax.lax.fori_loop(done, e, step, carry)
            snaps.append(from_flat(carry[0]))
            done = e
        return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *snaps)  # [E, ...]

    # One (learning rate, data set) at a time (lax.map, not vmap): a step's tensors [n, K, H] then stay in cache,
    # measured several times faster per data set than the vmapped batch (docs/ppc.md, "Speed of the trainers").
    num_l, num_d = keys.shape[0], keys.shape[1]
    flat = (jnp.repeat(lrs, num_d), keys.reshape(num_l * num_d, *keys.shape[2:]), jnp.tile(x, (num_l, 1, 1)),
            jnp.tile(y, (num_l, 1)))
    out = jax.lax.map(lambda a: train_one(a[1], a[2], a[3], a[0]), flat)  # leaves [L·D, E, ...]
    net = jax.tree_util.tree_map(lambda a: jnp.moveaxis(a.reshape(num_l, num_d, *a.shape[1:]), 2, 0), out)
    shape = jax.tree_util.tree_leaves(net)[0].shape[:4]
    return deep.Member(net, deep.NoiseLayer(jnp.full(shape, np.log(dropout_rate / (1 - dropout_rate)), jnp.float32)))
