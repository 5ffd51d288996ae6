"""The coin notebook's library: joints, posteriors, the decision problem (exact values), and its widgets."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jtk.envs import Coin, coin
from jtk.widgets import coins as wc

PAPER = wc.paper_coins()
ETC = "try $ once, then commit"


def test_paper_coins_have_equal_marginals_and_the_printed_joint_table():
    table = wc.joint_table(2)
    assert list(table.index) == ["TT", "TH", "HT", "HH"]
    np.testing.assert_allclose(table["£"], [0.25] * 4)
    np.testing.assert_allclose(table["$"], [0.5, 0.0, 0.0, 0.5])
    assert PAPER["£"].marginal() == PAPER["$"].marginal() == 0.5
    for n in range(1, wc.MAX_FLIPS + 1):
        t = wc.joint_table(n)
        assert t.shape == (2 ** n, 2)
        np.testing.assert_allclose(t.sum(), 1.0)
        assert t["$"].iloc[0] == t["$"].iloc[-1] == 0.5  # all tails / all heads


def test_sequence_labels_follow_the_joint_array_order():
    coin = Coin((0.2, 0.9), (0.3, 0.7))
    table = wc.joint_table(3, {"c": coin})
    for seq in itertools.product((0, 1), repeat=3):
        label = "".join("H" if o else "T" for o in seq)
        assert np.isclose(table.loc[label, "c"], coin.sequence_probability(list(seq)))


@pytest.mark.parametrize("horizon", [1, 2, 3, 10, 37, 50])
def test_expected_heads_match_the_closed_forms(horizon):
    h = horizon
    assert coin.expected_cumulative_heads("marginal", h)[-1] == pytest.approx(h / 2)
    assert coin.expected_cumulative_heads(ETC, h)[-1] == pytest.approx((3 * h - 1) / 4)
    assert coin.expected_cumulative_heads("bayes-optimal", h)[-1] == pytest.approx((3 * h - 1) / 4)
    assert coin.expected_cumulative_heads("oracle", h)[-1] == pytest.approx(3 * h / 4)


def _brute_force_etc(coins, horizon):
    """Independent reference: average over the true biases and all outcome sequences of the ETC policy."""
    cs = list(coins.values())
    explore = int(np.argmax([np.dot(c.prior, (np.asarray(c.biases) - c.marginal()) ** 2) for c in cs]))
    total = 0.0
    for biases in itertools.product(*[list(zip(c.biases, c.prior)) for c in cs]):
        p_world = np.prod([w for _, w in biases])
        b = [v for v, _ in biases]
        for first in (0, 1):
            p_first = b[explore] if first else 1 - b[explore]
            post = cs[explore].posterior([first]).marginal()
            means = [c.marginal() for c in cs]
            means[explore] = post
            commit = int(np.argmax(np.round(means, 12)))
            total += p_world * p_first * (first + (horizon - 1) * b[commit])
    return total


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.05, 0.95), min_size=2, max_size=3), st.floats(0.1, 0.9), st.integers(1, 8))
def test_policies_on_random_coins_are_ordered_and_etc_matches_brute_force(biases, known, horizon):
    w = np.linspace(1.0, 2.0, len(biases))
    coins = {"known": Coin((known,), (1.0,)), "unknown": Coin(tuple(biases), tuple(w / w.sum()))}
    values = {p: coin.expected_cumulative_heads(p, horizon, coins) for p in wc.POLICIES}
    for v in values.values():
        assert v.shape == (horizon,) and np.all(np.diff(v) >= -1e-12)
    assert values["bayes-optimal"][-1] >= values[ETC][-1] - 1e-9
    assert values["bayes-optimal"][-1] >= values["marginal"][-1] - 1e-9
    assert values["oracle"][-1] >= values["bayes-optimal"][-1] - 1e-9
    assert values[ETC][-1] == pytest.approx(_brute_force_etc(coins, horizon))


def test_flip_update_posterior_after_one_flip_of_each_coin():
    view = wc.flip_update([(1, 1), (0, 0)])
    assert view["posteriors"][1] == [0.0, 1.0]
    assert view["predictive"] == [0.5, 1.0]
    np.testing.assert_allclose(view["next_two"][1], [[0, 0], [0, 1]])
    np.testing.assert_allclose(view["next_two"][0], np.full((2, 2), 0.25))
    assert view["counts"] == [(0, 1), (1, 0)] and view["total_heads"] == 1
    assert view["history_text"] == "$:H £:T"
    empty = wc.flip_update([])
    assert empty["posteriors"][1] == [0.5, 0.5] and empty["history_text"] == ""


def test_draw_flip_is_deterministic_and_respects_the_bias():
    assert [wc.draw_flip(1.0, 3, 1, k) for k in range(5)] == [1] * 5
    assert [wc.draw_flip(0.0, 3, 1, k) for k in range(5)] == [0] * 5
    assert wc.draw_flip(0.5, 7, 0, 2) == wc.draw_flip(0.5, 7, 0, 2)
    assert set(wc.hidden_biases(PAPER, seed=1)[1:]) <= {0.0, 1.0}


@pytest.mark.parametrize("call, err", [
    (lambda: wc.joint_table(0), ValueError),
    (lambda: wc.joint_table(wc.MAX_FLIPS + 1), ValueError),
    (lambda: wc.joint_table(2.0), TypeError),
    (lambda: coin.expected_cumulative_heads("greedy", 5), ValueError),
    (lambda: coin.expected_cumulative_heads("oracle", 0), ValueError),
    (lambda: wc.decision_table(wc.MAX_HORIZON + 1), ValueError),
    (lambda: wc.flip_update([(2, 1)]), ValueError),
    (lambda: wc.flip_update([(0, 3)]), ValueError),
    (lambda: wc.joint_table(2, {"x": 0.5}), TypeError),
    (lambda: wc.draw_flip(1.5, 0, 0, 0), ValueError),
])
def test_bad_inputs_raise_named_errors(call, err):
    with pytest.raises(err):
        call()


def test_update_functions_change_with_their_control():
    a, b = wc.joint_grid_update(2), wc.joint_grid_update(3)
    assert a["joints"]["$"].shape != b["joints"]["$"].shape
    t5, t10 = wc.decision_table(5), wc.decision_table(10)
    assert len(t5) != len(t10) and t10["expected_heads"].max() > t5["expected_heads"].max()


def test_joint_grid_app_redraws_on_slider_and_survives_extremes():
    app = wc.joint_grid_app(flips=2)
    first = bytes(app.image.value)
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    app.controls["flips"].value = 4
    assert bytes(app.image.value) != first
    for n in (1, wc.MAX_FLIPS):
        app.controls["flips"].value = n
        assert bytes(app.image.value)[:4] == b"\x89PNG"


def test_coin_flip_app_buttons_update_history_and_figure():
    app = wc.coin_flip_app(seed=0)
    before = bytes(app.image.value)
    app.buttons["$"].click()
    assert len(app.history) == 1 and app.history[0][0] == 1
    assert bytes(app.image.value) != before
    app.buttons["£"].click()
    assert len(app.history) == 2
    app.reveal.value = True
    app.buttons["reset"].click()
    assert app.history == [] and app.state["seed"] == 1


def test_decision_app_horizon_slider_changes_table_and_figure():
    app = wc.decision_app(horizon=10)
    img, html = bytes(app.image.value), app.table.value
    assert "7.25" in html and "5.00" in html
    app.controls["horizon"].value = 1
    assert bytes(app.image.value) != img and app.table.value != html
    app.controls["horizon"].value = app.controls["horizon"].max
    assert "25.00" in app.table.value  # marginal: H/2 at H = 50


def test_decision_totals_table_has_one_header_row():
    html = wc.decision_totals_html(wc.decision_table(10), 10)
    assert html.count("<tr") == 1 + len(wc.POLICIES)  # no second header row for the index name "policy"
    assert ">policy<" not in html and "expected heads after 10 flips" in html and "7.25" in html


def test_decision_app_redraws_one_figure_in_place_and_caches_tables():
    from jtk.plots.coins import DecisionFigure

    app = wc.decision_app(horizon=10)
    first = bytes(app.image.value)
    table = wc.decision_table(37)
    assert wc.decision_table(37) is not table and wc.decision_table(37).equals(table)  # cached, returned as a copy
    live = DecisionFigure(wc.decision_table(5), 5, layout_horizon=50)
    lines = list(live.ax.lines)
    live.update(wc.decision_table(50), 50)
    assert list(live.ax.lines) == lines and lines[0].get_xdata()[-1] == 50
    assert [b.get_width() for b in live.bars][::-1] == pytest.approx([25, 37.25, 37.25, 37.5])
    assert live.fig.get_layout_engine() is None  # the layout was sized for H = 50 once and frozen
    app.controls["horizon"].value = 1
    assert bytes(app.image.value) != first


def test_joint_grid_app_shows_a_position_seen_before_without_drawing(monkeypatch):
    app = wc.joint_grid_app(flips=2)
    app.controls["flips"].value = 3
    calls = []
    monkeypatch.setattr(wc, "joint_grid_figure", lambda *a: calls.append(a))
    app.controls["flips"].value = 2
    assert calls == [] and bytes(app.image.value)[:4] == b"\x89PNG"
