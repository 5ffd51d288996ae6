"""The regression problems E.1–E.3 of Schmähling, Martin & Elster (§3)."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jtk.envs.regression import PolynomialRegression, SinusoidRegression, StyblinskiTangRegression


def test_sinusoid_paper_setup():
    env = SinusoidRegression(f_main=2.0, seed=0)
    x, y = env.sample_train(seed=1)
    assert x.shape == (50, 1) and y.shape == (50,)
    assert env.noise_std == 0.75 and env.complexity == 2.0
    assert np.all((x >= -4) & (x <= 4))
    xt = env.test_inputs()
    assert xt.shape == (1000, 1) and xt[0, 0] == -6 and xt[-1, 0] == 6
    np.testing.assert_allclose(env.freqs, [1.8, 1.8 + 0.4 / 3, 2.2 - 0.4 / 3, 2.2])
    np.testing.assert_allclose(env.phases, [0, 2 * np.pi / 3, 4 * np.pi / 3, 2 * np.pi])
    assert np.all((env.gamma >= 0) & (env.gamma <= 1))
    # Ground truth from eq. (9) written out independently.
    g = np.sin(2 * np.pi * env.freqs * 1.3 + env.phases)
    np.testing.assert_allclose(env.mean(np.array([[1.3]])), [g @ env.gamma], rtol=1e-12)
    ind = env.in_distribution()
    assert ind.sum() == np.sum(np.abs(xt[:, 0]) <= 4) and np.all(env.out_of_distribution() == ~ind)


def test_sinusoid_input_scale():
    """input_scale = 8: f_main periods across the training range [−4, 4] instead of 8·f_main."""
    env = SinusoidRegression(f_main=3.0, input_scale=8.0, seed=0)
    assert env.input_scale == 8.0 and env.complexity == 3.0  # the epoch rule 300·f_main is unchanged
    assert "input_scale=8.0" in repr(env) and SinusoidRegression(1.0).input_scale == 1.0
    x = np.linspace(-6.0, 6.0, 37)[:, None]
    f = np.array([0.9, 0.9 + 0.2 / 3, 1.1 - 0.2 / 3, 1.1]) * 3.0
    rho = np.array([0.0, 2 * np.pi / 3, 4 * np.pi / 3, 2 * np.pi])
    g = np.sin(2 * np.pi * f[None, :] * x / 8.0 + rho[None, :])
    np.testing.assert_allclose(env.features(x), g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(env.mean(x), g @ env.gamma, rtol=0, atol=1e-12)
    # Same draws of γ and of the training inputs as the literal reading; only the features change.
    lit = SinusoidRegression(f_main=3.0, seed=0)
    np.testing.assert_array_equal(env.gamma, lit.gamma)
    np.testing.assert_array_equal(env.x_train, lit.x_train)
    # One period of the slowest sinusoid spans 8 / (0.9 f_main) input units, i.e. ≈ 1/f_main of [−4, 4].
    np.testing.assert_allclose(env.features(x), SinusoidRegression(3.0 / 8.0, seed=0).features(x), atol=1e-12)


@pytest.mark.parametrize("bad", [0, -8.0, float("nan"), float("inf")])
def test_bad_input_scale(bad):
    with pytest.raises(ValueError, match="input_scale"):
        SinusoidRegression(1.0, input_scale=bad)


def test_anchor_covers_95_under_input_scale():
    from jtk.regression import coverage as cv

    env = SinusoidRegression(2.0, input_scale=8.0, seed=0)
    res = cv.coverage_study(env, ["BLR"], k=400, seed=0, progress=False)["BLR"]
    s = res.summary().set_index("region")
    assert abs(s.loc["in", "coverage"] - 0.95) < 0.015 and abs(s.loc["out", "coverage"] - 0.95) < 0.015
    assert np.all(np.abs(res.coverage() - 0.95) < 0.06)


def test_targets_are_fresh_noise_on_fixed_inputs():
    env = SinusoidRegression(1.0, seed=3)
    x1, y1 = env.sample_train(1)
    x2, y2 = env.sample_train(2)
    np.testing.assert_array_equal(x1, x2)
    assert not np.allclose(y1, y2)
    np.testing.assert_array_equal(y1, env.sample_train(1)[1])
    np.testing.assert_array_equal(y1, env.sample_targets(1, 5)[0])
    np.testing.assert_array_equal(env.sample_train(jax.random.key(7))[1], env.sample_train(7)[1])
    ys = env.sample_targets(0, 2000)
    resid = ys - env.mean(env.x_train)[None]
    assert abs(resid.std() - 0.75) < 0.01 and abs(resid.mean()) < 0.01


def test_styblinski_tang():
    env = StyblinskiTangRegression(dim=2, seed=0)
    assert env.num_train == 900 and env.noise_std == 3.0 and env.complexity == 2.0
    x = np.array([[1.0, -2.0]])
    np.testing.assert_allclose(env.features(x), [[1, 1, 1, -2, 4, 16]])
    np.testing.assert_allclose(env.mean(x), [2.5 - 8 + 0.5 + 2.5 * -2 - 8 * 4 + 0.5 * 16])
    xt = env.test_inputs()
    assert xt.shape == (1000, 2) and np.all(xt[:, 0] == xt[:, 1])
    np.testing.assert_allclose(xt[[0, -1], 0], [-5, 5])
    ind = env.in_distribution()
    np.testing.assert_array_equal(ind, np.abs(xt[:, 0]) <= 4)
    assert StyblinskiTangRegression(1).num_train == 100


def test_polynomial():
    env = PolynomialRegression(seed=0)
    assert env.num_train == 450 and env.noise_std == 0.5 and env.num_features == 6
    x = np.array([[2.0, 3.0]])
    np.testing.assert_allclose(env.features(x), [[1, 2, 3, 6, 4, 9]])
    assert np.all((env.x_train >= 1) & (env.x_train <= 4))
    xt = env.test_inputs()
    assert xt.shape == (41 * 41, 2)
    ind = env.in_distribution()
    np.testing.assert_array_equal(ind, np.all((xt >= 1 - 1e-9) & (xt <= 4 + 1e-9), axis=1))


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_bad_f_main(bad):
    with pytest.raises(ValueError, match="f_main"):
        SinusoidRegression(bad)


def test_bad_arguments():
    with pytest.raises(TypeError, match="f_main"):
        SinusoidRegression("2")
    with pytest.raises(ValueError, match="noise_std"):
        SinusoidRegression(1.0, noise_std=-0.1)
    with pytest.raises(ValueError, match="dim"):
        StyblinskiTangRegression(0)
    with pytest.raises(TypeError, match="dim"):
        StyblinskiTangRegression(1.5)
    with pytest.raises(ValueError, match="noise_std"):
        PolynomialRegression(noise_std=-1)
    with pytest.raises(ValueError, match="train_range"):
        PolynomialRegression(train_range=(4, 1))
    with pytest.raises(ValueError, match="seed"):
        SinusoidRegression(1.0, seed=-3)
    env = SinusoidRegression(1.0)
    with pytest.raises(ValueError, match=r"x must have shape \[n, 1\]"):
        env.features(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        env.mean(np.zeros(3))
    with pytest.raises(ValueError, match="x must be finite"):
        env.features(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="num_sets"):
        env.sample_targets(0, 0)
    with pytest.raises(AttributeError):
        env.noise_std = 2.0


@settings(max_examples=25, deadline=None)
@given(f_main=st.floats(0.05, 20.0), x=st.floats(-10, 10))
def test_sinusoid_mean_is_bounded_linear_in_features(f_main, x):
    env = SinusoidRegression(f_main, seed=0)
    g = env.features(np.array([[x]]))
    assert np.all(np.abs(g) <= 1.0)
    assert abs(env.mean(np.array([[x]]))[0]) <= env.gamma.sum() + 1e-12


@pytest.mark.parametrize("seed", [0, 11])
def test_each_draw_is_one_program_with_the_same_numbers_as_op_by_op(seed):
    """γ, the training inputs and the noise come from one compiled program each, bit for bit the draws JAX makes
    one operation at a time (the documented streams: split for γ and x, fold_in(key, i) for set i)."""
    key = jax.random.key(seed)
    k_gamma, k_x = jax.random.split(key)
    sin = SinusoidRegression(1.0, seed=seed)
    np.testing.assert_array_equal(sin.gamma, np.asarray(jax.random.uniform(k_gamma, (4,)), np.float64))
    np.testing.assert_array_equal(sin.x_train, np.asarray(jax.random.uniform(k_x, (50, 1), minval=-4.0, maxval=4.0),
                                                          np.float64))
    poly = PolynomialRegression(seed=seed)
    np.testing.assert_array_equal(poly.gamma, np.asarray(jax.random.uniform(k_gamma, (6,)), np.float64))
    np.testing.assert_array_equal(poly.x_train, np.asarray(jax.random.uniform(k_x, (450, 2), minval=1.0, maxval=4.0),
                                                           np.float64))
    st2 = StyblinskiTangRegression(2, seed=seed)
    np.testing.assert_array_equal(st2.x_train, np.asarray(jax.random.uniform(key, (900, 2), minval=-4.0, maxval=4.0),
                                                          np.float64))
    noise_key = jax.random.key(seed + 5)
    eps = np.stack([np.asarray(jax.random.normal(jax.random.fold_in(noise_key, i), (50,)), np.float64)
                    for i in range(3)])
    np.testing.assert_array_equal(sin.sample_targets(noise_key, 3), sin.mean(sin.x_train)[None, :] + 0.75 * eps)
