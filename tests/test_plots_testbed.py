"""Figures of jtk.plots.testbed and jtk.plots.coins: titled, labelled, updatable in place, validated."""

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from jtk.plots import coins as coin_plots, testbed as tp

R = 10
AXIS = np.linspace(-3, 3, R)
GX, GY = np.meshgrid(AXIS, AXIS)


def smooth(a):
    return 1 / (1 + np.exp(-(a * GX + GY)))


def env_view(t=0.1, n=5):
    x = np.random.default_rng(n).normal(size=(n, 2))
    return {"axis": AXIS, "probs": smooth(1 / t), "x_train": x, "y_train": np.arange(n) % 2, "temperature": t,
            "seed": 0}


def comparison_view(m=4, n=5):
    x = np.random.default_rng(0).normal(size=(n, 2))
    rows = {name: {"mean": smooth(k), "samples": np.stack([smooth(k + i) for i in range(m)])}
            for k, name in ((1, "ensemble"), (-1, "ensemble+"))}
    return {"axis": AXIS, "true_probs": smooth(2), "x_train": x, "y_train": np.arange(n) % 2, "rows": rows,
            "prior_scale": 3.0, "num_members": 10, "temperature": 0.1}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _titled(fig: Figure):
    assert fig._suptitle is not None or any(ax.get_title() for ax in fig.axes)


def test_environment_figure_updates_in_place_and_renders_png():
    live = tp.EnvironmentFigure(env_view(0.1))
    first = live.png()
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert live.fig.get_layout_engine() is None  # frozen after the first render
    before = live.map.image.get_array().copy()
    live.update(env_view(1.0, n=3))
    assert not np.allclose(live.map.image.get_array(), before)
    assert sum(len(sc.get_offsets()) for sc in live.map.points) == 3
    assert live.png() != first
    _titled(live.fig)
    assert live.fig.axes[0].get_xlabel() and live.fig.axes[0].get_ylabel()


def test_probability_map_rejects_wrong_shapes():
    fig = Figure()
    with pytest.raises(ValueError, match="probs"):
        tp.plot_probability_map(fig.add_subplot(), AXIS, np.zeros((R + 1, R)))


def test_agent_figure_marks_identical_samples():
    view = {"axis": AXIS, "agent": "mlp", "mean": smooth(1), "samples": np.stack([smooth(1)] * 4),
            "x_train": np.zeros((1, 2)), "y_train": np.zeros(1, int), "num_train": 1}
    live = tp.AgentFigure(view)
    assert "identical" in live.maps[1].title.get_text()
    view = dict(view, agent="ensemble+", samples=np.stack([smooth(i) for i in range(4)]))
    live.update(view)
    assert "identical" not in live.maps[1].title.get_text()
    with pytest.raises(ValueError, match="samples"):
        live.update(dict(view, samples=np.stack([smooth(1)] * 3)))


def test_kl_tau_figure_tau_moves_the_highlight_and_the_bars():
    curves = {"mlp": np.arange(1, 101) * 0.1, "ensemble": np.arange(1, 101) * 0.09,
              "ensemble+": np.sqrt(np.arange(1, 101)) * 0.1}
    live = tp.KLTauFigure(curves, tau=1)
    bold = live.lines["mlp"][1]
    assert len(bold.get_xdata()) == 1
    live.update(curves, tau=100)
    assert len(bold.get_xdata()) == 100
    assert live.bars[0].get_height() == pytest.approx(10.0)
    assert "100" in live.bx_title.get_text()
    with pytest.raises(ValueError, match="tau"):
        live.update(curves, tau=101)
    with pytest.raises(ValueError, match="agents"):
        live.update({"mlp": curves["mlp"]}, tau=3)
    assert live.ax.get_xlabel() and live.ax.get_ylabel()
    assert tp.plot_kl_vs_tau(curves, 10).axes


def test_comparison_figure_hides_unused_member_panels():
    live = tp.ComparisonFigure(comparison_view(m=4))
    png = live.png()
    live.update(comparison_view(m=2, n=1))
    assert [pm.ax.get_visible() for pm in live.maps[0][1:]] == [True, True, False, False]
    assert live.png() != png
    assert "1 training point:" in live.suptitle.get_text()


def test_kl_vs_num_train_plot_has_one_panel_per_tau_and_validates():
    rows = [{"agent": a, "num_train": n, "seed": s, "tau": t, "kl": 0.1 * t / n + 0.01 * s}
            for a in ("ensemble", "ensemble+") for n in (1, 10) for s in range(2) for t in (1, 10)]
    fig = tp.plot_kl_vs_num_train(pd.DataFrame(rows))
    assert len(fig.axes) == 2 and all(ax.get_title() and ax.get_xlabel() for ax in fig.axes)
    with pytest.raises(ValueError, match="columns"):
        tp.plot_kl_vs_num_train(pd.DataFrame(rows).drop(columns="seed"))
    with pytest.raises(TypeError):
        tp.plot_kl_vs_num_train(rows)


def test_coin_figures_and_png_helper():
    from jtk.widgets import coins as wc

    fig = coin_plots.plot_joint_grids({"£": np.full((2, 2), 0.25), "$": np.array([[0.5, 0], [0, 0.5]])},
                                      {"£": 0.5, "$": 0.5})
    _titled(fig)
    assert coin_plots.figure_to_png(fig)[:4] == b"\x89PNG"
    with pytest.raises(TypeError):
        coin_plots.figure_to_png("not a figure")
    with pytest.raises(ValueError):
        coin_plots.joint_as_grid(np.zeros((2, 3)))
    grid, rows, cols = coin_plots.joint_as_grid(np.arange(8.0).reshape(2, 2, 2))
    assert grid.shape == (4, 2) and rows == ["TT", "TH", "HT", "HH"] and cols == ["T", "H"]
    assert isinstance(wc.decision_figure(5), matplotlib.figure.Figure)


def test_bar_labels_carry_the_same_number_of_significant_digits():
    from jtk.plots.layout import fixed_digits

    assert [fixed_digits(v) for v in (1.71, 1.8, 0.924, 12.34, 9.996, 0.0)] == ["1.71", "1.80", "0.924", "12.3",
                                                                              "10.0", "0"]
    curves = {"mlp": np.linspace(1.71, 3, 100), "ensemble": np.linspace(1.8, 3, 100),
              "ensemble+": np.linspace(0.924, 2, 100)}
    live = tp.KLTauFigure(curves, tau=1)
    assert [t.get_text() for t in live.bar_text] == ["1.71", "1.80", "0.924"]


def test_comparison_figure_fits_a_lab_cell_at_its_natural_size():
    from jtk.widgets._app import png_size

    live = tp.ComparisonFigure(comparison_view(m=4))
    width, height = png_size(live.png(dpi=80))
    assert 850 <= width <= 940 and height <= 360  # 10-point titles are 11 px tall; no band under the grid
    assert live.true_map.ax.get_position().y0 >= 0.02  # the true model spans the member rows, nothing below
    bottom_row = min(pm.ax.get_position().y0 for pm in live.maps[-1])
    assert abs(live.true_map.ax.get_position().y0 - bottom_row) < 0.12
