"""The Fig. 2 app: pure update function and widget builder."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from jtk.ppc.active import make_toy_state, toy_view  # noqa: E402
from jtk.widgets.active import query_app  # noqa: E402


@pytest.fixture(scope="module")
def state():
    return make_toy_state(seed=0)


def test_view_changes_with_each_control(state):
    a = toy_view(state, "batchmig", 2, "oracle GP")
    b = toy_view(state, "batchmig", 6, "oracle GP")
    assert len(a["x_query"]) == 2 and len(b["x_query"]) == 6
    assert not np.allclose(a["mean"], b["mean"])
    c = toy_view(state, "tig", 6, "oracle GP")
    assert not np.allclose(np.sort(b["x_query"]), np.sort(c["x_query"]))
    d = toy_view(state, "batchmig", 6, "oracle seen through 5 samples")
    assert not np.allclose(np.sort(b["x_query"]), np.sort(d["x_query"]))
    np.testing.assert_array_equal(a["x_grid"], np.sort(a["x_grid"]))


def test_toy_tells_the_papers_story(state):
    """TIG goes to the far edge; BatchMIG's batch is more spread than MIG's and predicts the test points better."""
    tig = toy_view(state, "tig", 5, "oracle GP")
    mig = toy_view(state, "mig", 5, "oracle GP")
    bm = toy_view(state, "batchmig", 5, "oracle GP")
    assert np.mean(np.abs(tig["x_query"]) > 3) >= 0.6
    assert np.ptp(bm["x_query"]) > np.ptp(mig["x_query"])
    assert bm["test_log_likelihood"] > tig["test_log_likelihood"]


def test_builder_runs_observers(state):
    app = query_app(state)
    app.controls["batch_size"].value = 7
    app.controls["criterion"].value = "mig"
    app.controls["model"].value = "GP-RBF (ML-II)"
    assert app.controls["batch_size"].value == 7


def test_bad_control_values(state):
    with pytest.raises(ValueError, match="criterion"):
        toy_view(state, "bald", 2, "oracle GP")
    with pytest.raises(ValueError, match="model"):
        toy_view(state, "mig", 2, "nope")
    with pytest.raises(ValueError, match="batch_size"):
        toy_view(state, "mig", 0, "oracle GP")
