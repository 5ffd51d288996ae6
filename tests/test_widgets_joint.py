"""The joint-predictions app: environment, agents, d_KL^τ, and the builder (tiny fits, no recompiles)."""

import numpy as np
import pytest
from jax import monitoring

from jtk.envs import MLPClassification
from jtk.widgets import ensembles as we, joint as wj

TINY = we.FitSettings(num_members=3, num_steps=10, batch_size=8, capacity=16)
COMPILES: list[str] = []
monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: COMPILES.append(kw.get("fun_name", "?"))
    if event.endswith("backend_compile_duration") else None)


@pytest.fixture(scope="module")
def model():
    return wj.JointPredictions(num_train_values=(1, 3, 10), settings=TINY, resolution=12, test_blocks=2)


def test_environment_is_the_testbed_prior_and_temperature_changes_it(model):
    view = wj.environment_update(model, 0.1, 3, 10)
    assert view["probs"].shape == (12, 12) and view["x_train"].shape == (10, 2)
    env = MLPClassification(0.1, seed=3)
    gx, gy = np.meshgrid(model.axis, model.axis)
    expected = np.asarray(env.probs(np.stack([gx.ravel(), gy.ravel()], -1)))[:, 1].reshape(12, 12)
    np.testing.assert_allclose(view["probs"], expected, atol=1e-5)
    cold = wj.environment_update(model, wj.MIN_TEMPERATURE, 3, 10)  # the slider's minimum
    assert not np.allclose(cold["probs"], view["probs"])
    assert np.all(np.isfinite(cold["probs"]))
    assert not np.allclose(wj.environment_update(model, 0.1, 4, 10)["probs"], view["probs"])
    # nested training sets: the first n points
    np.testing.assert_array_equal(wj.environment_update(model, 0.1, 3, 1)["x_train"], view["x_train"][:1])


def test_agent_update_samples(model):
    mlp = wj.agent_update(model, "mlp", 0.1, 0, 3)
    assert mlp["samples"].shape == (4, 12, 12)
    assert np.allclose(mlp["samples"], mlp["samples"][:1])  # one function
    ens = wj.agent_update(model, "ensemble+", 0.1, 0, 3)
    assert not np.allclose(ens["samples"][0], ens["samples"][1])
    assert not np.allclose(ens["mean"], wj.agent_update(model, "ensemble+", 0.1, 0, 10)["mean"])


def test_kl_update_tau_extremes_and_mlp_additivity(model):
    view = wj.kl_update(model, 0.1, 0, 1, 100)  # num_train = 1, τ = 100
    assert set(view["curves"]) == set(wj.AGENTS) and view["tau"] == 100
    for curve in view["curves"].values():
        assert curve.shape == (wj.MAX_TAU,) and np.all(np.isfinite(curve))
    mlp = view["curves"]["mlp"]  # a single function predicts τ labels independently: KL^τ = τ · KL^1
    assert mlp[99] == pytest.approx(100 * mlp[0], rel=1e-6)
    assert wj.kl_table(model, 0.1, 0).shape == (3 * len(wj.AGENTS), 3)


@pytest.mark.parametrize("call, err", [
    (lambda m: wj.environment_update(m, 0.001, 0, 3), ValueError),
    (lambda m: wj.environment_update(m, 2.0, 0, 3), ValueError),
    (lambda m: wj.environment_update(m, 0.1, -1, 3), ValueError),
    (lambda m: wj.environment_update(m, 0.1, 0, 4), ValueError),
    (lambda m: wj.agent_update(m, "dropout", 0.1, 0, 3), ValueError),
    (lambda m: wj.kl_update(m, 0.1, 0, 3, 0), ValueError),
    (lambda m: wj.kl_update(m, 0.1, 0, 3, 101), ValueError),
    (lambda m: wj.environment_update("model", 0.1, 0, 3), TypeError),
])
def test_bad_control_values_raise(model, call, err):
    with pytest.raises(err):
        call(model)


def test_app_every_control_redraws_and_nothing_recompiles(model):
    app = wj.joint_predictions_app(model, temperature=0.1, seed=0, num_train=3, agent="ensemble+", tau=10)
    imgs = {k: im.value for k, im in app.images.items()}
    assert all(v[:4] == b"\x89PNG" for v in imgs.values())
    COMPILES.clear()

    def changed(name, value, which):
        before = {k: bytes(app.images[k].value) for k in which}
        app.controls[name].value = value
        return all(bytes(app.images[k].value) != before[k] for k in which)

    assert changed("tau", 100, ["kl"])
    assert changed("tau", 1, ["kl"])
    assert changed("agent", "mlp", ["agent"])
    assert changed("num_train", 1, ["environment", "agent", "kl"])
    assert changed("temperature", 0.01, ["environment", "agent", "kl"])  # a new environment: refit
    assert "fitted" in app.status.value
    assert changed("seed", 5, ["environment", "agent", "kl"])
    assert COMPILES == []  # temperature and seed are traced, shapes fixed: refits reuse the compiled code
