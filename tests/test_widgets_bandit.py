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
    app = wb.build_bandit_app(explorer, agents=["mlp", "uniform"], agent="mlp")
    before = [line.get_xdata().max() for line in app.figure.axes[0].lines]
    app.controls["horizon"].value = 250
    after = [line.get_xdata().max() for line in app.figure.axes[0].lines]
    assert before == [500, 500] and after == [250, 250]
    app.controls["agent"].value = "uniform"
    assert "uniform: pulls" in app.figure.axes[1].get_title()
