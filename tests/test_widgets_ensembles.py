"""ensemble vs ensemble+: jtk.testbed.ensemble_study fits, the Fig. 12 app, the Fig. 5 study (exact d_KL^τ: test_likelihood).

Fits use tiny settings (3 members, 10 steps) so the whole file runs in seconds;
the notebook's settings are exercised by executing the notebook.
"""

import jax
import numpy as np
import pandas as pd
import pytest
from jax import monitoring

from jtk.testbed import ensemble_study as es
from jtk.widgets import ensembles as we

TINY = es.FitSettings(num_members=3, num_steps=10, batch_size=8, capacity=16)
NS = (1, 3, 10)
COMPILES: list[str] = []
monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: COMPILES.append(kw.get("fun_name", "?"))
    if event.endswith("backend_compile_duration") else None)


@pytest.fixture(scope="module")
def comp():
    return es.make_ensemble_comparison(temperature=0.1, seed=0, num_train_values=NS, prior_scales=(0.0, 3.0),
                               resolution=12, settings=TINY)


def test_fit_ensembles_validates_inputs():
    x, y = np.zeros((3, 2)), np.array([0, 1, 0])
    with pytest.raises(ValueError, match="equal length"):
        es.fit_ensembles([x], [y, y], [0.1], [0.0], [0], TINY)
    with pytest.raises(ValueError, match=r"xs\[0\]"):
        es.fit_ensembles([np.zeros((20, 2))], [np.zeros(20, int)], [0.1], [0.0], [0], TINY)
    with pytest.raises(ValueError, match="temperatures"):
        es.fit_ensembles([x], [y], [0.0], [0.0], [0], TINY)
    with pytest.raises(ValueError, match="ys"):
        es.fit_ensembles([x], [np.array([0, 2, 0])], [0.1], [0.0], [0], TINY)


def test_comparison_update_reacts_to_every_slider(comp):
    base = we.comparison_update(comp, 3.0, 3, 3)
    assert base["rows"]["ensemble"]["samples"].shape == (3, 12, 12)
    assert base["x_train"].shape == (3, 2)
    other_scale = we.comparison_update(comp, 0.0, 3, 3)
    assert not np.allclose(other_scale["rows"]["ensemble+"]["mean"], base["rows"]["ensemble+"]["mean"])
    np.testing.assert_allclose(other_scale["rows"]["ensemble+"]["mean"], base["rows"]["ensemble"]["mean"])
    other_n = we.comparison_update(comp, 3.0, 3, 10)
    assert not np.allclose(other_n["rows"]["ensemble+"]["mean"], base["rows"]["ensemble+"]["mean"])
    fewer = we.comparison_update(comp, 3.0, 1, 3)
    assert fewer["rows"]["ensemble"]["samples"].shape[0] == 1
    assert not np.allclose(fewer["rows"]["ensemble"]["mean"], base["rows"]["ensemble"]["mean"])
    extreme = we.comparison_update(comp, 3.0, 1, 1)  # num_train = 1, ensemble size 1
    assert extreme["x_train"].shape == (1, 2) and np.all(np.isfinite(extreme["rows"]["ensemble+"]["mean"]))


def test_prior_functions_make_members_more_diverse(comp):
    view = we.comparison_update(comp, 3.0, 3, 1)
    spread = {name: row["samples"].std(axis=0).mean() for name, row in view["rows"].items()}
    assert spread["ensemble+"] > spread["ensemble"]


@pytest.mark.parametrize("kwargs, err", [
    ({"prior_scale": 2.0}, ValueError), ({"num_members": 4}, ValueError), ({"num_members": 0}, ValueError),
    ({"num_train": 4}, ValueError), ({"num_train": 3.0}, TypeError),
])
def test_comparison_update_rejects_values_off_the_sliders(comp, kwargs, err):
    args = {"prior_scale": 3.0, "num_members": 3, "num_train": 3, **kwargs}
    with pytest.raises(err):
        we.comparison_update(comp, **args)
    with pytest.raises(TypeError):
        we.comparison_update("comp", 3.0, 3, 3)


def test_make_ensemble_comparison_requires_the_plain_ensemble():
    with pytest.raises(ValueError, match="prior_scales"):
        es.make_ensemble_comparison(num_train_values=NS, prior_scales=(1.0, 3.0), settings=TINY)


def test_ensemble_app_sliders_redraw_without_compiling(comp):
    app = we.ensemble_app(comp)
    COMPILES.clear()
    for name, value in (("prior_scale", 0.0), ("num_members", 1), ("num_train", 1), ("num_train", 10),
                        ("num_members", 3), ("prior_scale", 3.0)):
        before = bytes(app.image.value)
        app.controls[name].value = value
        assert bytes(app.image.value) != before, (name, value)  # every move changes the picture
    assert COMPILES == []  # and none compiled anything


def test_kl_vs_num_train_reuses_the_comparison_fits(comp):
    kw = dict(temperature=0.1, num_train_values=NS, seeds=2, num_test=20, settings=TINY)
    fresh = es.kl_vs_num_train(**kw)
    reused = es.kl_vs_num_train(**kw, comparison=comp)
    assert list(fresh.columns) == ["agent", "num_train", "seed", "tau", "kl"]
    assert len(fresh) == 2 * 2 * len(NS) * 2 and np.all(np.isfinite(fresh["kl"]))
    pd.testing.assert_frame_equal(fresh, reused, rtol=1e-3, atol=1e-3)
    fig = we.kl_vs_num_train_figure(fresh)
    assert len(fig.axes) == 2


def test_kl_summary_and_wins():
    rows = [{"agent": a, "num_train": n, "seed": s, "tau": t, "kl": (0.5 if a == "ensemble" else 0.4 + 0.2 * s) * t / n}
            for a in ("ensemble", "ensemble+") for n in (1, 10) for s in (0, 1) for t in (1, 10)]
    results = pd.DataFrame(rows)
    table = we.kl_summary(results)
    assert table.loc[(1, "ensemble"), 1] == pytest.approx(0.5)
    assert table.loc[(10, "ensemble+"), 10] == pytest.approx(0.5)
    text = we.kl_summary(results, digits=2)
    assert text.loc[(1, "ensemble"), 10] == "0.050"
    wins = we.kl_wins(results, 10)
    assert wins.to_dict() == {1: 1, 10: 1} and "of 2" in wins.name
    with pytest.raises(ValueError, match="tau = 100"):
        we.kl_wins(results, 100)


def test_member_label_logprobs_match_a_numpy_log_softmax_for_shared_and_per_problem_inputs():
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(n, 2)).astype(np.float32) for n in (5, 12, 16)]
    ys = [rng.integers(0, 2, size=len(x)) for x in xs]
    state = es.fit_ensembles(xs, ys, [0.1, 0.3, 1.0], [0.0, 3.0, 1.0], [0, 1, 2], TINY)
    tx = rng.normal(size=(40, 2)).astype(np.float32)
    ty = rng.integers(0, 2, size=40)
    agent = TINY.agent()
    expected = []
    for i in range(3):
        one = jax.tree_util.tree_map(lambda a: a[i], state)
        logits = np.asarray(agent.components(one, tx), np.float64)  # [K, n, 2]
        logp = logits - np.logaddexp(logits[..., 0], logits[..., 1])[..., None]
        expected.append(logp[:, np.arange(40), ty])
    expected = np.stack(expected)
    np.testing.assert_allclose(es.member_label_logprobs(state, tx, ty, TINY), expected, rtol=1e-5, atol=1e-5)
    per_problem = es.member_label_logprobs(state, np.stack([tx] * 3), np.stack([ty] * 3), TINY)
    np.testing.assert_allclose(per_problem, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="xs"):
        es.member_label_logprobs(state, np.stack([tx] * 2), np.stack([ty] * 2), TINY)


def test_chunks_side_by_side_give_the_fits_and_scores_of_one_chunk_at_a_time(monkeypatch, request):
    """Three chunks (25 problems) in two threads beside 2 × the cores of busy processes, whatever order the threads
    finish in: bit for bit the states, probabilities and log-probabilities of one chunk at a time."""
    rng = np.random.default_rng(1)
    p = 2 * es.CHUNK + 5
    xs = [rng.normal(size=(int(n), 2)).astype(np.float32) for n in rng.integers(1, 17, size=p)]
    ys = [rng.integers(0, 2, size=len(x)) for x in xs]
    tx = rng.normal(size=(30, 2)).astype(np.float32)
    ty = rng.integers(0, 2, size=30)
    runs = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("JTK_THREADS", threads)
        if threads == "2":
            request.getfixturevalue("busy_cpus")
        state = es.fit_ensembles(xs, ys, [0.1] * p, [3.0] * p, list(range(p)), TINY)
        runs[threads] = (state, es.member_probs(state, tx, TINY), es.member_label_logprobs(state, tx, ty, TINY))
    for a, b in zip(jax.tree_util.tree_leaves(runs["1"]), jax.tree_util.tree_leaves(runs["2"])):
        assert a.shape[0] == p
        np.testing.assert_array_equal(a, b)
