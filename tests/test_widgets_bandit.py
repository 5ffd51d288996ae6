"""The bandit explorer: cached runs, pure views of the control values, and the builder."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from jtk.widgets import bandit as wb  # noqa: E402


@pytest.fixture(scope="module")
def explorer():
    ex = wb.BanditExplorer(num_problems=2, max_horizon=500)
    ex.run_all(["uniform", "mlp"], input_dim=2)
    return ex


def test_horizon_slider_truncates_without_running(explorer):
    runs = len(explorer.results)
    short = wb.curves_view(explorer, 2, 250, 0.1)
    long = wb.curves_view(explorer, 2, 500, 0.1)
    assert len(explorer.results) == runs
    assert short.t.max() == 250 and long.t.max() == 500
    assert set(short.agent) == {"uniform", "mlp"}
    # Cumulative regret at t = 250 is the same in both views.
    a = short[short.t == 250].sort_values(["agent", "seed"]).cumulative_regret.to_numpy()
    b = long[long.t == 250].sort_values(["agent", "seed"]).cumulative_regret.to_numpy()
    np.testing.assert_allclose(a, b)


def test_pulls_count_every_step(explorer):
    v = wb.pulls_view(explorer, "mlp", 2, 300, 0.1)
    assert v["pulls"].sum() == 300 and v["pulls"].shape == (40,)
    assert v["actions"].shape == (40, 2)


def test_new_temperature_runs_new_problems(explorer):
    hot = explorer.result("uniform", 2, 0.5)
    cold = explorer.result("uniform", 2, 0.1)
    assert not np.allclose(hot.problems.probs, cold.problems.probs)
    assert wb.curves_view(explorer, 2, 500, 0.5).agent.unique().tolist() == ["uniform"]


def test_bad_controls_are_reported(explorer):
    with pytest.raises(ValueError, match="horizon"):
        wb.curves_view(explorer, 2, 10_000, 0.1)
    with pytest.raises(ValueError, match="num_problems"):
        wb.BanditExplorer(num_problems=0)


def test_app_redraws_when_the_agent_changes(explorer):
    app = wb.bandit_app(explorer, agents=["mlp", "uniform"], agent="mlp", background=False)
    before = [line.get_xdata().max() for line in app.figure.axes[0].lines]
    app.controls["horizon"].value = 250
    after = [line.get_xdata().max() for line in app.figure.axes[0].lines]
    assert before == [500, 500] and after == [250, 250]
    app.controls["agent"].value = "uniform"
    assert "uniform: pulls" in app.figure.axes[1].get_title()


def test_horizon_moves_update_the_figure_in_place(explorer):
    app = wb.bandit_app(explorer, agents=["mlp", "uniform"], agent="mlp", background=False)
    axes, lines = list(app.figure.axes), list(app.figure.axes[0].lines)
    app.controls["horizon"].value = 250
    assert app.figure.axes == axes and list(app.figure.axes[0].lines) == lines  # same artists, new data
    assert app.figure.get_layout_engine() is None  # laid out once, then frozen
    own = wb.BanditExplorer(num_problems=2, max_horizon=500)  # another d runs: keep the shared explorer as it is
    app = wb.bandit_app(own, agents=["uniform"], agent="uniform", background=False)
    app.controls["input_dim"].value = 10  # the right panel becomes a bar chart (built afresh)
    assert app.runner.errors == [] and "best action on the right" in app.figure.axes[1].get_title()


def test_app_layout_has_no_blank_band_and_readable_figure(explorer):
    import ipywidgets as widgets

    from jtk.widgets._app import png_size

    app = wb.bandit_app(explorer, agents=["mlp", "uniform"], agent="mlp", background=False)
    assert app.status.value == "" and app.status_row.layout.display == "none"  # no empty status line
    assert app.progress.layout.display == "none" and app.progress.layout.visibility is None
    first_row = app.children[0]
    assert app.controls["input_dim"] in first_row.children and app.controls["input_dim"].description == ""
    assert any(isinstance(c, widgets.Label) and c.value == "d" for c in first_row.children)  # label beside
    width, height = png_size(app.image.value)
    assert 850 <= width <= 940 and height < 420  # shown at its natural size in a 1366-px lab: 13-px text
    bx = app.figure.axes[1]
    legend = bx.get_legend()
    assert legend is not None and not legend.get_window_extent().overlaps(bx.get_window_extent())
    colorbar = [ax for ax in app.figure.axes if ax.get_label() == "<colorbar>"][0]
    assert colorbar.get_ylabel() == r"mean reward $\bar{R}_x$"



def test_regret_table_is_rounded_for_people(explorer):
    table = wb.regret_table(explorer, 2, 0.1)
    assert list(table.columns) == ["problem 0", "problem 1", "mean"] and table.index.name == "agent"
    assert set(table.index) >= {"uniform", "mlp"}
    assert all(dtype == np.float64 for dtype in table.dtypes)
    np.testing.assert_array_equal(table.to_numpy(), np.round(table.to_numpy(), 1))
    text = table.to_string()
    assert "99999" not in text and "00000" not in text  # no float32 noise such as 190.699997
    raw = explorer.result("mlp", 2, 0.1).regret.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(table.loc["mlp", ["problem 0", "problem 1"]].to_numpy(), raw, atol=0.05)
    with pytest.raises(ValueError, match="no agent has run"):
        wb.regret_table(explorer, 10, 0.1)


def test_run_times_and_status_lines(explorer):
    times = wb.run_times(explorer)
    assert {"agent", "input_dim", "temperature", "seconds"} <= set(times.columns) and (times.seconds >= 0).all()
    assert wb.expected_seconds(explorer, 2) == pytest.approx(explorer.result("mlp", 2, 0.1).seconds)
    assert wb.expected_seconds(explorer, 10) is None
    running = wb.run_status("ensemble+", 10, 0.1, elapsed=12.3, expected=None)
    assert running.startswith("<b>running ensemble+ at d = 10, ρ = 0.1 …</b> 12 s so far")
    assert "took about 20 s" in wb.run_status("mlp", 2, 0.1, elapsed=1.0, expected=20.0)
    assert wb.run_status("mlp", 2, 0.1, seconds=21.4) == "ran mlp at d = 2, ρ = 0.1 in 21 s"
    assert "failed" in wb.run_status("mlp", 2, 0.1, error="boom")


def test_a_new_run_goes_to_the_background_with_a_status_line(explorer):
    app = wb.bandit_app(explorer, agents=["mlp", "uniform"], agent="mlp")
    assert app.controls["temperature"].continuous_update is False
    assert "bandit explorer" in app._repr_mimebundle_()["text/plain"]
    before = bytes(app.image.value)
    app.controls["temperature"].value = 0.2  # mlp at ρ = 0.2 has not run: the observer returns at once
    assert app.status.value.startswith("<b>running mlp at d = 2, ρ = 0.2 …</b>")
    assert app.wait(300) and app.runner.errors == []
    assert app.status.value.startswith("ran mlp at d = 2, ρ = 0.2 in ")
    assert bytes(app.image.value) != before and app.progress.layout.display == "none"
    assert ("mlp", 2, 0.2) in explorer.results


def test_run_all_runs_side_by_side_and_equals_runs_alone(explorer, monkeypatch, busy_cpus):
    """Side by side beside 2 × the cores of busy processes: the runs alone's regret and actions, bit for bit."""
    monkeypatch.setenv("JTK_THREADS", "2")
    together = wb.BanditExplorer(num_problems=2, max_horizon=500)
    seen = {}
    map_local = wb.executors.map_local

    def spy(fn, items, **kw):
        seen.update(items=list(items), cost=kw["cost"])
        return map_local(fn, items, **kw)

    monkeypatch.setattr(wb.executors, "map_local", spy)
    together.run_all(["uniform", "mlp", "uniform"], input_dim=2, progress=False)
    # map_local starts the costliest first (tests/test_executors.py): mlp trains, uniform does not
    assert sorted(seen["items"], key=lambda a: -seen["cost"](a)) == ["mlp", "uniform"]
    assert [a for a, _, _ in together.results] == ["uniform", "mlp"]  # the order asked for, each once
    for agent in ("mlp", "uniform"):
        alone = explorer.result(agent, 2, 0.1)
        np.testing.assert_array_equal(together.result(agent, 2, 0.1).regret, alone.regret)
        np.testing.assert_array_equal(together.result(agent, 2, 0.1).actions, alone.actions)


def test_run_all_checks_every_name_before_running():
    ex = wb.BanditExplorer(num_problems=2, max_horizon=500)
    with pytest.raises(ValueError, match="agent must be one of"):
        ex.run_all(["uniform", "ensembel+"], input_dim=2, progress=False)
    assert ex.results == {}
    with pytest.raises(TypeError, match="list of agent names"):
        ex.run_all("uniform", input_dim=2)
