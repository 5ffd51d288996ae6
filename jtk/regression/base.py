"""The regression posterior protocol shared by BLR, GPs and deep regression models.

A regression posterior gives coherent function draws, a predictive mean and
std, and a joint covariance over any inputs, so coverage studies (Schmähling
et al.), transductive active learning and XLL (Wang et al.) work with any model.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class RegressionPosterior(Protocol):
    def sample_functions(self, x, num_samples: int, seed=0):
        """x [n, d] → [M, n]: each row is one function evaluated at all n inputs."""

    def predict(self, x):
        """x [n, d] → (mean [n], std [n]) of the epistemic (noise-free) posterior."""

    def covariance(self, x):
        """x [n, d] → [n, n] noise-free posterior covariance of f at x."""


class SampledRegressionPosterior:
    """Mixin for posteriors known only through function samples.

    Subclasses implement ``sample_functions``; ``predict`` and ``covariance``
    come from ``num_moment_samples`` draws (Wang et al. 2021, eq. 2.2: the
    sample covariance of the sampled functions).
    """

    num_moment_samples: int = 1000

    def predict(self, x):
        f = np.asarray(self.sample_functions(x, self.num_moment_samples, 0), np.float64)  # [M, n]
        return f.mean(0), f.std(0, ddof=1) if f.shape[0] > 1 else np.zeros(f.shape[1])

    def covariance(self, x):
        f = np.asarray(self.sample_functions(x, self.num_moment_samples, 0), np.float64)  # [M, n]
        if f.shape[0] < 2:
            return np.zeros((f.shape[1], f.shape[1]))
        return np.cov(f, rowvar=False, ddof=1).reshape(f.shape[1], f.shape[1])
