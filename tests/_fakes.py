"""Small fakes shared by tests: results with known contents, built without training anything."""

from __future__ import annotations

import numpy as np

from jtk.coverage import CoverageResult


def coverage_result(method: str, k: int = 6, seed: int = 0) -> CoverageResult:
    """A CoverageResult of ``k`` runs on a sine, predictions off by N(0, 0.2²) noise with std 0.2, in-distribution
    for |x| ≤ 4."""
    rng = np.random.default_rng(seed)
    coord = np.linspace(-6, 6, 41)
    truth = np.sin(coord)
    return CoverageResult(method, coord, coord[:, None], truth, truth + rng.normal(0, 0.2, (k, coord.size)),
                          np.full((k, coord.size), 0.2), np.abs(coord) <= 4, {"f_main": 1.0},
                          np.linspace(-4, 4, 10)[:, None], rng.normal(size=(k, 10)))
