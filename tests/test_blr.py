"""The BLR anchor (eq. 5–6) against an independent closed form, and its 95 % coverage."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jtk.regression.blr import BayesianLinearRegression
from jtk.regression.base import RegressionPosterior
from jtk.envs.regression import PolynomialRegression, SinusoidRegression, StyblinskiTangRegression

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def closed_form(g_train, y, g_test, sigma):
    """Textbook formulas with an explicit inverse: V = (G^T G)^-1, γ̂ = V G^T y (eq. 5–6)."""
    v = np.linalg.inv(g_train.T @ g_train)
    gamma_hat = v @ g_train.T @ y
    cov = sigma ** 2 * g_test @ v @ g_test.T
    return g_test @ gamma_hat, np.sqrt(np.diag(cov)), cov, gamma_hat, v


@pytest.mark.parametrize("env", [SinusoidRegression(3.0, seed=1), StyblinskiTangRegression(2, seed=2),
                                 PolynomialRegression(seed=3)], ids=["E1", "E2", "E3"])
def test_matches_closed_form(env):
    x, y = env.sample_train(5)
    xt = env.test_inputs()[::7]
    post = BayesianLinearRegression(env.features, env.noise_std).fit(x, y)
    mean, std = post.predict(xt)
    ref_mean, ref_std, ref_cov, ref_gamma, ref_v = closed_form(env.features(x), y, env.features(xt), env.noise_std)
    scale = max(1.0, np.abs(ref_mean).max())
    assert np.max(np.abs(mean - ref_mean)) / scale < 1e-6
    assert np.max(np.abs(std - ref_std)) / max(1.0, ref_std.max()) < 1e-6
    assert np.max(np.abs(post.covariance(xt) - ref_cov)) / max(1.0, np.abs(ref_cov).max()) < 1e-6
    np.testing.assert_allclose(post.gamma_hat, ref_gamma, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(post.V, ref_v, rtol=1e-6, atol=1e-10)
    _, std_y = post.predict(xt, aleatoric=True)
    np.testing.assert_allclose(std_y ** 2, ref_std ** 2 + env.noise_std ** 2, rtol=1e-10)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(3, 40), sigma=st.floats(0.01, 10.0))
def test_matches_closed_form_random_designs(seed, n, sigma):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, 1))
    features = lambda x: np.concatenate([np.ones_like(x), x, x ** 2], axis=1)  # noqa: E731
    y = rng.normal(size=n)
    xt = np.linspace(-3, 3, 11)[:, None]
    mean, std = BayesianLinearRegression(features, sigma).fit(x, y).predict(xt)
    ref_mean, ref_std, *_ = closed_form(features(x), y, features(xt), sigma)
    assert np.max(np.abs(mean - ref_mean)) < 1e-6 * max(1.0, np.abs(ref_mean).max())
    assert np.max(np.abs(std - ref_std)) < 1e-6 * max(1.0, ref_std.max())


def test_fit_predict_many_equals_fit():
    env = SinusoidRegression(2.0, seed=0)
    ys = env.sample_targets(4, 3)
    blr = BayesianLinearRegression(env.features, env.noise_std)
    means, stds = blr.fit_predict_many(env.x_train, ys, env.test_inputs())
    for i in range(3):
        m, s = blr.fit(env.x_train, ys[i]).predict(env.test_inputs())
        np.testing.assert_allclose(means[i], m, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(stds[i], s, rtol=1e-12)


REPORTED = {"E1": [-5.11, -2.38, 0.0, 1.2, 3.9, 5.5], "E3": [(-5, -5), (2.5, 2.5), (4, 1), (5, 5), (-3, 4)]}


@pytest.mark.parametrize("name", ["E1", "E3"])
def test_anchor_covers_95_percent_at_every_reported_input(name):
    """Probability matching: over k = 1000 training sets the coverage is 0.95 ± 0.02 at each input."""
    env = SinusoidRegression(2.0, seed=0) if name == "E1" else PolynomialRegression(seed=0)
    pts = np.array(REPORTED[name], float).reshape(len(REPORTED[name]), -1)
    ys = env.sample_targets(123, 1000)
    means, stds = BayesianLinearRegression(env.features, env.noise_std).fit_predict_many(env.x_train, ys, pts)
    covered = np.abs(means - env.mean(pts)[None]) <= 1.96 * stds
    coverage = covered.mean(0)
    assert np.all(np.abs(coverage - 0.95) <= 0.02), coverage


def test_sample_functions_are_coherent_draws_of_the_posterior():
    env = SinusoidRegression(1.0, seed=0)
    post = BayesianLinearRegression(env.features, env.noise_std).fit(*env.sample_train(0))
    assert isinstance(post, RegressionPosterior)
    xt = env.test_inputs()[::50]
    f = post.sample_functions(xt, 20000, seed=1)
    assert f.shape == (20000, xt.shape[0])
    mean, std = post.predict(xt)
    np.testing.assert_allclose(f.mean(0), mean, atol=4 * std.max() / np.sqrt(20000) * 1.5)
    np.testing.assert_allclose(np.cov(f, rowvar=False), post.covariance(xt), atol=0.05 * std.max() ** 2)
    np.testing.assert_array_equal(f, post.sample_functions(xt, 20000, seed=1))


def test_bad_input():
    env = SinusoidRegression(1.0)
    x, y = env.sample_train(0)
    with pytest.raises(ValueError, match="noise_std"):
        BayesianLinearRegression(env.features, -1.0)
    with pytest.raises(TypeError, match="features"):
        BayesianLinearRegression("sin", 1.0)
    blr = BayesianLinearRegression(env.features, env.noise_std)
    with pytest.raises(ValueError, match="same number of rows"):
        blr.fit(x, y[:-1])
    y_nan = y.copy()
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="y must be finite"):
        blr.fit(x, y_nan)
    with pytest.raises(ValueError, match="at least as many rows"):
        blr.fit(x[:2], y[:2])
    with pytest.raises(ValueError, match="rank-deficient"):
        blr.fit(np.zeros((10, 1)) + 0.5, np.zeros(10))
    with pytest.raises(ValueError, match="ys must have shape"):
        blr.fit_predict_many(x, np.zeros((3, 7)), x)
    post = blr.fit(x, y)
    with pytest.raises(ValueError, match=r"x must have shape \[n, 1\]"):
        post.predict(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="num_samples"):
        post.sample_functions(x, 0)
