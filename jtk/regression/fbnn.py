"""Functional variational BNN against the oracle GP prior (Sun et al. 2019; Wang et al. 2021, §2.1 "FBNNs").

The model follows the paper's FBNN (§2.1): a network whose first layer is trained deterministically and whose last
layer is Bayesian linear regression on the first layer's features, so that q(f) is Gaussian with explicit mean and
covariance (the paper's covariance is "explicit", §2.2):

    f(x) = φ(x)ᵀ u,   u ~ q(u) = N(m, L Lᵀ),   φ(x) = ``jtk.regression.bnn.hidden_features`` (H ReLU units),

trained by maximising the functional ELBO with the KL estimated on measurement points (Sun et al. 2019, §3.2–3.3):

    E_q[log p(y | f(X))] − λ KL( q(f(X), f(X_M)) ‖ p(f(X), f(X_M)) ),

where X is the (full) training batch, X_M are M measurement points drawn afresh each step from Gaussians centred at
random training inputs with variance ``measurement_var`` (§2.1: s² / 2 for a prior lengthscale s), λ = size(D) / size(D_s)
(= 1: full batch), and p is the oracle GP prior (the ReLU-network kernel of :mod:`jtk.envs.gp`). Both terms are
closed form here: the expected log-likelihood of a Gaussian q, and the KL between two Gaussians
(``functional_kl``), so no spectral Stein gradient estimator is needed. Departures, documented:

* Features: the paper uses RBF random features with an RBF-kernel GP prior; here the features are the ReLU units of
  the same one-hidden-layer network as the other BNN families (first layer initialised from the matched prior, so
  at initialisation q(f) is the width-H approximation of the oracle prior), and the prior is the oracle's kernel
  (``prior="relu"``, the synthetic study) or an ARD RBF kernel fitted by ML-II on the training set
  (``prior="rbf"``, the paper's kind of prior; the real-data study).
* Both covariances get ``kl_jitter`` on their diagonal (the KL of slightly noisy function values): with H + 1
  features, q's covariance on more than H + 1 points is singular.
* The ReLU kernel has no lengthscale: ``measurement_var`` defaults to 0.5 (s = 1 on standardised inputs); with the
  RBF prior the points are drawn at ℓ² / 2 per input.

Example:
  >>> import numpy as np
  >>> x = np.random.default_rng(0).normal(size=(20, 2)); y = x[:, 0]
  >>> post = FBNNRegression(hidden=20, num_steps=100).fit(x, y, seed=0)
  >>> post.sample_functions(x[:3], 5, seed=1).shape, post.covariance(x[:3]).shape
  ((5, 3), (3, 3))
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jtk import _checks, _compile, train as train_lib
from jtk._numerics import numpy_rng, serial_blas
from jtk.envs.gp import BIAS0_VAR, BIAS1_VAR, NOISE_VAR, WEIGHT0_VAR, WEIGHT1_VAR
from jtk.regression import bnn


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["BIAS0_VAR", "BIAS1_VAR", "NOISE_VAR", "WEIGHT0_VAR", "WEIGHT1_VAR", "PRIORS", "FBNNParams",
           "init_params", "FBNNPosterior", "FBNNRegression"]


def relu_kernel_jax(x1: jax.Array, x2: jax.Array) -> jax.Array:
    """The oracle kernel (:func:`jtk.envs.gp.relu_kernel`, same constants) in JAX: x1 [n1, d], x2 [n2, d] → [n1, n2].

    Traceable, for measurement points drawn inside the training loop; tested against the numpy original.
    """
    d = x1.shape[1]
    k12 = BIAS0_VAR + WEIGHT0_VAR * (x1 @ x2.T) / d
    k11 = BIAS0_VAR + WEIGHT0_VAR * jnp.sum(x1 * x1, 1) / d
    k22 = BIAS0_VAR + WEIGHT0_VAR * jnp.sum(x2 * x2, 1) / d
    norm = jnp.sqrt(jnp.outer(k11, k22))
    cos = jnp.clip(k12 / norm, -1.0, 1.0)
    theta = jnp.arccos(cos)
    return WEIGHT1_VAR * norm * (jnp.sin(theta) + (jnp.pi - theta) * cos) / (2 * jnp.pi) + BIAS1_VAR


def rbf_kernel_jax(x1: jax.Array, x2: jax.Array, lengthscale: jax.Array, signal_var: jax.Array) -> jax.Array:
    """ARD squared-exponential kernel (:func:`jtk.regression.gp.rbf_kernel`) in JAX: x1 [n1, d], x2 [n2, d] →
    [n1, n2]; ``lengthscale`` [d] or scalar, ``signal_var`` scalar (traced: fitted per data set)."""
    a, b = x1 / lengthscale, x2 / lengthscale
    sq = jnp.sum(a * a, 1)[:, None] + jnp.sum(b * b, 1)[None, :] - 2 * a @ b.T
    return signal_var * jnp.exp(-0.5 * jnp.maximum(sq, 0.0))


PRIORS = ("relu", "rbf")  # FBNNRegression.prior: the oracle's ReLU kernel, or an RBF kernel fitted by ML-II


def prior_cov(prior: str, points: jax.Array, hyper: dict) -> jax.Array:
    """The GP prior's covariance on ``points`` [k, d]: the oracle ReLU kernel, or the RBF kernel of ``hyper``'s
    "lengthscale" and "signal_var" (``prior`` is static)."""
    if prior == "relu":
        return relu_kernel_jax(points, points)
    return rbf_kernel_jax(points, points, hyper["lengthscale"], hyper["signal_var"])


class FBNNParams(NamedTuple):
    """Trainable parameters: the deterministic first layer and q(u) = N(mean, L Lᵀ) of the last layer."""

    layer0: tuple  # raw (w [d, H], c [H])
    mean: jax.Array  # [H + 1]
    scale_raw: jax.Array  # [H + 1, H + 1]: L = strictly lower part + diag(softplus(diagonal))


def scale_tril(scale_raw: jax.Array) -> jax.Array:
    """The lower Cholesky factor L of q(u)'s covariance from its unconstrained parameters."""
    return jnp.tril(scale_raw, -1) + jnp.diag(jax.nn.softplus(jnp.diag(scale_raw)))


def _logdet_with_gradient(m: jax.Array) -> jax.Array:
    """log det of a symmetric positive definite m whose derivative is tr(m⁻¹ dm), from one forward ``eigh``.

    The decomposition is not differentiated (JAX's batched CPU linear-algebra derivatives are slow under ``vmap``);
    the surrogate tr(stop(m⁻¹) (m − stop(m))) carries the exact gradient.
    """
    fixed = jax.lax.stop_gradient((m + m.T) / 2)
    lam, q = jnp.linalg.eigh(fixed)
    inv = (q / lam) @ q.T
    return jnp.sum(jnp.log(lam)) + jnp.sum(inv * (m - fixed))


def functional_kl(params: FBNNParams, points: jax.Array, mask: jax.Array, jitter: jax.Array,
                  cov: jax.Array | None = None) -> jax.Array:
    """KL(q(f(Z)) ‖ p(f(Z))) on points Z [k, d] with a GP prior; rows with mask 0 do not count.

    ``cov`` [k, k] is the prior's covariance on Z (:func:`prior_cov`); None: the oracle's ReLU kernel.

    q(f(Z)) = N(Φ m, R Rᵀ + D) with R = Φ L [k, H + 1] and p(f(Z)) = N(0, K + D), D = ``jitter`` I. The closed form

        KL = ½ [tr(Σp⁻¹ D) + ‖Σp^(−½) R‖² + ‖Σp^(−½) Φ m‖² − k + log det Σp − log det D − log det(I + Rᵀ D⁻¹ R)]

    needs one decomposition of the prior's k × k covariance (no parameters in it) and a log determinant of size
    H + 1 (matrix determinant lemma). A masked row becomes, in q and p alike, an independent N(0, 1) coordinate,
    which adds nothing (fixed shapes under padding).
    """
    phi = bnn.hidden_features(params.layer0, points) * mask[:, None]  # [k, H + 1], masked rows 0
    root = phi @ scale_tril(params.scale_raw)  # R [k, H + 1]
    diag = mask * jitter + (1 - mask)  # D
    keep = mask[:, None] * mask[None, :]
    prior = relu_kernel_jax(points, points) if cov is None else cov
    cov_p = jax.lax.stop_gradient(keep * prior + jnp.diag(diag))
    lam, q = jnp.linalg.eigh(cov_p)
    whiten = q / jnp.sqrt(lam)  # Σp^(−½) = whitenᵀ
    trace_d = jnp.sum(diag * jnp.sum(whiten ** 2, 1))  # tr(Σp⁻¹ D)
    quad = jnp.sum((whiten.T @ root) ** 2) + jnp.sum((whiten.T @ (phi @ params.mean)) ** 2)
    inner = jnp.eye(root.shape[1]) + root.T @ (root / diag[:, None])
    logdet_q = jnp.sum(jnp.log(diag)) + _logdet_with_gradient(inner)
    return 0.5 * (trace_d + quad - points.shape[0] + jnp.sum(jnp.log(lam)) - logdet_q)


def expected_log_lik(params: FBNNParams, batch: train_lib.Batch, noise_var: jax.Array) -> jax.Array:
    """E_q[log p(y | f(X))] summed over the batch's real rows (closed form for Gaussian q and likelihood)."""
    phi = bnn.hidden_features(params.layer0, batch.x)
    mean = phi @ params.mean
    var = jnp.sum((phi @ scale_tril(params.scale_raw)) ** 2, 1)
    per = -((batch.y - mean) ** 2 + var) / (2 * noise_var) - 0.5 * jnp.log(2 * jnp.pi * noise_var)
    return jnp.sum(batch.mask * per)


def measurement_points(key: jax.Array, batch: train_lib.Batch, num_points: int, variance: jax.Array) -> jax.Array:
    """M points x_i + sqrt(variance) ε around training inputs x_i drawn uniformly from the real rows → [M, d]."""
    k_idx, k_eps = jax.random.split(key)
    idx = jax.random.categorical(k_idx, jnp.log(batch.mask), shape=(num_points,))
    return batch.x[idx] + jnp.sqrt(variance) * jax.random.normal(k_eps, (num_points, batch.x.shape[1]))


def negative_elbo(params: FBNNParams, batch: train_lib.Batch, hyper: dict, key: jax.Array, *,
                  num_points: int, prior: str = "relu") -> jax.Array:
    """(−E_q log p(y | f) + λ KL on training + ``num_points`` measurement points) / n, one draw of the points.

    ``hyper``: traced "n", "noise_var", "measurement_var" (scalar or [d]), "kl_weight", "kl_jitter", and for the
    "rbf" prior "lengthscale" and "signal_var".
    """
    xm = measurement_points(key, batch, num_points, hyper["measurement_var"])
    points = jnp.concatenate([batch.x, xm], 0)
    mask = jnp.concatenate([batch.mask, jnp.ones(num_points)])
    kl = functional_kl(params, points, mask, hyper["kl_jitter"], prior_cov(prior, points, hyper))
    return (-expected_log_lik(params, batch, hyper["noise_var"]) + hyper["kl_weight"] * kl) / hyper["n"]


def init_params(key: jax.Array, input_dim: int, hidden: int) -> FBNNParams:
    """First layer from the matched prior, q(u) = N(0, I): at initialisation q(f) is the width-H prior."""
    raw = bnn.init_raw(key, input_dim, hidden, 1.0)
    scale_raw = jnp.eye(hidden + 1) * jnp.log(jnp.expm1(1.0))
    return FBNNParams(raw[0], jnp.zeros(hidden + 1), scale_raw)


@functools.lru_cache(maxsize=32)
def _fbnn_fit_fn(input_dim: int, hidden: int, num_steps: int, learning_rate: float, num_measurement: int,
                 prior: str = "relu"):
    optimizer = optax.adam(learning_rate)
    loss_fn = functools.partial(negative_elbo, num_points=num_measurement, prior=prior)

    def fit(key, batch, hyper):
        k_init, k_train = jax.random.split(key)
        params = init_params(k_init, input_dim, hidden)
        rows = batch.x.shape[0]
        data = train_lib.Dataset(batch.x, batch.y, jnp.sum(batch.mask).astype(jnp.int32))
        params, losses = train_lib.train(loss_fn, params, data, hyper, k_train, optimizer=optimizer,
                                         num_steps=num_steps, batch_size=rows, whole_set=True)
        return params, losses

    return _compile.jit(fit)


@dataclass(frozen=True, eq=False)
class FBNNPosterior:
    """q(f) = GP with mean φ(x)ᵀ m and covariance φ(x)ᵀ L Lᵀ φ(x'): closed-form moments, exact joint draws."""

    layer0: tuple  # raw (w [d, H], c [H]), numpy
    mean: np.ndarray  # [H + 1]
    scale: np.ndarray  # [H + 1, H + 1] lower factor L
    input_dim: int

    def features(self, x) -> np.ndarray:
        """φ(x) [n, H + 1] in float64 (the same features as ``jtk.regression.bnn.hidden_features``)."""
        x = _checks.as_float_array("x", x, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have {self.input_dim} columns, got an array of shape {x.shape}")
        w, c = (np.asarray(a, np.float64) for a in self.layer0)
        (w0, b0), (w1, b1) = bnn.layer_scales(*w.shape)
        h = np.maximum(x.astype(np.float64) @ (w * w0) + c * b0, 0.0) * w1
        return np.concatenate([h, np.full((len(x), 1), b1)], 1)

    def _root(self, x) -> tuple[np.ndarray, np.ndarray]:
        phi = self.features(x)
        return phi @ np.asarray(self.mean, np.float64), phi @ np.asarray(self.scale, np.float64)

    def sample_functions(self, x, num_samples: int, seed: Any = 0) -> np.ndarray:
        """x [n, d] → [M, n]: each row is φ(x)ᵀ u for one draw u ~ q(u)."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        mean, root = self._root(x)
        eps = numpy_rng(seed).standard_normal((num_samples, root.shape[1]))
        return mean + eps @ root.T

    def predict(self, x) -> tuple[np.ndarray, np.ndarray]:
        mean, root = self._root(x)
        return mean, np.sqrt(np.sum(root ** 2, 1))

    def covariance(self, x) -> np.ndarray:
        _, root = self._root(x)
        return root @ root.T


@dataclass(frozen=True)
class FBNNRegression:
    """Functional BNN with the oracle GP prior, functional KL on measurement points (Sun et al. 2019).

    Args:
      hidden: hidden width H (50; the grid: 50 or 100) — the number of features of the Bayesian last layer.
      noise_var: Gaussian likelihood variance (the true 0.01, §5.1).
      learning_rate: Adam step size (1e-2, the grid's largest: 1e-3 … 1e-2; q(u)'s 51 × 51 factor converges
        slowly at smaller steps within 1,000 steps).
      num_steps: full-batch steps (1000: the paper's 1,000 epochs).
      num_measurement: measurement points M drawn each step (20).
      measurement_var: variance of the Gaussians around training inputs the points are drawn from (0.5).
      kl_weight: λ (1 = size(D) / size(D_s) for a full batch).
      kl_jitter: added to both covariances' diagonals in the KL (1e-3; it lowers the optimal q variance at the
        training points by about itself, so keep it well below the noise variance).
      prior: the GP prior of the functional KL. "relu" (default): the oracle's ReLU-network kernel, the truth of the
        synthetic study. "rbf": the paper's kind of prior, an ARD RBF kernel whose lengthscales and signal variance
        are fitted by ML-II on each training set (:class:`jtk.regression.gp.GPRegression`, the given noise
        variance), with measurement points drawn at variance ℓ² / 2 per input (§2.1: s² / 2), which then replaces
        ``measurement_var``. On real data the ReLU prior correlates every pair of inputs (docs/ppc.md, "FBNN on
        real data"); :mod:`jtk.ppc.real_study` uses "rbf".
    """

    hidden: int = 50
    noise_var: float = NOISE_VAR
    learning_rate: float = 1e-2
    num_steps: int = 1000
    num_measurement: int = 20
    measurement_var: float = 0.5
    kl_weight: float = 1.0
    kl_jitter: float = 1e-3
    prior: str = "relu"

    def __post_init__(self):
        _checks.integer("hidden", self.hidden, minimum=1)
        _checks.positive("noise_var", self.noise_var)
        _checks.positive("learning_rate", self.learning_rate)
        _checks.integer("num_steps", self.num_steps, minimum=1)
        _checks.integer("num_measurement", self.num_measurement, minimum=0)
        _checks.positive("measurement_var", self.measurement_var)
        _checks.positive("kl_weight", self.kl_weight, allow_zero=True)
        _checks.positive("kl_jitter", self.kl_jitter)
        _checks.one_of("prior", self.prior, PRIORS)

    def _fn(self, input_dim: int):
        return _fbnn_fit_fn(input_dim, self.hidden, self.num_steps, float(self.learning_rate), self.num_measurement,
                            self.prior)

    def _hyper(self, n: int) -> dict:
        return {"n": jnp.float32(n), "noise_var": jnp.float32(self.noise_var),
                "measurement_var": jnp.float32(self.measurement_var), "kl_weight": jnp.float32(self.kl_weight),
                "kl_jitter": jnp.float32(self.kl_jitter)}

    def prior_hyperparameters(self, x, y) -> dict:
        """The "rbf" prior's ML-II fit on one training set: {"lengthscale" [d], "signal_var"} (float64)."""
        from jtk.regression.gp import GPRegression

        hp = GPRegression(noise_var=self.noise_var, ard=True).fit(x, y).hyperparameters
        ls = np.broadcast_to(np.asarray(hp["lengthscale"], np.float64), (np.shape(x)[1],))
        return {"lengthscale": ls, "signal_var": float(hp["signal_var"])}

    def _hyper_for(self, batch: train_lib.Batch) -> dict:
        """The traced hyperparameters of one (padded) training batch, with the prior's fit for "rbf"."""
        n = int(np.sum(batch.mask))
        hyper = self._hyper(n)
        if self.prior == "rbf":
            real = np.asarray(batch.mask) > 0
            hp = self.prior_hyperparameters(np.asarray(batch.x)[real], np.asarray(batch.y)[real])
            hyper |= {"lengthscale": jnp.asarray(hp["lengthscale"], jnp.float32),
                      "signal_var": jnp.float32(hp["signal_var"]),
                      "measurement_var": jnp.asarray(hp["lengthscale"] ** 2 / 2, jnp.float32)}
        return hyper

    @staticmethod
    def _posterior(params: FBNNParams, input_dim: int) -> FBNNPosterior:
        layer0 = tuple(np.asarray(a) for a in params.layer0)
        scale = np.asarray(scale_tril(jnp.asarray(params.scale_raw)))
        return FBNNPosterior(layer0, np.asarray(params.mean), scale, input_dim)

    @serial_blas
    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> FBNNPosterior:
        """Trains on x [n, d], y [n] → :class:`FBNNPosterior`. ``prior`` is ignored (the model's own ``prior``
        field chooses the GP prior)."""
        return self._fit_batch(_checks.as_key(seed), bnn.full_batch(x, y))

    def _fit_batch(self, key: jax.Array, batch: train_lib.Batch) -> FBNNPosterior:
        """One (padded) training batch, trained with ``key`` under its own hyperparameters (:meth:`_hyper_for`)."""
        d = batch.x.shape[1]
        params, _ = self._fn(d)(key, batch, self._hyper_for(batch))
        return self._posterior(params, d)

    @serial_blas
    def fit_many(self, xs, ys, seed: Any = 0) -> list[FBNNPosterior]:
        """Trains on every data set of a stack at once: xs [B, n, d], ys [B, n] → B posteriors.

        Data set i is fitted with key ``jax.random.split(key, B)[i]`` (one data set at a time, ``bnn.map_datasets``).
        """
        batches, n, d = bnn.stack_full_batches(xs, ys)
        if self.prior == "rbf":  # each data set has its own fitted prior: one compiled fit, called per data set
            keys = jax.random.split(_checks.as_key(seed), batches.x.shape[0])
            return [self._fit_batch(keys[i], bnn.unstack(batches, i)) for i in range(batches.x.shape[0])]
        params, _ = bnn.map_datasets(self._fn(d), _checks.as_key(seed), batches, self._hyper(n))
        return [self._posterior(bnn.unstack(params, i), d) for i in range(batches.x.shape[0])]
