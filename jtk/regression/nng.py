"""Noisy natural gradient with noisy K-FAC for the oracle-matched regression BNN (Zhang et al. 2018; Wang et al. §2.1).

The variational posterior is a matrix-variate Gaussian per layer over the raw weights in homogeneous form
W_l = [w_l; b_l] ([in + 1, out]; the layer computes s_l = ã_{l−1} W_l with ã = [a · weight scale, bias scale],
``jtk.regression.bnn.homogeneous``):

    q(W_l) = MN(μ_l, (λ / N) [A_l^γin]⁻¹, [S_l^γin]⁻¹),

with the Kronecker factors of the Fisher A_l = E[ã ãᵀ] (layer inputs) and S_l = E[Ds Dsᵀ] (log-likelihood
gradients with respect to the pre-activations), kept as exponential moving averages with rate β, and the intrinsic
damping γin = λ / (N η) that the Gaussian prior N(0, η) contributes. Each step (Zhang et al. 2018, Alg. 2,
"noisy K-FAC"; Wang et al. eq. for NNG in §2.1):

    W ~ q;   V_l = ∇_{W_l} (1/N) log p(y | x, W) − γin W_l;
    μ_l ← μ_l + α [A_l^γ]⁻¹ V_l [S_l^γ]⁻¹,

with γ = γin + γex and the factored damping A^γ = A + π √γ I, S^γ = S + √γ / π I, π = sqrt((tr A / dim A) /
(tr S / dim S)) (Martens & Grosse 2015, §6.3). The prior variance is fixed at η = 1 (the matched prior), as the
paper does (§2.1). Choices of jtk, documented departures:

* Full batch (N = n, λ = 1, statistics and inverses every step): the study's training sets (45 points) fit in one
  batch, as for every other family there.
* S_l uses the exact expectation of Ds Dsᵀ over targets drawn from the model (for the Gaussian likelihood this is
  the Gauss–Newton form g gᵀ / σ², g = ∂f / ∂s_l) rather than one sampled target per example; the factors start at
  the first step's statistics.

:func:`noisy_kfac` is generic over a stack of dense layers (ReLU between them; one layer = linear regression, used
by the tests against the closed-form posterior); :class:`NNGRegression` runs it on the one-hidden-layer BNN.

Example:
  >>> import numpy as np
  >>> x = np.random.default_rng(0).normal(size=(20, 2)); y = x[:, 0]
  >>> post = NNGRegression(hidden=20, num_steps=100).fit(x, y, seed=0)
  >>> post.sample_functions(x[:3], 5, seed=1).shape
  (5, 3)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, _compile, nets
from jtk._numerics import serial_blas
from jtk.envs.gp import NOISE_VAR
from jtk.regression import bnn

Scales = Sequence[tuple[float, float]]  # per layer (weight scale, bias scale) of its homogeneous input


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["NOISE_VAR", "KFACPosterior", "noisy_kfac", "KFACWeightPosterior", "NNGRegression"]


class KFACPosterior(NamedTuple):
    """Matrix-variate Gaussian per layer: W_l = mean_l + root_in_l · E · root_out_l, E ~ N(0, I).

    The roots are the symmetric square roots, so the covariance of vec(W_l) is (root_in²) ⊗ (root_out²).
    """

    mean: tuple  # per layer [in + 1, out]
    root_in: tuple  # per layer [in + 1, in + 1], square root of (λ / N) [A^γin]⁻¹ (row covariance)
    root_out: tuple  # per layer [out, out], square root of [S^γin]⁻¹ (column covariance)


def forward(layers: Sequence[jax.Array], scales: Scales, x: jax.Array, shifts: Sequence[jax.Array] | None = None):
    """f at x [n, d] for homogeneous layers W_l [in + 1, out] (ReLU between them, one output) → (f [n], inputs).

    ``inputs[l]`` is layer l's homogeneous input ã_{l−1} [n, in + 1]; ``shifts`` (per layer [n, out]) are added to
    the pre-activations, so that the gradient of Σ f with respect to them is every example's ∂f / ∂s_l.
    """
    a, inputs = x, []
    for i, (w, (ws, bs)) in enumerate(zip(layers, scales)):
        inputs.append(bnn.homogeneous(a, ws, bs))
        s = inputs[-1] @ w
        if shifts is not None:
            s = s + shifts[i]
        a = s if i == len(layers) - 1 else jax.nn.relu(s)
    return a[:, 0], inputs


class _Eig(NamedTuple):
    """Eigendecomposition of a symmetric PSD Kronecker factor: m = q diag(lam) qᵀ."""

    lam: jax.Array
    q: jax.Array

    @classmethod
    def of(cls, m: jax.Array) -> _Eig:
        lam, q = jnp.linalg.eigh((m + m.T) / 2)
        return cls(jnp.maximum(lam, 0.0), q)

    def mean_eig(self) -> jax.Array:
        return jnp.mean(self.lam)

    def inv(self, add: jax.Array) -> jax.Array:
        """(m + add I)⁻¹."""
        return (self.q / (self.lam + add)) @ self.q.T

    def inv_root(self, add: jax.Array) -> jax.Array:
        """The symmetric square root of (m + add I)⁻¹."""
        return (self.q / jnp.sqrt(self.lam + add)) @ self.q.T


def _damping(a: _Eig, s: _Eig, gamma: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Factored Tikhonov damping (Martens & Grosse 2015, §6.3): what A and S get added, π√γ and √γ/π."""
    pi = jnp.sqrt(a.mean_eig() / jnp.maximum(s.mean_eig(), 1e-30))
    pi = jnp.where(jnp.isfinite(pi) & (pi > 0), pi, 1.0)
    root = jnp.sqrt(gamma)
    return pi * root, root / pi


def noisy_kfac(key: jax.Array, batch, init: Sequence[jax.Array], scales: Scales, hyper: dict, *,
               num_steps: int) -> KFACPosterior:
    """Fits q(W) by noisy K-FAC on one full masked batch (pure: jit and vmap freely).

    Each step decomposes every Kronecker factor once (``eigh``) and uses it both for the weight draw and for the
    preconditioner of that step (the factors' moving averages enter the next step).

    Args:
      key: PRNG key of the weight noise.
      batch: a :class:`jtk.train.Batch` holding the whole training set (mask 0 on padded rows).
      init: initial means μ_l [in + 1, out] per layer.
      scales: per layer (weight scale, bias scale) of its homogeneous input.
      hyper: traced scalars "n" (N), "noise_var" (σ²), "prior_var" (η), "kl_weight" (λ), "learning_rate" (α),
        "ema" (β), "damping" (γex).
      num_steps: steps (static).

    Returns:
      :class:`KFACPosterior` with the posterior covariances built with the intrinsic damping γin only.
    """
    _checks.prng_key("key", key)  # the static arguments only: a traced key passes, num_steps is a Python int
    _checks.integer("num_steps", num_steps, minimum=1)
    n, noise_var = hyper["n"], hyper["noise_var"]
    gamma_in = hyper["kl_weight"] / (n * hyper["prior_var"])
    gamma = gamma_in + hyper["damping"]
    mask = batch.mask
    scale_in = jnp.sqrt(hyper["kl_weight"] / n)

    def stats_and_grad(layers):
        shifts = [jnp.zeros((batch.x.shape[0], w.shape[1])) for w in layers]

        def loglik(ls):
            f, inputs = forward(ls, scales, batch.x)
            return -jnp.sum(mask * (batch.y - f) ** 2) / (2 * noise_var) / n, inputs

        def f_sum(sh):
            return forward(layers, scales, batch.x, sh)[0] @ mask

        grads, inputs = jax.grad(loglik, has_aux=True)(layers)
        g = jax.grad(f_sum)(shifts)  # per example ∂f/∂s_l (rows of masked examples are 0)
        a_stats = [(x.T * mask) @ x / n for x in inputs]
        s_stats = [gl.T @ gl / (n * noise_var) for gl in g]
        return grads, a_stats, s_stats

    def roots(a: _Eig, s: _Eig):
        da, ds = _damping(a, s, gamma_in)
        return a.inv_root(da) * scale_in, s.inv_root(ds)

    def step(carry, k):
        mu, a, s = carry
        eig_a, eig_s = [_Eig.of(m) for m in a], [_Eig.of(m) for m in s]
        ks = jax.random.split(k, len(mu))
        w = []
        for m, ea, es, kk in zip(mu, eig_a, eig_s, ks):
            ru, rv = roots(ea, es)
            w.append(m + ru @ jax.random.normal(kk, m.shape) @ rv)
        grads, a_new, s_new = stats_and_grad(w)
        new_mu = []
        for m, wl, gl, ea, es in zip(mu, w, grads, eig_a, eig_s):
            da, ds = _damping(ea, es, gamma)
            new_mu.append(m + hyper["learning_rate"] * ea.inv(da) @ (gl - gamma_in * wl) @ es.inv(ds))
        beta = hyper["ema"]
        a = [(1 - beta) * old + beta * new for old, new in zip(a, a_new)]
        s = [(1 - beta) * old + beta * new for old, new in zip(s, s_new)]
        return (new_mu, a, s), None

    mu = [jnp.asarray(m, jnp.float32) for m in init]
    _, a0, s0 = stats_and_grad(mu)
    (mu, a, s), _ = jax.lax.scan(step, (mu, a0, s0), jax.random.split(key, num_steps))
    root_in, root_out = zip(*(roots(_Eig.of(af), _Eig.of(sf)) for af, sf in zip(a, s)))
    return KFACPosterior(tuple(mu), tuple(root_in), tuple(root_out))


def _to_raw(layers: Sequence) -> nets.Params:
    """Homogeneous layers (W0 [d + 1, H], W1 [H + 1, 1]), leaves [..., rows, cols] → the raw parameter pytree."""
    w0, w1 = layers
    return ((w0[..., :-1, :], w0[..., -1, :]), (w1[..., :-1, :], w1[..., -1, :]))


@functools.lru_cache(maxsize=32)
def _nng_fit_fn(input_dim: int, hidden: int, num_steps: int):
    scales = bnn.layer_scales(input_dim, hidden)

    def fit(key, batch, hyper):
        k_init, k_train = jax.random.split(key)
        (w, c), (v, b) = bnn.init_raw(k_init, input_dim, hidden, jnp.sqrt(hyper["prior_var"]))
        init = [jnp.concatenate([w, c[None]], 0), jnp.concatenate([v, b[None]], 0)]
        return noisy_kfac(k_train, batch, init, scales, hyper, num_steps=num_steps)

    return _compile.jit(fit)


@dataclass(frozen=True, eq=False)
class KFACWeightPosterior(bnn.WeightSamplingPosterior):
    """The NNG posterior: a matrix-variate Gaussian per layer over the raw weights (numpy float64 draws)."""

    posterior: KFACPosterior
    input_dim: int
    num_moment_samples: int = 1000

    def _draw_raw(self, rng: np.random.Generator, num_samples: int) -> nets.Params:
        layers = []
        for m, lu, lv in zip(*(tuple(np.asarray(a, np.float64) for a in part) for part in self.posterior)):
            e = rng.standard_normal((num_samples,) + m.shape)
            layers.append(m + lu @ e @ lv)
        return _to_raw(layers)


@dataclass(frozen=True)
class NNGRegression:
    """Noisy-natural-gradient (noisy K-FAC) regression BNN (Zhang et al. 2018; Wang et al. 2021, §2.1).

    Args:
      hidden: hidden width H (50; the paper's grid: 50 or 100).
      noise_var: Gaussian likelihood variance (the true 0.01, §5.1).
      prior_scale: std of the raw-parameter prior sqrt(η) (1: the matched prior, fixed as in the paper).
      kl_weight: λ, the KL weight of the ELBO (1; < 1 tempers the posterior).
      learning_rate: α, the natural-gradient step on the means (1e-2; the grid: 1e-3 … 1e-2). Much larger steps
        (0.05 on a small network) can diverge: the means then come back NaN, which the PPC study counts as diverged.
      num_steps: full-batch steps (1000: the paper's 1,000 epochs).
      ema: β, the moving-average rate of the Kronecker factors (0.05).
      damping: γex, extrinsic damping added in the update only (1e-3).
      num_moment_samples: weight draws for predict / covariance (1000, eq. 2.2).
    """

    hidden: int = 50
    noise_var: float = NOISE_VAR
    prior_scale: float = 1.0
    kl_weight: float = 1.0
    learning_rate: float = 1e-2
    num_steps: int = 1000
    ema: float = 0.05
    damping: float = 1e-3
    num_moment_samples: int = 1000

    def __post_init__(self):
        _checks.integer("hidden", self.hidden, minimum=1)
        _checks.positive("noise_var", self.noise_var)
        _checks.positive("prior_scale", self.prior_scale)
        _checks.positive("kl_weight", self.kl_weight)
        _checks.positive("learning_rate", self.learning_rate)
        _checks.integer("num_steps", self.num_steps, minimum=1)
        if not 0 < _checks.positive("ema", self.ema) <= 1:
            raise ValueError(f"ema must be in (0, 1], got {self.ema!r}")
        _checks.positive("damping", self.damping, allow_zero=True)
        _checks.integer("num_moment_samples", self.num_moment_samples, minimum=2)

    def _hyper(self, n: int) -> dict:
        return {"n": jnp.float32(n), "noise_var": jnp.float32(self.noise_var),
                "prior_var": jnp.float32(self.prior_scale ** 2), "kl_weight": jnp.float32(self.kl_weight),
                "learning_rate": jnp.float32(self.learning_rate), "ema": jnp.float32(self.ema),
                "damping": jnp.float32(self.damping)}

    @serial_blas
    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> KFACWeightPosterior:
        """Trains on x [n, d], y [n] → :class:`KFACWeightPosterior`. ``prior`` is ignored."""
        batch = bnn.full_batch(x, y)
        d = batch.x.shape[1]
        out = _nng_fit_fn(d, self.hidden, self.num_steps)(_checks.as_key(seed), batch,
                                                           self._hyper(int(np.sum(batch.mask))))
        return KFACWeightPosterior(jax.tree_util.tree_map(np.asarray, out), d, self.num_moment_samples)

    @serial_blas
    def fit_many(self, xs, ys, seed: Any = 0) -> list[KFACWeightPosterior]:
        """Trains on every data set of a stack at once: xs [B, n, d], ys [B, n] → B posteriors.

        Data set i is fitted with key ``jax.random.split(key, B)[i]``; ``dataclasses.replace(post,
        num_moment_samples=S)`` gives the posterior seen through S draws.
        """
        batches, n, d = bnn.stack_full_batches(xs, ys)
        out = bnn.map_datasets(_nng_fit_fn(d, self.hidden, self.num_steps), _checks.as_key(seed), batches,
                               self._hyper(n))
        return [KFACWeightPosterior(bnn.unstack(out, i), d, self.num_moment_samples)
                for i in range(batches.x.shape[0])]
