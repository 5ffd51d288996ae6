"""The coverage explorer: pure update functions of the control values, and the builder."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from jtk.regression.coverage import CoverageResult  # noqa: E402
from jtk.widgets import coverage as wc  # noqa: E402


def fake_results(k=10):
    """{(f_main, method): CoverageResult} whose numbers depend on f_main, method and repetition."""
    rng = np.random.default_rng(0)
    coord = np.linspace(-6, 6, 61)
    out = {}
    for f in (1.0, 2.0, 3.0):
        truth = np.sin(f * coord)
        for j, m in enumerate(("BLR", "BD", "EnsBS")):
            mean = truth[None] + rng.normal(0, 0.1 * f * (j + 1), (k, coord.size))
            std = np.full((k, coord.size), 0.1 * (j + 1))
            out[(f, m)] = CoverageResult(m, coord, coord[:, None], truth, mean, std, np.abs(coord) <= 4,
                                         {"f_main": f}, np.linspace(-4, 4, 20)[:, None],
                                         rng.normal(size=(k, 20)))
    return out


RESULTS = fake_results()


def test_fit_panel_changes_with_f_main_method_and_x():
    a = wc.fit_panel_data(RESULTS, 1.0, "BD", 10, 1.2)
    b = wc.fit_panel_data(RESULTS, 3.0, "BD", 10, 1.2)
    assert not np.allclose(a["mean"], b["mean"]) and not np.allclose(a["truth"], b["truth"])
    c = wc.fit_panel_data(RESULTS, 1.0, "EnsBS", 10, 1.2)
    assert not np.allclose(a["upper"] - a["lower"], c["upper"] - c["lower"])
    d = wc.fit_panel_data(RESULTS, 1.0, "BD", 10, -5.0)
    assert d["x_at"] == pytest.approx(-5.0) and a["x_at"] == pytest.approx(1.2)
    assert not d["in_distribution_at"] and a["in_distribution_at"]
    np.testing.assert_allclose(a["upper"] - a["mean"], 1.96 * 0.2)


def test_k_slider_changes_coverage_data():
    a = wc.sweep_panel_data(RESULTS, "BD", 2, 1.2)
    b = wc.sweep_panel_data(RESULTS, "BD", 10, 1.2)
    assert set(a["method"]) == {"BD", "BLR"} and len(a) == 6
    assert (not np.allclose(a["coverage_hi"] - a["coverage_lo"], b["coverage_hi"] - b["coverage_lo"])
            or not np.allclose(a["coverage"], b["coverage"]))
    assert np.all(a["coverage_lo"] <= a["coverage"]) and np.all(a["coverage"] <= a["coverage_hi"])
    assert len(wc.fit_panel_data(RESULTS, 2.0, "BD", 3, 1.2)["covered_at"]) == 3
    c = wc.sweep_panel_data(RESULTS, "BD", 10, -5.5)
    assert not np.allclose(b["deviation"], c["deviation"])


def test_bad_control_values():
    with pytest.raises(ValueError, match="f_main"):
        wc.fit_panel_data(RESULTS, 7.0, "BD", 5, 0.0)
    with pytest.raises(ValueError, match="method"):
        wc.fit_panel_data(RESULTS, 1.0, "GP", 5, 0.0)
    with pytest.raises(ValueError, match="k must be >= 2"):
        wc.sweep_panel_data(RESULTS, "BD", 1, 0.0)
    with pytest.raises(ValueError, match="k must be <= 10"):
        wc.fit_panel_data(RESULTS, 1.0, "BD", 11, 0.0)
    with pytest.raises(ValueError, match="coordinate must be finite"):
        wc.fit_panel_data(RESULTS, 1.0, "BD", 5, float("nan"))
    with pytest.raises(TypeError, match="results"):
        wc.coverage_app({})


def test_builder_wires_controls(monkeypatch):
    calls = []
    monkeypatch.setattr(wc, "draw", lambda fig, results, **kw: calls.append(kw))
    app = wc.coverage_app(RESULTS)
    assert set(app.controls) == {"f_main", "method", "k", "x"}
    assert calls[-1] == {"f_main": 1.0, "method": "BD", "k": 10, "x": pytest.approx(1.2)}
    app.controls["f_main"].value = 2.0
    app.controls["k"].value = 4
    assert calls[-1]["f_main"] == 2.0 and calls[-1]["k"] == 4


def test_draw_runs():
    import matplotlib.pyplot as plt

    fig = plt.figure()
    wc.draw(fig, RESULTS, 2.0, "EnsBS", 5, -2.38)
    assert len(fig.axes) == 2 and "x = -2.40" in fig.axes[0].get_title()
    plt.close(fig)


def test_coverage_interval_is_wilson_and_never_zero_width_at_k_2():
    """2 of 2 sets covered is not "1.00 ± 0.00": the widget shows the Wilson interval, as scipy computes it."""
    import scipy.stats

    from jtk.plots.intervals import wilson_interval

    assert wc.coverage_text(2, 2) == "coverage 2/2 = 1.00, 95 % Wilson interval [0.34, 1.00]"
    for covered, k in ((0, 2), (1, 2), (2, 2), (0, 8), (3, 8), (8, 8), (47, 50), (50, 50)):
        ci = scipy.stats.binomtest(covered, k).proportion_ci(method="wilson")
        lo, hi = wilson_interval(covered / k, k)
        assert (float(lo), float(hi)) == pytest.approx((ci.low, ci.high), abs=1e-12), (covered, k)
        assert hi - lo > 0.05
    d = wc.fit_panel_data(RESULTS, 1.0, "BLR", 2, 1.2)
    assert d["coverage_lo_at"] < d["coverage_at"] or d["coverage_at"] == 0
    assert "±" not in d["coverage_text"] and "Wilson" in d["coverage_text"]
    with pytest.raises(ValueError, match="covered"):
        wc.coverage_text(3, 2)


def test_draw_keeps_legends_off_the_data_and_titles_the_interval():
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(10, 3.4))
    wc.draw(fig, RESULTS, 1.0, "BD", 2, 1.2)
    fig.canvas.draw()
    assert "Wilson interval" in fig.axes[0].get_title() and "±" not in fig.axes[0].get_title()
    assert all(ax.get_legend() is None for ax in fig.axes)  # one figure legend, beside the panels
    legend = fig.legends[0].get_window_extent()
    for ax in fig.axes:
        assert not legend.overlaps(ax.get_window_extent())
    plt.close(fig)


def test_app_is_an_app_with_readable_labels():
    app = wc.coverage_app(RESULTS)
    assert "coverage explorer" in app._repr_mimebundle_()["text/plain"]
    assert all(c.style.description_width == "initial" for c in app.controls.values())


def test_draw_legend_names_the_nominal_line_and_sits_beside_the_right_panel():
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(10, 3.4))
    wc.draw(fig, RESULTS, 1.0, "BD", 2, 1.2)
    fig.canvas.draw()
    legend = fig.legends[0]
    assert "nominal 0.95" in [t.get_text() for t in legend.get_texts()]
    gap = legend.get_window_extent().x0 - fig.axes[1].get_window_extent().x1
    assert 0 <= gap <= 20  # pixels at the figure's dpi: beside the panel, not 50 px away
    plt.close(fig)
