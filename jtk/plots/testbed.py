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
black triangles = class 1), and agent colours that stay apart under simulated
protanopia, deuteranopia and tritanopia (:mod:`jtk.plots.colors`), each with
its own line style and marker. Each figure stores a text alternative written
from its data (the ``*_alt`` functions; :func:`jtk.plots.layout.alt_text`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure

from jtk import _checks
from jtk.plots.intervals import paired_interval
from jtk.plots.layout import _frame, LiveFigure, fixed_digits, set_alt_text  # noqa: F401 - LiveFigure is re-exported here

# The public surface (docs/accessibility.md): each figure, its plot_* function and its *_alt text alternative. The
# small text and style helpers the figures share (agent_style, share_text, points_text, values_text, disagreement)
# are internal: they are not in __all__.
__all__ = ["PROB_CMAP", "AGENT_STYLES", "CLASS_MARKERS", "KL_LABEL", "probability_map_alt", "ProbabilityMap",
           "plot_probability_map", "environment_alt", "EnvironmentFigure", "plot_environment", "agent_alt",
           "AgentFigure", "plot_agent_predictions", "kl_tau_alt", "KLTauFigure", "plot_kl_vs_tau", "comparison_alt",
           "ComparisonFigure", "plot_ensemble_comparison", "kl_vs_num_train_alt", "kl_paired_differences",
           "kl_comparison_title", "plot_kl_vs_num_train"]

ENVIRONMENT_KEYS = ("axis", "probs", "x_train", "y_train", "temperature", "seed")  # jtk.widgets.joint.environment_update
AGENT_KEYS = ("axis", "agent", "mean", "samples", "x_train", "y_train", "num_train")  # jtk.widgets.joint.agent_update
COMPARISON_KEYS = ("axis", "true_probs", "rows", "x_train", "y_train", "temperature", "num_members")


def _curves(curves, tau) -> list[str]:
    """Checks the d_KL^τ curves (agent → [T] values, at least one agent) and τ in [1, T]; returns the agent names."""
    _checks.instance("curves", curves, Mapping, "a dict of agent name → [T] d_KL^τ values")
    if not curves:
        raise ValueError("curves must hold at least one agent")
    names = list(curves)
    t_max = len(_checks.as_float_array(f"curves[{names[0]!r}]", curves[names[0]], ndim=1, finite=False))
    _checks.integer("tau", tau, minimum=1, maximum=t_max)
    return names


PROB_CMAP = "RdBu_r"  # p(class 1): blue = class 0, red = class 1 (blue/red is safe for common colour-blindness)
AGENT_STYLES = {  # colour, line style, marker: every colour ≥ 3:1 against white, and the nine apart (ΔE ≥ 15) under
    "mlp": ("#5e5e8a", ":", "s"),  # simulated protanopia, deuteranopia and tritanopia (tests/test_plots_colors.py)
    "ensemble": ("#0072b2", "--", "o"),
    "ensemble+": ("#d55e00", "-", "^"),
    "uniform": ("#af837b", "-.", "x"),
    "dropout": ("#cc79a7", "--", "D"),
    "bbb": ("#882255", "-.", "v"),
    "hypermodel": ("#7a0ae8", "-", "P"),
    "sgmcmc": ("#332288", ":", "h"),
    "oracle": ("#000000", "-", "*"),
}
CLASS_MARKERS = ((0, "o", "white", "black"), (1, "^", "black", "white"))  # class, marker, face, edge
KL_LABEL = r"$d_{\mathrm{KL}}^{%s}$"  # d_KL^τ as mathtext: the figures show the symbol, not its TeX source


def agent_style(name: str, index: int = 0) -> tuple:
    """(colour, line style, marker) of an agent; unknown agents cycle through the agents' colours."""
    if name in AGENT_STYLES:
        return AGENT_STYLES[name]
    colors = [c for c, _, _ in AGENT_STYLES.values()]
    return colors[index % len(colors)], "-", "d"


# ------------------------------------------------------------------ text alternatives
def share_text(mask) -> str:
    """The share of True in ``mask`` as a whole percentage: "43 %"."""
    mask = np.asarray(mask, bool)
    return f"{round(100 * float(mask.mean())) if mask.size else 0} %"


def points_text(y) -> str:
    """The training points in words: "10 training points (4 of class 1, black triangles; 6 of class 0, ...)"."""
    y = np.asarray([] if y is None else y).reshape(-1)
    n, ones = len(y), int(np.sum(y == 1))
    if n == 0:
        return "no training points"
    return (f"{n} training point{'s' if n != 1 else ''} ({ones} of class 1, black triangles; {n - ones} of class 0, "
            "white circles)")


def probability_map_alt(probs, y=None) -> str:
    """What one p(y = 1 | x) map shows: where class 1 is more likely, how sharp the map is, the training points.

    Args:
      probs: [R, R] p(y = 1 | x) on the grid.
      y: labels of the training points drawn on it ([n], or None).
    """
    p = _checks.as_float_array("probs", probs, ndim=2, finite=False, dtype=np.float64)
    sure = (p < 0.1) | (p > 0.9)
    return (f"class 1 is more likely on {share_text(p > 0.5)} of the square, and P(y = 1 | x) is below 0.1 or "
            f"above 0.9 on {share_text(sure)} of it; {points_text(y)}")


def disagreement(samples) -> np.ndarray:
    """[R, R] mask: where some of the maps ``samples`` [m, R, R] favour class 1 and others class 0."""
    s = np.asarray(samples) > 0.5
    return s.any(0) & ~s.all(0)


class ProbabilityMap:
    """p(y = 1 | x) on a square grid with labelled points, as updatable artists on one axes."""

    def __init__(self, ax, axis: np.ndarray, probs: np.ndarray, x=None, y=None, title: str | None = None,
                 labels: bool = True):
        axis = _checks.as_float_array("axis", axis, ndim=1)
        if axis.size < 2:
            raise ValueError(f"axis must hold at least two grid values, got {axis.size}")
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
        self._set_alt(probs, y)

    def _set_alt(self, probs, y) -> None:
        title = self.title.get_text().replace("\n", " ")
        set_alt_text(self.ax, (f"{title}: " if title else "") + probability_map_alt(probs, y))

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
        self._set_alt(probs, y)


def plot_probability_map(ax, axis: np.ndarray, probs: np.ndarray, x=None, y=None, title: str | None = None,
                         labels: bool = True):
    """Draws p(y = 1 | x) on a square grid ([R, R], rows = x_2) with optional points x [n, 2], labels y [n].

    Returns:
      The ``AxesImage`` (for a colour bar).
    """
    return ProbabilityMap(ax, axis, probs, x, y, title, labels).image


# ------------------------------------------------------------------ environment
def environment_alt(view: Mapping) -> str:
    """Text alternative of :class:`EnvironmentFigure`: the map and the training points of one problem."""
    _checks.keyed("view", view, ENVIRONMENT_KEYS)
    return (f"Environment of temperature {view['temperature']:.3g}, seed {view['seed']}: a map of P(y = 1 | x) over "
            f"the inputs x₁, x₂, blue where class 0 is likely and red where class 1 is; "
            + probability_map_alt(view["probs"], view["y_train"]) + ".")


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
        _checks.keyed("view", view, ENVIRONMENT_KEYS)
        self.fig = Figure(figsize=figsize or (4.6, 4.0), layout="constrained")
        ax = self.fig.add_subplot()
        self.map = ProbabilityMap(ax, view["axis"], view["probs"], view["x_train"], view["y_train"],
                                  _env_title(view))
        self.fig.colorbar(self.map.image, ax=ax, label="P(y = 1 | x)", shrink=0.85)
        ax.legend(loc="lower right", fontsize=8, framealpha=0.8)
        set_alt_text(self.fig, environment_alt(view))

    def update(self, view: Mapping) -> None:
        self.map.update(view["probs"], view["x_train"], view["y_train"], _env_title(view))
        set_alt_text(self.fig, environment_alt(view))


def plot_environment(view: Mapping) -> Figure:
    """A fresh :class:`EnvironmentFigure`."""
    return EnvironmentFigure(view).fig


# ------------------------------------------------------------------ agent samples
def agent_alt(view: Mapping) -> str:
    """Text alternative of :class:`AgentFigure`: the agent's mean prediction and how much its samples disagree."""
    _checks.keyed("view", view, AGENT_KEYS)
    samples = np.asarray(view["samples"])
    n, m = view["num_train"], samples.shape[0]
    same = m > 1 and np.allclose(samples, samples[:1])
    spread = ("all of them identical, one function" if same else
              f"they disagree (some favour class 1, others class 0) on {share_text(disagreement(samples))} of "
              "the square")
    mean = np.asarray(view["mean"])
    return (f"{view['agent']} trained on {n} point{'s' if n != 1 else ''}: its mean prediction favours class 1 on "
            f"{share_text(mean > 0.5)} of the square; {m} posterior samples beside it, {spread}.")


class AgentFigure(LiveFigure):
    """An agent's mean prediction and M posterior samples (each one function over all inputs).

    Args:
      view: dict with axis, agent, mean [R, R], samples [M, R, R], x_train,
        y_train, num_train (as from :func:`jtk.widgets.joint.agent_update`).
      figsize: (width, height) in inches (default: 2.5 per panel plus the colour bar, 3.0 tall).
    """

    def __init__(self, view: Mapping, figsize: tuple[float, float] | None = None):
        _checks.keyed("view", view, AGENT_KEYS)
        m = len(_checks.as_float_array("view['samples']", view["samples"], ndim=3, finite=False))
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
        set_alt_text(self.fig, agent_alt(view))


def plot_agent_predictions(view: Mapping) -> Figure:
    """A fresh :class:`AgentFigure`."""
    return AgentFigure(view).fig


# ------------------------------------------------------------------ d_KL^τ vs τ
def kl_tau_alt(curves: Mapping[str, np.ndarray], tau: int) -> str:
    """Text alternative of :class:`KLTauFigure`: each agent's d_KL^τ at the chosen τ and at the largest τ.

    Args:
      curves: agent name → [T] d_KL^τ for τ = 1 … T.
      tau: the chosen τ.
    """
    names = _curves(curves, tau)
    t_max = len(np.asarray(curves[names[0]]))

    def at(t):
        vals = {a: float(np.asarray(curves[a], np.float64)[t - 1]) for a in names}
        best = min(vals, key=vals.get)
        listed = ", ".join(f"{a} {fixed_digits(v, 2)}" for a, v in sorted(vals.items(), key=lambda kv: kv[1]))
        return f"at τ = {t}: {listed} ({best} lowest)"

    parts = [at(int(tau))] + ([at(t_max)] if int(tau) != t_max else [])
    return (f"d_KL^τ in nats against τ from 1 to {t_max} for {', '.join(names)}, with bars for the chosen τ; "
            + "; ".join(parts) + ".")


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
        self.names = _curves(curves, tau)
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
        ax.set_ylabel(KL_LABEL % r"\tau" + " (nats)")
        self.ax_title = ax.set_title(" ")
        ax.legend(frameon=False, loc="upper left")
        colors = [agent_style(n, i)[0] for i, n in enumerate(self.names)]
        self.bars = bx.bar(self.names, np.zeros(len(self.names)), color=colors, edgecolor="black")
        for b, hatch in zip(self.bars, ["", "//", "..", "xx", "\\\\"]):
            b.set_hatch(hatch)
        self.bar_text = [bx.text(j, 0, "", ha="center", va="bottom") for j in range(len(self.names))]
        self.bx_title = bx.set_title(" ")
        bx.set_ylabel(KL_LABEL % r"\tau" + " at the chosen τ (nats)")
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
        suptitle = self.suptitle.get_text().strip()
        set_alt_text(self.fig, (f"{suptitle}. " if suptitle else "") + kl_tau_alt(curves, tau))


def plot_kl_vs_tau(curves: Mapping[str, np.ndarray], tau: int, title: str | None = None) -> Figure:
    """A fresh :class:`KLTauFigure`."""
    return KLTauFigure(curves, tau, title).fig


# ------------------------------------------------------------------ Fig. 12
def comparison_alt(view: Mapping) -> str:
    """Text alternative of :class:`ComparisonFigure`: the true model and how much each agent's members disagree."""
    _checks.keyed("view", view, COMPARISON_KEYS)
    k, n = view["num_members"], len(view["y_train"])
    rows = []
    for name, row in view["rows"].items():
        probs = np.asarray(row["samples"])  # [m, R, R]: the members shown
        rows.append(f"{name}'s {probs.shape[0]} members shown disagree on {share_text(disagreement(probs))} of the "
                    f"square and its mean favours class 1 on {share_text(np.asarray(row['mean']) > 0.5)}")
    return (f"(a) The true model at temperature {view['temperature']:g}: "
            + probability_map_alt(view["true_probs"], view["y_train"])
            + f". (b) Mean prediction and members of ensemble and ensemble+ (prior scale {view['prior_scale']:g}), "
            f"{k} member{'s' if k != 1 else ''}, {n} training point{'s' if n != 1 else ''}: " + "; ".join(rows) + ".")


class ComparisonFigure(LiveFigure):
    """Fig. 12 analogue: the true model (left); mean and sampled members of each agent (one row each).

    Args:
      view: dict from :func:`jtk.widgets.ensembles.comparison_update`
        (rows: agent → {"mean": [R, R], "samples": [m, R, R]}).
      max_samples: member panels per row (rows with fewer samples hide the rest).
    """

    def __init__(self, view: Mapping, max_samples: int = 4):
        _checks.keyed("view", view, COMPARISON_KEYS)
        _checks.integer("max_samples", max_samples, minimum=1)
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
        set_alt_text(self.fig, comparison_alt(view))


def plot_ensemble_comparison(view: Mapping) -> Figure:
    """A fresh :class:`ComparisonFigure`."""
    return ComparisonFigure(view).fig


# ------------------------------------------------------------------ Fig. 5
def values_text(chosen, every, name: str = "num_train") -> str:
    """Which of the sorted values ``every`` are ``chosen``, in words: "num_train ≤ 10", "num_train = 3 and 30"."""
    every = sorted(every)
    chosen = sorted(set(chosen))
    if not chosen:
        return "no " + name
    if chosen == every:
        return "every " + name
    k = len(chosen)
    if chosen == every[:k]:
        return f"{name} ≤ {chosen[-1]:g}"
    if chosen == every[-k:]:
        return f"{name} ≥ {chosen[0]:g}"
    words = [f"{v:g}" for v in chosen]
    return f"{name} = " + (words[0] if k == 1 else ", ".join(words[:-1]) + " and " + words[-1])


def kl_vs_num_train_alt(results: pd.DataFrame, taus: Sequence[int] | None = None) -> str:
    """Text alternative of :func:`plot_kl_vs_num_train`: which agent is lowest at which num_train, per τ.

    With two agents, the second (in the order of ``results``) against the first, in every panel: "d_KL^10 against
    num_train: ensemble+ below ensemble for num_train ≤ 10"; with more, the lowest agent at each num_train.
    """
    _frame("results", results)
    taus = sorted(results["tau"].unique()) if taus is None else list(taus)
    agents = list(dict.fromkeys(results["agent"]))
    parts = []
    for tau in taus:
        mean = results[results["tau"] == tau].groupby(["num_train", "agent"])["kl"].mean().unstack("agent")
        ns = [float(n) for n in mean.index]
        if len(agents) == 2:
            b, a = agents  # the second agent against the first, in every panel: ensemble+ against ensemble
            below = [float(n) for n, row in mean.iterrows() if row[a] < row[b]]
            parts.append(f"d_KL^{tau} against num_train: {a} below {b} for {values_text(below, ns)}")
        else:
            best = mean.idxmin(axis=1)
            groups = ", ".join(f"{a} for {values_text([float(n) for n in best.index[best == a]], ns)}"
                               for a in dict.fromkeys(best))
            parts.append(f"d_KL^{tau} against num_train: lowest {groups}")
    n_seeds = results["seed"].nunique()
    claim = kl_comparison_title(results, taus).split("\n")[1:]
    return (f"Mean d_KL^τ in nats over {n_seeds} seed{'s' if n_seeds != 1 else ''} (± 1 standard error) against "
            f"num_train from {results['num_train'].min():g} to {results['num_train'].max():g}, log scale, for "
            f"{', '.join(agents)}. " + "; ".join(parts) + "." + (f" {claim[0]}." if claim else ""))


def kl_paired_differences(results: pd.DataFrame, tau: int, level: float = 0.95) -> pd.DataFrame:
    """The second agent's d_KL^τ minus the first's, paired by seed, at each num_train, with its t-interval.

    Args:
      results: DataFrame with columns agent (two agents, the baseline first), num_train, seed, tau, kl.
      tau: which τ.
      level: confidence level of the intervals.

    Returns:
      DataFrame indexed by num_train: difference (mean over seeds), half_width, within_noise, seeds.
    """
    _checks.frame("results", results, ["agent", "num_train", "seed", "tau", "kl"])
    agents = list(dict.fromkeys(results["agent"]))
    if len(agents) != 2:
        raise ValueError(f"results must hold two agents to compare, got {agents}")
    base, other = agents
    wide = results[results["tau"] == tau].pivot_table(index=["num_train", "seed"], columns="agent", values="kl")
    rows = {}
    for n, g in wide.groupby(level="num_train"):
        g = g.dropna()
        d, half, within = paired_interval(g[other].to_numpy(), g[base].to_numpy(), level)
        rows[n] = {"difference": d, "half_width": half, "within_noise": within, "seeds": len(g)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("num_train")


def kl_comparison_title(results: pd.DataFrame, taus: Sequence[int]) -> str:
    """What a Fig. 5 title may claim: for each τ, where the second agent's paired difference is beyond noise."""
    _checks.frame("results", results, ["agent", "num_train", "seed", "tau", "kl"])
    agents = list(dict.fromkeys(results["agent"]))
    n_seeds = results["seed"].nunique()
    head = f"Mean over {n_seeds} seed{'s' if n_seeds != 1 else ''} ± 1 s.e."
    if len(agents) != 2 or n_seeds < 2:
        return head
    parts = []
    for tau in taus:
        diff = kl_paired_differences(results, tau)
        beyond = diff[~diff["within_noise"]]
        if not beyond.empty:
            sides = ", ".join(f"{'lower' if row.difference < 0 else 'higher'} at {n:g}" for n, row in beyond.iterrows())
            parts.append(f"τ = {tau}: {sides}, within noise elsewhere")
    claim = "; ".join(parts) if parts else f"within noise at every num_train and τ = {', '.join(map(str, taus))}"
    return f"{head}\n{agents[1]} − {agents[0]} (paired 95 % intervals over seeds): {claim}"


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
        ax.set_ylabel(KL_LABEL % tau + " (nats)")
        ax.set_title(f"τ = {tau}" + (" (marginal)" if tau == 1 else " (joint)"))
        ax.legend(frameon=False)
    fig.suptitle(kl_comparison_title(results, taus))
    set_alt_text(fig, kl_vs_num_train_alt(results, taus))
    return fig
