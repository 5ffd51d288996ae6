"""The two-coin example as widgets (Osband et al. 2022, §1, Fig. 1), with a concrete decision problem.

Two coins with equal marginals (P(heads) = ½ on one flip) but different joints:

* coin £ is fair and known: every flip is heads with probability ½;
* coin $ is always-tails or always-heads, each with probability ½.

**The decision problem.** You flip one coin of your choice per step, for a
horizon of H steps, and score one point per head. Exact expected scores
(:func:`jtk.envs.coin.expected_cumulative_heads`, computed in the library; the
widgets here only plot them and wire controls):

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

from typing import Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import pandas as pd

from jtk import _checks
from jtk.envs.coin import MAX_HORIZON, POLICIES, Coin, check_coins, decision_table, paper_coins  # noqa: F401
from jtk.plots import coins as coin_plots
from jtk.plots.layout import alt_text
from jtk.widgets._app import LABEL_STYLE, App, image_widget, show_png

MAX_FLIPS = 6  # largest n shown as an n-flip joint grid (2^3 × 2^3 cells)


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
    coins = check_coins(coins)
    table = pd.DataFrame({name: c.joint(flips).reshape(-1) for name, c in coins.items()},
                         index=pd.Index(coin_plots.sequence_labels(flips), name="sequence"))
    return table


def joint_grid_update(flips: int, coins: Mapping[str, Coin] | None = None) -> dict:
    """Data of the joint-grid figure for n flips: {"joints": name → (2,)*n array, "marginals": name → P(H)}."""
    flips = _checks.integer("flips", flips, minimum=1, maximum=MAX_FLIPS)
    coins = check_coins(coins)
    return {"joints": {n: c.joint(flips) for n, c in coins.items()},
            "marginals": {n: c.marginal() for n, c in coins.items()}}


def joint_grid_figure(flips: int, coins: Mapping[str, Coin] | None = None):
    """Fig. 1 for n flips: marginal bars above the n-flip joint grid of each coin."""
    data = joint_grid_update(flips, coins)
    return coin_plots.plot_joint_grids(data["joints"], data["marginals"])


# ------------------------------------------------------------------ flipping
def hidden_biases(coins: Mapping[str, Coin] | None = None, seed: int = 0) -> tuple[float, ...]:
    """Draws each coin's true bias from its prior (what the flipping game hides from the student)."""
    coins = check_coins(coins)
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
    coins = check_coins(coins)
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
    coins = check_coins(coins)
    return coin_plots.plot_coin_posterior(flip_update(history, coins), list(coins))


def decision_figure(horizon: int, coins: Mapping[str, Coin] | None = None):
    """Curves of expected cumulative heads per policy over the horizon, and the totals."""
    return coin_plots.plot_decision(decision_table(horizon, coins), horizon)


def decision_totals_html(table: pd.DataFrame, horizon: int) -> str:
    """The decision app's totals as a compact two-column HTML table (policy, expected heads after H flips)."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be the DataFrame of decision_table, got {type(table).__name__}")
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
    coins = check_coins(coins)
    flips = _checks.integer("flips", flips, minimum=1, maximum=MAX_FLIPS)
    slider = widgets.IntSlider(value=flips, min=1, max=MAX_FLIPS, description="flips n",
                               tooltip="number of flips n whose joint probabilities the grids show",
                               continuous_update=False, style=LABEL_STYLE)
    image = _image()
    rendered: dict[int, tuple[bytes, str]] = {}  # n → (PNG, text alternative): a position seen before shows at once

    def refresh(_=None):
        n = slider.value
        if n not in rendered:
            fig = joint_grid_figure(n, coins)
            alt = alt_text(fig)
            rendered[n] = (coin_plots.figure_to_png(fig), alt)
        show_png(image, *rendered[n])

    slider.observe(refresh, "value")
    refresh()
    box = App([slider, image, image.caption], title="n-flip joint app")
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
    coins = check_coins(coins)
    names = list(coins)
    state = {"seed": _checks.seed_int("seed", seed), "history": []}
    state["biases"] = hidden_biases(coins, state["seed"])
    image = _image()
    label = widgets.HTML()
    reveal = widgets.Checkbox(value=False, description="reveal the true biases", indent=False,
                              tooltip="show the hidden bias of each coin")
    # the default button style: JupyterLab's "info" and "warning" put white text on cyan or orange (< 4.5:1)
    buttons = {n: widgets.Button(description=f"flip {n}", tooltip=f"flip coin {n} once") for n in names}
    buttons["reset"] = widgets.Button(description="new coins",
                                      tooltip="start over with new coins: new hidden biases, no flips")

    def refresh(_=None):
        fig = flip_figure(state["history"], coins)
        alt = alt_text(fig)
        show_png(image, coin_plots.figure_to_png(fig), alt)
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
    box = App([widgets.HBox(list(buttons.values()) + [reveal]), label, image, image.caption], title="coin-flipping app")
    box.buttons, box.image, box.history, box.reveal, box.state = buttons, image, state["history"], reveal, state
    return box


def decision_app(horizon: int = 10, coins: Mapping[str, Coin] | None = None,
                 max_horizon: int = 50) -> widgets.VBox:
    """Horizon slider → expected cumulative heads of each policy (exact).

    Returns:
      VBox(slider, table, image); ``.controls["horizon"]``, ``.image`` and
      ``.table`` (HTML of the totals) for tests.
    """
    coins = check_coins(coins)
    max_horizon = _checks.integer("max_horizon", max_horizon, minimum=1, maximum=MAX_HORIZON)
    horizon = _checks.integer("horizon", horizon, minimum=1, maximum=max_horizon)
    slider = widgets.IntSlider(value=horizon, min=1, max=max_horizon, description="horizon H",
                               tooltip="number of flips H the policies play", continuous_update=False,
                               style=LABEL_STYLE)
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
        show_png(image, live[0].png(dpi=80), live[0].alt)

    slider.observe(refresh, "value")
    refresh()
    box = App([slider, table, image, image.caption], title="decision app")
    box.controls, box.image, box.table = {"horizon": slider}, image, table
    return box
