"""BBB and SGLD regression BNNs: prior matched to the oracle kernel, joint samples, fitting, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jtk.regression.bnn import (BBBRegression, GaussianWeightPosterior, ParticlePosterior, SGLDRegression,
                                       apply_raw, apply_raw_numpy, init_raw)
from jtk.envs.gp import relu_kernel

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def _data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-2, 2, size=(n, 1)), axis=0)
    return x, np.sin(2 * x[:, 0]) + 0.1 * rng.normal(size=n)


def test_prior_matches_the_oracle_kernel():
    x = np.array([[-1.5], [0.0], [0.7], [2.0]])
    rng = np.random.default_rng(0)
    s, h = 4000, 512
    raw = ((rng.normal(size=(s, 1, h)), rng.normal(size=(s, h))), (rng.normal(size=(s, h, 1)), rng.normal(size=(s, 1))))
    emp = np.cov(apply_raw_numpy(raw, x), rowvar=False)
    k = relu_kernel(x)
    # finite width (512) and 4000 draws: agreement within ~10 % of the largest entry
    np.testing.assert_allclose(emp, k, atol=0.1 * k.max())


def test_numpy_and_jax_forward_passes_agree():
    x = np.random.default_rng(1).normal(size=(5, 2)).astype(np.float32)
    raws = [init_raw(k, 2, 16) for k in jax.random.split(jax.random.key(0), 2)]
    f_jax = np.stack([np.asarray(apply_raw(r, jnp.asarray(x))) for r in raws])  # eager, no vmap compile
    stacked = jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *raws)  # leaves [2, ...]
    np.testing.assert_allclose(apply_raw_numpy(stacked, x), f_jax, rtol=1e-4, atol=1e-5)


def test_bbb_fits_and_gives_coherent_joint_samples():
    x, y = _data()
    model = BBBRegression(hidden=50, num_steps=1500, learning_rate=1e-2, num_moment_samples=300)
    post = model.fit(x, y, seed=0)
    assert isinstance(post, GaussianWeightPosterior)
    f = post.sample_functions(x, 8, seed=1)
    assert f.shape == (8, 20)
    np.testing.assert_array_equal(f, post.sample_functions(x, 8, seed=1))
    assert not np.allclose(f[0], f[1])  # different weight draws
    mean, std = post.predict(x)
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.3
    cov = post.covariance(x)
    assert cov.shape == (20, 20) and np.linalg.eigvalsh(cov).min() > -1e-8
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-6)
    # far from the data the posterior is wider than near it
    far = post.predict(np.array([[6.0]]))[1][0]
    assert far > np.median(std)


def test_sgld_samples_and_covariance():
    x, y = _data(seed=1)
    model = SGLDRegression(hidden=50, num_chains=2, burn_in=1500, thin=20, samples_per_chain=15)
    post = model.fit(x, y, seed=0)
    assert isinstance(post, ParticlePosterior) and post.num_moment_samples == 30
    f_all = post.sample_functions(x, 30, seed=0)
    assert f_all.shape == (30, 20)
    assert post.sample_functions(x, 50, seed=0).shape == (50, 20)  # with replacement
    np.testing.assert_allclose(post.covariance(x), np.cov(f_all, rowvar=False), rtol=1e-6, atol=1e-8)
    mean, _ = post.predict(x)
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.4
    again = model.fit(x, y, seed=0).sample_functions(x, 30, seed=0)
    np.testing.assert_allclose(again, f_all, rtol=1e-5, atol=1e-5)


def test_bad_inputs():
    x, y = _data()
    with pytest.raises(ValueError, match="hidden"):
        BBBRegression(hidden=0)
    with pytest.raises(ValueError, match="step_size"):
        SGLDRegression(step_size=-1.0)
    with pytest.raises(ValueError, match="num_chains \\* samples_per_chain"):
        SGLDRegression(num_chains=1, samples_per_chain=1)
    with pytest.raises(ValueError, match="y must have 20"):
        BBBRegression(num_steps=10).fit(x, y[:5])
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        SGLDRegression(burn_in=10).fit(x[:, 0], y)
