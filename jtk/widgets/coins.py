"""The two-coin example as widgets (Osband et al. 2022, §1, Fig. 1), with a concrete decision problem.

Two coins with equal marginals (P(heads) = ½ on one flip) but different joints:

* coin £ is fair and known: every flip is heads with probability ½;
* coin $ is always-tails or always-heads, each with probability ½.

**The decision problem.** You flip one coin of your choice per step, for a
horizon of H steps, and score one point per head. Exact expected scores
(:func:`expected_cumulative_heads`):

* ``marginal``: a decision maker that only has the one-flip marginals sees two
  identical coins, P(heads) = ½ each, and nothing tells it that a flip of $
  would teach it anything. Whatever coin it settles on, it scores ½ a flip:
  H / 2.
* ``try $ once, then commit`` (the paper's policy): flip $ once; heads means $
  is the heads coin, so flip $ for ever after; tails means flip £ for ever
  after. Expected score ½ · H + ½ · (H − 1) / 2 = (3H − 1) / 4. Deciding to
  try $ needs the *joint*: P(second flip H | first flip H) = 1 for $, ½ for £.
* ``bayes-optimal``: dynamic programming over the joint (exact Bayes-adaptive
  optimum); for these coins it equals try-then-commit.
* ``oracle``: knows the biases in advance: 3H / 4, an upper bound.

Everything is exact arithmetic over posterior states (no sampling). The
widget builders return ipywidgets 8 boxes whose figures are PNG ``Image``
widgets, redrawn by plain update functions that tests call directly.
"""

from __future__ import annotations

import functools
from typing import Callable, Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import pandas as pd

from jtk import _checks
from jtk.envs.coin import Coin
from jtk.plots import coins as coin_plots
from jtk.widgets._app import LABEL_STYLE, App, image_widget, show_png

MAX_FLIPS = 6  # largest n shown as an n-flip joint grid (2^3 × 2^3 cells)
MAX_HORIZON = 100
POLICIES = ("marginal", "try $ once, then commit", "bayes-optimal", "oracle")


def paper_coins() -> dict[str, Coin]:
    """The two coins of Fig. 1: name → Coin. '£' is fair, '$' has bias 0 or 1 (½ each)."""
    return {"£": Coin((0.5,), (1.0,)), "$": Coin((0.0, 1.0), (0.5, 0.5))}


def _check_coins(coins) -> dict[str, Coin]:
    if coins is None:
        return paper_coins()
    if not isinstance(coins, Mapping) or not coins:
        raise TypeError(f"coins must be a non-empty dict name → jtk.envs.Coin, got {type(coins).__name__}")
    for name, c in coins.items():
        if not isinstance(c, Coin):
            raise TypeError(f"coins[{name!r}] must be a jtk.envs.Coin, got {type(c).__name__}")
    return dict(coins)


# ------------------------------------------------------------------ joints
def joint_table(flips: int = 2, coins: Mapping[str, Coin] | None = None) -> pd.DataFrame:
    """Probability of every sequence of ``flips`` flips under each coin.

    Args:
      flips: number of flips n (1 … 6).
      coins: name → Coin (default :func:`paper_coins`).

    Returns:
      DataFrame indexed by the sequence ("TT", "TH", "HT", "HH" for n = 2) with
      one column per coin; each column sums to 1.

    Example:
      >>> joint_table(2)["$"].tolist()
      [0.5, 0.0, 0.0, 0.5]
    """
    flips = _checks.integer("flips", flips, minimum=1, maximum=MAX_FLIPS)
    coins = _check_coins(coins)
    table = pd.DataFrame({name: c.joint(flips).reshape(-1) for name, c in coins.items()},
                         index=pd.Index(coin_plots.sequence_labels(flips), name="sequence"))
    return table


def joint_grid_update(flips: int, coins: Mapping[str, Coin] | None = None) -> dict:
    """Data of the joint-grid figure for n flips: {"joints": name → (2,)*n array, "marginals": name → P(H)}."""
    flips = _checks.integer("flips", flips, minimum=1, maximum=MAX_FLIPS)
    coins = _check_coins(coins)
    return {"joints": {n: c.joint(flips) for n, c in coins.items()},
            "marginals": {n: c.marginal() for n, c in coins.items()}}


def joint_grid_figure(flips: int, coins: Mapping[str, Coin] | None = None):
    """Fig. 1 for n flips: marginal bars above the n-flip joint grid of each coin."""
    data = joint_grid_update(flips, coins)
    return coin_plots.plot_joint_grids(data["joints"], data["marginals"])


# ------------------------------------------------------------------ flipping
def hidden_biases(coins: Mapping[str, Coin] | None = None, seed: int = 0) -> tuple[float, ...]:
    """Draws each coin's true bias from its prior (what the flipping game hides from the student)."""
    coins = _check_coins(coins)
    rng = np.random.default_rng([_checks.seed_int("seed", seed), 1])
    return tuple(float(rng.choice(c.biases, p=c.prior)) for c in coins.values())


def draw_flip(bias: float, seed, coin_index: int, flip_number: int) -> int:
    """One flip's outcome (1 = heads), a deterministic function of (seed, coin, flip number)."""
    bias = float(bias)
    if not 0.0 <= bias <= 1.0:
        raise ValueError(f"bias must lie in [0, 1], got {bias}")
    seed = _checks.seed_int("seed", seed)
    rng = np.random.default_rng([seed, _checks.integer("coin_index", coin_index, minimum=0),
                                 _checks.integer("flip_number", flip_number, minimum=0)])
    return int(rng.random() < bias)


def flip_update(history: Sequence[tuple[int, int]], coins: Mapping[str, Coin] | None = None) -> dict:
    """The belief after a sequence of flips: what the coin-flipping app draws.

    Args:
      history: list of (coin index, outcome) pairs, outcome 1 = heads, 0 = tails.
      coins: name → Coin prior (default :func:`paper_coins`).

    Returns:
      dict with, per coin (lists in coin order): ``biases`` [B_i],
      ``posteriors`` [B_i] (P(bias | its flips)), ``predictive`` (P(next flip
      heads)), ``next_two`` (2×2 joint of the next two flips, [first, second]),
      ``counts`` ((heads, tails)); and ``history_text`` ("$:H £:T ...") and
      ``total_heads``.
    """
    coins = _check_coins(coins)
    names = list(coins)
    outcomes: list[list[int]] = [[] for _ in names]
    parts = []
    for step, pair in enumerate(history):
        if len(pair) != 2:
            raise ValueError(f"history[{step}] must be a (coin index, outcome) pair, got {pair!r}")
        i, o = pair
        _checks.integer(f"history[{step}] coin index", i, minimum=0, maximum=len(names) - 1)
        if o not in (0, 1):
            raise ValueError(f"history[{step}] outcome must be 0 (tails) or 1 (heads), got {o!r}")
        outcomes[i].append(int(o))
        parts.append(f"{names[i]}:{'H' if o else 'T'}")
    posts = [c.posterior(o) for c, o in zip(coins.values(), outcomes)]
    return {
        "biases": [list(p.biases) for p in posts],
        "posteriors": [list(p.prior) for p in posts],
        "predictive": [p.marginal() for p in posts],
        "next_two": [p.joint(2) for p in posts],
        "counts": [(sum(o), len(o) - sum(o)) for o in outcomes],
        "history_text": " ".join(parts[-20:]) + (" …" if len(parts) > 20 else ""),
        "total_heads": int(sum(sum(o) for o in outcomes)),
    }


def flip_figure(history: Sequence[tuple[int, int]], coins: Mapping[str, Coin] | None = None):
    """Figure of :func:`flip_update`: posterior over each coin's bias and the joint of its next two flips."""
    coins = _check_coins(coins)
    return coin_plots.plot_coin_posterior(flip_update(history, coins), list(coins))


# ------------------------------------------------------------------ decisions
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
    cs = tuple(_check_coins(coins).values())
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
    coins = _check_coins(coins)
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


def decision_figure(horizon: int, coins: Mapping[str, Coin] | None = None):
    """Curves of expected cumulative heads per policy over the horizon, and the totals."""
    return coin_plots.plot_decision(decision_table(horizon, coins), horizon)


def decision_totals_html(table: pd.DataFrame, horizon: int) -> str:
    """The decision app's totals as a compact two-column HTML table (policy, expected heads after H flips)."""
    horizon = _checks.integer("horizon", horizon, minimum=1)
    totals = table[table["t"] == horizon].set_index("policy")["expected_heads"]
    return totals.to_frame(f"expected heads after {horizon} flips").to_html(float_format="%.2f", index_names=False)


# ------------------------------------------------------------------ builders
def _image() -> widgets.Image:
    return image_widget()


def joint_grid_app(flips: int = 2, coins: Mapping[str, Coin] | None = None) -> widgets.VBox:
    """Slider over the number of flips n → the n-flip joint grids of the coins.

    Returns:
      VBox(slider, image); ``.controls["flips"]`` is the slider and ``.image``
      the PNG widget, for tests.
    """
    coins = _check_coins(coins)
    flips = _checks.integer("flips", flips, minimum=1, maximum=MAX_FLIPS)
    slider = widgets.IntSlider(value=flips, min=1, max=MAX_FLIPS, description="flips n",
                               continuous_update=False, style=LABEL_STYLE)
    image = _image()
    rendered: dict[int, bytes] = {}  # n → PNG: a position seen before shows at once

    def refresh(_=None):
        n = slider.value
        if n not in rendered:
            rendered[n] = coin_plots.figure_to_png(joint_grid_figure(n, coins))
        show_png(image, rendered[n])

    slider.observe(refresh, "value")
    refresh()
    box = App([slider, image], title="n-flip joint app")
    box.controls, box.image = {"flips": slider}, image
    return box


def coin_flip_app(seed: int = 0, coins: Mapping[str, Coin] | None = None) -> widgets.VBox:
    """Buttons to flip each coin; the posterior over its bias and the joint of its next two flips update.

    The true biases are drawn from the priors with ``seed`` (a "new coins"
    button draws fresh ones; a checkbox reveals them).

    Returns:
      VBox; ``.buttons`` (dict name → Button, plus "reset"), ``.image``,
      ``.history`` (list of (coin index, outcome)), ``.reveal`` for tests.
    """
    coins = _check_coins(coins)
    names = list(coins)
    state = {"seed": _checks.seed_int("seed", seed), "history": []}
    state["biases"] = hidden_biases(coins, state["seed"])
    image = _image()
    label = widgets.HTML()
    reveal = widgets.Checkbox(value=False, description="reveal the true biases", indent=False)
    buttons = {n: widgets.Button(description=f"flip {n}", button_style="info") for n in names}
    buttons["reset"] = widgets.Button(description="new coins", button_style="warning")

    def refresh(_=None):
        show_png(image, coin_plots.figure_to_png(flip_figure(state["history"], coins)))
        truth = ", ".join(f"{n}: {b:g}" for n, b in zip(names, state["biases"])) if reveal.value else "hidden"
        label.value = f"<b>true biases</b>: {truth} &nbsp; <b>flips</b>: {len(state['history'])}"

    def flip(i):
        def handler(_=None):
            k = sum(1 for j, _o in state["history"] if j == i)
            state["history"].append((i, draw_flip(state["biases"][i], state["seed"], i, k)))
            refresh()
        return handler

    def reset(_=None):
        state["seed"] += 1
        state["history"].clear()
        state["biases"] = hidden_biases(coins, state["seed"])
        refresh()

    for i, n in enumerate(names):
        buttons[n].on_click(flip(i))
    buttons["reset"].on_click(reset)
    reveal.observe(refresh, "value")
    refresh()
    box = App([widgets.HBox(list(buttons.values()) + [reveal]), label, image], title="coin-flipping app")
    box.buttons, box.image, box.history, box.reveal, box.state = buttons, image, state["history"], reveal, state
    return box


def decision_app(horizon: int = 10, coins: Mapping[str, Coin] | None = None,
                 max_horizon: int = 50) -> widgets.VBox:
    """Horizon slider → expected cumulative heads of each policy (exact).

    Returns:
      VBox(slider, table, image); ``.controls["horizon"]``, ``.image`` and
      ``.table`` (HTML of the totals) for tests.
    """
    coins = _check_coins(coins)
    max_horizon = _checks.integer("max_horizon", max_horizon, minimum=1, maximum=MAX_HORIZON)
    horizon = _checks.integer("horizon", horizon, minimum=1, maximum=max_horizon)
    slider = widgets.IntSlider(value=horizon, min=1, max=max_horizon, description="horizon H",
                               continuous_update=False, style=LABEL_STYLE)
    image, table = _image(), widgets.HTML()
    live: list[coin_plots.DecisionFigure] = []  # one figure, redrawn in place

    def refresh(_=None):
        h = slider.value
        data = decision_table(h, coins)
        table.value = decision_totals_html(data, h)
        if not live:
            live.append(coin_plots.DecisionFigure(data, h, layout_horizon=max_horizon))
        else:
            live[0].update(data, h)
        show_png(image, live[0].png(dpi=80))

    slider.observe(refresh, "value")
    refresh()
    box = App([slider, table, image], title="decision app")
    box.controls, box.image, box.table = {"horizon": slider}, image, table
    return box
