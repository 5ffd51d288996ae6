"""Figures for the deep-regression coverage study (Schmähling, Martin & Elster, Fig. 1–3, 7).

Each function draws from :class:`jtk.regression.coverage.CoverageResult` objects or the
DataFrames of :mod:`jtk.regression.coverage`, returns the matplotlib Figure, and titles
and labels every axis. Methods differ by colour, line style and marker
(:data:`METHOD_STYLES`), and each figure stores a text alternative written from
its data (the ``*_alt`` functions; :func:`jtk.plots.layout.alt_text`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jtk import _checks
from jtk.regression.coverage import Z95, CoverageResult
from jtk.plots.intervals import coverage_yerr, wilson_interval  # noqa: F401 (re-exported for plot users)
from jtk.plots.layout import _frame, legend_beside_figure, legend_outside, set_alt_text

# The public surface: each figure's plot_* function, its *_alt text alternative and the data it draws. method_style and
# band_text are the figures' (and the coverage app's) shared helpers, not in __all__.
__all__ = ["METHOD_STYLES", "METHOD_COLORS", "COVERAGE_CMAP", "fit_curves", "fit_alt", "plot_fit", "plot_fits",
           "sweep_curves", "sweep_alt", "plot_sweep", "heatmap_grids", "heatmaps_alt", "plot_heatmaps",
           "coverage_profile_alt", "plot_coverage_profile"]

METHOD_STYLES = {  # colour, line style, marker: ≥ 3:1 on white, apart under simulated colour-vision deficiencies
    "BLR": ("#d55e00", "-", "o"), "BD": ("#0072b2", "--", "s"), "CD": ("#332288", ":", "v"),
    "VD": ("#7a0ae8", "-.", "^"), "Ens": ("#af837b", "--", "D"), "EnsAdvA": ("#882255", ":", "P"),
    "EnsBS": ("#000000", "-", "X")}
METHOD_COLORS = {m: style[0] for m, style in METHOD_STYLES.items()}
COVERAGE_CMAP = "cividis"  # coverage maps: perceptually uniform and colour-blind safe (not red–green)


def method_style(method: str) -> tuple[str, str, str]:
    """(colour, line style, marker) of a regression method; others get black, solid, diamonds."""
    return METHOD_STYLES.get(method, ("#000000", "-", "d"))
def _result(name: str, value) -> CoverageResult:
    return _checks.instance(name, value, CoverageResult, "a jtk.regression.coverage.CoverageResult")


def _methods(results, methods) -> list[str]:
    """Checks ``results`` (method → CoverageResult, at least one) and ``methods`` (names among them; None: all)."""
    _checks.instance("results", results, Mapping, "a dict of method name → CoverageResult")
    if not results:
        raise ValueError("results must hold at least one method's CoverageResult, got none")
    for m, r in results.items():
        _result(f"results[{m!r}]", r)
    return list(results) if methods is None else _checks.names("methods", methods, [str(m) for m in results])


def fit_curves(result: CoverageResult, rep: int = 0) -> dict[str, np.ndarray]:
    """The data of one Fig. 1/2 panel: coordinate, prediction, ±1.96·uncertainty band, truth, training data.

    Args:
      result: a coverage result of a 1-D problem (E.1) or the diagonal of E.2.
      rep: which training set (repetition) to show.

    Returns:
      dict with arrays coordinate, mean, lower, upper, truth [n*] and x_train, y_train [n].
    """
    _result("result", result)
    rep = _checks.integer("rep", rep, minimum=0, maximum=result.k - 1)
    order = np.argsort(result.coordinate)
    m, s = result.mean[rep, order], result.std[rep, order]
    out = {"coordinate": result.coordinate[order], "mean": m, "lower": m - Z95 * s, "upper": m + Z95 * s,
           "truth": result.truth[order]}
    if result.x_train is not None and result.y_train is not None and result.x_train.shape[1] == 1:
        out["x_train"], out["y_train"] = result.x_train[:, 0], result.y_train[rep]
    return out


def band_text(lower, upper, truth, inside=None) -> str:
    """Where a ±1.96 σ band covers the truth, in words (overall, and in / out of the training range if given)."""
    covered = (np.asarray(lower) <= np.asarray(truth)) & (np.asarray(truth) <= np.asarray(upper))
    text = f"the band covers the truth at {100 * covered.mean():.0f} % of the test inputs"
    if inside is not None and np.any(inside) and np.any(~np.asarray(inside)):
        inside = np.asarray(inside, bool)
        text += (f" ({100 * covered[inside].mean():.0f} % in the training range, "
                 f"{100 * covered[~inside].mean():.0f} % outside it)")
    return text


def fit_alt(result: CoverageResult, rep: int = 0) -> str:
    """Text alternative of one :func:`plot_fit` panel: what is drawn and where the band covers the truth."""
    d = fit_curves(result, rep)
    inside = result.in_distribution[np.argsort(result.coordinate)]
    n = len(d["x_train"]) if "x_train" in d else 0
    return (f"{result.method}: prediction with a ±1.96 σ band and the ground truth (dashed) over x from "
            f"{d['coordinate'][0]:.1f} to {d['coordinate'][-1]:.1f}" + (f", {n} training points" if n else "")
            + f"; {band_text(d['lower'], d['upper'], d['truth'], inside)}.")


def plot_fit(ax, result: CoverageResult, rep: int = 0, title: str | None = None):
    """One Fig. 1/2 panel: prediction (solid), ±1.96·uncertainty (shaded), truth (red dashed), data (black)."""
    d = fit_curves(result, rep)
    color = method_style(result.method)[0]
    ax.fill_between(d["coordinate"], d["lower"], d["upper"], color=color, alpha=0.3, label="±1.96 σ")
    ax.plot(d["coordinate"], d["mean"], color=color, lw=1.5, label="prediction")
    ax.plot(d["coordinate"], d["truth"], "--", color="red", lw=1.2, label="ground truth")
    if "x_train" in d:
        ax.plot(d["x_train"], d["y_train"], "k.", ms=4, label="training data")
    lo, hi = _in_range(result)
    if lo is not None:
        ax.axvspan(lo, hi, color="0.9", zorder=-1)
    ax.set_title(title or result.method)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    set_alt_text(ax, fit_alt(result, rep))
    return ax


def _in_range(result: CoverageResult):
    c = result.coordinate[result.in_distribution]
    return (c.min(), c.max()) if c.size else (None, None)


def plot_fits(results: Mapping[str, CoverageResult], methods: Sequence[str] | None = None, rep: int = 0,
              suptitle: str | None = None):
    """Fig. 1/2 analogue: one panel per method (grey band = training range)."""
    methods = _methods(results, methods)
    for m in methods:
        _checks.integer("rep", rep, minimum=0, maximum=results[m].k - 1)
    cols = min(4, len(methods))
    rows = int(np.ceil(len(methods) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(2.75 * cols, 2.6 * rows), sharex=True, sharey=True,
                             squeeze=False)
    for ax, m in zip(axes.ravel(), methods):
        plot_fit(ax, results[m], rep)
    for ax in axes.ravel()[len(methods):]:
        ax.axis("off")
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    legend_beside_figure(fig, *axes[0, 0].get_legend_handles_labels())
    return fig


def sweep_curves(table: pd.DataFrame, coordinate: float, method: str, param: str = "f_main") -> pd.DataFrame:
    """Rows of one method at the test input nearest ``coordinate``, sorted by ``param``."""
    _frame("table", table)
    coords = np.unique(table["coordinate"].to_numpy())
    nearest = coords[np.argmin(np.abs(coords - float(coordinate)))]
    rows = table[(table["coordinate"] == nearest) & (table["method"] == method)]
    return rows.sort_values(param)


def sweep_alt(table: pd.DataFrame, coordinates: Sequence[float], param: str = "f_main",
              methods: Sequence[str] | None = None) -> str:
    """Text alternative of :func:`plot_sweep`: the coverage of each method at the smallest and largest ``param``."""
    _frame("table", table)
    methods = list(dict.fromkeys(table["method"])) if methods is None else list(methods)
    rows = []
    for c in coordinates:
        parts, region = [], ""
        for m in methods:
            d = sweep_curves(table, c, m, param)
            region = "in" if bool(d["in_distribution"].iloc[0]) else "out of"
            x_at = float(d["coordinate"].iloc[0])
            cov = d["coverage"].to_numpy()
            parts.append(f"{m} {cov[0]:.2f} to {cov[-1]:.2f}")
        lo, hi = table[param].min(), table[param].max()
        rows.append(f"at x = {x_at:.2f} ({region} distribution), coverage from {param} = {lo:g} to {hi:g}: "
                    + ", ".join(parts))
    return (f"Deviation |pred − truth| and uncertainty σ (log scales) and coverage of ±1.96 σ (95 % Wilson "
            f"intervals, nominal 0.95 dotted) against {param}, one row of panels per test input, one line per method "
            f"({', '.join(methods)}); " + "; ".join(rows) + ".")


def plot_sweep(table: pd.DataFrame, coordinates: Sequence[float], param: str = "f_main",
               methods: Sequence[str] | None = None):
    """Fig. 3 / 6 analogue: deviation, uncertainty and coverage (95 % Wilson interval) vs ``param``.

    Args:
      table: per-input table of a sweep (:func:`jtk.regression.coverage.per_input_table`; columns coverage and k).
      coordinates: test inputs, one row of panels each (e.g. −2.38, 1.2, −5.11).
      param: the swept column ("f_main" or "dim").
      methods: which methods to draw (default: all in the table).
    """
    _frame("table", table)
    methods = list(dict.fromkeys(table["method"])) if methods is None else list(methods)
    fig, axes = plt.subplots(len(coordinates), 3, figsize=(11, 2.7 * len(coordinates)), squeeze=False)
    for row, c in zip(axes, coordinates):
        for m in methods:
            d = sweep_curves(table, c, m, param)
            color, ls, marker = method_style(m)
            kw = dict(color=color, ls=ls, marker=marker, ms=4, label=m)
            row[0].plot(d[param], d["deviation"], **kw)
            row[1].plot(d[param], d["uncertainty"], **kw)
            yerr = coverage_yerr(d["coverage"], d["k"]) if "k" in d else d["coverage_se"]  # old CSVs: no k
            row[2].errorbar(d[param], d["coverage"], yerr=yerr, capsize=2, **kw)
        region = "in" if bool(d["in_distribution"].iloc[0]) else "out of"
        x_at = float(d["coordinate"].iloc[0])
        for ax, what in zip(row, ("deviation |pred − truth|", "uncertainty σ", "coverage of ±1.96 σ")):
            ax.set_title(f"x = {x_at:.2f} ({region} distribution)", fontsize=10)
            ax.set_xlabel(param)
            ax.set_ylabel(what)
        row[0].set_yscale("log")
        row[1].set_yscale("log")
        row[2].axhline(0.95, color="k", ls=":", lw=1)
        row[2].set_ylim(-0.02, 1.02)
    fig.tight_layout()
    legend_beside_figure(fig, *axes[0, 2].get_legend_handles_labels())
    set_alt_text(fig, sweep_alt(table, coordinates, param, methods))
    return fig


def heatmap_grids(table: pd.DataFrame, method: str, grid_shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Fig. 7 data of one method from a per-input table (E.3 test grid, rows ordered by ``input``).

    Returns:
      dict of [grid_shape] arrays: log10 mean deviation, log10 mean uncertainty, coverage.
    """
    _frame("table", table)
    rows = table[table["method"] == method].sort_values("input")
    if len(rows) != grid_shape[0] * grid_shape[1]:
        raise ValueError(f"table must hold {grid_shape[0] * grid_shape[1]} test inputs of method {method!r}, "
                         f"got {len(rows)}")
    dev, unc = rows["deviation"].to_numpy(), rows["uncertainty"].to_numpy()
    return {"log10 deviation": np.log10(np.maximum(dev, 1e-12)).reshape(grid_shape),
            "log10 uncertainty": np.log10(np.maximum(unc, 1e-12)).reshape(grid_shape),
            "coverage": rows["coverage"].to_numpy().reshape(grid_shape)}


def heatmaps_alt(table: pd.DataFrame, grid_shape: tuple[int, int], methods: Sequence[str] | None = None,
                 extent: tuple[float, float, float, float] = (-5, 5, -5, 5),
                 train_range: tuple[float, float] | None = (1.0, 4.0)) -> str:
    """Text alternative of :func:`plot_heatmaps`: each method's mean coverage inside and outside the training square."""
    _frame("table", table)
    methods = list(dict.fromkeys(table["method"])) if methods is None else list(methods)
    x = np.linspace(extent[0], extent[1], grid_shape[1])
    y = np.linspace(extent[2], extent[3], grid_shape[0])
    xx, yy = np.meshgrid(x, y)
    inside = ((xx >= train_range[0]) & (xx <= train_range[1]) & (yy >= train_range[0]) & (yy <= train_range[1])
              if train_range is not None else np.zeros(grid_shape, bool))
    parts = []
    for m in methods:
        g = heatmap_grids(table, m, grid_shape)
        cov = g["coverage"]
        text = f"{m}: mean coverage {cov.mean():.2f}"
        if inside.any():
            text += f" ({cov[inside].mean():.2f} inside the training square, {cov[~inside].mean():.2f} outside)"
        parts.append(text)
    box = (f", training square [{train_range[0]:g}, {train_range[1]:g}]² dashed" if train_range is not None else "")
    return (f"Heat maps over the test square [{extent[0]:g}, {extent[1]:g}]²{box}: for each method, log10 mean "
            f"deviation, log10 mean uncertainty and coverage of ±1.96 σ. " + "; ".join(parts) + ".")


def plot_heatmaps(table: pd.DataFrame, grid_shape: tuple[int, int], methods: Sequence[str] | None = None,
                  extent: tuple[float, float, float, float] = (-5, 5, -5, 5),
                  train_range: tuple[float, float] | None = (1.0, 4.0)):
    """Fig. 7 analogue (E.3): one row per method; columns deviation, uncertainty (log10) and coverage.

    Args:
      table: per-input table (``CoverageResult.per_input`` / ``jtk.regression.coverage.per_input_table``,
        or a CSV of it from ``benchmarks/results``).
      grid_shape: (rows, cols) of the test grid, ``env.grid_shape()``.
      methods: rows of the figure (default: every method in the table).
      extent: the test square, (−5, 5)².
      train_range: the training square drawn as a dashed box.
    """
    _frame("table", table)
    methods = list(dict.fromkeys(table["method"])) if methods is None else list(methods)
    fig, axes = plt.subplots(len(methods), 3, figsize=(11, 2.9 * len(methods)), squeeze=False)
    grids = {m: heatmap_grids(table, m, grid_shape) for m in methods}
    limits = {}
    for name in ("log10 deviation", "log10 uncertainty"):
        vals = np.concatenate([g[name].ravel() for g in grids.values()])
        limits[name] = (np.percentile(vals, 1), np.percentile(vals, 99))
    limits["coverage"] = (0.0, 1.0)
    for row, m in zip(axes, methods):
        for ax, (name, grid) in zip(row, grids[m].items()):
            im = ax.imshow(grid, origin="lower", extent=extent, vmin=limits[name][0], vmax=limits[name][1],
                           cmap="viridis" if name != "coverage" else COVERAGE_CMAP, aspect="auto")
            if train_range is not None:
                lo, hi = train_range
                ax.add_patch(plt.Rectangle((lo, lo), hi - lo, hi - lo, fill=False, ec="w", lw=1.2, ls="--"))
            ax.set_title(f"{m}: {name}", fontsize=10)
            ax.set_xlabel("x1")
            ax.set_ylabel("x2")
            fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    set_alt_text(fig, heatmaps_alt(table, grid_shape, methods, extent, train_range))
    return fig


def coverage_profile_alt(results: Mapping[str, CoverageResult], methods: Sequence[str] | None = None) -> str:
    """Text alternative of :func:`plot_coverage_profile`: each method's coverage range, in and out of distribution."""
    methods = _methods(results, methods)
    parts = []
    for m in methods:
        r = results[m]
        c, inside = r.coverage(), np.asarray(r.in_distribution, bool)
        text = f"{m} between {c.min():.2f} and {c.max():.2f}, mean {c.mean():.2f}"
        if inside.any() and (~inside).any():
            text += f" ({c[inside].mean():.2f} in distribution, {c[~inside].mean():.2f} out of it)"
        parts.append(text)
    return (f"Coverage of ±1.96 σ over k = {results[methods[0]].k} training sets at every test input, with 95 % "
            f"Wilson bands and the nominal 0.95 dotted: " + "; ".join(parts) + ".")


def plot_coverage_profile(results: Mapping[str, CoverageResult], methods: Sequence[str] | None = None):
    """Coverage (band: 95 % Wilson interval) at every test input, one line per method (the anchor sits at 0.95)."""
    methods = _methods(results, methods)
    fig, ax = plt.subplots(figsize=(8, 3))
    for m in methods:
        r = results[m]
        order = np.argsort(r.coordinate)
        c = r.coverage()[order]
        lo, hi = wilson_interval(c, r.k)
        color, ls, _ = method_style(m)
        ax.plot(r.coordinate[order], c, color=color, ls=ls, lw=1, label=m)
        ax.fill_between(r.coordinate[order], lo, hi, color=color, alpha=0.2,
                        label=f"{m}: 95 % Wilson interval")
    ax.axhline(0.95, color="k", ls=":", lw=1, label="nominal 0.95")
    ax.set_xlabel("test input x")
    ax.set_ylabel(f"coverage over k = {results[methods[0]].k}")
    ax.set_title("Coverage of ±1.96 σ at every test input")
    fig.tight_layout()
    legend_outside(ax)
    fig.tight_layout()
    set_alt_text(fig, coverage_profile_alt(results, methods))
    return fig
