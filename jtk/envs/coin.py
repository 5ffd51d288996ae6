"""The two-coin example of the Neural Testbed (Osband et al. 2022, §1, Fig. 1).

A coin whose bias (probability of heads) is unknown: it is one of ``biases``
with probabilities ``prior``. Two coins can have the same marginal P(heads)
for one flip yet very different joints over several flips:

* ``Coin((0.5,), (1.0,))``: a fair coin; every sequence of n flips has 2^-n.
* ``Coin((0.0, 1.0), (0.5, 0.5))``: always tails or always heads; after one
  flip the rest is known, so only HH…H and TT…T have probability (½ each).

Outcomes use index 0 = tails, 1 = heads.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from jtk import _checks


@dataclass(frozen=True)
class Coin:
    """A coin with a discrete prior over its bias.

    Args:
      biases: [B] possible probabilities of heads, each in [0, 1].
      prior: [B] probabilities of each bias (non-negative, sums to 1).

    Example:
      >>> Coin((0.0, 1.0), (0.5, 0.5)).marginal()
      0.5
      >>> Coin((0.0, 1.0), (0.5, 0.5)).joint(2).tolist()
      [[0.5, 0.0], [0.0, 0.5]]
    """

    biases: tuple[float, ...]
    prior: tuple[float, ...]

    def __post_init__(self):
        b = _checks.as_float_array("biases", self.biases, ndim=1).astype(np.float64)
        p = _checks.as_float_array("prior", self.prior, ndim=1).astype(np.float64)
        if b.size == 0:
            raise ValueError("biases must hold at least one bias, got an empty sequence")
        if p.shape != b.shape:
            raise ValueError(f"prior must have one probability per bias: biases has {b.size}, prior has {p.size}")
        if np.any((b < 0) | (b > 1)):
            raise ValueError(f"biases must lie in [0, 1], got {b.tolist()}")
        if np.any(p < 0) or not np.isclose(p.sum(), 1.0, atol=1e-9):
            raise ValueError(f"prior must be non-negative and sum to 1, got {p.tolist()} (sum {p.sum():.6g})")
        object.__setattr__(self, "biases", tuple(float(v) for v in b))
        object.__setattr__(self, "prior", tuple(float(v) for v in p / p.sum()))

    def marginal(self) -> float:
        """P(heads) on one flip: Σ_i prior_i · bias_i."""
        return float(np.dot(self.prior, self.biases))

    def sequence_probability(self, outcomes) -> float:
        """P(the given sequence of flips), outcomes [t] of 0 (tails) / 1 (heads)."""
        o = self._check_outcomes(outcomes)
        heads, tails = int(o.sum()), int(o.size - o.sum())
        b, p = np.asarray(self.biases), np.asarray(self.prior)
        return float(np.sum(p * b ** heads * (1 - b) ** tails))

    def joint(self, flips: int) -> np.ndarray:
        """The joint distribution of ``flips`` flips: array of shape (2,)*flips; entry [o1, …, on]."""
        flips = _checks.integer("flips", flips, minimum=1, maximum=20)
        b, p = np.asarray(self.biases), np.asarray(self.prior)
        out = np.zeros((2,) * flips)
        for seq in itertools.product((0, 1), repeat=flips):
            h = sum(seq)
            out[seq] = np.sum(p * b ** h * (1 - b) ** (flips - h))
        return out

    def posterior(self, outcomes) -> "Coin":
        """The coin after observing ``outcomes`` (Bayes' rule on the bias)."""
        o = self._check_outcomes(outcomes)
        heads, tails = int(o.sum()), int(o.size - o.sum())
        b, p = np.asarray(self.biases), np.asarray(self.prior)
        w = p * b ** heads * (1 - b) ** tails
        if w.sum() <= 0:
            raise ValueError(f"outcomes {o.tolist()} have probability 0 under this coin; no posterior exists")
        return Coin(tuple(b), tuple(w / w.sum()))

    def sample(self, flips: int, seed=0) -> tuple[float, np.ndarray]:
        """Draws a bias from the prior, then ``flips`` flips: (bias, outcomes [flips])."""
        flips = _checks.integer("flips", flips, minimum=0)
        rng = np.random.default_rng(_seed_int(seed))
        bias = float(rng.choice(self.biases, p=self.prior))
        return bias, (rng.random(flips) < bias).astype(np.int64)

    @staticmethod
    def _check_outcomes(outcomes) -> np.ndarray:
        o = np.asarray(outcomes)
        if o.ndim != 1 and o.size:
            raise ValueError(f"outcomes must be a 1-D sequence of 0/1, got shape {o.shape}")
        o = o.reshape(-1)
        if o.size and (not np.all(np.isin(o, (0, 1)))):
            raise ValueError(f"outcomes must be 0 (tails) or 1 (heads), got {o.tolist()}")
        return o.astype(np.int64)


def _seed_int(seed) -> int:
    key = _checks.as_key(seed)
    import jax

    return int(jax.random.randint(key, (), 0, 2 ** 31 - 1))
