"""Figures for testbed problems: probability maps, agent samples, d_KL^τ curves (Figs. 5, 6, 12).

Two ways to get each figure:

* ``plot_*(view) -> Figure``: a fresh figure (for static notebook cells and tests);
* ``*Figure(view)`` classes with ``.update(view)`` and ``.png()``: a *live*
  figure that widgets keep and redraw in place. Its layout is computed once on
  the first render and then frozen, and only image data, points, lines and
  texts change, so a slider move costs one PNG render (tens of milliseconds),
  not a new figure.

All figures use the object-oriented API (nothing registered with pyplot).
Colours are colour-blind safe: a blue–red diverging map for p(y = 1 | x),
classes also told apart by marker shape and fill (white circles = class 0,
black triangles = class 1), and seaborn's "colorblind" palette plus distinct
line styles and markers for agents.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure

from jtk.plots.coins import PALETTE
from jtk.plots.layout import LiveFigure, fixed_digits  # noqa: F401 - LiveFigure is re-exported here

PROB_CMAP = "RdBu_r"  # p(class 1): blue = class 0, red = class 1 (blue/red is safe for common colour-blindness)
AGENT_STYLES = {  # colour, line style, marker
    "mlp": (PALETTE[7], ":", "s"),
    "ensemble": (PALETTE[0], "--", "o"),
    "ensemble+": (PALETTE[1], "-", "^"),
    "uniform": (PALETTE[5], "-.", "x"),
    "dropout": (PALETTE[4], "--", "D"),
    "bbb": (PALETTE[3], "-.", "v"),
    "hypermodel": (PALETTE[9], "-", "P"),
    "sgmcmc": (PALETTE[6], ":", "*"),
    "oracle": ("black", "-", "*"),
}
CLASS_MARKERS = ((0, "o", "white", "black"), (1, "^", "black", "white"))  # class, marker, face, edge


def agent_style(name: str, index: int = 0) -> tuple:
    """(colour, line style, marker) of an agent; unknown agents cycle through the palette."""
    return AGENT_STYLES.get(name, (PALETTE[(index + 2) % len(PALETTE)], "-", "d"))


class ProbabilityMap:
    """p(y = 1 | x) on a square grid with labelled points, as updatable artists on one axes."""

    def __init__(self, ax, axis: np.ndarray, probs: np.ndarray, x=None, y=None, title: str | None = None,
                 labels: bool = True):
        axis = np.asarray(axis)
        lo, hi = float(axis[0]), float(axis[-1])
        self.ax, self.size = ax, axis.size
        self.image = ax.imshow(self._check(probs), origin="lower", extent=(lo, hi, lo, hi), cmap=PROB_CMAP,
                               vmin=0.0, vmax=1.0, interpolation="bilinear")
        self.points = [ax.scatter(np.zeros(0), np.zeros(0), marker=m, s=34, facecolors=face, edgecolors=edge,
                                  linewidths=0.9, label=f"class {cls}", zorder=3)
                       for cls, m, face, edge in CLASS_MARKERS]
        self.set_points(x, y)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        if labels:
            ax.set_xlabel("$x_1$")
            ax.set_ylabel("$x_2$")
        else:
            ax.set_xticks([])
            ax.set_yticks([])
        self.title = ax.set_title(title or "", fontsize=10)

    def _check(self, probs) -> np.ndarray:
        probs = np.asarray(probs)
        if probs.shape != (self.size, self.size):
            raise ValueError(f"probs must have shape ({self.size}, {self.size}) to match the grid, got {probs.shape}")
        return probs

    def set_points(self, x, y) -> None:
        x = np.zeros((0, 2)) if x is None else np.asarray(x).reshape(-1, 2)
        y = np.zeros(0, int) if y is None else np.asarray(y).reshape(-1)
        for (cls, *_), sc in zip(CLASS_MARKERS, self.points):
            sc.set_offsets(x[y == cls])

    def update(self, probs, x=None, y=None, title: str | None = None) -> None:
        self.image.set_data(self._check(probs))
        self.set_points(x, y)
        if title is not None:
            self.title.set_text(title)


def plot_probability_map(ax, axis: np.ndarray, probs: np.ndarray, x=None, y=None, title: str | None = None,
                         labels: bool = True):
    """Draws p(y = 1 | x) on a square grid ([R, R], rows = x_2) with optional points x [n, 2], labels y [n].

    Returns:
      The ``AxesImage`` (for a colour bar).
    """
    return ProbabilityMap(ax, axis, probs, x, y, title, labels).image


# ------------------------------------------------------------------ environment
def _env_title(view) -> str:
    n = len(view["y_train"])
    return (f"Environment: temperature {view['temperature']:.3g}, seed {view['seed']}\n"
            f"{n} training point{'s' if n != 1 else ''}")


class EnvironmentFigure(LiveFigure):
    """The environment of a testbed problem: p(y = 1 | x) with the training points.

    Args:
      view: dict with axis, probs [R, R], x_train, y_train, temperature, seed
        (as from :func:`jtk.widgets.joint.environment_update`).
      figsize: (width, height) in inches (default 4.6 × 4.0).
    """

    def __init__(self, view: Mapping, figsize: tuple[float, float] | None = None):
        self.fig = Figure(figsize=figsize or (4.6, 4.0), layout="constrained")
        ax = self.fig.add_subplot()
        self.map = ProbabilityMap(ax, view["axis"], view["probs"], view["x_train"], view["y_train"],
                                  _env_title(view))
        self.fig.colorbar(self.map.image, ax=ax, label="P(y = 1 | x)", shrink=0.85)
        ax.legend(loc="lower right", fontsize=8, framealpha=0.8)

    def update(self, view: Mapping) -> None:
        self.map.update(view["probs"], view["x_train"], view["y_train"], _env_title(view))


def plot_environment(view: Mapping) -> Figure:
    """A fresh :class:`EnvironmentFigure`."""
    return EnvironmentFigure(view).fig


# ------------------------------------------------------------------ agent samples
class AgentFigure(LiveFigure):
    """An agent's mean prediction and M posterior samples (each one function over all inputs).

    Args:
      view: dict with axis, agent, mean [R, R], samples [M, R, R], x_train,
        y_train, num_train (as from :func:`jtk.widgets.joint.agent_update`).
      figsize: (width, height) in inches (default: 2.5 per panel plus the colour bar, 3.0 tall).
    """

    def __init__(self, view: Mapping, figsize: tuple[float, float] | None = None):
        m = np.asarray(view["samples"]).shape[0]
        self.fig = Figure(figsize=figsize or (2.5 * (m + 1) + 0.9, 3.0), layout="constrained")
        axes = self.fig.subplots(1, m + 1)
        self.maps = [ProbabilityMap(ax, view["axis"], view["mean"], labels=False) for ax in axes]
        self.fig.colorbar(self.maps[0].image, ax=list(axes), label="P(y = 1 | x)", shrink=0.85)
        self.suptitle = self.fig.suptitle(" ")
        self.update(view)

    def update(self, view: Mapping) -> None:
        samples = np.asarray(view["samples"])
        if samples.shape[0] != len(self.maps) - 1:
            raise ValueError(f"view['samples'] must hold {len(self.maps) - 1} samples, got {samples.shape[0]}")
        same = samples.shape[0] > 1 and np.allclose(samples, samples[:1])
        self.maps[0].update(view["mean"], view["x_train"], view["y_train"], "mean prediction")
        for i, s in enumerate(samples):
            self.maps[i + 1].update(s, view["x_train"], view["y_train"],
                                    f"sample {i + 1}" + (" (all identical)" if same else ""))
        n = view["num_train"]
        self.suptitle.set_text(f"{view['agent']} trained on {n} point{'s' if n != 1 else ''}: "
                               "mean prediction and posterior samples")


def plot_agent_predictions(view: Mapping) -> Figure:
    """A fresh :class:`AgentFigure`."""
    return AgentFigure(view).fig


# ------------------------------------------------------------------ d_KL^τ vs τ
class KLTauFigure(LiveFigure):
    """d_KL^τ as τ grows (Fig. 6 analogue), with the values at the chosen τ as bars.

    Args:
      curves: agent name → [T] d_KL^τ for τ = 1 … T.
      tau: the current τ (vertical line; bars show the values there).
      title: figure title.
      figsize: (width, height) in inches (default 10 × 3.8).
    """

    def __init__(self, curves: Mapping[str, np.ndarray], tau: int, title: str | None = None,
                 figsize: tuple[float, float] | None = None):
        self.names = list(curves)
        if not self.names:
            raise ValueError("curves must hold at least one agent")
        self.fig = Figure(figsize=figsize or (10, 3.8), layout="constrained")
        ax, bx = self.fig.subplots(1, 2, width_ratios=[2, 1])
        self.ax, self.bx = ax, bx
        self.lines = {}
        for i, name in enumerate(self.names):
            color, ls, marker = agent_style(name, i)
            faint, = ax.plot([], [], ls, color=color, lw=1, alpha=0.3)
            bold, = ax.plot([], [], ls, color=color, lw=2, label=name)
            dot, = ax.plot([], [], marker, color=color, ms=8)
            self.lines[name] = (faint, bold, dot)
        self.vline = ax.axvline(1, color="black", lw=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ticker.ScalarFormatter())  # plain "1, 10, 100": no mathtext per redraw
        ax.set_xlabel("τ (number of inputs predicted jointly)")
        ax.set_ylabel("d_KL^τ (nats)")
        self.ax_title = ax.set_title(" ")
        ax.legend(frameon=False, loc="upper left")
        colors = [agent_style(n, i)[0] for i, n in enumerate(self.names)]
        self.bars = bx.bar(self.names, np.zeros(len(self.names)), color=colors, edgecolor="black")
        for b, hatch in zip(self.bars, ["", "//", "..", "xx", "\\\\"]):
            b.set_hatch(hatch)
        self.bar_text = [bx.text(j, 0, "", ha="center", va="bottom") for j in range(len(self.names))]
        self.bx_title = bx.set_title(" ")
        bx.set_ylabel("d_KL^τ at the chosen τ (nats)")
        self.suptitle = self.fig.suptitle(title or " ")
        self.update(curves, tau, title)

    def update(self, curves: Mapping[str, np.ndarray], tau: int, title: str | None = None) -> None:
        if list(curves) != self.names:
            raise ValueError(f"curves must be for the agents {self.names}, got {list(curves)}")
        t_max = len(np.asarray(curves[self.names[0]]))
        if not 1 <= int(tau) <= t_max:
            raise ValueError(f"tau must be in [1, {t_max}], got {tau}")
        tau = int(tau)
        taus = np.arange(1, t_max + 1)
        at_tau, top = [], 1e-3
        for name in self.names:
            c = np.asarray(curves[name], np.float64)
            faint, bold, dot = self.lines[name]
            faint.set_data(taus, c)
            bold.set_data(taus[:tau], c[:tau])
            dot.set_data([tau], [c[tau - 1]])
            at_tau.append(float(c[tau - 1]))
            top = max(top, float(np.nanmax(c)))
        self.vline.set_xdata([tau, tau])
        self.ax.set_xlim(1, t_max)
        self.ax.set_ylim(0, top * 1.08)
        self.ax_title.set_text("Joint prediction loss as τ grows")
        for b, txt, v in zip(self.bars, self.bar_text, at_tau):
            b.set_height(v)
            txt.set_position((b.get_x() + b.get_width() / 2, v))
            txt.set_text(fixed_digits(v, 3))  # "1.80", not "1.8" beside "1.71"
        self.bx.set_ylim(0, max(max(at_tau) * 1.25, 1e-3))
        self.bx_title.set_text(f"at τ = {tau}")
        if title is not None:
            self.suptitle.set_text(title)


def plot_kl_vs_tau(curves: Mapping[str, np.ndarray], tau: int, title: str | None = None) -> Figure:
    """A fresh :class:`KLTauFigure`."""
    return KLTauFigure(curves, tau, title).fig


# ------------------------------------------------------------------ Fig. 12
class ComparisonFigure(LiveFigure):
    """Fig. 12 analogue: the true model (left); mean and sampled members of each agent (one row each).

    Args:
      view: dict from :func:`jtk.widgets.ensembles.comparison_update`
        (rows: agent → {"mean": [R, R], "samples": [m, R, R]}).
      max_samples: member panels per row (rows with fewer samples hide the rest).
    """

    def __init__(self, view: Mapping, max_samples: int = 4):
        rows = view["rows"]
        self.row_names, m = list(rows), max_samples
        nr = len(rows)
        # Sized for a JupyterLab cell at 1366 px (≈ 920 px wide at the app's 80 dpi), maps about 1.45 in square:
        # the true model spans the member rows and the shared colour bar sits right of them (no band under the grid).
        self.fig = Figure(figsize=(11.4, nr * 1.8 + 0.45), layout="constrained")
        gs = self.fig.add_gridspec(nr, m + 3, width_ratios=[nr * 0.93, 0.05] + [1] * (m + 1),
                                   wspace=0.02, hspace=0.02)
        ax = self.fig.add_subplot(gs[:, 0])
        self.true_map = ProbabilityMap(ax, view["axis"], view["true_probs"], title="(a) true model")
        ax.legend(loc="lower right", fontsize=9, framealpha=0.8, handletextpad=0.2, borderpad=0.3)
        self.maps, self.row_labels = [], []
        for r in range(nr):
            maps = []
            for i in range(m + 1):
                a = self.fig.add_subplot(gs[r, 2 + i])
                maps.append(ProbabilityMap(a, view["axis"], view["true_probs"], labels=False))
            self.row_labels.append(maps[0].ax.set_ylabel(" ", fontsize=10))
            self.maps.append(maps)
        self.fig.colorbar(self.true_map.image, ax=[pm.ax for row in self.maps for pm in row], location="right",
                          label="P(y = 1 | x)", shrink=0.9, aspect=25, pad=0.01)
        self.suptitle = self.fig.suptitle(" ", fontsize=11)
        self.update(view)

    def update(self, view: Mapping) -> None:
        x, y = view["x_train"], view["y_train"]
        self.true_map.update(view["true_probs"], x, y, f"(a) true model, temperature {view['temperature']:g}")
        for r, name in enumerate(self.row_names):
            row = view["rows"][name]
            samples = np.asarray(row["samples"])
            maps = self.maps[r]
            maps[0].update(row["mean"], x, y, "mean prediction")
            for i, pm in enumerate(maps[1:]):
                visible = i < samples.shape[0]
                pm.ax.set_visible(visible)
                if visible:
                    pm.update(samples[i], x, y, f"member {i + 1}")
            self.row_labels[r].set_text(name if name == "ensemble"
                                        else f"{name}\n(prior scale {view['prior_scale']:g})")
        self.suptitle.set_text(f"(b) {view['num_members']} member{'s' if view['num_members'] != 1 else ''}, "
                               f"{len(y)} training point{'s' if len(y) != 1 else ''}: "
                               "top = ensemble, bottom = ensemble+")


def plot_ensemble_comparison(view: Mapping) -> Figure:
    """A fresh :class:`ComparisonFigure`."""
    return ComparisonFigure(view).fig


# ------------------------------------------------------------------ Fig. 5
def plot_kl_vs_num_train(results: pd.DataFrame, taus: Sequence[int] | None = None) -> Figure:
    """Fig. 5 analogue: mean d_KL^τ (± one standard error over seeds) vs num_train, one panel per τ.

    Args:
      results: DataFrame with columns agent, num_train, seed, tau, kl.
      taus: which τ panels (default: all in ``results``).
    """
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame, got {type(results).__name__}")
    missing = {"agent", "num_train", "seed", "tau", "kl"} - set(results.columns)
    if missing:
        raise ValueError(f"results is missing the columns {sorted(missing)}")
    taus = sorted(results["tau"].unique()) if taus is None else list(taus)
    fig = Figure(figsize=(4.6 * len(taus), 3.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(taus)))
    for ax, tau in zip(axes, taus):
        sub = results[results["tau"] == tau]
        for i, (name, g) in enumerate(sub.groupby("agent", sort=False)):
            stats = g.groupby("num_train")["kl"].agg(["mean", "std", "count"])
            se = (stats["std"] / np.sqrt(stats["count"])).fillna(0.0)
            color, ls, marker = agent_style(name, i)
            ax.errorbar(stats.index, stats["mean"], yerr=se, fmt=ls, marker=marker, color=color, capsize=3,
                        lw=2, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("num_train")
        ax.set_ylabel(f"d_KL^{tau} (nats)")
        ax.set_title(f"τ = {tau}" + (" (marginal)" if tau == 1 else " (joint)"))
        ax.legend(frameon=False)
    n_seeds = results["seed"].nunique()
    fig.suptitle(f"Prior functions help joint predictions: mean over {n_seeds} seed{'s' if n_seeds != 1 else ''} "
                 "± 1 s.e.")
    return fig
