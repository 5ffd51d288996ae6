"""Non-parametric baselines: k-nearest neighbours and random forest via scikit-learn (Osband et al. 2022, App. C.8).

Both are plain ``fit`` agents (not JAX agents: the testbed scores them problem
by problem). As in the reference factories:

* one extra training point per class is placed at the origin, so every class
  is seen and a set with n = 1 can still be fitted;
* predicted probabilities are clipped to [0.01, 0.99] so the KL stays finite;
* the predictive is deterministic: the posterior is a single function
  (one mixture component, scored exactly), so these agents have no way to
  model d_KL^τ for τ > 1 beyond the product of their marginals.

Defaults: knn k = 3 with uniform weights; random_forest 100 trees, gini.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from jtk import _checks, _memory
from jtk.agents.base import ProblemInfo, check_query, check_training_data, register

PROB_CLIP = (0.01, 0.99)


@dataclass(frozen=True, eq=False)
class ClassifierPosterior:
    """A deterministic predictive from a fitted scikit-learn classifier (a one-component MixturePosterior)."""

    model: object
    input_dim: int
    num_classes: int

    num_components = 1

    def probs(self, x) -> np.ndarray:
        """Clipped class probabilities at x [n, d] → [n, K]."""
        x = check_query(x, self.input_dim)
        p = np.zeros((x.shape[0], self.num_classes))
        p[:, self.model.classes_] = self.model.predict_proba(x)
        return np.clip(p, *PROB_CLIP)

    def components(self, x) -> np.ndarray:
        """The single component's logits log p: [1, n, K]."""
        return np.log(self.probs(x))[None].astype(np.float32)

    def log_weights(self) -> None:
        """A single component: uniform weights (a :class:`~jtk.agents.base.MixturePosterior` of one function)."""
        return None

    def sample_logits(self, x, num_samples: int = 1, seed=0) -> np.ndarray:
        """Every sample is the same function: [M, n, K]."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        _checks.as_key(seed)  # validated for a uniform API (every sample is the same function)
        n = check_query(x, self.input_dim).shape[0]
        _memory.check_budget(f"num_samples {num_samples} × num_inputs {n} × num_classes {self.num_classes} float32",
                             _memory.nbytes(num_samples, n, self.num_classes), "lower num_samples or use fewer x")
        return np.repeat(self.components(x), num_samples, axis=0)

    def mean_probs(self, x) -> np.ndarray:
        return self.probs(x)


def _int_seed(seed) -> int:
    """An int seed for scikit-learn from an int or a JAX PRNG key."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        _checks.seed_int("seed", seed)
        return int(seed)
    key = _checks.as_key(seed)
    return int(jax.random.randint(key, (), 0, 2 ** 31 - 1))


@dataclass(frozen=True)
class SklearnAgent:
    """Base of the scikit-learn agents: builds the estimator, adds origin points, wraps the posterior."""

    def estimator(self, seed: int, num_points: int):
        """A fresh scikit-learn classifier for ``num_points`` training points."""
        raise NotImplementedError

    def fit(self, x, y, seed=0, prior: ProblemInfo | None = None) -> ClassifierPosterior:
        """Fits on x [n, d], y [n] plus one point per class at the origin."""
        x, y, prior = check_training_data(x, y, prior)
        seed = _int_seed(seed)
        k = prior.num_classes
        xs = np.concatenate([x, np.zeros((k, x.shape[1]), x.dtype)])
        ys = np.concatenate([y, np.arange(k, dtype=y.dtype)])
        model = self.estimator(seed % (2 ** 31), xs.shape[0]).fit(xs, ys)
        return ClassifierPosterior(model, prior.input_dim, k)


@dataclass(frozen=True)
class KNNAgent(SklearnAgent):
    """k-nearest neighbours (App. C.8).

    Args:
      num_neighbors: k (3); capped at the number of points (n + K).
      weights: "uniform" (default) or "distance".
    """

    num_neighbors: int = 3
    weights: str = "uniform"

    def __post_init__(self):
        _checks.integer("num_neighbors", self.num_neighbors, minimum=1)
        _checks.one_of("weights", self.weights, ("uniform", "distance"))

    def estimator(self, seed: int, num_points: int):
        from sklearn.neighbors import KNeighborsClassifier  # imported on use: keeps `import jtk` light (docs/platforms.md)

        return KNeighborsClassifier(n_neighbors=min(self.num_neighbors, num_points), weights=self.weights)


@dataclass(frozen=True)
class RandomForestAgent(SklearnAgent):
    """Random forest (App. C.8).

    Args:
      num_trees: number of trees (100).
      criterion: "gini" (default) or "entropy".
    """

    num_trees: int = 100
    criterion: str = "gini"

    def __post_init__(self):
        _checks.integer("num_trees", self.num_trees, minimum=1)
        _checks.one_of("criterion", self.criterion, ("gini", "entropy", "log_loss"))

    def estimator(self, seed: int, num_points: int):
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=self.num_trees, criterion=self.criterion, random_state=seed,
                                      n_jobs=1)


@register("knn")
def knn(**kw) -> KNNAgent:
    """k-NN, k = 3, uniform weights, probabilities clipped to [0.01, 0.99] (App. C.8)."""
    return KNNAgent(**kw)


@register("random_forest")
def random_forest(**kw) -> RandomForestAgent:
    """Random forest, 100 trees, gini, probabilities clipped to [0.01, 0.99] (App. C.8)."""
    return RandomForestAgent(**kw)
