"""Figures for the two-coin example (Osband et al. 2022, Fig. 1) and the coin decision problem.

Every function returns a ``matplotlib.figure.Figure`` built with the
object-oriented API (not registered with pyplot, so nothing leaks and nothing
is shown twice in Jupyter; a figure returned as a cell's last value is shown
by the inline backend). Colours come from seaborn's colour-blind-safe palette,
and heads / tails are also told apart by hatching and text, not colour alone.
Each figure stores a text alternative written from its data (the ``*_alt``
functions; :func:`jtk.plots.layout.alt_text`).
"""

from __future__ import annotations

import io
from typing import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import ticker
from matplotlib.figure import Figure

from jtk import _checks
from jtk.plots.layout import LiveFigure, set_alt_text

# The public surface: each figure's plot_* function (or class) and its *_alt text alternative. sequence_labels,
# joint_as_grid and probabilities_text are the coin figures' (and apps') layout and wording helpers, not in __all__.
__all__ = ["PALETTE", "SEQUENTIAL_CMAP", "HEADS_COLOR", "TAILS_COLOR", "POLICY_COLORS", "POLICY_STYLES",
           "figure_to_png", "joint_grids_alt", "plot_joint_grids", "coin_posterior_alt", "plot_coin_posterior",
           "decision_alt", "DecisionFigure", "plot_decision"]

COIN_VIEW_KEYS = ("counts", "biases", "posteriors", "next_two", "predictive", "history_text", "total_heads")


def _joints(joints, marginals) -> list[str]:
    """Checks coin name → joint of shape (2,)*n (the same n ≥ 1 for every coin) and marginals (None or per coin)."""
    _checks.instance("joints", joints, Mapping, "a dict of coin name → joint array of shape (2,)*flips")
    if not joints:
        raise ValueError("joints must hold at least one coin")
    shapes = {name: np.shape(j) for name, j in joints.items()}
    n = len(next(iter(shapes.values())))
    for name, shape in shapes.items():
        if len(shape) < 1 or shape != (2,) * n:
            raise ValueError(f"joints[{name!r}] must have shape {(2,) * max(n, 1)} (the same (2,)*flips for every "
                             f"coin), got {shape}")
    if marginals is not None:
        _checks.instance("marginals", marginals, Mapping, "a dict of coin name → P(heads), or None")
        missing = [name for name in joints if name not in marginals]
        if marginals and missing:
            raise ValueError(f"marginals must give P(heads) of every coin of joints, missing {missing}")
    return list(joints)


def _coin_view(view, names) -> list[str]:
    _checks.keyed("view", view, COIN_VIEW_KEYS)
    names = _checks.nonempty("names", names, "coin name")
    if len(names) > len(view["counts"]):
        raise ValueError(f"names must name at most the {len(view['counts'])} coins of view, got {len(names)}")
    return names

PALETTE = tuple(sns.color_palette("colorblind"))  # colour-blind-safe qualitative palette
SEQUENTIAL_CMAP = "cividis"  # perceptually uniform and colour-blind safe
HEADS_COLOR, TAILS_COLOR = PALETTE[1], PALETTE[0]  # orange = heads, blue = tails
POLICY_COLORS = ("#0072b2", "#d55e00", "#000000", "#af837b")  # the decision figure's policies, in order: ≥ 3:1 on
# white and apart under simulated colour-vision deficiencies (tests/test_plots_colors.py); each has a line style too
POLICY_STYLES = ("-", "--", ":", "-.")


def figure_to_png(fig: Figure, dpi: int = 80) -> bytes:
    """Renders a figure to PNG bytes (what a widget's ``Image`` shows) and frees it.

    Args:
      fig: a matplotlib figure.
      dpi: resolution in dots per inch.

    Returns:
      The PNG file as bytes.
    """
    if not isinstance(fig, matplotlib.figure.Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    fig.clear()
    return buf.getvalue()


def sequence_labels(flips: int) -> list[str]:
    """All 2**flips sequences as strings of H/T in joint-array order (index 0 = T): ['TT', 'TH', ...]."""
    return ["".join("H" if (i >> (flips - 1 - k)) & 1 else "T" for k in range(flips)) for i in range(2 ** flips)]


def joint_as_grid(joint: np.ndarray) -> tuple[np.ndarray, list[str], list[str]]:
    """Lays out a joint of n flips (shape (2,)*n) as a 2^a × 2^b matrix, a = ceil(n/2), b = n − a.

    Rows index the first a flips, columns the last b, so two flips give the
    2×2 grid of Fig. 1.

    Returns:
      (grid [2^a, 2^b], row labels, column labels).
    """
    joint = np.asarray(joint, np.float64)
    n = joint.ndim
    if n < 1 or joint.shape != (2,) * n:
        raise ValueError(f"joint must have shape (2,)*flips, got {joint.shape}")
    a = (n + 1) // 2
    b = n - a
    grid = joint.reshape(2 ** a, 2 ** b)
    return grid, sequence_labels(a), (sequence_labels(b) if b else [""])


def probabilities_text(values: Mapping[str, float], digits: int = 3) -> str:
    """Sequence probabilities in words, grouping equal ones: "TT and HH 0.5 each, TH and HT 0"."""
    groups: dict[str, list[str]] = {}
    for label, v in values.items():
        groups.setdefault(f"{float(v):.{digits}g}", []).append(label)
    parts = []
    for v, labels in sorted(groups.items(), key=lambda kv: -float(kv[0])):
        if len(labels) > 4:
            parts.append(f"{len(labels)} sequences {v} each")
        else:
            names = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
            parts.append(f"{names} {v}" + (" each" if len(labels) > 1 else ""))
    return ", ".join(parts)


def joint_grids_alt(joints: Mapping[str, np.ndarray], marginals: Mapping[str, float] | None = None) -> str:
    """Text alternative of :func:`plot_joint_grids`: each coin's one-flip P(heads) and its joint over n flips."""
    _joints(joints, marginals)
    parts = []
    for name, joint in joints.items():
        joint = np.asarray(joint, np.float64)
        labels = sequence_labels(joint.ndim)
        text = f"coin {name}: "
        if marginals:
            text += f"P(heads) on one flip {float(marginals[name]):.3g}; "
        text += f"joint of {joint.ndim} flip{'s' if joint.ndim > 1 else ''}: " + probabilities_text(
            dict(zip(labels, joint.reshape(-1))))
        parts.append(text)
    n = np.asarray(next(iter(joints.values()))).ndim
    return (f"For each coin, bars of P(tails) and P(heads) on one flip above a heat map of the probability of every "
            f"sequence of {n} flips (rows: the first flips, columns: the last). " + ". ".join(parts) + ".")


def plot_joint_grids(joints: Mapping[str, np.ndarray], marginals: Mapping[str, float] | None = None,
                     title: str | None = None) -> Figure:
    """Fig. 1 of the paper: for each coin, its one-flip marginal and its joint over n flips.

    Args:
      joints: coin name → joint array of shape (2,)*n (same n for all coins).
      marginals: coin name → P(heads) of one flip (a bar chart row is added).
      title: figure title (default: a description of n).

    Returns:
      The figure: top row marginal bars (if given), bottom row joint heatmaps
      with every probability written in its cell (up to 8×8 cells).
    """
    names = _joints(joints, marginals)
    n = np.asarray(joints[names[0]]).ndim
    vmax = max(max(float(np.max(joints[m])) for m in names), 1e-12)
    rows = 2 if marginals else 1
    cell = 0.45 * max(2, 2 ** ((n + 1) // 2))
    width, height = max(3.4, cell + 1.6) * len(names) + 1.0, (2.2 if marginals else 0) + cell + 1.4
    fig = Figure(figsize=(width, height))
    # A fixed layout in inches (constrained layout would cost a second draw on every slider move).
    left, right, top, bottom, col_gap, row_gap = 0.7, 1.1, 0.55, 0.5, 0.75, 0.6  # right: the colour bar
    axis_w = (width - left - right - col_gap * (len(names) - 1)) / len(names)
    axis_h = (height - top - bottom - row_gap * (rows - 1)) / rows
    gs = fig.add_gridspec(rows, len(names), height_ratios=[1, 2.2] if marginals else [1],
                          left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                          wspace=col_gap / axis_w, hspace=row_gap / axis_h)
    for j, name in enumerate(names):
        if marginals:
            ax = fig.add_subplot(gs[0, j])
            p = float(marginals[name])
            bars = ax.bar(["tails", "heads"], [1 - p, p], color=[TAILS_COLOR, HEADS_COLOR], edgecolor="black")
            bars[1].set_hatch("//")
            for k, v in enumerate([1 - p, p]):
                ax.text(k, v + 0.03, f"{v:.2f}", ha="center")
            ax.set_ylim(0, 1.15)
            ax.set_yticks([0, 0.5, 1])
            ax.set_ylabel("probability")
            ax.set_title(f"{name}: one flip (marginal)")
        ax = fig.add_subplot(gs[rows - 1, j])
        grid, rlab, clab = joint_as_grid(joints[name])
        image = ax.imshow(grid, cmap=SEQUENTIAL_CMAP, vmin=0, vmax=vmax)  # one colour scale for all coins
        if grid.size <= 64:
            for (r, c), v in np.ndenumerate(grid):
                ax.text(c, r, f"{v:.3g}", ha="center", va="center",
                        color="black" if v > 0.6 * vmax else "white", fontsize=8 if grid.size > 16 else 11)
        ax.set_xticks(range(len(clab)), clab)
        ax.set_yticks(range(len(rlab)), rlab)
        a = (n + 1) // 2
        ax.set_ylabel(f"flips 1–{a}" if a > 1 else "flip 1")
        ax.set_xlabel(f"flips {a + 1}–{n}" if n - a > 1 else (f"flip {n}" if n > 1 else ""))
        ax.set_title(f"{name}: joint of {n} flip{'s' if n > 1 else ''}")
    # One colour bar for all the heat maps, right of the last one: the same colour is the same probability in each.
    box = ax.get_position()
    cax = fig.add_axes((box.x1 + 0.25 / width, box.y0, 0.15 / width, box.height))
    fig.colorbar(image, cax=cax, label="probability")
    fig.suptitle(title or f"Equal marginals, different joints ({n} flip{'s' if n > 1 else ''})")
    set_alt_text(fig, f"{fig.get_suptitle()}. {joint_grids_alt(joints, marginals)}")
    return fig


def coin_posterior_alt(view: Mapping, names: Sequence[str]) -> str:
    """Text alternative of :func:`plot_coin_posterior`: each coin's belief, its next flip and the next two."""
    names = _coin_view(view, names)
    parts = []
    for i, name in enumerate(names):
        h, t = view["counts"][i]
        belief = ", ".join(f"bias {b:g} with probability {float(p):.3g}"
                           for b, p in zip(view["biases"][i], view["posteriors"][i]))
        nxt = probabilities_text(dict(zip(["TT", "TH", "HT", "HH"], np.asarray(view["next_two"][i]).reshape(-1))))
        parts.append(f"coin {name}, {h} heads and {t} tails seen: {belief}; P(next flip heads) "
                     f"{float(view['predictive'][i]):.3g}; next two flips {nxt}")
    history = view["history_text"] or "no flips yet"
    return f"Flips so far: {history} (total heads {view['total_heads']}). " + ". ".join(parts) + "."


def plot_coin_posterior(view: Mapping, names: Sequence[str]) -> Figure:
    """The coin-flipping app: flips so far, belief about each coin's bias, and the next two flips.

    Args:
      view: the dict from :func:`jtk.widgets.coins.flip_update`.
      names: display names of the coins.

    Returns:
      Figure with one column per coin: posterior over the bias (bars) above
      the predictive joint of the next two flips (2×2 heatmap).
    """
    names = _coin_view(view, names)
    k = len(names)
    fig = Figure(figsize=(3.6 * k, 5.6), layout="constrained")
    gs = fig.add_gridspec(2, k, height_ratios=[1, 1.25])
    for i, name in enumerate(names):
        biases, post = view["biases"][i], view["posteriors"][i]
        ax = fig.add_subplot(gs[0, i])
        labels = [f"{b:g}" for b in biases]
        ax.bar(labels, post, color=PALETTE[2 + i % 5], edgecolor="black")
        for j, v in enumerate(post):
            ax.text(j, v + 0.03, f"{v:.2f}", ha="center")
        ax.set_ylim(0, 1.15)
        ax.set_xlabel("bias = P(heads)")
        ax.set_ylabel("posterior probability")
        h, t = view["counts"][i]
        ax.set_title(f"{name}: {h} heads, {t} tails seen\nP(next flip heads) = {view['predictive'][i]:.2f}")
        ax = fig.add_subplot(gs[1, i])
        grid = np.asarray(view["next_two"][i])
        ax.imshow(grid, cmap=SEQUENTIAL_CMAP, vmin=0, vmax=1)
        for (r, c), v in np.ndenumerate(grid):
            ax.text(c, r, f"{v:.2f}", ha="center", va="center", color="black" if v > 0.6 else "white")
        ax.set_xticks([0, 1], ["T", "H"])
        ax.set_yticks([0, 1], ["T", "H"])
        ax.set_xlabel("second next flip")
        ax.set_ylabel("next flip")
        ax.set_title("joint of the next two flips")
    history = view["history_text"] or "no flips yet"
    fig.suptitle(f"Flips so far: {history}   (total heads {view['total_heads']})")
    set_alt_text(fig, coin_posterior_alt(view, names))
    return fig


def decision_alt(table, horizon: int) -> str:
    """Text alternative of :class:`DecisionFigure`: each policy's expected heads after ``horizon`` flips."""
    if not isinstance(table, (pd.DataFrame, dict)):
        raise TypeError(f"table must be decision_table's DataFrame (or a dict of its columns), got {type(table).__name__}")
    policy = np.asarray(table["policy"])
    heads = np.asarray(table["expected_heads"], np.float64)
    totals = {p: float(heads[policy == p][-1]) for p in dict.fromkeys(policy)}
    listed = "; ".join(f"{p} {v:.2f}" for p, v in sorted(totals.items(), key=lambda kv: -kv[1]))
    return (f"Expected cumulative heads against flip t from 1 to {horizon}, one line per policy, and bars of the "
            f"totals after {horizon} flips: {listed}.")


class DecisionFigure(LiveFigure):
    """Expected cumulative heads of each policy over a horizon (exact values), redrawn in place.

    Args:
      table: DataFrame with columns policy, t, expected_heads (cumulative), as
        from :func:`jtk.widgets.coins.decision_table`.
      horizon: the horizon H (x-axis end; the bars report the values at H).
      layout_horizon: the horizon whose (widest) tick labels the frozen layout is sized for; a widget passes its
        slider's maximum so that no later horizon's labels are clipped.

    ``update(table, horizon)`` changes line data, bar lengths and texts only; ``png()`` renders (see
    :class:`jtk.plots.layout.LiveFigure`).
    """

    def __init__(self, table, horizon: int, layout_horizon: int | None = None):
        if not isinstance(table, (pd.DataFrame, dict)):
            raise TypeError(f"table must be decision_table's DataFrame (or a dict of its columns), got "
                            f"{type(table).__name__}")
        missing = [c for c in ("policy", "t", "expected_heads") if c not in table]
        if missing:
            raise ValueError(f"table must have columns ['policy', 't', 'expected_heads'], missing {missing}")
        _checks.integer("horizon", horizon, minimum=1)
        self.policies = list(dict.fromkeys(table["policy"]))
        self.fig = Figure(figsize=(10, 4), layout="constrained")
        ax, bx = self.fig.subplots(1, 2, width_ratios=[2, 1])
        self.ax, self.bx = ax, bx
        self.lines = [ax.plot([], [], POLICY_STYLES[i % 4], color=POLICY_COLORS[i % 4], label=pol, lw=2)[0]
                      for i, pol in enumerate(self.policies)]
        ax.set_xlabel("flip t")
        ax.set_ylabel("expected cumulative heads")
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True, steps=[1, 2, 5, 10], min_n_ticks=1))  # whole flips
        self.ax_title = ax.set_title(" ")
        n = len(self.policies)
        self.bars = bx.barh(self.policies[::-1], np.ones(n), color=[POLICY_COLORS[i % 4] for i in range(n)][::-1],
                            edgecolor="black")
        self.bar_text = [bx.text(0, j, "", va="center") for j in range(n)]
        self.bx_xlabel = bx.set_xlabel(" ")
        bx.set_title("Total at the horizon")
        if layout_horizon is not None and layout_horizon != horizon:
            # size the layout for the widest labels, then show the requested horizon
            t = np.arange(1, layout_horizon + 1, dtype=np.float64)
            wide = {"policy": np.repeat(self.policies, t.size), "t": np.tile(t, n),
                    "expected_heads": np.tile(t, n)}
            self.update(wide, layout_horizon)
            self.fig.get_layout_engine().execute(self.fig)
            self.fig.set_layout_engine(None)
        self.update(table, horizon)

    def update(self, table, horizon: int) -> None:
        policy = np.asarray(table["policy"])
        t_all = np.asarray(table["t"], np.float64)
        heads = np.asarray(table["expected_heads"], np.float64)
        totals = []
        for line, pol in zip(self.lines, self.policies):
            sel = policy == pol
            line.set_data(t_all[sel], heads[sel])
            line.set_marker("o" if horizon <= 20 else "None")
            totals.append(float(heads[sel][-1]))
        pad = max(0.5, 0.03 * horizon)
        self.ax.set_xlim(1 - pad, horizon + pad)
        self.ax.set_ylim(0, max(totals) * 1.05)
        self.ax.legend(frameon=False, loc="upper left")  # rebuilt: its handles copy the markers
        self.ax_title.set_text(f"Expected heads over a horizon of {horizon} flips")
        for bar, txt, v in zip(self.bars, self.bar_text, totals[::-1]):
            bar.set_width(v)
            txt.set_position((v, bar.get_y() + bar.get_height() / 2))
            txt.set_text(f" {v:.2f}")
        self.bx.set_xlim(0, max(totals) * 1.3)
        self.bx_xlabel.set_text(f"expected heads after {horizon} flips")
        set_alt_text(self.fig, decision_alt(table, horizon))


def plot_decision(table, horizon: int) -> Figure:
    """Expected cumulative heads of each policy over a horizon (exact values).

    Args:
      table: DataFrame with columns policy, t, expected_heads (cumulative), as
        from :func:`jtk.widgets.coins.decision_table`.
      horizon: the horizon H (x-axis end; the legend reports the values at H).

    Returns:
      Figure with the curves and, on the right, the totals at H as bars.
    """
    if not isinstance(table, (pd.DataFrame, dict)):
        raise TypeError(f"table must be decision_table's DataFrame (or a dict of its columns), got {type(table).__name__}")
    return DecisionFigure(table, horizon).fig
