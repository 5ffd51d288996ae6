"""The coverage explorer of notebook 04: f_main slider, method selector, repetitions k, test input x.

The builder only wires widgets to two pure functions of the control values,
:func:`fit_panel_data` and :func:`sweep_panel_data`, which read precomputed
sweep results ({(f_main, method): CoverageResult}, from
:func:`jtk.regression.coverage.sweep_f_main`) — moving a slider never retrains.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from jtk import _checks
from jtk.regression.coverage import Z95, CoverageResult
from jtk.plots.intervals import coverage_yerr, wilson_interval
from jtk.widgets._app import LABEL_STYLE, App, figure_caption, set_caption


def _check_results(results: Mapping[tuple[Any, str], CoverageResult]):
    if not isinstance(results, Mapping) or not results:
        raise TypeError("results must be a non-empty dict {(f_main, method): CoverageResult}")
    values = sorted({key[0] for key in results})
    methods = list(dict.fromkeys(key[1] for key in results))
    return values, methods


def _pick(results, f_main, method) -> CoverageResult:
    values, methods = _check_results(results)
    _checks.one_of("method", method, methods)
    if f_main not in values:
        raise ValueError(f"f_main must be one of {values}, got {f_main!r}")
    return results[(f_main, method)]


def coverage_text(covered: int, k: int) -> str:
    """The coverage at one input in words, with its 95 % Wilson interval (never "1.00 ± 0.00").

    >>> coverage_text(2, 2)
    'coverage 2/2 = 1.00, 95 % Wilson interval [0.34, 1.00]'
    """
    covered = _checks.integer("covered", covered, minimum=0)
    k = _checks.integer("k", k, minimum=1)
    if covered > k:
        raise ValueError(f"covered must be ≤ k = {k}, got {covered}")
    lo, hi = wilson_interval(covered / k, k)
    return f"coverage {covered}/{k} = {covered / k:.2f}, 95 % Wilson interval [{float(lo):.2f}, {float(hi):.2f}]"


def fit_panel_data(results, f_main, method: str, k: int, x: float) -> dict[str, Any]:
    """Data of the left panel: first training set's fit ±1.96 σ and the coverage at x over k sets.

    Args:
      results: {(f_main, method): CoverageResult}.
      f_main: one of the swept f_main values.
      method: a method in the results.
      k: number of repetitions to use, 2 ≤ k ≤ the study's k.
      x: test input whose coverage is reported (nearest test input).

    Returns:
      dict with coordinate, mean, lower, upper, truth [n*], x_train, y_train [n],
      x_at (the nearest test input), covered_at [k] (bool per repetition),
      coverage_at, coverage_lo_at / coverage_hi_at (95 % Wilson interval: never zero-width, unlike
      p ± sqrt(p(1 − p)/k) at p = 0 or 1), coverage_text (the title's wording), deviation_at [k],
      uncertainty_at [k].
    """
    r = _pick(results, f_main, method)
    k = _checks.integer("k", k, minimum=2, maximum=r.k)
    r = r.first(k)
    i = r.index_of(x)
    order = np.argsort(r.coordinate)
    m, s = r.mean[0, order], r.std[0, order]
    cov = r.covered[:, i]
    p = float(cov.mean())
    lo, hi = (float(v) for v in wilson_interval(p, k))
    return {
        "coordinate": r.coordinate[order], "mean": m, "lower": m - Z95 * s, "upper": m + Z95 * s,
        "truth": r.truth[order], "x_train": r.x_train[:, 0] if r.x_train is not None else None,
        "y_train": r.y_train[0] if r.y_train is not None else None,
        "x_at": float(r.coordinate[i]), "in_distribution_at": bool(r.in_distribution[i]),
        "covered_at": cov, "coverage_at": p, "coverage_lo_at": lo, "coverage_hi_at": hi,
        "coverage_text": coverage_text(int(cov.sum()), k),
        "deviation_at": r.deviation[:, i], "uncertainty_at": r.std[:, i],
    }


def sweep_panel_data(results, method: str, k: int, x: float, reference: str | None = "BLR") -> pd.DataFrame:
    """Data of the right panel: coverage (95 % Wilson interval), deviation, uncertainty vs f_main at x, from k sets.

    Returns:
      DataFrame with columns method, f_main, x_at, k, coverage, coverage_lo, coverage_hi, deviation, uncertainty
      (one row per f_main, for ``method`` and, if present, the ``reference`` method).
    """
    values, methods = _check_results(results)
    _checks.one_of("method", method, methods)
    shown = [method] + ([reference] if reference in methods and reference != method else [])
    rows = []
    for m in shown:
        for f in values:
            r = results[(f, m)]
            kk = _checks.integer("k", k, minimum=2, maximum=r.k)
            r = r.first(kk)
            i = r.index_of(x)
            p = float(r.covered[:, i].mean())
            lo, hi = (float(v) for v in wilson_interval(p, kk))
            rows.append({"method": m, "f_main": f, "x_at": float(r.coordinate[i]), "k": kk, "coverage": p,
                         "coverage_lo": lo, "coverage_hi": hi,
                         "deviation": float(r.deviation[:, i].mean()), "uncertainty": float(r.std[:, i].mean())})
    return pd.DataFrame(rows)


def explorer_alt(fit: Mapping[str, Any], sweep: pd.DataFrame, f_main, method: str) -> str:
    """Text alternative of the explorer's figure (:func:`draw`), from :func:`fit_panel_data` and
    :func:`sweep_panel_data`: the fit, the coverage at x, and the coverage against f_main per method."""
    from jtk.plots.regression import band_text

    _checks.keyed("fit", fit, ("x_train", "lower", "upper", "truth", "x_at", "in_distribution_at", "coverage_text"))
    _checks.frame("sweep", sweep, ("method", "coverage", "f_main"))
    n = 0 if fit["x_train"] is None else len(fit["x_train"])
    lines = "; ".join(f"{m} " + ", ".join(f"{c:.2f}" for c in g["coverage"]) for m, g in sweep.groupby(
        "method", sort=False))
    values = ", ".join(f"{v:g}" for v in sorted(sweep["f_main"].unique()))
    return (f"Left: {method}'s prediction on training set 1 at f_main = {f_main} with a ±1.96 σ band, the ground truth "
            f"(dashed)" + (f" and {n} training points" if n else "") + f"; "
            f"{band_text(fit['lower'], fit['upper'], fit['truth'])}; at x = {fit['x_at']:.2f} "
            f"({'in' if fit['in_distribution_at'] else 'out of'} distribution): {fit['coverage_text']}. "
            f"Right: coverage at x = {fit['x_at']:.2f} against f_main = {values}, with 95 % Wilson intervals and the "
            f"nominal 0.95 dotted: {lines}.")


def draw(fig, results, f_main, method: str, k: int, x: float):
    """Redraws the two panels of the explorer on ``fig`` (cleared first); stores its text alternative."""
    from jtk.plots.layout import legend_beside_figure, set_alt_text
    from matplotlib.figure import Figure
    from jtk.plots.regression import method_style

    _checks.instance("fig", fig, Figure, "a matplotlib Figure")
    _check_results(results)
    fig.clear()
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    d = fit_panel_data(results, f_main, method, k, x)
    color, _, _ = method_style(method)
    ax1.fill_between(d["coordinate"], d["lower"], d["upper"], color=color, alpha=0.3, label="±1.96 σ")
    ax1.plot(d["coordinate"], d["mean"], color=color, label=f"{method} prediction")
    ax1.plot(d["coordinate"], d["truth"], "r--", label="ground truth")
    if d["x_train"] is not None:
        ax1.plot(d["x_train"], d["y_train"], "k.", ms=3, label="training set 1")
    ax1.axvline(d["x_at"], color="k", lw=0.8)
    # two lines each: side by side at the notebook's width, one-line titles ran into each other
    ax1.set_title(f"f_main = {f_main}, x = {d['x_at']:.2f}:\n{d['coverage_text']}", fontsize=10)
    ax1.set_xlabel("x")
    ax1.set_ylabel("y")
    s = sweep_panel_data(results, method, k, x)
    for m, g in s.groupby("method", sort=False):
        mcolor, ls, marker = method_style(m)
        ax2.errorbar(g["f_main"], g["coverage"], yerr=coverage_yerr(g["coverage"], g["k"]), marker=marker, ls=ls,
                     capsize=2, color=mcolor, label=m)
    ax2.axhline(0.95, color="k", ls=":", lw=1, label="nominal 0.95")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("f_main")
    ax2.set_ylabel("coverage of ±1.96 σ")
    ax2.set_title(f"coverage at x = {d['x_at']:.2f}\nvs f_main (95 % Wilson)", fontsize=10)
    handles, labels = ax1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    legend = legend_beside_figure(fig, handles + h2, labels + l2)
    legend.set_loc("center left")
    legend.set_bbox_to_anchor((ax2.get_position().x1 + 0.008, 0.5), transform=fig.transFigure)
    set_alt_text(fig, explorer_alt(d, s, f_main, method))


def coverage_app(results, x: float = 1.2):
    """Builds the explorer: f_main slider, method dropdown, k slider, x slider and the figure.

    Args:
      results: {(f_main, method): CoverageResult} from :func:`jtk.regression.coverage.sweep_f_main`.
      x: initial test input.

    Returns:
      an ``ipywidgets.VBox``; ``app.controls`` holds the control widgets by name and
      ``app.redraw()`` redraws (what the observers call).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    values, methods = _check_results(results)
    first = next(iter(results.values()))
    k_max = min(r.k for r in results.values())
    lo, hi = float(first.coordinate.min()), float(first.coordinate.max())
    controls = {
        "f_main": widgets.SelectionSlider(options=values, value=values[0], description="f_main", style=LABEL_STYLE,
                                          tooltip="main frequency of the true function: larger, more complex"),
        "method": widgets.Dropdown(options=methods, value=[m for m in methods if m != "BLR"][0]
                                   if len(methods) > 1 else methods[0], description="method", style=LABEL_STYLE,
                                   tooltip="the regression method shown next to the BLR anchor"),
        "k": widgets.IntSlider(value=k_max, min=2, max=k_max, description="repetitions k", style=LABEL_STYLE,
                               tooltip="training sets the coverage counts"),
        "x": widgets.FloatSlider(value=float(np.clip(x, lo, hi)), min=lo, max=hi, step=(hi - lo) / 200,
                                 description="test input x", style=LABEL_STYLE,
                                 tooltip="test input whose coverage is reported"),
    }
    out = widgets.Output()
    out.caption = figure_caption()
    with plt.ioff():
        fig = plt.figure(figsize=(10, 3.4))

    def redraw(*_):
        from jtk.plots.layout import alt_text

        draw(fig, results, **{name: c.value for name, c in controls.items()})
        set_caption(out.caption, alt_text(fig))
        out.clear_output(wait=True)
        with out:
            from IPython.display import display
            display(fig)

    for c in controls.values():
        c.observe(redraw, names="value")
    app = App([widgets.HBox(list(controls.values())[:2]), widgets.HBox(list(controls.values())[2:]), out,
               out.caption], title="coverage explorer")
    app.controls = controls
    app.redraw = redraw
    app.figure = fig
    redraw()
    return app
