"""Figures of notebooks 04 and 05: legends beside the data, coverage intervals from the Wilson formula."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import scipy.stats  # noqa: E402

from jtk.plots import active as aplots, regression as rplots  # noqa: E402
from jtk.plots.intervals import coverage_yerr, wilson_interval  # noqa: E402

import _fakes  # noqa: E402


def _legends(fig):
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


def assert_legends_off_the_data(fig):
    fig.canvas.draw()
    legends = _legends(fig)
    assert legends, "the figure has no legend"
    for legend in legends:
        box = legend.get_window_extent()
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>" or not ax.get_visible() or not ax.axison:
                continue
            assert not box.overlaps(ax.get_window_extent()), (legend.get_texts()[0].get_text(), ax.get_title())
    plt.close(fig)


def _result(method, k=6, seed=0):
    return _fakes.coverage_result(method, k, seed)


def test_wilson_matches_scipy_vectorised_and_rejects_nonsense():
    k = np.array([2, 2, 5, 50, 400])
    covered = np.array([0, 2, 3, 47, 380])
    lo, hi = wilson_interval(covered / k, k)
    for c, kk, a, b in zip(covered, k, lo, hi):
        ci = scipy.stats.binomtest(int(c), int(kk)).proportion_ci(method="wilson")
        assert (a, b) == pytest.approx((ci.low, ci.high), abs=1e-12)
    yerr = coverage_yerr(covered / k, k)
    assert yerr.shape == (2, 5) and np.all(yerr >= 0) and np.all(yerr.sum(0) > 0)
    with pytest.raises(ValueError, match="coverage"):
        wilson_interval(1.5, 10)
    with pytest.raises(ValueError, match="k must"):
        wilson_interval(0.5, 0)


def test_regression_figures_put_legends_beside_the_data():
    results = {m: _result(m, seed=i) for i, m in enumerate(("BLR", "BD", "EnsBS"))}
    assert_legends_off_the_data(rplots.plot_coverage_profile(results))
    assert_legends_off_the_data(rplots.plot_fits(results))
    table = pd.concat([r.per_input().assign(f_main=f) for f in (0.5, 1.0) for r in results.values()])
    fig = rplots.plot_sweep(table, [1.2, -5.0])
    assert_legends_off_the_data(fig)


def test_sweep_error_bars_are_wilson_intervals():
    r = _result("BD", k=2)
    table = pd.concat([r.per_input().assign(f_main=f) for f in (0.5, 1.0)])
    fig = rplots.plot_sweep(table, [1.2])
    bars = [c for c in fig.axes[2].collections if isinstance(c, matplotlib.collections.LineCollection)]
    segments = np.concatenate([b.get_segments() for b in bars])
    heights = np.array([abs(s[1, 1] - s[0, 1]) for s in segments])
    assert np.all(heights > 0.3)  # at k = 2 no bar collapses to zero width, even where p is 0 or 1
    plt.close(fig)


def test_active_learning_figures_put_legends_beside_the_data():
    grid = np.linspace(-4, 4, 30)
    view = {"x_grid": grid, "f_grid": np.sin(grid), "x_train": grid[:3], "y_train": np.sin(grid[:3]),
            "x_test": grid[-3:], "x_query": grid[10:12], "y_query": np.sin(grid[10:12]), "mean": np.sin(grid),
            "std": np.full(30, 0.1), "criterion": "mig", "test_log_likelihood": 0.1}
    assert_legends_off_the_data(aplots.plot_toy_views({"mig": view, "tig": {**view, "criterion": "tig"}}))
    curves = pd.DataFrame({"criterion": ["mig", "mig", "tig", "tig"], "num_train": [5, 10, 5, 10],
                           "test_log_likelihood": [0.1, 0.2, 0.0, 0.05], "split": [0, 0, 0, 0]})
    ax = aplots.plot_tal_criteria(curves)
    assert_legends_off_the_data(ax.figure)


# The labs are laid out for a 1366-pixel-wide screen: a figure up to about 11.5 inches wide (at the inline backend's
# 100 dpi) is shown unscaled, so its text keeps the size it was drawn at.
MAX_WIDTH_IN = 11.5
MIN_FONT_PT = 10


def assert_readable(fig):
    """Every visible text of ``fig`` is at least 10 pt, and the figure is not scaled down in the notebook."""
    fig.canvas.draw()
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN, fig.get_size_inches()
    small = [(t.get_text(), t.get_fontsize()) for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT]
    assert not small, small
    plt.close(fig)


def test_lab_04_figures_use_10_pt_text_at_the_notebooks_width():
    methods = ("BLR", "BD", "CD", "VD", "Ens", "EnsAdvA", "EnsBS")
    results = {m: _result(m, seed=i) for i, m in enumerate(methods)}
    assert_readable(rplots.plot_fits(results))
    assert_readable(rplots.plot_coverage_profile({"BLR": results["BLR"]}))
    table = pd.concat([r.per_input().assign(f_main=f) for f in (0.5, 1.0) for r in results.values()])
    assert_readable(rplots.plot_sweep(table, [1.2, -5.0]))


def test_ppc_study_labels_do_not_collide():
    """Lab 05's labelled scatter: seven models, some nearly on top of each other (metacorrelation 0.907–0.913)."""
    per_model = pd.DataFrame({
        "pearson": [0.913, 0.910, 0.907, 0.738, 0.622, 0.398, 0.35],
        "batchmig_log_likelihood": [0.077, 0.105, 0.062, -0.012, 0.099, -0.05, 0.02],
        "xll": [-1.0, -1.01, -1.0, -1.1, -1.2, -1.4, -1.3],
        "variance_pearson": [0.914, 0.987, 0.960, 0.692, 0.919, 0.5, 0.6],
        "tig_log_likelihood": [0.05, 0.04, 0.05, 0.03, 0.0527, 0.02, 0.01]},
        index=["GP-RBF (ML-II)", "oracle, M=100", "GP-RBF l=2", "GP-RBF l=1", "oracle, M=20", "GP-RBF l=0.5",
               "oracle, M=5"])
    axes = aplots.plot_ppc_study(per_model)
    fig = axes[0].figure
    fig.canvas.draw()
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN
    for ax in axes:
        boxes = [t.get_window_extent() for t in ax.texts]
        assert len(boxes) == len(per_model)
        inside = ax.get_window_extent()
        for i, a in enumerate(boxes):
            assert inside.x0 <= a.x0 and a.x1 <= inside.x1 and inside.y0 <= a.y0 and a.y1 <= inside.y1, ax.texts[i]
            for j, b in enumerate(boxes[:i]):
                assert not a.overlaps(b), (ax.texts[i].get_text(), ax.texts[j].get_text())
    plt.close(fig)


def test_legend_and_labels_need_no_agg_canvas():
    """jtk export captures the apps' figures on matplotlib's plain FigureCanvasBase, which has no get_renderer():
    the legend beside a figure and the point labels measure their boxes with the figure's own renderer."""
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.figure import Figure

    from jtk.plots.layout import legend_beside_figure, place_labels

    fig = Figure(figsize=(6, 3))
    FigureCanvasBase(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="a long label for the legend")
    labels = place_labels(ax, np.array([0.1, 0.11, 0.5]), np.array([0.1, 0.1, 0.5]), ["aa", "bb", "cc"])
    assert [a.get_text() for a in labels] == ["aa", "bb", "cc"]
    boxes = [a.get_window_extent() for a in labels[:2]]
    assert not boxes[0].overlaps(boxes[1])  # two points 0.01 apart get labels that do not collide
    legend = legend_beside_figure(fig, *ax.get_legend_handles_labels())
    assert ax.get_position().x1 * fig.bbox.width <= legend.get_window_extent().x0 + 1  # the panel leaves it room
