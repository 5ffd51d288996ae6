"""Deep regression methods (BD, CD, VD, Ens, EnsAdvA, EnsBS): one shared, vmapped training program.

A tiny configuration keeps the suite fast: every study below has the same data
shapes and networks per call, so all six methods share one compiled program.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jtk.regression import deep as dr
from jtk.regression.base import RegressionPosterior
from jtk.envs.regression import SinusoidRegression

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics

TINY = dict(hidden=(8,), num_members=2, epochs_per_complexity=40, num_samples=8, learning_rate=3e-2)
K_SETS = 4  # training sets per study; networks per call = 4 for every method


@pytest.fixture(scope="module")
def env():
    return SinusoidRegression(1.0, seed=0)


@pytest.fixture(scope="module")
def linear_study(env):
    """All six methods on 4 training sets of y = 0.5 x + noise (a function an MLP can learn)."""
    x = env.x_train
    rng = np.random.default_rng(0)
    ys = 0.5 * x[:, 0][None] + 0.1 * rng.normal(size=(K_SETS, x.shape[0]))
    xt = np.linspace(-3, 3, 25)[:, None]
    out = {}
    for m in dr.METHODS:
        model = dr.make_regression(m, preset="paper", **TINY, noise_std=0.1)
        out[m] = model.fit_predict_many(x, ys, xt, seed=0, networks_per_call=K_SETS)
    return xt, out


def test_presets_are_the_papers():
    p = dr.make_regression("Ens", preset="paper")
    assert p.hidden == (128, 64, 32) and p.num_members == 120 and p.learning_rate == 1e-2
    assert p.l2_scale == 1.0 and p.negative_slope == 0.01 and p.epochs_per_complexity == 300
    env = SinusoidRegression(3.0)
    assert p.for_problem(env).num_epochs == 900 and p.for_problem(env).noise_std == 0.75
    lab = dr.make_regression("BD", preset="lab")
    assert lab.num_networks == 1 and lab.num_draws == lab.num_samples
    assert dr.EnsBS().method == "EnsBS" and dr.CD(preset="lab").hidden == lab.hidden


def test_all_methods_learn_a_linear_function(linear_study):
    xt, out = linear_study
    truth = 0.5 * xt[:, 0]
    for m, (mean, std) in out.items():
        assert mean.shape == (K_SETS, 25) and std.shape == (K_SETS, 25)
        assert np.all(np.isfinite(mean)) and np.all(std > 0), m
        assert np.mean(np.abs(mean - truth)) < 0.3, (m, np.mean(np.abs(mean - truth)))


def test_methods_differ_and_bootstrap_widens(linear_study):
    _, out = linear_study
    assert not np.allclose(out["Ens"][0], out["EnsBS"][0])
    assert not np.allclose(out["Ens"][0], out["EnsAdvA"][0])
    assert not np.allclose(out["BD"][0], out["CD"][0])


def test_deterministic_and_independent_of_chunking(env, linear_study):
    xt, out = linear_study
    x = env.x_train
    rng = np.random.default_rng(0)
    ys = 0.5 * x[:, 0][None] + 0.1 * rng.normal(size=(K_SETS, x.shape[0]))
    model = dr.make_regression("EnsBS", preset="paper", **TINY, noise_std=0.1)
    again = model.fit_predict_many(x, ys, xt, seed=0, networks_per_call=K_SETS)
    np.testing.assert_array_equal(again[0], out["EnsBS"][0])
    # Repetition i always uses key fold_in(seed, i): a BD study of the first two sets (B = 2 → new
    # shape) reproduces the first two rows of the four-set study.
    bd = dr.make_regression("BD", preset="paper", **TINY, noise_std=0.1)
    two = bd.fit_predict_many(x, ys[:2], xt, seed=0, networks_per_call=K_SETS)
    np.testing.assert_allclose(two[0], out["BD"][0][:2], rtol=1e-5, atol=1e-5)


def test_bootstrap_weights_are_resample_counts():
    hyper = {"bootstrap": jnp.asarray(True), "bootstrap_draws": jnp.asarray(50)}
    w = np.asarray(dr._example_weights(jax.random.key(0), 50, hyper))
    assert w.sum() == 50 and np.all(w == np.round(w)) and (w == 0).any()
    off = {"bootstrap": jnp.asarray(False), "bootstrap_draws": jnp.asarray(50)}
    np.testing.assert_array_equal(np.asarray(dr._example_weights(jax.random.key(0), 50, off)), np.ones(50))
    # Half-size resample ("train set/2, pull with back"): 25 draws, counts doubled, mean weight 1.
    half = np.asarray(dr._example_weights(jax.random.key(0), 50, {**hyper, "bootstrap_draws": jnp.asarray(25)}))
    assert half.sum() == pytest.approx(50) and np.all(half % 2 == 0) and (half > 0).sum() <= 25
    assert dr.make_regression("EnsBS", preset="lab", bootstrap_size=0.5)._hyper(np.zeros((50, 1)))[
        "bootstrap_draws"] == 25
    with pytest.raises(ValueError, match="bootstrap_size"):
        dr.make_regression("EnsBS", bootstrap_size=1.5)


def test_posterior_protocol(env):
    x, y = env.sample_train(0)
    xt = env.test_inputs()[::100]
    model = dr.make_regression("Ens", preset="paper", **TINY).for_problem(env)
    post = model.fit(x, y, seed=0)  # K = 2 networks: the same compiled program as a 2-set BD study
    assert isinstance(post, RegressionPosterior)
    f = post.sample_functions(xt, 6, seed=1)
    assert f.shape == (6, xt.shape[0])
    np.testing.assert_allclose(f[:2], f[2:4], rtol=1e-6)  # ensemble draws cycle through the K members
    mean, std = post.predict(xt)
    assert mean.shape == std.shape == (xt.shape[0],)
    cov = post.covariance(xt)
    np.testing.assert_allclose(cov, cov.T, atol=1e-10)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-5, atol=1e-7)
    assert post.dropout_rate is None


@pytest.mark.parametrize("method,learned", [("CD", True), ("VD", True), ("BD", False)])
def test_dropout_rate_learned_only_by_cd_and_vd(env, method, learned):
    x, y = env.sample_train(0)
    model = dr.make_regression(method, preset="paper", **TINY).for_problem(env)
    keys = jax.random.split(jax.random.key(0), 2)
    ys = jnp.asarray(np.stack([y, y]), jnp.float32)
    state = dr._train_networks(model._arch(), model._hyper(x), keys, jnp.asarray(x, jnp.float32), ys)
    rate = np.asarray(jax.nn.sigmoid(state.noise.logit))
    assert (np.abs(rate - 0.1) > 1e-4).all() == learned, rate


def test_bad_input(env):
    with pytest.raises(ValueError, match="method"):
        dr.make_regression("MCMC")
    with pytest.raises(ValueError, match="preset"):
        dr.make_regression("BD", preset="huge")
    with pytest.raises(TypeError, match="unknown hyperparameters"):
        dr.make_regression("BD", dropout=0.5)
    with pytest.raises(ValueError, match="dropout_rate"):
        dr.BD(dropout_rate=1.0)
    with pytest.raises(ValueError, match="noise_std"):
        dr.Ens(noise_std=-1.0)
    with pytest.raises(ValueError, match="num_members"):
        dr.Ens(num_members=0)
    model = dr.make_regression("Ens", preset="paper", **TINY)
    x, y = env.sample_train(0)
    with pytest.raises(ValueError, match="same number of rows"):
        model.fit(x, y[:10])
    with pytest.raises(ValueError, match="x must be finite"):
        model.fit(np.full_like(x, np.nan), y)
    with pytest.raises(ValueError, match="ys must have shape"):
        model.fit_predict_many(x, np.zeros((2, 3)), x)
    with pytest.raises(ValueError, match="x_test must have shape"):
        model.fit_predict_many(x, np.zeros((2, 50)), np.zeros((3, 2)))
    with pytest.raises(TypeError, match="seed"):
        model.fit(x, y, seed="zero")
    assert dataclasses.replace(model, max_epochs=100).scan_steps == 100


@pytest.mark.parametrize("method", ["BD", "CD", "VD"])
def test_dropout_function_draws_are_coherent_across_inputs(method):
    """One posterior draw is one function: the same input twice gets the same value in every draw."""
    from jtk.regression.deep import make_regression

    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(30, 1))
    y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=30)
    post = make_regression(method, preset="lab", epochs_per_complexity=30).fit(x, y, seed=0)
    q = np.array([[0.3], [0.3], [1.1], [0.3]])
    f = post.sample_functions(q, 50, seed=1)
    np.testing.assert_allclose(f[:, 0], f[:, 1], atol=1e-6)
    np.testing.assert_allclose(f[:, 0], f[:, 3], atol=1e-6)
    assert f[:, 0].std() > 0  # the draws still differ from each other


def test_train_active_steps_equals_a_python_loop_over_the_same_keys():
    """``active_steps`` runs exactly the first steps of the full key sequence (independent Python loop)."""
    import jax
    import jax.numpy as jnp
    import optax

    from jtk import train as train_lib

    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
    data = train_lib.Dataset(jnp.asarray(x), jnp.asarray(y), jnp.asarray(16, jnp.int32))

    def loss(w, batch, hyper, key):
        noise = 0.01 * jax.random.normal(key, ())
        return jnp.sum(batch.mask * (batch.x @ w - batch.y) ** 2) / 16 + noise * jnp.sum(w)

    opt, key, w0 = optax.adam(0.05), jax.random.PRNGKey(3), jnp.zeros(3)
    step = jax.jit(lambda w, s, k: _one_step(loss, w, s, data, k, opt))
    for active in (0, 7, 20):
        got, _ = jax.jit(lambda a: train_lib.train(loss, w0, data, None, key, optimizer=opt, num_steps=20,
                                                   batch_size=8, active_steps=a))(active)
        w, s = w0, opt.init(w0)
        for k in jax.random.split(key, 20)[:active]:
            w, s = step(w, s, k)
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-6, atol=1e-7)
    full, _ = train_lib.train(loss, w0, data, None, key, optimizer=opt, num_steps=20, batch_size=8)
    np.testing.assert_allclose(np.asarray(got), np.asarray(full), rtol=1e-6, atol=1e-7)


def _one_step(loss, w, s, data, key, opt):
    import jax
    import optax

    from jtk import train as train_lib

    k_batch, k_loss = jax.random.split(key)
    batch = train_lib.sample_batch(k_batch, data, 8)
    grads = jax.grad(loss)(w, batch, None, k_loss)
    updates, s = opt.update(grads, s, w)
    return optax.apply_updates(w, updates), s


def test_common_max_epochs_trains_each_method_only_its_own_epochs():
    """With max_epochs > num_epochs, training stops after num_epochs: more steps would move the weights."""
    import dataclasses

    from jtk.regression.deep import make_regression
    from jtk.envs.regression import SinusoidRegression

    env = SinusoidRegression(f_main=0.5, seed=0)
    x, y = env.sample_train(0)
    model = make_regression("Ens", preset="lab", num_members=2).for_problem(env)
    short = dataclasses.replace(model, max_epochs=4 * model.num_epochs).fit(x, y, seed=0)
    exact = model.fit(x, y, seed=0)  # Ens has no noise: the keys only seed the initialisation
    longer = dataclasses.replace(model, epochs_per_complexity=4 * model.epochs_per_complexity).fit(x, y, seed=0)
    q = env.test_inputs()
    np.testing.assert_allclose(short.predict(q)[0], exact.predict(q)[0], rtol=1e-5, atol=1e-6)
    assert np.max(np.abs(longer.predict(q)[0] - exact.predict(q)[0])) > 1e-3


def test_chunk_keys_are_the_keys_fit_uses_for_each_repetition():
    key = jax.random.key(7)
    keys, k_pred = dr._chunk_keys(3, key, jnp.asarray([4, 0]))
    assert keys.shape == (6,) and k_pred.shape == (2,)
    for row, i in enumerate((4, 0)):
        k_train, k_p = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, i), 0))  # as DeepRegression.fit
        np.testing.assert_array_equal(jax.random.key_data(keys[3 * row:3 * row + 3]),
                                      jax.random.key_data(dr._member_keys(k_train, 3)))
        np.testing.assert_array_equal(jax.random.key_data(k_pred[row]), jax.random.key_data(k_p))


def _primitives(jaxpr) -> set:
    """Names of the primitives of a jaxpr, not looking into sub-jaxprs (the branches of a switch, jitted calls)."""
    return {eqn.primitive.name for eqn in jaxpr.eqns}


@pytest.mark.parametrize("per_example", [True, False])
def test_noise_layer_is_each_method_s_noise_and_ensembles_draw_none(per_example):
    """Each kind against a numpy re-derivation from the same uniforms; kind 0 (the ensembles) returns h itself and
    the random draw lives only inside the dropout branches of the switch."""
    rng = np.random.default_rng(0)
    h = jnp.asarray(rng.normal(size=(7, 5)), jnp.float32)
    p, temp, key = jnp.float32(0.2), 0.1, jax.random.key(3)
    shape = h.shape if per_example else (1, 5)
    u, v = np.asarray(jax.random.uniform(key, (2, *shape), minval=1e-6, maxval=1.0 - 1e-6), np.float64)
    hn, pn = np.asarray(h, np.float64), 0.2
    expected = {
        0: hn,
        1: hn * (u < 1.0 - pn) / (1.0 - pn),
        2: hn * (1.0 - 1.0 / (1.0 + np.exp(-(np.log(pn / (1 - pn)) + np.log(u / (1 - u))) / temp))) / (1.0 - pn),
        3: hn * (1.0 + np.sqrt(pn / (1 - pn)) * np.sqrt(-2.0 * np.log(u)) * np.cos(2.0 * np.pi * v)),
    }
    for kind, want in expected.items():
        hyper = {"kind": jnp.int32(kind), "temperature": jnp.float32(temp)}
        got = np.asarray(dr._noise_layer(h, p, key, hyper, per_example))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=f"kind {kind}")
    h_out = dr._noise_layer(h, p, key, {"kind": jnp.int32(0), "temperature": jnp.float32(temp)}, per_example)
    assert np.array_equal(np.asarray(h_out), np.asarray(h))
    traced = jax.make_jaxpr(lambda kind: dr._noise_layer(h, p, key, {"kind": kind, "temperature": temp},
                                                         per_example))(jnp.int32(0))
    # Outside the switch only its index is prepared (the random draw of the old layer sat in a jit beside it), and
    # the ensembles' branch has no work at all.
    outside = _primitives(traced.jaxpr)
    assert "cond" in outside and outside <= {"clamp", "convert_element_type", "cond"}, traced
    switch = next(eqn for eqn in traced.jaxpr.eqns if eqn.primitive.name == "cond")
    assert switch.params["branches"][0].jaxpr.eqns == [], traced
