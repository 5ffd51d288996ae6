"""Figures for transductive active learning and PPC metrics (Wang et al. 2021, Figs. 2–5).

Criteria differ by colour, marker and line style (:data:`CRITERION_STYLES`); each panel stores a text alternative
written from its data (the ``*_alt`` functions; :func:`jtk.plots.layout.alt_text`).
"""

from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats

from jtk import _checks
from jtk.plots.layout import _frame, fixed_digits, legend_outside, place_labels, set_alt_text

CRITERION_LABELS = {"batchmig": "BatchMIG", "mig": "MIG", "tig": "TIG", "random": "random"}
CRITERION_STYLES = {  # colour, line style, marker: ≥ 3:1 on white, apart under simulated colour-vision deficiencies
    "batchmig": ("#d55e00", "-", "o"), "mig": ("#0072b2", "--", "s"), "tig": ("#7a0ae8", "-.", "^"),
    "random": ("#5e5e8a", ":", "x")}
CRITERION_COLORS = {k: v[0] for k, v in CRITERION_STYLES.items()}


def _ax(ax):
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    return ax


TOY_VIEW_KEYS = ("x_grid", "f_grid", "x_train", "y_train", "x_test", "x_query", "y_query", "mean", "std", "criterion",
                 "test_log_likelihood")  # what jtk.ppc.active.toy_view returns and the toy panels draw


def _xs(values) -> str:
    return ", ".join(f"{v:.1f}" for v in np.sort(np.asarray(values, np.float64).reshape(-1)))


def toy_view_alt(view: Mapping) -> str:
    """Text alternative of :func:`plot_toy_view`: where the criterion queried and how well it then predicts."""
    _checks.keyed("view", view, TOY_VIEW_KEYS)
    label = CRITERION_LABELS.get(view["criterion"], view["criterion"])
    x = np.asarray(view["x_grid"])
    return (f"{label}: ground truth f and the prediction after the query (±2 standard deviations shaded) over x from "
            f"{x.min():.1f} to {x.max():.1f}; {len(view['x_train'])} training points; queried x = "
            f"{_xs(view['x_query'])}; test locations x = {_xs(view['x_test'])}; test log-likelihood after the query "
            f"{view['test_log_likelihood']:.3f}.")


def plot_toy_view(view: Mapping, ax=None, title: str | None = None):
    """Fig. 2: ground truth, train / test / queried points and the prediction after the query.

    Args:
      view: output of :func:`jtk.ppc.active.toy_view` (keys x_grid, f_grid, x_train, y_train,
        x_test, x_query, y_query, mean, std, criterion, test_log_likelihood).
      ax: matplotlib axes (a new figure when None).
      title: axes title (default: criterion and test log-likelihood).

    Returns:
      the axes.
    """
    _checks.keyed("view", view, TOY_VIEW_KEYS)
    ax = _ax(ax)
    ax.plot(view["x_grid"], view["f_grid"], color="tab:blue", lw=1.5, label="ground truth f")
    ax.plot(view["x_grid"], view["mean"], "--", color="tab:red", lw=1.5, label="prediction after query")
    ax.fill_between(view["x_grid"], view["mean"] - 2 * view["std"], view["mean"] + 2 * view["std"],
                    color="tab:red", alpha=0.15, lw=0)
    ax.scatter(view["x_train"], view["y_train"], color="black", s=18, zorder=3, label="training points")
    ax.scatter(view["x_query"], view["y_query"], color="tab:green", s=40, marker="D", zorder=4,
               label="queried points")
    top = np.nanmax(np.concatenate([view["f_grid"], view["mean"] + 2 * view["std"]]))
    ax.scatter(view["x_test"], np.full(len(view["x_test"]), top + 0.3), color="tab:orange", marker="v", s=25,
               label="test locations")
    label = CRITERION_LABELS.get(view["criterion"], view["criterion"])
    ax.set_title(title or f"{label}: test log-lik. {view['test_log_likelihood']:.3f}")
    ax.set_xlabel("x")
    ax.set_ylabel("f(x), y")
    set_alt_text(ax, toy_view_alt(view))
    return ax


def plot_toy_views(views: Mapping[str, Mapping], figsize: tuple[float, float] = (15, 3.6)):
    """Fig. 2 side by side: one :func:`plot_toy_view` panel per view (shared y axis), one legend right of them.

    Args:
      views: title or criterion → output of :func:`jtk.ppc.active.toy_view`.

    Returns:
      the figure.
    """
    _checks.instance("views", views, Mapping, "a dict of title → toy view")
    if not views:
        raise ValueError("views must hold at least one toy view")
    for title, view in views.items():
        _checks.keyed(f"views[{title!r}]", view, TOY_VIEW_KEYS)
    fig, axes = plt.subplots(1, len(views), figsize=figsize, sharey=True, squeeze=False)
    for ax, view in zip(axes[0], views.values()):
        plot_toy_view(view, ax)
    fig.tight_layout(rect=(0, 0, 0.89, 1))
    legend_outside(fig, *axes[0, 0].get_legend_handles_labels(), fontsize=8)
    return fig


def tal_criteria_alt(df: pd.DataFrame, value: str = "test_log_likelihood") -> str:
    """Text alternative of :func:`plot_tal_criteria`: each criterion's mean at the largest training set, best first."""
    _frame("df", df)
    what = "mean test log-likelihood" if value == "test_log_likelihood" else value
    last = df["num_train"].max()
    means = df[df["num_train"] == last].groupby("criterion", sort=False)[value].mean().sort_values(ascending=False)
    listed = ", ".join(f"{CRITERION_LABELS.get(c, c)} {fixed_digits(v, 3)}" for c, v in means.items())
    return (f"{what} (± standard error) against the number of training points, from {df['num_train'].min():g} to "
            f"{last:g}, one line per criterion; at {last:g} points, best first: {listed}.")


def plot_tal_criteria(df: pd.DataFrame, ax=None, value: str = "test_log_likelihood"):
    """Fig. 3: mean ± stderr of the test log-likelihood against the training-set size, one line a criterion.

    Args:
      df: long table from :func:`jtk.ppc.active.tal_comparison` (columns criterion, num_train, ``value``, split).
      ax: axes (new figure when None).

    Returns:
      the axes.
    """
    _frame("df", df)
    ax = _ax(ax)
    for crit, g in df.groupby("criterion", sort=False):
        s = g.groupby("num_train")[value].agg(["mean", "std", "count"])
        err = s["std"].fillna(0) / np.sqrt(s["count"])
        color, ls, marker = CRITERION_STYLES.get(crit, ("black", "-", "d"))
        ax.errorbar(s.index, s["mean"], yerr=err, marker=marker, ls=ls, ms=5, capsize=3,
                    color=color, label=CRITERION_LABELS.get(crit, crit))
    ax.set_xlabel("number of training points")
    ax.set_ylabel("mean test log-likelihood" if value == "test_log_likelihood" else value)
    ax.set_title("TAL with the oracle's covariances")
    legend_outside(ax, fontsize=8)
    set_alt_text(ax, f"{ax.get_title()}: {tal_criteria_alt(df, value)}")
    return ax


def ppc_panel_alt(per_model: pd.DataFrame, x: str, y: str, x_label: str, y_label: str, r: float) -> str:
    """Text alternative of one :func:`plot_ppc_study` panel: the correlation and the best model on each axis."""
    _frame("per_model", per_model)
    best_y = per_model[y].idxmax()
    best_x = per_model[x].idxmax()
    return (f"{y_label} against {x_label}, one labelled point per model ({len(per_model)} models): Pearson r = "
            f"{r:.3f}; highest {y_label}: {best_y} ({fixed_digits(per_model.loc[best_y, y], 3)}); highest "
            f"{x_label}: {best_x} ({fixed_digits(per_model.loc[best_x, x], 3)}).")


def plot_ppc_study(per_model: pd.DataFrame, axes=None):
    """Figs. 4 and 5: metacorrelation vs BatchMIG performance, and XLL vs metacorrelation.

    Args:
      per_model: one row per model (index = model name) with columns pearson,
        batchmig_log_likelihood, xll (and optionally variance_pearson, tig_log_likelihood).
      axes: two or three axes (a new figure when None).

    Returns:
      the axes.
    """
    _frame("per_model", per_model)
    with_tig = {"variance_pearson", "tig_log_likelihood"} <= set(per_model.columns)
    if axes is None:
        _, axes = plt.subplots(1, 3 if with_tig else 2, figsize=(11 if with_tig else 8, 4.2))
    panels = [("pearson", "batchmig_log_likelihood", "metacorrelation (PPCs)", "BatchMIG test log-lik."),
              ("pearson", "xll", "metacorrelation (PPCs)", "XLL (mean over references)")]
    if with_tig:
        panels.insert(0, ("variance_pearson", "tig_log_likelihood", "metacorrelation (variances)",
                          "TIG test log-lik."))
    for ax, (xc, yc, xl, yl) in zip(np.ravel(axes), panels):
        x, y = per_model[xc].to_numpy(), per_model[yc].to_numpy()
        ax.scatter(x, y, color="tab:red" if yc != "tig_log_likelihood" else "tab:purple")
        ok = np.isfinite(x) & np.isfinite(y)
        r = scipy.stats.pearsonr(x[ok], y[ok])[0] if ok.sum() > 2 else np.nan
        ax.set_title(f"Pearson r = {r:.3f}")
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.margins(0.25)  # room for the labels inside the axes
        set_alt_text(ax, ppc_panel_alt(per_model, xc, yc, xl, yl, r))
    plt.tight_layout()
    for ax, (xc, yc, *_) in zip(np.ravel(axes), panels):  # after the layout: labels placed where they will be drawn
        place_labels(ax, per_model[xc].to_numpy(), per_model[yc].to_numpy(), list(per_model.index), fontsize=9)
    return axes
