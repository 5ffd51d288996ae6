"""Exact Gaussian-process regression (numpy / scipy float64).

Two ways to get a kernel:

* ``GPRegression()``: an ARD RBF kernel s² exp(−½ Σ_k (x_k − x'_k)² / ℓ_k²) whose
  hyperparameters (ℓ, s² and, unless given, the noise variance σ²) maximise the
  log marginal likelihood (L-BFGS-B with analytic gradients, a few restarts);
  the GP-RBF model of Wang et al. (2021).
* ``GPRegression(kernel=k)``: a given kernel, e.g. the oracle's ReLU kernel
  ``jtk.envs.gp.ReLUKernelGP(d).kernel``, with a fixed noise variance: the
  oracle prediction model of the TAL protocol.

Posterior (Rasmussen & Williams 2006, Alg. 2.1), with L = chol(K + σ² I), α = L⁻ᵀ L⁻¹ y:

    mean(x*) = k*ᵀ α,     cov(x*, x*') = k(x*, x*') − v*ᵀ v*',  v* = L⁻¹ k*.

Example:
  >>> import numpy as np
  >>> x = np.linspace(-2, 2, 20)[:, None]; y = np.sin(x[:, 0])
  >>> post = GPRegression(noise_var=0.01).fit(x, y)
  >>> mean, std = post.predict(x[:3])
  >>> post.covariance(x[:3]).shape
  (3, 3)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.linalg
import scipy.optimize

from jtk import _checks, _memory
from jtk.regression.base import SampledRegressionPosterior
from jtk._numerics import numpy_rng, serial_blas

Kernel = Callable[..., np.ndarray]
JITTER = 1e-8


def rbf_kernel(x1, x2=None, *, lengthscale=1.0, signal_var: float = 1.0) -> np.ndarray:
    """ARD squared-exponential kernel.

    Args:
      x1: [n1, d]; x2: [n2, d] (x1 when None).
      lengthscale: scalar or [d] lengthscales ℓ.
      signal_var: s².

    Returns:
      K [n1, n2] float64.
    """
    x1 = _checks.as_float_array("x1", x1, ndim=2).astype(np.float64)
    x2 = x1 if x2 is None else _checks.as_float_array("x2", x2, ndim=2).astype(np.float64)
    if x2.shape[1] != x1.shape[1]:
        raise ValueError(f"x2 must have {x1.shape[1]} columns like x1, got shape {x2.shape}")
    ls = _checks.as_float_array("lengthscale", lengthscale, ndim=(0, 1), dtype=np.float64)
    if ls.ndim == 1 and ls.shape != (x1.shape[1],) or np.any(ls <= 0):
        raise ValueError(f"lengthscale must be a number > 0 or {x1.shape[1]} of them (one per input column), "
                         f"got {lengthscale!r}")
    ls = np.broadcast_to(ls, (x1.shape[1],))
    _checks.positive("signal_var", signal_var)
    a, b = x1 / ls, x2 / ls
    sq = np.sum(a * a, 1)[:, None] + np.sum(b * b, 1)[None, :] - 2 * a @ b.T
    return signal_var * np.exp(-0.5 * np.maximum(sq, 0.0))


def kernel_diag(kernel: Kernel, x: np.ndarray, chunk: int = 64) -> np.ndarray:
    """k(x_i, x_i) for x [m, d] → [m], in chunks (never an m × m matrix).

    Each chunk computes a chunk × chunk block for its diagonal: 64 rows waste little (a 512-row chunk computed a
    whole 500 × 500 kernel for the 500 test variances, a quarter of the PPC study's Fig. 3 TAL time in a profile).
    """
    _checks.function("kernel", kernel, "a kernel: k(x1, x2=None) -> [n1, n2] matrix")
    _checks.integer("chunk", chunk, minimum=1)
    return np.concatenate([np.diag(kernel(x[i:i + chunk])) for i in range(0, len(x), chunk)]) if len(x) else \
        np.zeros(0)


def gaussian_log_likelihood(y, mean, var) -> np.ndarray:
    """Elementwise log N(y | mean, var): y, mean and var of one shape (var may be a scalar), var > 0."""
    y = _checks.as_float_array("y", y, dtype=np.float64)
    mean = _checks.as_float_array("mean", mean, dtype=np.float64)
    var = _checks.as_float_array("var", var, dtype=np.float64)
    if mean.shape != y.shape or var.ndim and var.shape != y.shape:
        raise ValueError(f"y, mean and var must have one shape (var may be a scalar), got y {y.shape}, mean "
                         f"{mean.shape}, var {var.shape}")
    if np.any(var <= 0):
        raise ValueError(f"var must be > 0, got a minimum of {float(np.min(var)):.3g}")
    return -0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)


@dataclass(frozen=True, eq=False)
class GaussianProcessPosterior:
    """A GP conditioned on (x_train, y_train); follows ``RegressionPosterior``.

    Attributes:
      kernel: k(x1, x2=None) → [n1, n2].
      x_train: [n, d] training inputs.
      noise_var: observation noise variance σ².
      chol: [n, n] lower Cholesky factor of K + σ² I.
      alpha: [n] (K + σ² I)⁻¹ y.
      hyperparameters: fitted values (for RBF: lengthscale, signal_var, noise_var).
    """

    kernel: Kernel
    x_train: np.ndarray
    noise_var: float
    chol: np.ndarray
    alpha: np.ndarray
    hyperparameters: dict = field(default_factory=dict)

    def _x(self, x) -> np.ndarray:
        x = _checks.as_float_array("x", x, ndim=2).astype(np.float64)
        if x.shape[1] != self.x_train.shape[1]:
            raise ValueError(f"x must have {self.x_train.shape[1]} columns, got an array of shape {x.shape}")
        return x

    def _cross(self, x):
        if len(self.x_train) == 0:
            return np.zeros((0, len(x)))
        k_star = self.kernel(self.x_train, x)  # [n, m]
        v = scipy.linalg.solve_triangular(self.chol, k_star, lower=True)  # [n, m]
        return k_star, v

    @serial_blas
    def mean_and_covariance(self, x) -> tuple[np.ndarray, np.ndarray]:
        """x [m, d] → (mean [m], noise-free covariance [m, m])."""
        x = self._x(x)
        _memory.check_budget(f"GP covariance: m × m float64 × 3 (m = {len(x)} rows of x)",
                             _memory.nbytes(3, len(x), len(x), dtype=np.float64), "use fewer inputs x")
        k_xx = self.kernel(x)
        if len(self.x_train) == 0:
            return np.zeros(len(x)), k_xx
        k_star, v = self._cross(x)
        return k_star.T @ self.alpha, k_xx - v.T @ v

    def covariance(self, x) -> np.ndarray:
        """x [m, d] → [m, m] noise-free posterior covariance of f."""
        return self.mean_and_covariance(x)[1]

    @serial_blas
    def predict(self, x) -> tuple[np.ndarray, np.ndarray]:
        """x [m, d] → (mean [m], std [m]) of the noise-free posterior (no m × m matrix)."""
        x = self._x(x)
        diag = kernel_diag(self.kernel, x)
        if len(self.x_train) == 0:
            return np.zeros(len(x)), np.sqrt(np.maximum(diag, 0.0))
        k_star, v = self._cross(x)
        var = np.maximum(diag - np.sum(v * v, 0), 0.0)
        return k_star.T @ self.alpha, np.sqrt(var)

    @serial_blas
    def sample_functions(self, x, num_samples: int, seed: Any = 0) -> np.ndarray:
        """x [m, d] → [M, m] joint draws of f (Cholesky with jitter 1e-8·mean diag)."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        numpy_rng(seed)  # validate the seed before the O(m³) work
        m = _checks.as_float_array("x", x, ndim=2).shape[0]
        _memory.check_budget(f"GP draws: (num_samples + 4 m) × m float64 (num_samples = {num_samples}, "
                             f"m = {m} rows of x)",
                             _memory.nbytes(num_samples + 4.0 * m, m, dtype=np.float64),
                             "lower num_samples or use fewer inputs x")
        mean, cov = self.mean_and_covariance(x)
        jitter = JITTER * max(float(np.mean(np.diag(cov))), 1e-12)
        w, u = np.linalg.eigh(cov)
        root = u * np.sqrt(np.maximum(w, 0.0) + jitter)  # [m, m], root rootᵀ = cov
        z = numpy_rng(seed).standard_normal((num_samples, len(mean)))
        return mean + z @ root.T

    def log_likelihood(self, x, y) -> float:
        """Mean per-point predictive log-likelihood of noisy targets y [m] at x [m, d]."""
        y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
        mean, std = self.predict(x)
        if len(y) != len(mean):
            raise ValueError(f"y must have {len(mean)} entries like x, got {len(y)}")
        return float(np.mean(gaussian_log_likelihood(y, mean, std ** 2 + self.noise_var)))

    def rmse(self, x, y) -> float:
        """Root mean squared error of the posterior mean against y [m]."""
        y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
        return float(np.sqrt(np.mean((self.predict(x)[0] - y) ** 2)))


@serial_blas
def condition(kernel: Kernel, x, y, noise_var: float, hyperparameters: dict | None = None
              ) -> GaussianProcessPosterior:
    """Conditions GP(0, kernel) on noisy observations y [n] at x [n, d]."""
    x = _checks.as_float_array("x", x, ndim=2).astype(np.float64)
    y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
    if len(y) != len(x):
        raise ValueError(f"y must have {len(x)} entries like x, got {len(y)}")
    noise_var = _checks.positive("noise_var", noise_var, allow_zero=True)
    if len(x) == 0:
        return GaussianProcessPosterior(kernel, x, noise_var, np.zeros((0, 0)), np.zeros(0), hyperparameters or {})
    k = kernel(x)
    k = k + (noise_var + JITTER * np.mean(np.diag(k))) * np.eye(len(x))
    chol = np.linalg.cholesky(k)
    alpha = scipy.linalg.cho_solve((chol, True), y)
    return GaussianProcessPosterior(kernel, x, noise_var, chol, alpha, dict(hyperparameters or {}))


@serial_blas
def gram_posterior(gram, observed, y, targets, noise_var: float, full_covariance: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
    """GP(0, k) conditioned on noisy ``y`` at some points of a fixed set, read from its kernel matrix.

    For a set of points X and ``gram`` = k(X, X), the same numbers (up to round-off) as
    ``condition(k, X[observed], y, noise_var)`` followed by ``.predict(X[targets])`` (or, with
    ``full_covariance``, ``.mean_and_covariance(X[targets])``), the jitter of :func:`condition` included,
    without evaluating the kernel again: for many conditionings on subsets of one set of points
    (the TAL protocol refits the oracle GP on train + queried points of one data set every time).

    Only the rows and columns of ``observed`` and ``targets`` are read, and only they are checked (finite; the
    observed block symmetric), so a call costs O(n² m + n³) for n observed and m targets, not O(N²).

    Args:
      gram: [N, N] kernel matrix k(X, X).
      observed: [n] distinct indices into X of the observations (may be empty: the prior).
      y: [n] noisy observations at X[observed].
      targets: [m] distinct indices into X to predict at.
      noise_var: observation noise variance σ² ≥ 0.
      full_covariance: return the noise-free covariance [m, m] instead of the standard deviations.

    Returns:
      (mean [m], std [m]) of the noise-free posterior, or (mean [m], covariance [m, m]).

    Example:
      >>> x = np.linspace(-2, 2, 8)[:, None]; y = np.sin(x[:3, 0])
      >>> k = functools.partial(rbf_kernel, lengthscale=1.0)
      >>> mean, std = gram_posterior(k(x), np.arange(3), y, np.arange(3, 8), 0.01)
      >>> bool(np.allclose(mean, condition(k, x[:3], y, 0.01).predict(x[3:])[0]))
      True
    """
    gram = np.asarray(gram)
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"gram must be a square [N, N] kernel matrix, got shape {gram.shape}")
    if not (np.issubdtype(gram.dtype, np.floating) or np.issubdtype(gram.dtype, np.integer)):
        raise TypeError(f"gram must be a real-valued matrix, got dtype {gram.dtype}")
    gram = gram.astype(np.float64, copy=False)
    n = gram.shape[0]
    observed = _checks.indices("observed", observed, n, into="gram", allow_empty=True)
    targets = _checks.indices("targets", targets, n, into="gram")
    y = _checks.as_float_array("y", y, ndim=1, dtype=np.float64)
    if len(y) != len(observed):
        raise ValueError(f"y must have one value per index of observed ({len(observed)}), got {len(y)}")
    noise_var = _checks.positive("noise_var", noise_var, allow_zero=True)
    if not isinstance(full_covariance, (bool, np.bool_)):
        raise TypeError(f"full_covariance must be True or False, got {full_covariance!r}")
    if full_covariance:
        _memory.check_budget(f"GP covariance: m × m float64 × 3 (m = {len(targets)} targets)",
                             _memory.nbytes(3, len(targets), len(targets), dtype=np.float64), "use fewer targets")
    k_oo = gram[np.ix_(observed, observed)]
    k_ot = gram[np.ix_(observed, targets)]
    k_tt = gram[np.ix_(targets, targets)] if full_covariance else np.diag(gram)[targets]
    for part in (k_oo, k_ot, k_tt):
        if not np.all(np.isfinite(part)):
            raise ValueError("gram must be finite at the rows and columns of observed and targets, got NaN or inf")
    if k_oo.size:
        scale = max(float(np.max(np.abs(np.diag(k_oo)))), 1e-300)
        asym = float(np.max(np.abs(k_oo - k_oo.T)))
        if asym > 1e-6 * scale:
            raise ValueError(f"gram must be symmetric, got max |gram - gram.T| = {asym:.3g} over the observed rows "
                             f"(max diagonal {scale:.3g})")
    if len(observed) == 0:
        return np.zeros(len(targets)), (k_tt if full_covariance else np.sqrt(np.maximum(k_tt, 0.0)))
    # condition(): chol(K + (σ² + jitter) I), α; then predict / mean_and_covariance, on slices of gram
    k = k_oo + (noise_var + JITTER * np.mean(np.diag(k_oo))) * np.eye(len(observed))
    chol = np.linalg.cholesky(k)
    alpha = scipy.linalg.cho_solve((chol, True), y)
    v = scipy.linalg.solve_triangular(chol, k_ot, lower=True)  # [n, m]
    mean = k_ot.T @ alpha
    if full_covariance:
        return mean, k_tt - v.T @ v
    return mean, np.sqrt(np.maximum(k_tt - np.sum(v * v, 0), 0.0))


def rbf_neg_log_marginal_likelihood(log_params: np.ndarray, x: np.ndarray, y: np.ndarray,
                                    noise_var: float | None) -> tuple[float, np.ndarray]:
    """Negative log marginal likelihood of the ARD RBF GP and its gradient.

    Args:
      log_params: [d + 1 (+1)] = log ℓ_1..d, log s² (, log σ² when noise_var is None).
      x: [n, d]; y: [n].
      noise_var: fixed σ², or None to read it from log_params.

    Returns:
      (nlml, gradient [len(log_params)]).
    """
    n, d = x.shape
    ls = np.exp(log_params[:d])
    s2 = np.exp(log_params[d])
    sn2 = np.exp(log_params[d + 1]) if noise_var is None else noise_var
    kf = rbf_kernel(x, lengthscale=ls, signal_var=s2)
    k = kf + (sn2 + 1e-8 * s2) * np.eye(n)
    try:
        chol = np.linalg.cholesky(k)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(log_params)
    alpha = scipy.linalg.cho_solve((chol, True), y)
    nlml = 0.5 * y @ alpha + np.sum(np.log(np.diag(chol))) + 0.5 * n * np.log(2 * np.pi)
    w = np.outer(alpha, alpha) - scipy.linalg.cho_solve((chol, True), np.eye(n))  # [n, n]
    grad = np.empty_like(log_params)
    for j in range(d):
        diff2 = (x[:, j:j + 1] - x[:, j][None, :]) ** 2 / ls[j] ** 2
        grad[j] = -0.5 * np.sum(w * kf * diff2)
    grad[d] = -0.5 * np.sum(w * kf)
    if noise_var is None:
        grad[d + 1] = -0.5 * sn2 * np.trace(w)
    return float(nlml), grad


@dataclass(frozen=True)
class GPRegression:
    """Exact GP regression: a given kernel, or an ARD RBF kernel fitted by marginal likelihood.

    Args:
      kernel: k(x1, x2=None) → [n1, n2]; None means ARD RBF with hyperparameters
        chosen by maximum marginal likelihood (GP-RBF, Wang et al. 2021).
      noise_var: observation noise variance; None learns it (RBF only). The
        paper gives every model the true variance (0.01 on synthetic data).
      lengthscale: fix the RBF lengthscale (scalar) instead of learning it;
        used to make deliberately worse models for the PPC study.
      signal_var: fix the RBF signal variance instead of learning it.
      ard: one lengthscale per input dimension (True) or a shared one.
      num_restarts: random restarts of L-BFGS-B (the best optimum is kept).
    """

    kernel: Kernel | None = None
    noise_var: float | None = None
    lengthscale: float | None = None
    signal_var: float | None = None
    ard: bool = True
    num_restarts: int = 3

    def __post_init__(self):
        if self.kernel is not None and not callable(self.kernel):
            raise TypeError(f"kernel must be callable k(x1, x2=None) or None, got {type(self.kernel).__name__}")
        if self.kernel is not None and self.noise_var is None:
            raise ValueError("noise_var must be given (a float >= 0) when kernel is given, got None")
        if self.noise_var is not None:
            _checks.positive("noise_var", self.noise_var, allow_zero=True)
        if self.lengthscale is not None:
            _checks.positive("lengthscale", self.lengthscale)
        if self.signal_var is not None:
            _checks.positive("signal_var", self.signal_var)
        _checks.integer("num_restarts", self.num_restarts, minimum=1)

    @serial_blas
    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> GaussianProcessPosterior:
        """Fits to x [n, d], y [n] → :class:`GaussianProcessPosterior`. ``prior`` is ignored."""
        x = _checks.as_float_array("x", x, ndim=2).astype(np.float64)
        y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
        if len(y) != len(x):
            raise ValueError(f"y must have {len(x)} entries like x, got {len(y)}")
        if self.kernel is not None:
            return condition(self.kernel, x, y, self.noise_var)
        hp = self._fit_rbf(x, y, seed)
        kernel = functools.partial(rbf_kernel, lengthscale=hp["lengthscale"], signal_var=hp["signal_var"])
        return condition(kernel, x, y, hp["noise_var"], hp)

    def _fit_rbf(self, x, y, seed) -> dict:
        n, d = x.shape
        rng = numpy_rng(seed)
        y_var = float(np.var(y)) + 1e-6 if n > 1 else 1.0
        fixed_ls, fixed_s2 = self.lengthscale, self.signal_var
        if n < 2 or (fixed_ls is not None and fixed_s2 is not None and self.noise_var is not None):
            return {"lengthscale": np.full(d, fixed_ls or np.sqrt(d)), "signal_var": fixed_s2 or y_var,
                    "noise_var": self.noise_var if self.noise_var is not None else 0.1 * y_var}
        num_ls = d if (self.ard and fixed_ls is None) else 1

        def unpack(theta):
            ls = np.full(d, fixed_ls) if fixed_ls is not None else np.exp(np.broadcast_to(theta[:num_ls], (d,)))
            i = 0 if fixed_ls is not None else num_ls
            s2 = fixed_s2 if fixed_s2 is not None else np.exp(theta[i])
            i += 0 if fixed_s2 is not None else 1
            sn2 = self.noise_var if self.noise_var is not None else np.exp(theta[i])
            return ls, s2, sn2

        def objective(theta):
            ls, s2, sn2 = unpack(theta)
            full = np.concatenate([np.log(ls), [np.log(s2)], [] if self.noise_var is not None else [np.log(sn2)]])
            val, g = rbf_neg_log_marginal_likelihood(full, x, y, self.noise_var)
            parts = []
            if fixed_ls is None:
                parts.append(g[:d] if num_ls == d else [np.sum(g[:d])])
            if fixed_s2 is None:
                parts.append([g[d]])
            if self.noise_var is None:
                parts.append([g[d + 1]])
            return val, np.concatenate(parts) if parts else np.zeros(0)

        bounds = []
        if fixed_ls is None:
            bounds += [(np.log(1e-2), np.log(1e3))] * num_ls
        if fixed_s2 is None:
            bounds += [(np.log(1e-4), np.log(1e4))]
        if self.noise_var is None:
            bounds += [(np.log(1e-6), np.log(10.0))]
        best = None
        for r in range(self.num_restarts):
            theta0 = []
            if fixed_ls is None:
                base = np.log(np.sqrt(d))
                theta0 += list(base + (0.0 if r == 0 else rng.normal(0, 1.0, num_ls)) * np.ones(num_ls))
            if fixed_s2 is None:
                theta0 += [np.log(y_var) + (0.0 if r == 0 else rng.normal(0, 1.0))]
            if self.noise_var is None:
                theta0 += [np.log(0.1 * y_var) + (0.0 if r == 0 else rng.normal(0, 1.0))]
            theta0 = np.clip(np.array(theta0, np.float64), [b[0] for b in bounds], [b[1] for b in bounds])
            res = scipy.optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                                          options={"maxiter": 200})
            if best is None or res.fun < best.fun:
                best = res
        ls, s2, sn2 = unpack(best.x) if len(best.x) else unpack(np.zeros(0))
        return {"lengthscale": np.asarray(ls, np.float64), "signal_var": float(s2), "noise_var": float(sn2),
                "neg_log_marginal_likelihood": float(best.fun)}


@dataclass(frozen=True, eq=False)
class SampledGPPosterior(SampledRegressionPosterior):
    """An exact GP posterior seen only through ``num_moment_samples`` function draws.

    ``predict`` / ``covariance`` are the sample moments of eq. (2.2) from the
    draws of seed 0, so the quality of its PPCs is controlled by the sample count:
    the Monte Carlo error Wang et al. (2021) attribute to sampling-based models.
    """

    exact: GaussianProcessPosterior
    num_moment_samples: int = 100

    def sample_functions(self, x, num_samples: int, seed: Any = 0) -> np.ndarray:
        """x [m, d] → [M, m] joint draws from the exact posterior."""
        return self.exact.sample_functions(x, num_samples, seed)


@dataclass(frozen=True)
class MonteCarloGP:
    """Wraps a GP model so that its moments come from ``num_samples`` posterior draws.

    Args:
      base: the exact model (e.g. the oracle ``GPRegression(kernel=..., noise_var=0.01)``).
      num_samples: M ≥ 2 draws behind predict / covariance (eq. 2.2).
    """

    base: GPRegression
    num_samples: int = 100

    def __post_init__(self):
        if not hasattr(self.base, "fit"):
            raise TypeError(f"base must be a model with fit(x, y), got {type(self.base).__name__}")
        _checks.integer("num_samples", self.num_samples, minimum=2)

    @property
    def noise_var(self):
        return self.base.noise_var

    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> SampledGPPosterior:
        _checks.as_key(seed)
        return SampledGPPosterior(self.base.fit(x, y, seed=seed), self.num_samples)
