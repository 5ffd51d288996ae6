"""Numerical helpers shared by the numpy (float64) regression and active-learning code: BLAS threads and RNGs."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks

_F = TypeVar("_F", bound=Callable[..., Any])
_CONTROLLER: list = []


def serial_blas(fn: _F) -> _F:
    """Runs ``fn`` with one BLAS thread.

    The matrices here are small (≤ a few thousand rows): multi-threaded OpenBLAS
    gains little on them and, on a laptop or CI box whose cores are busy,
    its spinning threads slow a Cholesky down many times (docs/platforms.md, "BLAS threads").
    Uses threadpoolctl (a scikit-learn dependency); a no-op without it.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _CONTROLLER:
            try:
                import threadpoolctl
                _CONTROLLER.append(threadpoolctl.ThreadpoolController())
            except Exception:  # pragma: no cover - threadpoolctl missing or broken
                _CONTROLLER.append(None)
        ctl = _CONTROLLER[0]
        ctx = ctl.limit(limits=1, user_api="blas") if ctl is not None else contextlib.nullcontext()
        with ctx:
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def numpy_rng(seed: Any, name: str = "seed") -> np.random.Generator:
    """A numpy Generator seeded from an int or a JAX PRNG key (deterministic)."""
    key = _checks.as_key(seed, name)
    return np.random.default_rng(np.asarray(jax.random.key_data(key), dtype=np.uint32).tolist())


# ------------------------------------------------------------------ factorisations kept inside XLA
# jax.numpy.linalg.cholesky and jax.scipy.linalg.solve_triangular run, on the CPU, the LAPACK / BLAS that scipy
# ships (OpenBLAS), which picks its kernels by the CPU it detects: the same program gives other bits on another
# CPU (docs/reference.md, "Reproducibility across machines"). The two below are plain XLA loops over a few dozen
# columns, so their bits depend only on the compiled program. They are for the small matrices of the testbed's
# agents (m ≤ a few hundred): O(m³) like LAPACK, without its blocking. Hand-written for reproducibility.
def cholesky(a: jax.Array) -> jax.Array:
    """Lower Cholesky factor L of a symmetric positive definite matrix, L Lᵀ = a, computed in XLA.

    Column by column (the Cholesky–Crout order): L[j, j] = sqrt(a[j, j] − Σ_k<j L[j, k]²) and
    L[i, j] = (a[i, j] − Σ_k<j L[i, k] L[j, k]) / L[j, j] for i > j.

    Args:
      a: [m, m] symmetric positive definite (only its lower triangle is read).

    Returns:
      [m, m] lower triangular L (NaN where ``a`` is not positive definite, as LAPACK's wrapper in JAX gives).
    """
    a = jnp.asarray(a)  # a numpy array cannot be indexed by the loop's traced counter
    m = a.shape[-1]
    rows = jnp.arange(m)

    def column(j, low):
        done = low[j]  # [m]: L[j, k] for k < j, zero from j on
        pivot = jnp.sqrt(a[j, j] - jnp.dot(done, done))
        col = (a[:, j] - low @ done) / pivot  # [m]
        return low.at[:, j].set(jnp.where(rows > j, col, jnp.where(rows == j, pivot, 0.0)))

    return jax.lax.fori_loop(0, m, column, jnp.zeros_like(a))


def solve_triangular(low: jax.Array, b: jax.Array, transpose: bool = False) -> jax.Array:
    """x with L x = b (forward substitution), or Lᵀ x = b with ``transpose`` (back substitution), in XLA.

    Args:
      low: [m, m] lower triangular L with a non-zero diagonal.
      b: [m, ...] right-hand sides (any trailing shape: every column is solved at once).
      transpose: solve with Lᵀ instead of L.

    Returns:
      x, shaped like ``b``.
    """
    low, b = jnp.asarray(low), jnp.asarray(b)  # numpy arrays cannot be indexed by the loop's traced counter
    m = low.shape[0]
    rows = jnp.arange(m)

    def step(t, x):
        i = m - 1 - t if transpose else t
        # L x = b: x_i = (b_i − Σ_k<i L[i, k] x_k) / L[i, i];  Lᵀ x = b: x_i = (b_i − Σ_k>i L[k, i] x_k) / L[i, i]
        coef = jnp.where(rows > i, low[:, i], 0.0) if transpose else jnp.where(rows < i, low[i], 0.0)  # [m]
        return x.at[i].set((b[i] - jnp.tensordot(coef, x, 1)) / low[i, i])

    return jax.lax.fori_loop(0, m, step, jnp.zeros_like(b))


def paired_interval(values, baseline, level: float = 0.95) -> tuple[float, float, bool]:
    """Mean of the paired differences ``values − baseline`` and the half-width of its Student-t interval.

    What a figure title or a sentence that compares two methods states: the run's difference and its interval,
    and whether that interval contains 0 ("within noise"). Pairs are the same problem or split for both methods
    (same data, same seed), so the spread between problems cancels.

    Args:
      values: one method's score per pair [n].
      baseline: the other method's score on the same pairs [n].
      level: confidence level of the two-sided interval.

    Returns:
      (mean difference, half-width, within_noise); half-width NaN and within_noise True for fewer than 2 pairs.

    >>> d, half, within = paired_interval([1.0, 2.0, 3.0], [0.0, 1.5, 2.0])
    >>> round(d, 3), round(half, 3), within
    (0.833, 0.717, False)
    """
    import scipy.stats

    a, b = np.asarray(values, np.float64), np.asarray(baseline, np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"values and baseline must be 1-D of the same length, got shapes {a.shape} and {b.shape}")
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    d = a - b
    if not np.all(np.isfinite(d)):
        raise ValueError(f"values and baseline must be finite, got differences {d}")
    if len(d) < 2:
        return (float(d.mean()) if len(d) else float("nan")), float("nan"), True
    half = float(scipy.stats.t.ppf((1 + level) / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return float(d.mean()), half, bool(abs(d.mean()) <= half)
