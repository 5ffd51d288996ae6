"""The two-coin example of the Neural Testbed (Osband et al. 2022, §1, Fig. 1).

A coin whose bias (probability of heads) is unknown: it is one of ``biases``
with probabilities ``prior``. Two coins can have the same marginal P(heads)
for one flip yet very different joints over several flips:

* ``Coin((0.5,), (1.0,))``: a fair coin; every sequence of n flips has 2^-n.
* ``Coin((0.0, 1.0), (0.5, 0.5))``: always tails or always heads; after one
  flip the rest is known, so only HH…H and TT…T have probability (½ each).

Outcomes use index 0 = tails, 1 = heads.

The decision problem of §1 on these coins (flip one coin per step for H steps,
one point per head) is solved here too, exactly (no sampling):
:func:`expected_cumulative_heads` of the policies :data:`POLICIES`
(``jtk.widgets.coins`` only plots them).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

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


# ------------------------------------------------------------------ the paper's coins and the decision problem
MAX_HORIZON = 100
POLICIES = ("marginal", "try $ once, then commit", "bayes-optimal", "oracle")


def paper_coins() -> dict[str, Coin]:
    """The two coins of Fig. 1: name → Coin. '£' is fair, '$' has bias 0 or 1 (½ each)."""
    return {"£": Coin((0.5,), (1.0,)), "$": Coin((0.0, 1.0), (0.5, 0.5))}


def check_coins(coins) -> dict[str, Coin]:
    """``coins`` (name → :class:`Coin`) checked, or the paper's two coins for None (:func:`paper_coins`)."""
    if coins is None:
        return paper_coins()
    if not isinstance(coins, Mapping) or not coins:
        raise TypeError(f"coins must be a non-empty dict name → jtk.envs.Coin, got {type(coins).__name__}")
    for name, c in coins.items():
        if not isinstance(c, Coin):
            raise TypeError(f"coins[{name!r}] must be a jtk.envs.Coin, got {type(c).__name__}")
    return dict(coins)


@functools.lru_cache(maxsize=4096)
def _posterior(coin: Coin, heads: int, tails: int) -> Coin:
    return coin.posterior([1] * heads + [0] * tails)


Counts = tuple[tuple[int, int], ...]
Chooser = Callable[[tuple[Coin, ...], Counts, int, object], tuple[int, object]]


def _forward(coins: tuple[Coin, ...], horizon: int, choose: Chooser) -> np.ndarray:
    """Exact expected heads at each step [H] of a policy, by propagating the distribution of posterior states."""
    dist: dict[tuple[Counts, object], float] = {(tuple((0, 0) for _ in coins), None): 1.0}
    per_step = np.zeros(horizon)
    for t in range(horizon):
        new: dict[tuple[Counts, object], float] = {}
        for (counts, memo), prob in dist.items():
            posts = tuple(_posterior(c, h, tl) for c, (h, tl) in zip(coins, counts))
            i, memo = choose(posts, counts, t, memo)
            q = _predictive(coins[i], *counts[i])
            per_step[t] += prob * q
            for outcome, w in ((1, q), (0, 1.0 - q)):
                if prob * w <= 0.0:
                    continue
                h, tl = counts[i]
                nxt = counts[:i] + ((h + outcome, tl + 1 - outcome),) + counts[i + 1:]
                new[(nxt, memo)] = new.get((nxt, memo), 0.0) + prob * w
        dist = new
    return per_step


@functools.lru_cache(maxsize=4096)
def _predictive(coin: Coin, heads: int, tails: int) -> float:
    """P(next flip heads | heads, tails seen) of one coin (cached: the dynamic programme asks millions of times)."""
    return _posterior(coin, heads, tails).marginal()


def _bayes_value(coins: tuple[Coin, ...]):
    """Q-values of the finite-horizon Bayes-adaptive problem.

    The value of a state depends on the flips seen only through the posteriors they lead to, so it is memoised
    by (posteriors, steps left): count states with equal beliefs share one entry. For the paper's coins that
    collapses the state space (£ never changes, $ has three beliefs), and H = 50 takes milliseconds, not a second.
    """
    num = len(coins)
    memo: dict[tuple, float] = {}

    def value(counts: Counts, steps_left: int) -> float:
        if steps_left == 0:
            return 0.0
        key = (tuple(_posterior(c, h, tl) for c, (h, tl) in zip(coins, counts)), steps_left)
        if key not in memo:
            memo[key] = max(q_value(counts, steps_left, i) for i in range(num))
        return memo[key]

    def q_value(counts: Counts, steps_left: int, i: int) -> float:
        h, tl = counts[i]
        q = _predictive(coins[i], h, tl)
        if steps_left == 1:
            return q
        total = 0.0
        if q > 0.0:
            total += q * (1.0 + value(counts[:i] + ((h + 1, tl),) + counts[i + 1:], steps_left - 1))
        if q < 1.0:
            total += (1.0 - q) * value(counts[:i] + ((h, tl + 1),) + counts[i + 1:], steps_left - 1)
        return total

    return q_value


def _most_uncertain(coins: Sequence[Coin]) -> int:
    """Index of the coin whose bias has the largest prior variance (the one worth trying)."""
    var = [float(np.dot(c.prior, (np.asarray(c.biases) - c.marginal()) ** 2)) for c in coins]
    return int(np.argmax(var))


def expected_cumulative_heads(policy: str, horizon: int, coins: Mapping[str, Coin] | None = None) -> np.ndarray:
    """Exact expected number of heads after each flip t = 1 … H under a policy.

    Args:
      policy: one of :data:`POLICIES`:
        ``"marginal"`` commits to the coin with the highest one-flip marginal
        (ties averaged) and never learns — all a marginal predictor supports;
        ``"try $ once, then commit"`` flips the coin with the most uncertain
        bias once, then commits to the coin with the highest posterior P(heads);
        ``"bayes-optimal"`` acts optimally on the joint (dynamic programming);
        ``"oracle"`` knows every coin's bias.
      horizon: number of flips H (1 … 100).
      coins: name → Coin (default :func:`paper_coins`, the paper's £ and $).

    Returns:
      [H] expected cumulative heads; for the paper's coins the last entries are
      H/2, (3H − 1)/4, (3H − 1)/4 and 3H/4.

    Example:
      >>> float(expected_cumulative_heads("try $ once, then commit", 10)[-1])
      7.25
    """
    _checks.one_of("policy", policy, POLICIES)
    horizon = _checks.integer("horizon", horizon, minimum=1, maximum=MAX_HORIZON)
    cs = tuple(check_coins(coins).values())
    t = np.arange(1, horizon + 1, dtype=np.float64)
    if policy == "marginal":
        return t * max(c.marginal() for c in cs)
    if policy == "oracle":
        grids = np.meshgrid(*[np.asarray(c.biases) for c in cs], indexing="ij")
        weights = functools.reduce(np.multiply, np.meshgrid(*[np.asarray(c.prior) for c in cs], indexing="ij"))
        return t * float(np.sum(weights * np.max(np.stack(grids), axis=0)))
    if policy == "bayes-optimal":
        q_value = _bayes_value(cs)

        def choose(posts, counts, step, memo):
            qs = [q_value(counts, horizon - step, i) for i in range(len(cs))]
            return int(np.argmax(np.round(qs, 12))), None
    else:
        explore = _most_uncertain(cs)

        def choose(posts, counts, step, memo):
            if step == 0:
                return explore, None
            if memo is None:  # commit once, after the first flip
                memo = int(np.argmax(np.round([p.marginal() for p in posts], 12)))
            return memo, memo
    return np.cumsum(_forward(cs, horizon, choose))


def decision_table(horizon: int, coins: Mapping[str, Coin] | None = None) -> pd.DataFrame:
    """Expected cumulative heads of every policy: columns policy, t, expected_heads (long format).

    Results are cached per (horizon, coins), so a slider returning to a horizon costs nothing.
    """
    horizon = _checks.integer("horizon", horizon, minimum=1, maximum=MAX_HORIZON)
    coins = check_coins(coins)
    return _decision_table(horizon, tuple(coins.items())).copy()


@functools.lru_cache(maxsize=256)
def _decision_table(horizon: int, coins: tuple[tuple[str, Coin], ...]) -> pd.DataFrame:
    cs = dict(coins)
    values = {pol: expected_cumulative_heads(pol, horizon, cs) for pol in POLICIES}
    return pd.DataFrame({"policy": np.repeat(POLICIES, horizon),
                         "t": np.tile(np.arange(1, horizon + 1), len(POLICIES)),
                         "expected_heads": np.concatenate([values[p] for p in POLICIES]).astype(np.float64)})


def decision_summary(horizon: int, coins: Mapping[str, Coin] | None = None) -> pd.Series:
    """Expected total heads after ``horizon`` flips, one entry per policy."""
    table = decision_table(horizon, coins)
    return table[table["t"] == table["t"].max()].set_index("policy")["expected_heads"].rename(
        f"expected heads after {horizon} flips")
