"""Figures of the neural bandit (§5): regret curves (Fig. 7) and regret vs d_KL^τ (Fig. 8/9, 16/17)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib import ticker

from jtk.plots.testbed import agent_style


def _new_axes(size):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size, layout="constrained")[1]


def _curves_frame(curves) -> pd.DataFrame:
    """Accepts a DataFrame of BanditResult.frame rows or a sequence of BanditResults."""
    if isinstance(curves, pd.DataFrame):
        return curves
    return pd.concat([r.frame(every=max(1, r.regret.shape[1] // 200)) for r in curves], ignore_index=True)


def plot_regret_curves(curves, ax=None, average: bool = False, title: str | None = None):
    """Cumulative (or average) regret vs t per agent, mean ± standard error over problems.

    Args:
      curves: a long DataFrame (``BanditResult.frame`` rows: agent, seed, t, cumulative_regret)
        or a list of :class:`jtk.bandit.BanditResult`.
      ax: matplotlib axes (a new figure when None).
      average: plot regret(t) / t instead of regret(t).
      title: axes title.

    Returns:
      the axes.
    """
    df = _curves_frame(curves)
    if ax is None:
        ax = _new_axes((6, 4))
    value = "average_regret" if average else "cumulative_regret"
    for i, (agent, g) in enumerate(df.groupby("agent", sort=False)):
        stats = g.groupby("t")[value].agg(["mean", "sem", "count"])
        sem = stats["sem"].fillna(0.0).to_numpy()
        color, ls, _ = agent_style(agent, i)
        ax.plot(stats.index, stats["mean"], color=color, ls=ls, label=agent)
        ax.fill_between(stats.index, stats["mean"] - sem, stats["mean"] + sem, color=color, alpha=0.2, lw=0)
    ax.set_xlabel("time step t")
    ax.set_ylabel("average regret per step" if average else "cumulative regret")
    ax.set_title(title or ("Thompson sampling on the neural bandit (mean ± s.e. over problems)"), fontsize=9)
    ax.legend(fontsize=7)
    return ax


def plot_regret_vs_kl(points: pd.DataFrame, metric: str = "kl_10", ax=None,
                      correlation: Mapping[str, float] | None = None):
    """Log-log scatter of total regret against a testbed score, one point per (agent, seed).

    Args:
      points: DataFrame with columns agent, ``metric`` and total_regret.
      metric: "kl_1" or "kl_10".
      ax: matplotlib axes (a new figure when None).
      correlation: optional ``jtk.bandit.regret_correlation`` result shown in the title.

    Returns:
      the axes.
    """
    if ax is None:
        ax = _new_axes((4.5, 4))
    for i, (agent, g) in enumerate(points.groupby("agent", sort=False)):
        color, _, marker = agent_style(agent, i)
        ax.scatter(g[metric], g["total_regret"], color=color, marker=marker, label=agent, alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    # Scores of one dimension often span less than a decade: label a few minor ticks, plainly.
    fmt = ticker.FuncFormatter(lambda v, _: f"{v:.2g}")
    ax.xaxis.set_minor_locator(ticker.LogLocator(base=10, subs=(2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(fmt)
    ax.xaxis.set_minor_formatter(fmt)
    tau = metric.split("_")[-1]
    ax.set_xlabel(f"testbed d_KL^{tau} (ρ = 0.1)")
    ax.set_ylabel("bandit total regret")
    title = f"regret vs d_KL^{tau}"
    if correlation is not None:
        title += f": r = {correlation['r']:.2f} [{correlation['lo']:.2f}, {correlation['hi']:.2f}]"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return ax


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
    sizes = 20 if pulls is None else 10 + 400 * np.asarray(pulls) / max(np.max(pulls), 1)
    sc = ax.scatter(actions[:, 0], actions[:, 1], c=probs, cmap="RdBu_r", vmin=0, vmax=1, s=sizes,
                    edgecolors="k", linewidths=0.5)
    best = int(np.argmax(probs))
    ax.scatter(*actions[best], marker="*", s=250, facecolors="none", edgecolors="gold", linewidths=1.5,
               label="best action")
    ax.figure.colorbar(sc, ax=ax, label="mean reward R̄_x")
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_title(title or "actions (size: times pulled)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return ax
