"""Figures of the neural bandit (§5): regret curves (Fig. 7) and regret vs d_KL^τ (Fig. 8/9, 16/17).

Each figure (or panel) stores a text alternative written from its data (the ``*_alt`` functions;
:func:`jtk.plots.layout.alt_text`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
from matplotlib import patheffects, ticker

from jtk import _checks
from jtk.plots.layout import _frame, LiveFigure, fixed_digits, legend_outside, set_alt_text
from jtk.plots.testbed import KL_LABEL, agent_style

REWARD_LABEL = r"mean reward $\bar{R}_x$"  # mathtext: the bar sits over the R (a plain "R̄_x" shows a literal _x)
BEST_HALO = [patheffects.withStroke(linewidth=4, foreground="white")]  # the best action's black star shows on any
# colour of the map and on the white legend (a gold star had 1.4:1 contrast there)


def _new_axes(size):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size, layout="constrained")[1]


def _curves_frame(curves) -> pd.DataFrame:
    """Accepts a DataFrame of BanditResult.frame rows or a sequence of BanditResults."""
    if isinstance(curves, pd.DataFrame):
        _checks.frame("curves", curves, ("agent", "t"))
        return curves
    what = "a DataFrame of BanditResult.frame rows or a list of jtk.testbed.bandit.BanditResult"
    curves = _checks.nonempty("curves", curves, "BanditResult")
    for i, r in enumerate(curves):
        if not (hasattr(r, "frame") and hasattr(r, "regret")):
            raise TypeError(f"curves must be {what}; curves[{i}] is {type(r).__name__}")
    return pd.concat([r.frame(every=max(1, r.regret.shape[1] // 200)) for r in curves], ignore_index=True)


def regret_stats(curves, average: bool = False) -> dict[str, pd.DataFrame]:
    """agent → DataFrame indexed by t with the mean and standard error (0 for one problem) of the regret."""
    df = _curves_frame(curves)
    value = "average_regret" if average else "cumulative_regret"
    out = {}
    for agent, g in df.groupby("agent", sort=False):
        stats = g.groupby("t")[value].agg(["mean", "sem"])
        stats["sem"] = stats["sem"].fillna(0.0)
        out[agent] = stats
    return out


def regret_curves_alt(stats: Mapping[str, pd.DataFrame], average: bool = False) -> str:
    """Text alternative of the regret curves: each agent's (mean) regret at the last step, lowest first.

    Args:
      stats: :func:`regret_stats` (agent → mean and standard error indexed by t).
      average: whether the curves are average regret per step.
    """
    _checks.instance("stats", stats, Mapping, "a dict of agent → DataFrame (regret_stats)")
    for agent, st in stats.items():
        _checks.frame(f"stats[{agent!r}]", st, ("mean",))
    what = "average regret per step" if average else "cumulative regret"
    if not stats:
        return f"{what} against time step t: no agent has run yet."
    last = {a: (int(st.index[-1]), float(st["mean"].iloc[-1])) for a, st in stats.items()}
    t_end = max(t for t, _ in last.values())
    listed = ", ".join(f"{a} {fixed_digits(v, 3)}" for a, (_, v) in sorted(last.items(), key=lambda kv: kv[1][1]))
    best = min(last, key=lambda a: last[a][1])
    return (f"{what} against time step t from 1 to {t_end}, mean ± standard error over problems, one line per agent; "
            f"at t = {t_end}: {listed} ({best} lowest).")


def plot_regret_curves(curves, ax=None, average: bool = False, title: str | None = None):
    """Cumulative (or average) regret vs t per agent, mean ± standard error over problems.

    Args:
      curves: a long DataFrame (``BanditResult.frame`` rows: agent, seed, t, cumulative_regret)
        or a list of :class:`jtk.testbed.bandit.BanditResult`.
      ax: matplotlib axes (a new figure when None).
      average: plot regret(t) / t instead of regret(t).
      title: axes title.

    Returns:
      the axes.
    """
    all_stats = regret_stats(curves, average)
    if ax is None:
        ax = _new_axes((6, 4))
    for i, (agent, stats) in enumerate(all_stats.items()):
        color, ls, _ = agent_style(agent, i)
        ax.plot(stats.index, stats["mean"], color=color, ls=ls, label=agent)
        ax.fill_between(stats.index, stats["mean"] - stats["sem"], stats["mean"] + stats["sem"], color=color,
                        alpha=0.2, lw=0)
    ax.set_xlabel("time step t")
    ax.set_ylabel("average regret per step" if average else "cumulative regret")
    ax.set_title(title or ("Thompson sampling on the neural bandit (mean ± s.e. over problems)"), fontsize=10)
    legend_outside(ax)  # beside the axes: inside, it covered curves or points
    set_alt_text(ax, f"{ax.get_title()}: {regret_curves_alt(all_stats, average)}")
    return ax


def regret_vs_kl_alt(points: pd.DataFrame, metric: str = "kl_10", correlation: Mapping[str, float] | None = None) -> str:
    """Text alternative of :func:`plot_regret_vs_kl`: the correlation and each agent's median regret and score."""
    _frame("points", points)
    tau = metric.split("_")[-1]
    med = points.groupby("agent", sort=False)[[metric, "total_regret"]].median()
    listed = "; ".join(f"{a}: d_KL^{tau} {fixed_digits(r[metric], 2)}, regret {fixed_digits(r['total_regret'], 2)}"
                       for a, r in med.sort_values("total_regret").iterrows())
    corr = (f" Correlation r = {correlation['r']:.2f} (bootstrap 5–95 % interval {correlation['lo']:.2f} to "
            f"{correlation['hi']:.2f})." if correlation is not None else "")
    return (f"Bandit total regret against testbed d_KL^{tau}, both on log scales, one point per agent and "
            f"initialisation seed ({len(points)} points).{corr} Medians, lowest regret first: {listed}.")


def plot_regret_vs_kl(points: pd.DataFrame, metric: str = "kl_10", ax=None,
                      correlation: Mapping[str, float] | None = None, scores: str = "ρ = 0.1"):
    """Log-log scatter of total regret against a testbed score, one point per (agent, seed).

    Args:
      points: DataFrame with columns agent, ``metric`` and total_regret.
      metric: "kl_1" or "kl_10".
      ax: matplotlib axes (a new figure when None).
      correlation: optional ``jtk.testbed.bandit.regret_correlation`` result shown in the title.
      scores: which testbed problems the scores come from, for the x label ("ρ = 0.1": the lab preset's
        problems at the bandit's temperature; "2-D paper grid": Figs. 8/9).

    Returns:
      the axes.
    """
    _frame("points", points)
    if ax is None:
        ax = _new_axes((4.5, 4))
    for i, (agent, g) in enumerate(points.groupby("agent", sort=False)):
        color, _, marker = agent_style(agent, i)
        ax.scatter(g[metric], g["total_regret"], color=color, marker=marker, label=agent, alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    # Scores of one dimension often span less than a decade: label a few minor ticks, plainly.
    fmt = ticker.FuncFormatter(lambda v, _: f"{v:.3g}")
    ax.xaxis.set_minor_locator(ticker.LogLocator(base=10, subs=(2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(fmt)
    ax.xaxis.set_minor_formatter(fmt)
    tau = metric.split("_")[-1]
    ax.set_xlabel(f"testbed {KL_LABEL % tau} ({scores})")
    ax.set_ylabel("bandit total regret")
    title = f"regret vs d_KL^{tau}"
    if correlation is not None:
        title += f": r = {correlation['r']:.2f} [{correlation['lo']:.2f}, {correlation['hi']:.2f}]"
    ax.set_title(title, fontsize=10)
    legend_outside(ax)  # beside the axes: inside, it covered curves or points
    set_alt_text(ax, regret_vs_kl_alt(points, metric, correlation))
    return ax


def _pull_sizes(pulls) -> np.ndarray | float:
    return 20 if pulls is None else 10 + 400 * np.asarray(pulls) / max(np.max(pulls), 1)


def _best_action_legend(ax):
    """The "best action" key below the axes (inside, it covered an action's marker)."""
    return ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False,
                     borderaxespad=0, handletextpad=0.3)


def action_map_alt(actions: np.ndarray, probs: np.ndarray, pulls: np.ndarray | None = None) -> str:
    """Text alternative of an action map: where the rewarding actions are and which ones were pulled."""
    actions = _checks.as_float_array("actions", actions, ndim=2)
    probs = _checks.as_float_array("probs", probs, ndim=1, dtype=np.float64)
    if actions.shape[1] != 2 or len(actions) != len(probs) or not len(probs):
        raise ValueError(f"actions must have shape [N, 2] and probs [N] (N ≥ 1), got {actions.shape} and {probs.shape}")
    if pulls is not None and np.shape(pulls) != probs.shape:
        raise ValueError(f"pulls must have shape {probs.shape} (one count per action) or be None, got {np.shape(pulls)}")
    best = int(np.argmax(probs))
    text = (f"{len(probs)} actions in the plane (x₁, x₂) coloured by mean reward, blue near 0 and red near 1: "
            f"{int(np.sum(probs > 0.5))} have a mean reward above 0.5; the best action, a star, is at "
            f"({actions[best, 0]:.1f}, {actions[best, 1]:.1f}) with mean reward {probs[best]:.2f}.")
    if pulls is not None:
        pulls = np.asarray(pulls)
        total = max(int(pulls.sum()), 1)
        top = int(np.argmax(pulls))
        text += (f" Marker size shows pulls ({total} in all): the best action was pulled {int(pulls[best])} times "
                 f"({100 * pulls[best] / total:.0f} %); the most pulled action has mean reward {probs[top]:.2f} "
                 f"({int(pulls[top])} pulls).")
    return text


def plot_action_map(actions: np.ndarray, probs: np.ndarray, pulls: np.ndarray | None = None, ax=None,
                    title: str | None = None):
    """The actions of one 2-D problem coloured by mean reward, sized by how often they were pulled.

    Args:
      actions: [N, 2] action inputs.
      probs: [N] mean rewards.
      pulls: optional [N] pull counts.
      ax: matplotlib axes.
      title: axes title.
    """
    actions, probs = np.asarray(actions), np.asarray(probs)
    if actions.ndim != 2 or actions.shape[1] != 2:
        raise ValueError(f"actions must have shape [N, 2] to be drawn, got {actions.shape}")
    if ax is None:
        ax = _new_axes((4.5, 4))
    sc = ax.scatter(actions[:, 0], actions[:, 1], c=probs, cmap="RdBu_r", vmin=0, vmax=1, s=_pull_sizes(pulls),
                    edgecolors="k", linewidths=0.5)
    best = int(np.argmax(probs))
    ax.scatter(*actions[best], marker="*", s=250, facecolors="none", edgecolors="black", linewidths=1.5,
               path_effects=BEST_HALO,
               label="best action")
    ax.figure.colorbar(sc, ax=ax, label=REWARD_LABEL)
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_title(title or "actions (size: times pulled)", fontsize=10)
    _best_action_legend(ax)
    set_alt_text(ax, f"{ax.get_title()}: {action_map_alt(actions, probs, pulls)}")
    return ax


def pulls_alt(agent: str, pulls: Mapping[str, np.ndarray]) -> str:
    """Text alternative of the bandit explorer's right panel: how often ``agent`` pulled the best actions."""
    _checks.instance("agent", agent, str, "an agent name (str)")
    _checks.keyed("pulls", pulls, ("actions", "probs", "pulls"))
    counts, probs = np.asarray(pulls["pulls"]), np.asarray(pulls["probs"], np.float64)
    if np.asarray(pulls["actions"]).shape[1] == 2:
        return f"{agent}'s pulls on problem 0: " + action_map_alt(pulls["actions"], probs, counts)
    order = np.argsort(probs)[::-1]
    total = max(int(counts.sum()), 1)
    top5 = int(counts[order[:5]].sum())
    return (f"{agent}'s pulls on problem 0, bars over {len(probs)} actions sorted by mean reward: the 5 best actions "
            f"got {top5} of {total} pulls ({100 * top5 / total:.0f} %), the best one {int(counts[order[0]])}.")


class BanditFigure(LiveFigure):
    """The bandit explorer's figure, redrawn in place: regret curves (left) and where one agent pulled (right).

    The right panel is the action map at d = 2 and a bar chart of pull counts (actions sorted by mean reward)
    otherwise. ``update`` changes data, limits and texts only; when the agents shown or the dimension change, the
    caller builds the figure again (:meth:`matches` says whether ``update`` suffices).

    Args:
      curves: long DataFrame of cumulative regret (``jtk.widgets.bandit.curves_view``).
      pulls: dict with actions [N, d], probs [N], pulls [N] (``jtk.widgets.bandit.pulls_view``).
      agent: the agent whose pulls are shown.
      input_dim: d.
      temperature: ρ (for the title).
      num_problems: problems the regret is averaged over (for the title).
      fig: a Figure to draw into (cleared); default a new one of ``figsize``.
      figsize: (width, height) in inches of a new figure.
    """

    def __init__(self, curves: pd.DataFrame, pulls: Mapping[str, np.ndarray], agent: str, input_dim: int,
                 temperature: float, num_problems: int, fig=None, figsize: tuple[float, float] = (9.6, 3.9)):
        from matplotlib.figure import Figure

        _checks.frame("curves", curves, ("agent",))
        _checks.keyed("pulls", pulls, ("actions", "probs", "pulls"))
        _checks.integer("input_dim", input_dim, minimum=1), _checks.integer("num_problems", num_problems, minimum=1)
        self.fig = Figure(figsize=figsize) if fig is None else fig
        self.fig.clear()
        self.fig.set_layout_engine("constrained")
        self.input_dim, self.num_problems = int(input_dim), int(num_problems)
        self.agents = list(dict.fromkeys(curves["agent"]))
        self.ax, self.bx = self.fig.subplots(1, 2, width_ratios=[1.5, 1])
        ax, bx = self.ax, self.bx
        self.curves = {}
        for i, a in enumerate(self.agents):
            color, ls, _ = agent_style(a, i)
            line, = ax.plot([], [], color=color, ls=ls, label=a)
            band = ax.fill_between([0.0, 1.0], [0.0, 0.0], [0.0, 0.0], color=color, alpha=0.2, lw=0)
            self.curves[a] = (line, band)
        ax.set_xlabel("time step t")
        ax.set_ylabel("cumulative regret")
        self.ax_title = ax.set_title(" ", fontsize=10)
        if self.agents:
            ax.legend(fontsize=8, loc="upper left")
        n = len(pulls["probs"])
        if self.input_dim == 2:
            actions = np.asarray(pulls["actions"])
            self.map = bx.scatter(actions[:, 0], actions[:, 1], c=np.asarray(pulls["probs"]), cmap="RdBu_r", vmin=0,
                                  vmax=1, s=20, edgecolors="k", linewidths=0.5)
            self.star = bx.scatter([0.0], [0.0], marker="*", s=250, facecolors="none", edgecolors="black",
                                   path_effects=BEST_HALO,
                                   linewidths=1.5, label="best action")
            self.fig.colorbar(self.map, ax=bx, label=REWARD_LABEL)
            bx.set_xlabel("x₁")
            bx.set_ylabel("x₂")
            _best_action_legend(bx)
        else:
            self.bars = bx.bar(np.arange(n), np.zeros(n), color="tab:gray")
            bx.set_xlabel("actions sorted by mean reward →")
            bx.set_ylabel("times pulled")
            bx.set_xlim(-1, n)
        self.bx_title = bx.set_title(" ", fontsize=10)
        self.update(curves, pulls, agent, temperature)

    def matches(self, curves: pd.DataFrame, input_dim: int) -> bool:
        """Whether ``update`` can show these curves at this d (same agents, same dimension)."""
        return int(input_dim) == self.input_dim and list(dict.fromkeys(curves["agent"])) == self.agents

    def update(self, curves: pd.DataFrame, pulls: Mapping[str, np.ndarray], agent: str, temperature: float) -> None:
        stats = regret_stats(curves)
        if list(stats) != self.agents:
            raise ValueError(f"curves must hold the agents {self.agents}, got {list(stats)}; build a new figure")
        hi, t_max = 1e-9, 1
        for a, st in stats.items():
            line, band = self.curves[a]
            t = st.index.to_numpy(np.float64)
            lo_, hi_ = (st["mean"] - st["sem"]).to_numpy(), (st["mean"] + st["sem"]).to_numpy()
            line.set_data(t, st["mean"].to_numpy())
            band.set_data(t, lo_, hi_)
            hi, t_max = max(hi, float(np.max(hi_))), max(t_max, int(t[-1]))
        self.ax.set_xlim(-0.02 * t_max, 1.02 * t_max)
        self.ax.set_ylim(-0.04 * hi, 1.06 * hi)
        self.ax_title.set_text(f"d = {self.input_dim}, ρ = {temperature:g}: cumulative regret, "
                               f"mean ± s.e. over {self.num_problems} problems")
        counts, probs = np.asarray(pulls["pulls"]), np.asarray(pulls["probs"])
        if self.input_dim == 2:
            actions = np.asarray(pulls["actions"])
            self.map.set_offsets(actions)
            self.map.set_array(probs)
            self.map.set_sizes(np.broadcast_to(_pull_sizes(counts), probs.shape))
            self.star.set_offsets(actions[[int(np.argmax(probs))]])
            pad = 0.08 * float(np.ptp(actions)) + 0.1
            self.bx.set_xlim(actions[:, 0].min() - pad, actions[:, 0].max() + pad)
            self.bx.set_ylim(actions[:, 1].min() - pad, actions[:, 1].max() + pad)
            self.bx_title.set_text(f"{agent}: pulls on problem 0 (size: times pulled)")
        else:
            order = np.argsort(probs)
            for bar, h in zip(self.bars, counts[order]):
                bar.set_height(h)
            self.bx.set_ylim(0, max(1, counts.max()) * 1.05)
            self.bx_title.set_text(f"{agent}: pulls on problem 0 (best action on the right)")
        set_alt_text(self.fig, f"Left: {self.ax_title.get_text()}; {regret_curves_alt(stats)} Right: "
                               + pulls_alt(agent, pulls))
