"""The joint-predictions app: environment, agents, d_KL^τ, and the builder (tiny fits, no recompiles)."""

import numpy as np
import pytest
from jax import monitoring

from jtk.testbed import ensemble_study as es
from jtk.envs import MLPClassification
from jtk.widgets import joint as wj

TINY = es.FitSettings(num_members=3, num_steps=10, batch_size=8, capacity=16)
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
    # the lab's environment of seed 3 is MLPClassification(ρ, seed=3) (jtk.envs.classification.lab_keys)
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
    app = wj.joint_predictions_app(model, temperature=0.1, seed=0, num_train=3, agent="ensemble+", tau=10,
                                   background=False)
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
    assert app.status.value.startswith("fitting 3 agents for ρ = 0.01, seed 0 … done in ")
    assert changed("seed", 5, ["environment", "agent", "kl"])
    assert COMPILES == []  # temperature and seed are traced, shapes fixed: refits reuse the compiled code


def test_fit_status_says_what_is_fitted_and_how_long_it_took():
    assert wj.fit_status(0.3, 2).startswith("<b>fitting 3 agents for ρ = 0.3, seed 2 …</b>")
    assert wj.fit_status(0.3, 2, seconds=4.06) == "fitting 3 agents for ρ = 0.3, seed 2 … done in 4.1 s"
    assert "cached" in wj.fit_status(0.3, 2, cached=True)
    assert "failed" in wj.fit_status(0.3, 2, error="boom <x>") and "&lt;x&gt;" in wj.fit_status(0.3, 2, error="<x>")


def test_background_refit_keeps_only_the_newest_of_a_burst_of_steps(model):
    """Arrow-key steps each set a value: the app fits the last one, not every one, and the kernel is not blocked."""
    app = wj.joint_predictions_app(model, temperature=0.1, seed=0, num_train=3, tau=10)
    assert app.wait(120)
    env_before = bytes(app.images["environment"].value)
    # Holding the model's fit lock keeps any fit of the burst from finishing while the steps are made, whatever the
    # machine's load (on a busy machine a step's redraw can outlast the runner's delay, and a job that started
    # then would otherwise finish before the next step): the test does not depend on timing.
    with model._fit_lock:
        for t in (0.2, 0.25, 0.3, 0.35):  # a burst: each move returns at once
            app.controls["temperature"].value = t
            assert f"fitting 3 agents for ρ = {t}" in app.status.value
    assert bytes(app.images["environment"].value) != env_before  # the map redrew at once
    assert app.wait(120)
    assert app.runner.errors == [] and app.runner.jobs_run <= 2
    # the job that started first (after its short delay) and the newest value: at most two of the four are fitted
    assert model.is_fitted(0.35, 0) and sum(model.is_fitted(t, 0) for t in (0.2, 0.25, 0.3, 0.35)) <= 2
    assert "0.35" in app.status.value and "done in" in app.status.value
    kl_before = bytes(app.images["kl"].value)
    app.controls["tau"].value = 50
    assert bytes(app.images["kl"].value) != kl_before


def test_a_failing_fit_is_shown_not_swallowed(model, monkeypatch):
    app = wj.joint_predictions_app(model, temperature=0.1, seed=0, num_train=3, background=False)

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(model, "fits", broken)
    monkeypatch.setattr(model, "is_fitted", lambda *a: False)
    app.controls["seed"].value = 9
    assert "failed" in app.status.value and "out of memory" in app.status.value


def test_kl_table_for_prose_is_rounded_for_people(model):
    table = wj.kl_table(model, 0.1, 0, taus=(1, 100), digits=2)
    floats = wj.kl_table(model, 0.1, 0, taus=(1, 100))
    assert table.shape == floats.shape
    for text, value in zip(table.to_numpy().ravel(), floats.to_numpy().ravel()):
        assert float(text) == pytest.approx(value, rel=0.05)
        assert len(text.replace("0.", "").replace(".", "").strip("0")) <= 2  # "110" has 2 significant digits


def test_app_images_keep_their_size_and_the_app_names_itself(model):
    from jtk.widgets._app import png_size

    app = wj.joint_predictions_app(model, temperature=0.1, seed=0, num_train=3, background=False)
    for image in app.images.values():  # an <img> in a flex column would otherwise stretch to the cell width
        assert image.layout.width == f"{png_size(image.value)[0]}px"
    width, height = png_size(app.images["environment"].value)
    assert width < 300 and height < 250  # the map and the slider above it fit a 768-px-high screen
    text = app._repr_mimebundle_()["text/plain"]
    assert "VBox" not in text and "joint-predictions app" in text
    assert app.controls["temperature"].continuous_update is False
    assert all(c.style.description_width == "initial" for c in app.controls.values())
    import ipywidgets as widgets

    row = next(c for c in app.children if isinstance(c, widgets.HBox) and app.controls["agent"] in c.children)
    assert [type(c).__name__ for c in row.children] == ["Label", "ToggleButtons"]  # label and buttons: one row
    assert row.children[0].value == "agent" and app.controls["agent"].description == ""
