"""Sampling-based and variational regression BNNs for the PPC study (Wang et al. 2021, §5).

Both models are one-hidden-layer ReLU networks whose weight prior matches the
oracle's kernel (``jtk.envs.gp``), so that for infinite width they share its
prior over functions (Neal 1995):

    f(x) = σ_b1 b₁ + sqrt(σ²_w1 / H) Σ_j v_j relu(σ_b0 c_j + sqrt(σ²_w0 / d) w_j·x),

with all *raw* parameters (w, c, v, b₁) ~ N(0, prior_scale²); prior_scale = 1
is the matched prior and other values give deliberately misspecified models.
The likelihood is Gaussian with the true noise variance (0.01 on the synthetic
data, as in the paper).

* :class:`BBBRegression`: Bayes by Backprop (Blundell et al. 2015): mean-field
  Gaussian q over the raw parameters, reparameterised ELBO, Adam.
* :class:`SGLDRegression`: stochastic-gradient Langevin dynamics (Welling & Teh
  2011) on full batches, several chains run in parallel (``jax.vmap``), samples
  thinned after burn-in. The Langevin noise enters through the loss, so the
  shared loop ``jtk.train.train`` with plain SGD runs the chain:
  loss = ε U(θ) − sqrt(2ε) ξ·θ gives θ ← θ − ε ∇U(θ) + sqrt(2ε) ξ.

Both return posteriors with coherent function samples; ``covariance`` is the
sample covariance of eq. (2.2) (``SampledRegressionPosterior``).

The network, the potential (``neg_log_joint``), the full-batch padding (:func:`full_batch`,
:func:`stack_full_batches`, ``map_datasets``) and the weight-sampling posteriors are shared with the HMC, NNG and
FBNN families (:mod:`jtk.regression.hmc`, :mod:`jtk.regression.nng`, :mod:`jtk.regression.fbnn`).

Example:
  >>> import numpy as np
  >>> x = np.random.default_rng(0).normal(size=(20, 2)); y = x[:, 0]
  >>> post = BBBRegression(num_steps=200).fit(x, y, seed=0)
  >>> post.sample_functions(x[:3], 5, seed=1).shape
  (5, 3)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jtk import _checks, _compile, nets, train as train_lib
from jtk.regression.base import SampledRegressionPosterior
from jtk._numerics import numpy_rng
from jtk.envs.gp import BIAS0_VAR, BIAS1_VAR, NOISE_VAR, WEIGHT0_VAR, WEIGHT1_VAR


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["BIAS0_VAR", "BIAS1_VAR", "NOISE_VAR", "WEIGHT0_VAR", "WEIGHT1_VAR", "layer_scales", "init_raw",
           "apply_raw_numpy", "full_batch", "stack_full_batches", "WeightSamplingPosterior", "ParticlePosterior",
           "GaussianWeightPosterior", "BBBRegression", "SGLDRegression"]


def layer_scales(input_dim: int, hidden: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """((weight, bias) multiplier of layer 0, (weight, bias) multiplier of layer 1) of the oracle-matched prior.

    Layer l computes s = (a · weight_l) w_raw + bias_l b_raw: the raw parameters are N(0, 1) under the matched prior.
    """
    _checks.integer("input_dim", input_dim, minimum=1), _checks.integer("hidden", hidden, minimum=1)
    return ((float(np.sqrt(WEIGHT0_VAR / input_dim)), float(np.sqrt(BIAS0_VAR))),
            (float(np.sqrt(WEIGHT1_VAR / hidden)), float(np.sqrt(BIAS1_VAR))))


def _scales(input_dim: int, hidden: int) -> nets.Params:
    """Per-leaf multipliers turning raw N(0, 1) parameters into the network's weights."""
    (w0, b0), (w1, b1) = layer_scales(input_dim, hidden)
    return ((jnp.full((input_dim, hidden), w0), jnp.full((hidden,), b0)),
            (jnp.full((hidden, 1), w1), jnp.full((1,), b1)))


def homogeneous(a: jax.Array, weight_scale: float, bias_scale: float) -> jax.Array:
    """[a · weight_scale, bias_scale]: a layer's input [n, k] → [n, k + 1], so that s = homogeneous(a) @ W_raw."""
    return jnp.concatenate([a * weight_scale, jnp.full(a.shape[:-1] + (1,), bias_scale, a.dtype)], -1)


def hidden_features(layer0: tuple[jax.Array, jax.Array], x: jax.Array) -> jax.Array:
    """The output layer's homogeneous input for raw first-layer parameters (w [d, H], c [H]) at x [n, d] → [n, H + 1].

    f(x) = hidden_features(raw[0], x) @ concat(v, b) equals ``apply_raw`` (up to float rounding): the last layer is
    linear in these features (used by NNG's Kronecker factors and by the FBNN's Bayesian last layer).
    """
    w, c = layer0
    d, h = w.shape
    (w0, b0), (w1, b1) = layer_scales(d, h)
    pre = homogeneous(x, w0, b0) @ jnp.concatenate([w, c[None, :]], 0)  # [n, H]
    return homogeneous(jax.nn.relu(pre), w1, b1)


def init_raw(key: jax.Array, input_dim: int, hidden: int, scale: float | jax.Array = 1.0) -> nets.Params:
    """Raw parameters drawn from N(0, scale²): ((w [d, H], c [H]), (v [H, 1], b [1]))."""
    _checks.prng_key("key", key)
    _checks.integer("input_dim", input_dim, minimum=1), _checks.integer("hidden", hidden, minimum=1)
    shapes = [(input_dim, hidden), (hidden,), (hidden, 1), (1,)]
    keys = jax.random.split(key, 4)
    leaves = [scale * jax.random.normal(k, s) for k, s in zip(keys, shapes)]
    return ((leaves[0], leaves[1]), (leaves[2], leaves[3]))


def apply_raw(raw: nets.Params, x: jax.Array) -> jax.Array:
    """f at x [n, d] → [n] for raw parameters (scaled to the oracle-matched prior)."""
    d, h = raw[0][0].shape
    params = jax.tree_util.tree_map(lambda p, s: p * s, raw, _scales(d, h))
    return nets.mlp_apply(params, x, "relu")[:, 0]


def apply_raw_numpy(raw_samples, x: np.ndarray, chunk: int = 64) -> np.ndarray:
    """f for S raw-parameter samples (leaves [S, ...]) at x [n, d] → [S, n], float64 numpy.

    The same network as ``apply_raw``, evaluated on the host in chunks of
    samples: no compilation for each new (S, n), which matters in notebooks.
    """
    _checks.integer("chunk", chunk, minimum=1)
    (w, c), (v, b) = [[np.asarray(leaf, np.float64) for leaf in layer] for layer in raw_samples]
    d, h = w.shape[1], w.shape[2]
    (w0, b0), (w1, b1) = layer_scales(d, h)
    w = w * w0
    c = c * b0
    v = v[..., 0] * w1
    b = b[..., 0] * b1
    x = np.asarray(x, np.float64)
    out = np.empty((w.shape[0], x.shape[0]))
    for i in range(0, w.shape[0], chunk):
        hidden = np.maximum(np.einsum("nd,sdh->snh", x, w[i:i + chunk]) + c[i:i + chunk, None, :], 0.0)
        out[i:i + chunk] = np.einsum("snh,sh->sn", hidden, v[i:i + chunk]) + b[i:i + chunk, None]
    return out


def _gaussian_nll(f: jax.Array, batch: train_lib.Batch, n: jax.Array, noise_var: jax.Array) -> jax.Array:
    """Full-data negative log-likelihood estimated from a masked minibatch (scaled by n / B)."""
    sq = jnp.sum(batch.mask * (batch.y - f) ** 2) / (2 * noise_var)
    b = jnp.maximum(jnp.sum(batch.mask), 1.0)
    return n / b * sq + 0.5 * n * jnp.log(2 * jnp.pi * noise_var)


def neg_log_joint(raw: nets.Params, batch: train_lib.Batch, n: jax.Array, noise_var: jax.Array,
                  prior_scale: jax.Array) -> jax.Array:
    """U(θ) = −log p(y | θ) − log p(θ) up to θ-free constants: the potential of SGLD and HMC.

    The likelihood term is estimated from the masked ``batch`` (exact when the batch is the whole set); the prior is
    N(0, prior_scale²) on every raw parameter.
    """
    return _gaussian_nll(apply_raw(raw, batch.x), batch, n, noise_var) + nets.sum_of_squares(raw) / (2 * prior_scale ** 2)


def _check_xy(x, y):
    x = _checks.as_float_array("x", x, ndim=2)
    y = _checks.as_float_array("y", y, ndim=1)
    if len(y) != len(x):
        raise ValueError(f"y must have {len(x)} entries like x, got {len(y)}")
    if len(x) == 0:
        raise ValueError("x must hold at least one training point, got 0 rows")
    return x.astype(np.float32), y.astype(np.float32)


def full_batch(x, y) -> train_lib.Batch:
    """Validated x [n, d], y [n] → the whole set as one masked Batch of next_pow2(n) rows (full-batch methods).

    Padding to a power of two keeps the number of compiled shapes small; padded rows have mask 0.
    """
    x, y = _check_xy(x, y)
    n = len(x)
    rows = train_lib.next_pow2(n)
    xp = np.zeros((rows, x.shape[1]), np.float32)
    yp = np.zeros((rows,), np.float32)
    xp[:n], yp[:n] = x, y
    mask = (np.arange(rows) < n).astype(np.float32)
    return train_lib.Batch(jnp.asarray(xp), jnp.asarray(yp), jnp.asarray(mask), jnp.arange(rows, dtype=jnp.int32))


def stack_full_batches(xs, ys) -> tuple[train_lib.Batch, int, int]:
    """A stack of data sets xs [B, n, d], ys [B, n] → (Batch with leaves [B, ...], n, d) for ``map_datasets``.

    Every data set has the same n (as the PPC study's splits); each is padded as :func:`full_batch` pads it.
    """
    xs, ys = _checks.data_stacks(xs, ys)
    batches = [full_batch(x, y) for x, y in zip(xs, ys)]
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *batches), xs.shape[1], xs.shape[2]


def map_datasets(fn, key: jax.Array, batches: train_lib.Batch, hyper: Any, *, vectorize: bool = False):
    """``fn(key, batch, hyper)`` on every data set of a stack, one data set at a time (``jax.lax.map`` in one
    compiled program); data set i gets split(key)[i]. Leaves of the result are [B, ...].

    ``vectorize=True`` vmaps over the data sets instead (faster on the CPU for HMC, twice on 50 data sets), for an
    ``fn`` without linear-algebra decompositions only: ``lapack_calls`` of its program must be empty (HMC's test
    checks it).

    This is how the PPC study trains one setting on all its splits: ``fit_many`` of HMC, NNG and FBNN use it.

    Not ``jax.vmap``: vmapped over data sets, every ``eigh`` / ``cholesky`` inside ``fn`` becomes one *batched*
    LAPACK call, and jaxlib's CPU kernels split a large enough batch into tasks on XLA's intra-op thread pool and
    then block a pool thread until those tasks finish (``ParallelBatchMap``). When as many batched calls run at once
    as the pool has threads (NNG's independent Kronecker-factor ``eigh`` s, two threads on a 2-core machine), every
    thread waits on tasks no thread is left to run: the process sleeps at 0 % CPU forever (the hang of the
    all-families PPC run, docs/ppc.md "Speed of the trainers"). One data set at a time, each decomposition is a single
    matrix, which the kernels run inline on the calling thread.
    """
    keys = jax.random.split(key, batches.x.shape[0])
    if vectorize:
        return jax.vmap(fn, in_axes=(0, 0, None))(keys, batches, hyper)
    return _map_datasets_fn(fn)(keys, batches, hyper)


def lapack_calls(fn, *args) -> list[tuple[str, tuple[int, ...]]]:
    """(custom-call target, first operand's shape) of every CPU LAPACK call in the program of ``fn(*args)``.

    A shape of rank above 2 is a batched decomposition, which can deadlock XLA's thread pool (``map_datasets``).
    """
    import re

    out = []
    for line in _compile.jit(fn).lower(*args).as_text().splitlines():
        call = re.search(r"custom_call @(lapack_\w+)\(", line)
        if call:  # the operand types follow the attributes: ... : (tensor<AxBxf32>, ...) -> (...)
            operand = re.search(r"\}\s*:\s*\(tensor<([^>]*)>", line)
            dims = tuple(int(v) for v in operand.group(1).split("x")[:-1]) if operand else ()
            out.append((call.group(1), dims))
    return out


@functools.lru_cache(maxsize=64)
def _map_datasets_fn(fn):
    """One compiled program per training function ``fn`` (itself cached by its owner)."""

    def run(keys, batches, hyper):
        return jax.lax.map(lambda a: fn(a[0], a[1], hyper), (keys, batches))

    return _compile.jit(run)


def unstack(tree: Any, i: int) -> Any:
    """Data set i of a stacked result (leaves [B, ...]) as numpy arrays."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a[i]), tree)


# ------------------------------------------------------------------ posteriors
class WeightSamplingPosterior(SampledRegressionPosterior):
    """Mixin for posteriors that can draw raw weight samples: coherent functions through :func:`apply_raw_numpy`.

    Subclasses define ``input_dim`` and ``_draw_raw(rng, num_samples)`` → raw parameters with leaves [M, ...].
    """

    input_dim: int

    def _draw_raw(self, rng: np.random.Generator, num_samples: int) -> nets.Params:
        raise NotImplementedError

    def sample_functions(self, x, num_samples: int, seed: Any = 0) -> np.ndarray:
        """x [n, d] → [M, n]: each row uses one weight draw θ ~ q at all n inputs."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        x = _checks.as_float_array("x", x, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have {self.input_dim} columns, got an array of shape {x.shape}")
        return apply_raw_numpy(self._draw_raw(numpy_rng(seed), num_samples), x)


@dataclass(frozen=True, eq=False)
class ParticlePosterior(SampledRegressionPosterior):
    """A fixed set of S parameter samples (SGLD); leaves of ``samples`` are [S, ...].

    ``sample_functions(x, M, seed)`` returns M of the S functions: a random subset
    when M ≤ S, draws with replacement otherwise. ``predict`` / ``covariance`` use all S.
    """

    samples: nets.Params
    input_dim: int

    @property
    def num_moment_samples(self) -> int:  # type: ignore[override]
        return int(self.samples[0][0].shape[0])

    def _x(self, x):
        x = _checks.as_float_array("x", x, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have {self.input_dim} columns, got an array of shape {x.shape}")
        return x

    def sample_functions(self, x, num_samples: int, seed: Any = 0) -> np.ndarray:
        """x [n, d] → [M, n] function samples."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        f = apply_raw_numpy(self.samples, self._x(x))  # [S, n]
        s = f.shape[0]
        if num_samples == s:
            return f
        idx = numpy_rng(seed).choice(s, num_samples, replace=num_samples > s)
        return f[idx]

    def covariance(self, x) -> np.ndarray:
        f = apply_raw_numpy(self.samples, self._x(x))
        return np.cov(f, rowvar=False, ddof=1).reshape(f.shape[1], f.shape[1])

    def predict(self, x):
        f = apply_raw_numpy(self.samples, self._x(x))
        return f.mean(0), f.std(0, ddof=1)


@dataclass(frozen=True, eq=False)
class GaussianWeightPosterior(WeightSamplingPosterior):
    """Mean-field Gaussian q(θ) = N(mu, sigma²) over raw parameters (BBB)."""

    mu: nets.Params
    sigma: nets.Params
    input_dim: int
    num_moment_samples: int = 1000

    def _draw_raw(self, rng: np.random.Generator, num_samples: int) -> nets.Params:
        return jax.tree_util.tree_map(
            lambda m, sd: np.asarray(m, np.float64) + np.asarray(sd, np.float64)
            * rng.standard_normal((num_samples,) + tuple(m.shape)), self.mu, self.sigma)


# ------------------------------------------------------------------ BBB
@functools.lru_cache(maxsize=32)
def _bbb_fit_fn(input_dim: int, hidden: int, num_steps: int, batch_size: int, num_mc: int, learning_rate: float):
    optimizer = optax.adam(learning_rate)

    def loss_fn(vparams, batch, hyper, key):
        mu, rho = vparams
        sigma = jax.tree_util.tree_map(jax.nn.softplus, rho)

        def nll(k):
            leaves, tree = jax.tree_util.tree_flatten(mu)
            ks = jax.random.split(k, len(leaves))
            eps = jax.tree_util.tree_unflatten(tree, [jax.random.normal(kk, l.shape) for kk, l in zip(ks, leaves)])
            raw = jax.tree_util.tree_map(lambda m, s, e: m + s * e, mu, sigma, eps)
            return _gaussian_nll(apply_raw(raw, batch.x), batch, hyper["n"], hyper["noise_var"])

        expected_nll = jnp.mean(jax.vmap(nll)(jax.random.split(key, num_mc)))
        sp = hyper["prior_scale"]
        kl = sum(jnp.sum(jnp.log(sp / s) + (s ** 2 + m ** 2) / (2 * sp ** 2) - 0.5)
                 for m, s in zip(jax.tree_util.tree_leaves(mu), jax.tree_util.tree_leaves(sigma)))
        return (expected_nll + hyper["kl_weight"] * kl) / hyper["n"]

    def fit(key, data, hyper):
        k_init, k_train = jax.random.split(key)
        mu = init_raw(k_init, input_dim, hidden, 1.0)
        rho0 = jnp.log(jnp.expm1(hyper["init_sigma"]))
        rho = jax.tree_util.tree_map(lambda m: jnp.full(m.shape, rho0), mu)
        (mu, rho), losses = train_lib.train(loss_fn, (mu, rho), data, hyper, k_train, optimizer=optimizer,
                                            num_steps=num_steps, batch_size=batch_size)
        return mu, jax.tree_util.tree_map(jax.nn.softplus, rho), losses

    return _compile.jit(fit)


@dataclass(frozen=True)
class BBBRegression:
    """Bayes by Backprop regression BNN (mean-field Gaussian variational posterior).

    Args:
      hidden: hidden width H (100).
      noise_var: Gaussian likelihood variance (the true 0.01, as in the paper).
      prior_scale: std of the raw-parameter prior; 1 matches the oracle kernel.
      kl_weight: weight of the KL term (1 = the ELBO; < 1 is a "cold" posterior).
      init_sigma: initial posterior std of every raw parameter (0.01).
      learning_rate: Adam step size (3e-3).
      num_steps: optimiser steps (3000; full batches when n ≤ batch_size).
      num_mc: weight samples per ELBO estimate (4).
      batch_size: minibatch size (128).
      num_moment_samples: samples for predict / covariance (1000, eq. 2.2).
    """

    hidden: int = 100
    noise_var: float = NOISE_VAR
    prior_scale: float = 1.0
    kl_weight: float = 1.0
    init_sigma: float = 0.01
    learning_rate: float = 3e-3
    num_steps: int = 3000
    num_mc: int = 4
    batch_size: int = 128
    num_moment_samples: int = 1000

    def __post_init__(self):
        _checks.integer("hidden", self.hidden, minimum=1)
        _checks.positive("noise_var", self.noise_var)
        _checks.positive("prior_scale", self.prior_scale)
        _checks.positive("kl_weight", self.kl_weight, allow_zero=True)
        _checks.positive("init_sigma", self.init_sigma)
        _checks.positive("learning_rate", self.learning_rate)
        _checks.integer("num_steps", self.num_steps, minimum=1)
        _checks.integer("num_mc", self.num_mc, minimum=1)
        _checks.integer("batch_size", self.batch_size, minimum=1)
        _checks.integer("num_moment_samples", self.num_moment_samples, minimum=2)

    def _fn(self, input_dim: int, n: int):
        """The compiled training of n points in ``input_dim`` dimensions (shared with jtk.regression.batched)."""
        return _bbb_fit_fn(input_dim, self.hidden, self.num_steps, train_lib.batch_bucket(n, self.batch_size),
                           self.num_mc, self.learning_rate)

    def _hyper(self, n: int) -> dict:
        return {"n": jnp.float32(n), "noise_var": jnp.float32(self.noise_var),
                "prior_scale": jnp.float32(self.prior_scale), "kl_weight": jnp.float32(self.kl_weight),
                "init_sigma": jnp.float32(self.init_sigma)}

    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> GaussianWeightPosterior:
        """Trains on x [n, d], y [n] → :class:`GaussianWeightPosterior`. ``prior`` is ignored."""
        x, y = _check_xy(x, y)
        key = _checks.as_key(seed)
        data = train_lib.pad_dataset(x, y)
        mu, sigma, _ = self._fn(x.shape[1], len(x))(key, data, self._hyper(len(x)))
        return GaussianWeightPosterior(mu, sigma, x.shape[1], self.num_moment_samples)


# ------------------------------------------------------------------ SGLD
@functools.lru_cache(maxsize=32)
def _sgld_fit_fn(input_dim: int, hidden: int, burn_in: int, thin: int, samples_per_chain: int, num_chains: int,
                 batch_size: int):
    optimizer = optax.sgd(1.0)  # the step size ε lives in the loss (traced)

    def loss_fn(raw, batch, hyper, key):
        eps = hyper["step_size"]
        sp = hyper["prior_scale"]
        u = neg_log_joint(raw, batch, hyper["n"], hyper["noise_var"], sp)
        leaves, tree = jax.tree_util.tree_flatten(raw)
        ks = jax.random.split(key, len(leaves))
        xi = [jax.random.normal(k, l.shape) for k, l in zip(ks, leaves)]
        kick = sum(jnp.sum(z * l) for z, l in zip(xi, leaves))
        return eps * u - jnp.sqrt(2 * eps) * kick

    def chain(key, data, hyper):
        k_init, k_burn, k_samples = jax.random.split(key, 3)
        raw = init_raw(k_init, input_dim, hidden, hyper["prior_scale"])
        run = functools.partial(train_lib.train, loss_fn, optimizer=optimizer, batch_size=batch_size)
        raw, _ = run(raw, data, hyper, k_burn, num_steps=burn_in)

        def step(raw, k):
            raw, _ = run(raw, data, hyper, k, num_steps=thin)
            return raw, raw

        _, samples = jax.lax.scan(step, raw, jax.random.split(k_samples, samples_per_chain))
        return samples  # leaves [samples_per_chain, ...]

    def fit(key, data, hyper):
        samples = jax.vmap(chain, (0, None, None))(jax.random.split(key, num_chains), data, hyper)
        return jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), samples)  # [C·S, ...]

    return _compile.jit(fit)


@dataclass(frozen=True)
class SGLDRegression:
    """Full-batch SGLD regression BNN; ``num_chains`` chains in parallel, thinned samples.

    Args:
      hidden: hidden width H (100).
      noise_var: Gaussian likelihood variance (the true 0.01).
      prior_scale: std of the raw-parameter prior; 1 matches the oracle kernel.
      step_size: Langevin step ε (1e-4 relative to the unnormalised log posterior).
      num_chains: parallel chains (4), each started from a prior draw.
      burn_in: steps discarded per chain (4000).
      thin: steps between kept samples (100).
      samples_per_chain: kept samples per chain (50); total S = chains × this.
      batch_size: minibatch size (128; the whole set when smaller: exact Langevin).
    """

    hidden: int = 100
    noise_var: float = NOISE_VAR
    prior_scale: float = 1.0
    step_size: float = 1e-4
    num_chains: int = 4
    burn_in: int = 4000
    thin: int = 100
    samples_per_chain: int = 50
    batch_size: int = 128

    def __post_init__(self):
        _checks.integer("hidden", self.hidden, minimum=1)
        _checks.positive("noise_var", self.noise_var)
        _checks.positive("prior_scale", self.prior_scale)
        _checks.positive("step_size", self.step_size)
        _checks.integer("num_chains", self.num_chains, minimum=1)
        _checks.integer("burn_in", self.burn_in, minimum=1)
        _checks.integer("thin", self.thin, minimum=1)
        _checks.integer("samples_per_chain", self.samples_per_chain, minimum=1)
        _checks.integer("batch_size", self.batch_size, minimum=1)
        if self.num_chains * self.samples_per_chain < 2:
            raise ValueError("num_chains * samples_per_chain must be >= 2 to estimate a covariance, got "
                             f"{self.num_chains} * {self.samples_per_chain}")

    def _fn(self, input_dim: int, n: int):
        """The compiled chains on n points in ``input_dim`` dimensions (shared with jtk.regression.batched)."""
        return _sgld_fit_fn(input_dim, self.hidden, self.burn_in, self.thin, self.samples_per_chain,
                            self.num_chains, train_lib.batch_bucket(n, self.batch_size))

    def _hyper(self, n: int) -> dict:
        return {"n": jnp.float32(n), "noise_var": jnp.float32(self.noise_var),
                "prior_scale": jnp.float32(self.prior_scale), "step_size": jnp.float32(self.step_size)}

    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> ParticlePosterior:
        """Runs the chains on x [n, d], y [n] → :class:`ParticlePosterior` with S samples."""
        x, y = _check_xy(x, y)
        key = _checks.as_key(seed)
        data = train_lib.pad_dataset(x, y)
        return ParticlePosterior(self._fn(x.shape[1], len(x))(key, data, self._hyper(len(x))), x.shape[1])
