"""The anchor model: Bayesian linear regression with the flat reference prior.

Schmähling, Martin & Elster, §2.2, eq. (5)–(6). For y ~ N(G(x)^T γ, σ² I) with
known σ and the (improper) reference prior π(γ) ∝ 1, the posterior is

    γ | D ~ N(γ̂, σ² V),   γ̂ = V G(x) y,   V = (G(x) G(x)^T)^{-1},          (5)

and the regression function at test inputs x* is

    G(x*)^T γ | D ~ N(G(x*)^T γ̂, σ² G(x*)^T V G(x*)).                         (6)

This prior is probability matching: the interval G^T γ̂ ± 1.96·σ·sqrt(G^T V G)
covers the true G^T γ in exactly 95 % of repeated training sets, at every input
(γ̂ is Gaussian, unbiased, with exactly that variance under repeated sampling).
Its uncertainty is also the Cramér–Rao bound of Lemma 1.

The linear algebra is numpy float64 through a QR factorisation of the design
matrix (rows of ``features(x)``), so nothing is inverted explicitly.

Example:
  >>> import numpy as np
  >>> from jtk.envs.regression import SinusoidRegression
  >>> env = SinusoidRegression(f_main=1.0, seed=0)
  >>> post = BayesianLinearRegression(env.features, env.noise_std).fit(*env.sample_train(1))
  >>> mean, std = post.predict(env.test_inputs())
  >>> mean.shape, bool(np.all(std > 0))
  ((1000,), True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import jax
import numpy as np
import scipy.linalg

from jtk import _checks, _memory


def _design(features: Callable[[Any], Any], x: Any, num_features: int | None = None) -> np.ndarray:
    g = _checks.as_float_array("features(x)", features(x), ndim=2).astype(np.float64)
    if num_features is not None and g.shape[1] != num_features:
        raise ValueError(f"features(x) must have {num_features} columns, got shape {g.shape}")
    return g


@dataclass(frozen=True)
class BLRPosterior:
    """The posterior (5) and its push-forward (6); follows ``RegressionPosterior``.

    Attributes:
      features: the feature map G, x [n, d] → [n, p].
      noise_std: σ.
      gamma_hat: posterior mean γ̂ [p].
      r: upper-triangular R [p, p] of the QR factorisation of the design matrix,
        so V = (R^T R)^{-1}.
    """

    features: Callable[[Any], Any]
    noise_std: float
    gamma_hat: np.ndarray  # [p]
    r: np.ndarray  # [p, p]

    @property
    def V(self) -> np.ndarray:  # noqa: N802 - the paper's name
        """V = (G G^T)^{-1} [p, p] (eq. 5); the posterior covariance of γ is σ² V."""
        r_inv = scipy.linalg.solve_triangular(self.r, np.eye(self.r.shape[0]), lower=False)
        return r_inv @ r_inv.T

    def _whitened(self, x) -> tuple[np.ndarray, np.ndarray]:
        g = _design(self.features, x, self.r.shape[0])  # [n, p]
        a = scipy.linalg.solve_triangular(self.r, g.T, trans="T", lower=False)  # R^{-T} G*^T: [p, n]
        return g, a

    def predict(self, x, aleatoric: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and std of G(x)^T γ (eq. 6).

        Args:
          x: inputs [n, d].
          aleatoric: if True, add the noise variance σ² (the predictive
            distribution of a new y, not of the regression function).

        Returns:
          (mean [n], std [n]) float64.
        """
        g, a = self._whitened(x)
        var = self.noise_std ** 2 * np.sum(a * a, axis=0)
        if aleatoric:
            var = var + self.noise_std ** 2
        return g @ self.gamma_hat, np.sqrt(var)

    def covariance(self, x) -> np.ndarray:
        """σ² G(x)^T V G(x): the joint noise-free posterior covariance [n, n]."""
        n = _checks.as_float_array("x", x, ndim=2).shape[0]
        _memory.check_budget(f"covariance: x rows n × n float64 × 2 (n = {n})",
                             _memory.nbytes(2, n, n, dtype=np.float64), "use fewer inputs x")
        _, a = self._whitened(x)
        return self.noise_std ** 2 * (a.T @ a)

    def sample_functions(self, x, num_samples: int, seed=0) -> np.ndarray:
        """Coherent draws of the regression function: γ_m ~ N(γ̂, σ² V), f_m = G(x)^T γ_m.

        Returns:
          [num_samples, n] float64.
        """
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        key = _checks.as_key(seed)
        n = _checks.as_float_array("x", x, ndim=2).shape[0]
        _memory.check_budget(f"num_samples × (x rows + features) float64 × 2 (num_samples = {num_samples}, n = {n})",
                             _memory.nbytes(2, num_samples, n + self.r.shape[0], dtype=np.float64),
                             "lower num_samples or use fewer inputs x")
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key), np.uint32).ravel())
        z = rng.standard_normal((num_samples, self.r.shape[0]))
        # γ = γ̂ + σ R^{-1} z has covariance σ² R^{-1} R^{-T} = σ² V.
        gammas = self.gamma_hat[None, :] + self.noise_std * scipy.linalg.solve_triangular(
            self.r, z.T, lower=False).T
        return gammas @ _design(self.features, x, self.r.shape[0]).T


@dataclass(frozen=True)
class BayesianLinearRegression:
    """Bayesian linear regression on known features with the flat reference prior (§2.2).

    Args:
      features: the feature map G, a callable x [n, d] → [n, p], e.g. ``env.features``.
      noise_std: the known noise std σ > 0 of eq. (4).
    """

    features: Callable[[Any], Any]
    noise_std: float

    def __post_init__(self):
        if not callable(self.features):
            raise TypeError(f"features must be a callable x -> [n, p], got {type(self.features).__name__}")
        object.__setattr__(self, "noise_std", _checks.positive("noise_std", self.noise_std))

    def _factor(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = _checks.as_float_array("x", x, ndim=2)
        g = _design(self.features, x)  # [n, p]
        n, p = g.shape
        if n < p:
            raise ValueError(f"x must have at least as many rows as features ({p}), got {n} rows")
        q, r = np.linalg.qr(g)  # g = q r, q [n, p], r [p, p]
        diag = np.abs(np.diag(r))
        if diag.min() <= 1e-12 * max(diag.max(), 1.0):
            raise ValueError("x gives a rank-deficient design matrix features(x); the flat-prior posterior "
                             "is improper (use more or more varied training inputs)")
        return x, q, r

    def fit(self, x, y) -> BLRPosterior:
        """Posterior (5) from training data x [n, d], y [n] (float64 numpy)."""
        x = _checks.as_float_array("x", x, ndim=2)
        y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
        if y.shape[0] != x.shape[0]:
            raise ValueError(f"x and y must have the same number of rows, got x {x.shape} and y {y.shape}")
        x, q, r = self._factor(x)
        gamma_hat = scipy.linalg.solve_triangular(r, q.T @ y, lower=False)
        return BLRPosterior(self.features, self.noise_std, gamma_hat, r)

    def fit_predict_many(self, x, ys, x_test, seed=0, progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Fits k training sets that share inputs x at once and predicts at x_test.

        Args:
          x: shared training inputs [n, d].
          ys: targets of k training sets [k, n].
          x_test: test inputs [n*, d].
          seed: unused (BLR is deterministic); kept for the coverage-study protocol.
          progress: unused.

        Returns:
          (mean [k, n*], std [k, n*]) float64; the std is the same for every set.
        """
        x, q, r = self._factor(x)
        ys = _checks.as_float_array("ys", ys, ndim=2).astype(np.float64)
        if ys.shape[1] != x.shape[0]:
            raise ValueError(f"ys must have shape [k, {x.shape[0]}] to match x, got {ys.shape}")
        gamma_hat = scipy.linalg.solve_triangular(r, q.T @ ys.T, lower=False)  # [p, k]
        post = BLRPosterior(self.features, self.noise_std, gamma_hat[:, 0], r)
        g, a = post._whitened(x_test)
        std = self.noise_std * np.sqrt(np.sum(a * a, axis=0))
        return (g @ gamma_hat).T, np.broadcast_to(std, (ys.shape[0], std.shape[0])).copy()
