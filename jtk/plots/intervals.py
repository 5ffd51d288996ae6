"""Confidence intervals for coverage fractions and paired differences, for figures and widgets (no matplotlib import).

A coverage p over k repetitions is a binomial proportion. The normal-approximation bar p ± sqrt(p(1 − p)/k)
collapses to zero width at p = 0 or 1 (a widget at k = 2 said "1.00 ± 0.00"); the Wilson score interval does not,
and it stays inside [0, 1].
"""

from __future__ import annotations

import numpy as np

from jtk._numerics import paired_interval  # noqa: F401 - the figures' and notebooks' name for it

WILSON_Z = 1.959963984540054  # the standard normal's 97.5 % quantile: 95 % intervals, as scipy's default


def wilson_interval(coverage, k, z: float = WILSON_Z) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval (lower, upper) of a coverage p = covered / k over k repetitions.

    Unlike p ± sqrt(p(1 − p)/k), it is never zero-width and stays inside [0, 1]: 2 covered sets out of 2 give
    [0.34, 1.00], not "1.00 ± 0.00". The same numbers as
    ``scipy.stats.binomtest(round(p·k), k).proportion_ci(method="wilson")``.

    Args:
      coverage: fraction(s) of covered repetitions, in [0, 1].
      k: number(s) of repetitions (≥ 1), broadcast against ``coverage``.
      z: normal quantile of the confidence level (95 %).

    >>> [round(float(v), 2) for v in wilson_interval(1.0, 2)]
    [0.34, 1.0]
    """
    p = np.asarray(coverage, np.float64)
    k = np.asarray(k, np.float64)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"coverage must be in [0, 1], got {coverage!r}")
    if np.any(~np.isfinite(k)) or np.any(k < 1):
        raise ValueError(f"k must be ≥ 1, got {k!r}")
    z2 = z * z
    centre = (p + z2 / (2 * k)) / (1 + z2 / k)
    half = z / (1 + z2 / k) * np.sqrt(p * (1 - p) / k + z2 / (4 * k * k))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def coverage_yerr(coverage, k) -> np.ndarray:
    """Asymmetric error bars [2, n] (below, above) of the Wilson interval, for ``errorbar(yerr=...)``."""
    p = np.asarray(coverage, np.float64)
    lo, hi = wilson_interval(p, k)
    return np.stack([np.maximum(p - lo, 0.0), np.maximum(hi - p, 0.0)])

