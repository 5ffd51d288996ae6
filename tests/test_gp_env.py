"""The ReLU-kernel GP oracle of Wang et al. (2021): kernel formula, data splits, seeds."""

import jax
import numpy as np
import pytest

from jtk.envs.gp import (BIAS0_VAR, BIAS1_VAR, WEIGHT0_VAR, WEIGHT1_VAR, GPSplit, ReLUKernelGP,
                         relu_kernel, relu_network_kernel_mc, toy_split_1d)

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def test_relu_kernel_matches_wide_network_monte_carlo():
    x = np.random.default_rng(0).normal(size=(6, 3))
    exact = relu_kernel(x, x)
    mc = relu_network_kernel_mc(x, x, num_hidden=400_000, seed=1)
    # MC std of each entry is about σ²_w1 · std(relu·relu) / sqrt(H) ≈ 0.01
    np.testing.assert_allclose(exact, mc, atol=0.05)


def test_relu_kernel_closed_forms():
    x = np.array([[0.3, -1.2], [2.0, 0.5]])
    k0 = BIAS0_VAR + WEIGHT0_VAR * np.sum(x * x, 1) / 2
    # θ = 0 on the diagonal: (sin 0 + π cos 0) / (2π) = 1/2
    np.testing.assert_allclose(np.diag(relu_kernel(x)), WEIGHT1_VAR * k0 / 2 + BIAS1_VAR)
    # opposite directions with no bias: θ = π, the ReLU term vanishes
    k = relu_kernel(np.array([[1.0]]), np.array([[-1.0]]), bias0_var=0.0)
    np.testing.assert_allclose(k, [[BIAS1_VAR]], atol=1e-12)


def test_kernel_is_symmetric_psd_and_handles_any_dim():
    for d in (1, 4, 9):
        x = np.random.default_rng(d).normal(size=(40, d))
        k = ReLUKernelGP(d).kernel(x)
        assert k.shape == (40, 40)
        np.testing.assert_allclose(k, k.T, atol=1e-12)
        assert np.linalg.eigvalsh(k).min() > -1e-8


def test_sample_split_reference_sizes_and_noise():
    oracle = ReLUKernelGP(input_dim=3)
    s = oracle.sample_split(seed=0)
    assert isinstance(s, GPSplit)
    assert s.x_train.shape == (15, 3) and s.x_pool.shape == (500, 3) and s.x_test.shape == (200, 3)
    assert s.y_train.shape == (15,) and s.f_pool.shape == (500,) and s.y_test.shape == (200,)
    resid = np.concatenate([s.y_train - s.f_train, s.y_pool - s.f_pool, s.y_test - s.f_test])
    assert 0.007 < resid.var() < 0.013  # noise variance 0.01 over 715 points
    assert 0.9 < np.std(s.x_pool) < 1.1 and abs(np.mean(s.x_pool)) < 0.15  # x ~ N(0, I)


def test_sample_split_determinism_and_jax_keys():
    oracle = ReLUKernelGP(input_dim=2)
    a = oracle.sample_split(seed=5, num_pool=30, num_test=10)
    b = oracle.sample_split(seed=5, num_pool=30, num_test=10)
    c = oracle.sample_split(seed=jax.random.key(5), num_pool=30, num_test=10)
    d = oracle.sample_split(seed=6, num_pool=30, num_test=10)
    np.testing.assert_array_equal(a.y_pool, b.y_pool)
    np.testing.assert_array_equal(a.y_pool, c.y_pool)
    assert not np.allclose(a.y_pool, d.y_pool)


def test_function_draws_have_the_kernel_covariance():
    oracle = ReLUKernelGP(input_dim=2)
    x = np.array([[0.0, 0.0], [1.0, -1.0], [2.0, 1.0]])
    draws = np.stack([oracle.sample_function_values(x, seed=i) for i in range(1500)])
    k = oracle.kernel(x)
    np.testing.assert_allclose(np.cov(draws, rowvar=False), k, atol=0.1 * np.max(k))


def test_toy_split_layout():
    s = toy_split_1d(seed=0)
    assert s.x_train.max() <= -1.5 and s.x_test.min() >= 1.0 and s.x_test.max() <= 2.5
    assert s.x_pool.shape == (60, 1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="input_dim"):
        ReLUKernelGP(input_dim=0)
    with pytest.raises(ValueError, match="noise_var"):
        ReLUKernelGP(input_dim=1, noise_var=-0.1)
    with pytest.raises(ValueError, match="input_dim=2"):
        ReLUKernelGP(input_dim=2).kernel(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="x2"):
        relu_kernel(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(TypeError, match="seed"):
        ReLUKernelGP(1).sample_split(seed="zero")
    with pytest.raises(ValueError, match="num_pool"):
        ReLUKernelGP(1).sample_split(seed=0, num_pool=0)
