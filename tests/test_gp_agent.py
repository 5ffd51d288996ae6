"""Exact GP regression: posterior against direct formulas, ML-II fitting, sampling, bad input."""

import functools

import numpy as np
import pytest

from jtk.regression.gp import (GPRegression, MonteCarloGP, condition, rbf_kernel, rbf_neg_log_marginal_likelihood)
from jtk.envs.gp import ReLUKernelGP

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def _data(n=25, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.1 * rng.normal(size=n)
    return x, y


def test_posterior_matches_direct_formulas():
    x, y = _data()
    xs = np.random.default_rng(1).normal(size=(7, 2))
    kern = ReLUKernelGP(2).kernel
    post = GPRegression(kernel=kern, noise_var=0.01).fit(x, y)
    k = kern(x) + 0.01 * np.eye(len(x))
    k_inv = np.linalg.inv(k)
    mean_direct = kern(xs, x) @ k_inv @ y
    cov_direct = kern(xs) - kern(xs, x) @ k_inv @ kern(x, xs)
    mean, cov = post.mean_and_covariance(xs)
    np.testing.assert_allclose(mean, mean_direct, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cov, cov_direct, rtol=1e-4, atol=1e-6)
    m2, std = post.predict(xs)
    np.testing.assert_allclose(m2, mean, atol=1e-10)
    np.testing.assert_allclose(std, np.sqrt(np.diag(cov_direct)), rtol=1e-4, atol=1e-6)
    var_y = np.diag(cov_direct) + 0.01
    y_s = mean_direct + 0.3
    ll = np.mean(-0.5 * np.log(2 * np.pi * var_y) - 0.5 * (y_s - mean_direct) ** 2 / var_y)
    np.testing.assert_allclose(post.log_likelihood(xs, y_s), ll, rtol=1e-4)


def test_function_samples_have_the_posterior_moments():
    x, y = _data(n=10)
    xs = np.linspace(-2, 2, 5)[:, None] * np.ones((1, 2))
    post = GPRegression(kernel=functools.partial(rbf_kernel, lengthscale=1.0), noise_var=0.05).fit(x, y)
    f = post.sample_functions(xs, 6000, seed=3)
    assert f.shape == (6000, 5)
    mean, cov = post.mean_and_covariance(xs)
    np.testing.assert_allclose(f.mean(0), mean, atol=4 * np.sqrt(np.diag(cov).max() / 6000) + 1e-6)
    np.testing.assert_allclose(np.cov(f, rowvar=False), cov, atol=0.1 * np.diag(cov).max() + 1e-8)
    np.testing.assert_array_equal(post.sample_functions(xs, 3, seed=1), post.sample_functions(xs, 3, seed=1))


def test_rbf_marginal_likelihood_gradient_matches_finite_differences():
    x, y = _data(n=15, d=3)
    theta = np.log(np.array([0.8, 1.5, 2.0, 1.3, 0.05]))
    val, grad = rbf_neg_log_marginal_likelihood(theta, x, y, None)
    eps = 1e-6
    fd = np.array([(rbf_neg_log_marginal_likelihood(theta + eps * e, x, y, None)[0]
                    - rbf_neg_log_marginal_likelihood(theta - eps * e, x, y, None)[0]) / (2 * eps)
                   for e in np.eye(len(theta))])
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_ml2_recovers_the_generating_lengthscale():
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, size=(80, 1))
    k = rbf_kernel(x, lengthscale=0.7, signal_var=1.5) + 1e-8 * np.eye(80)
    y = np.linalg.cholesky(k) @ rng.normal(size=80) + 0.1 * rng.normal(size=80)
    post = GPRegression().fit(x, y, seed=0)
    hp = post.hyperparameters
    assert 0.45 < hp["lengthscale"][0] < 1.05
    assert 0.003 < hp["noise_var"] < 0.03
    # fixed noise and lengthscale are respected
    hp2 = GPRegression(noise_var=0.01, lengthscale=2.0).fit(x, y).hyperparameters
    assert hp2["noise_var"] == 0.01 and np.all(hp2["lengthscale"] == 2.0)


def test_monte_carlo_gp_covariance_is_the_sample_covariance():
    x, y = _data(n=12)
    xs = np.random.default_rng(2).normal(size=(6, 2))
    exact = GPRegression(kernel=ReLUKernelGP(2).kernel, noise_var=0.01)
    post = MonteCarloGP(exact, num_samples=7).fit(x, y)
    f = exact.fit(x, y).sample_functions(xs, 7, seed=0)
    np.testing.assert_allclose(post.covariance(xs), np.cov(f, rowvar=False), rtol=1e-10, atol=1e-12)
    assert np.linalg.matrix_rank(post.covariance(xs), tol=1e-9) <= 6


def test_empty_training_set_gives_the_prior():
    kern = ReLUKernelGP(1).kernel
    post = condition(kern, np.zeros((0, 1)), np.zeros(0), 0.01)
    xs = np.array([[0.0], [1.0]])
    mean, cov = post.mean_and_covariance(xs)
    np.testing.assert_allclose(cov, kern(xs))
    np.testing.assert_allclose(mean, 0.0)


def test_bad_inputs():
    x, y = _data()
    with pytest.raises(ValueError, match="noise_var"):
        GPRegression(kernel=ReLUKernelGP(2).kernel)
    with pytest.raises(ValueError, match="noise_var"):
        GPRegression(noise_var=-1.0)
    with pytest.raises(TypeError, match="kernel"):
        GPRegression(kernel=3.0, noise_var=0.1)
    with pytest.raises(ValueError, match="y must have 25"):
        GPRegression(noise_var=0.1).fit(x, y[:-1])
    with pytest.raises(ValueError, match="finite"):
        GPRegression(noise_var=0.1).fit(np.where(x > 1, np.nan, x), y)
    post = GPRegression(noise_var=0.1, lengthscale=1.0, signal_var=1.0).fit(x, y)
    with pytest.raises(ValueError, match="2 columns"):
        post.predict(np.zeros((3, 5)))


def test_gram_posterior_matches_conditioning_on_the_points():
    """gram_posterior slices a precomputed kernel matrix: condition(...).predict / mean_and_covariance up to round-off."""
    from jtk.regression.gp import gram_posterior

    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 2))
    kernel = ReLUKernelGP(2).kernel
    gram = kernel(x)
    observed, targets = rng.permutation(30)[:9], np.arange(20, 30)
    observed = observed[~np.isin(observed, targets)]
    y = rng.normal(size=len(observed))
    post = condition(kernel, x[observed], y, 0.01)
    mean, std = gram_posterior(gram, observed, y, targets, 0.01)
    np.testing.assert_allclose(mean, post.predict(x[targets])[0], atol=1e-10)
    np.testing.assert_allclose(std, post.predict(x[targets])[1], atol=1e-10)
    mean, cov = gram_posterior(gram, observed, y, targets, 0.01, full_covariance=True)
    ref_mean, ref_cov = post.mean_and_covariance(x[targets])
    np.testing.assert_allclose(mean, ref_mean, atol=1e-10)
    np.testing.assert_allclose(cov, ref_cov, atol=1e-10)
    prior_mean, prior_std = gram_posterior(gram, np.zeros(0, int), np.zeros(0), targets, 0.01)
    assert np.all(prior_mean == 0) and np.allclose(prior_std ** 2, np.diag(gram)[targets])
    with pytest.raises(ValueError, match="y must have one value per index of observed"):
        gram_posterior(gram, observed, y[:-1], targets, 0.01)
    with pytest.raises(ValueError, match="gram must be symmetric"):
        gram_posterior(gram + np.triu(np.ones_like(gram)), observed, y, targets, 0.01)
