"""Small fakes shared by tests: results with known contents, built without training anything."""

from __future__ import annotations

import numpy as np

from jtk.regression.coverage import CoverageResult


def coverage_result(method: str, k: int = 6, seed: int = 0) -> CoverageResult:
    """A CoverageResult of ``k`` runs on a sine, predictions off by N(0, 0.2²) noise with std 0.2, in-distribution
    for |x| ≤ 4."""
    rng = np.random.default_rng(seed)
    coord = np.linspace(-6, 6, 41)
    truth = np.sin(coord)
    return CoverageResult(method, coord, coord[:, None], truth, truth + rng.normal(0, 0.2, (k, coord.size)),
                          np.full((k, coord.size), 0.2), np.abs(coord) <= 4, {"f_main": 1.0},
                          np.linspace(-4, 4, 10)[:, None], rng.normal(size=(k, 10)))


class HardMax:
    """Issue #46's cheat: nearest-class-mean point predictions as "certain" logits, ``high`` for the predicted class
    and ``low`` for the others (−inf, or ±1e300, which float32 makes ±inf)."""

    def __init__(self, high=0.0, low=-np.inf):
        self.high, self.low, self.name = high, low, f"hardmax{low:g}"

    def fit(self, x, y, seed=0, prior=None):
        self.c = np.stack([x[y == j].mean(0) if (y == j).any() else np.full(x.shape[1], 1e6) for j in range(2)])
        return self

    def sample_logits(self, x, num_samples, seed=0):
        d = ((np.asarray(x, np.float64)[:, None] - self.c[None]) ** 2).sum(-1)
        out = np.full(d.shape, self.low)
        out[np.arange(len(x)), d.argmin(1)] = self.high
        return np.broadcast_to(out, (num_samples, *out.shape)).copy()
