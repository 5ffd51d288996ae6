"""HMC, NNG and FBNN regression families (Wang et al. 2021, §2.1) checked against independent closed forms."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jtk.envs.gp import BIAS0_VAR, BIAS1_VAR, WEIGHT0_VAR, WEIGHT1_VAR, relu_kernel
from jtk.regression import FBNNRegression, GPRegression, HMCRegression, NNGRegression, RegressionPosterior, bnn, fbnn
from jtk.regression.hmc import hmc_chain
from jtk.regression.nng import _nng_fit_fn, noisy_kfac

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def _linear_problem(n=200, d=3, noise_var=0.25, prior_var=1.0, seed=0):
    """Bayesian linear regression y = [x, 1]·w + ε, w ~ N(0, η I): the exact posterior in numpy float64."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    phi = np.c_[x, np.ones(n)]
    y = phi @ rng.normal(size=d + 1) + np.sqrt(noise_var) * rng.normal(size=n)
    cov = np.linalg.inv(phi.T @ phi / noise_var + np.eye(d + 1) / prior_var)
    return x, y, phi, cov @ phi.T @ y / noise_var, cov


# ------------------------------------------------------------------ HMC
def test_hmc_one_dimensional_gaussian_has_the_right_variance():
    # ε = 2.5 with σ = 2 makes the leapfrog energy error large: only the Metropolis–Hastings step keeps N(0, 4)
    # invariant (detailed balance), and it rejects a visible share of the proposals.
    @jax.jit
    def run(key, step_size):
        return jax.vmap(lambda k: hmc_chain(lambda q, var: -0.5 * q ** 2 / var, jnp.float32(3.0), jnp.float32(4.0), k,
                                            step_size=step_size, num_leapfrog=3, burn_in=50, thin=2,
                                            num_samples=1500))(jax.random.split(key, 4))

    for step_size in (0.5, 2.5):
        res = run(jax.random.key(0), jnp.float32(step_size))
        q = np.asarray(res.samples, np.float64).ravel()  # 6000 draws
        assert abs(q.mean()) < 0.15  # sd of the mean ≈ 2 / sqrt(6000) (more with autocorrelation)
        assert abs(q.var() / 4.0 - 1) < 0.1
        acc = np.asarray(res.accept_rate)
        assert np.all((acc > 0.3) & (acc <= 1.0))
        if step_size > 2:
            assert acc.mean() < 0.95  # the correction is doing work


def test_hmc_matches_the_bayesian_linear_regression_posterior():
    x, y, phi, mean, cov = _linear_problem(n=50, noise_var=0.25)
    phi_j, y_j = jnp.asarray(phi, jnp.float32), jnp.asarray(y, jnp.float32)

    def log_prob(w, hyper):
        return -jnp.sum((y_j - phi_j @ w) ** 2) / (2 * hyper) - 0.5 * jnp.sum(w ** 2)

    def run(key):
        # trajectory ε L = 0.12 ≈ 1.5–2 posterior sd: far from the periodic orbits of a Gaussian target
        return hmc_chain(log_prob, jnp.zeros(4), jnp.float32(0.25), key, step_size=0.01, num_leapfrog=12,
                         burn_in=100, thin=3, num_samples=1000)

    res = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(1), 4))
    w = np.asarray(res.samples, np.float64).reshape(-1, 4)  # 4000 draws
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(w.mean(0) - mean) / sd < 0.15)  # MC error of the mean ≈ 0.02–0.05 sd
    emp = np.cov(w, rowvar=False)
    corr = cov / np.outer(sd, sd)
    np.testing.assert_allclose(np.diag(emp) / np.diag(cov), 1.0, atol=0.15)
    np.testing.assert_allclose(emp / np.outer(sd, sd), corr, atol=0.1)
    acc = np.asarray(res.accept_rate)
    assert np.all((acc > 0.5) & (acc <= 1.0)), acc


def test_hmc_regression_bnn_samples_coherent_functions_and_reports_acceptance():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 2))
    y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=12)
    model = HMCRegression(hidden=16, num_chains=2, burn_in=100, thin=5, samples_per_chain=10)
    post = model.fit(x, y, seed=0)
    assert isinstance(post, RegressionPosterior)
    assert post.accept_rate.shape == (2,) and np.all((post.accept_rate > 0.2) & (post.accept_rate <= 1))
    assert np.all(post.prior_var > 0) and np.all(np.isfinite(post.prior_var))  # Monte-Carlo EM moved η
    assert not np.allclose(post.prior_var, 1.0)
    np.testing.assert_allclose(post.noise_var, 0.01, rtol=1e-6)  # the given variance (no EM by default)
    f = post.sample_functions(x, 20, seed=1)
    assert f.shape == (20, 12) and np.all(np.isfinite(f))
    mean, std = post.predict(x)
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.3
    assert post.first(5).num_moment_samples == 5


# ------------------------------------------------------------------ NNG
def test_noisy_kfac_on_a_linear_model_reaches_the_exact_posterior():
    n, d, s2 = 200, 3, 0.25
    x, y, phi, mean, cov = _linear_problem(n=n, d=d, noise_var=s2)
    hyper = {"n": jnp.float32(n), "noise_var": jnp.float32(s2), "prior_var": jnp.float32(1.0),
             "kl_weight": jnp.float32(1.0), "learning_rate": jnp.float32(0.03), "ema": jnp.float32(0.1),
             "damping": jnp.float32(0.0)}
    fit = jax.jit(lambda k: noisy_kfac(k, bnn.full_batch(x, y), [jnp.zeros((d + 1, 1))], [(1.0, 1.0)], hyper,
                                       num_steps=800))
    post = fit(jax.random.key(0))
    mu = np.asarray(post.mean[0], np.float64)[:, 0]
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(mu - mean) / sd < 0.5)  # the means jitter by ≈ sqrt(α / 2) ≈ 0.12 posterior sd
    ru, rv = (np.asarray(r[0], np.float64) for r in (post.root_in, post.root_out))
    cq = np.kron(ru @ ru, rv @ rv)
    # independent K-FAC algebra: A = ΦᵀΦ / n, S = 1 / σ², π-damping with γ = 1 / (n η), Σ = (1/n) A_γ⁻¹ ⊗ S_γ⁻¹
    a, s, gamma = phi.T @ phi / n, 1 / s2, 1 / n
    pi = np.sqrt(np.trace(a) / (d + 1) / s)
    want = np.linalg.inv(a + pi * np.sqrt(gamma) * np.eye(d + 1)) / (s + np.sqrt(gamma) / pi) / n
    np.testing.assert_allclose(cq, want, rtol=2e-3, atol=1e-7)
    # ... and close to the exact posterior covariance (the damping's cross terms cost a few per cent here)
    np.testing.assert_allclose(np.diag(cq) / np.diag(cov), 1.0, atol=0.1)
    np.testing.assert_allclose(cq / np.outer(sd, sd), cov / np.outer(sd, sd), atol=0.1)


def test_nng_regression_bnn_fits_and_gives_joint_samples():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 2))
    y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=16)
    model = NNGRegression(hidden=16, num_steps=300, learning_rate=0.02, num_moment_samples=200)
    post = model.fit(x, y, seed=0)
    f = post.sample_functions(x, 8, seed=1)
    assert f.shape == (8, 16)
    np.testing.assert_array_equal(f, post.sample_functions(x, 8, seed=1))
    assert not np.allclose(f[0], f[1])
    mean, std = post.predict(x)
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.3 and np.all(std > 0)
    cov = post.covariance(x)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-6)
    many = model.fit_many(np.stack([x, x]), np.stack([y, -y]), seed=0)
    assert len(many) == 2
    assert np.sqrt(np.mean((many[1].predict(x)[0] + y) ** 2)) < 0.3
    assert dataclasses.replace(many[0], num_moment_samples=10).covariance(x).shape == (16, 16)


# ------------------------------------------------------------------ FBNN
def _np_kl(mq, cq, mp, cp):
    k = len(mq)
    inv = np.linalg.inv(cp)
    diff = mp - mq
    return 0.5 * (np.trace(inv @ cq) + diff @ inv @ diff - k + np.linalg.slogdet(cp)[1] - np.linalg.slogdet(cq)[1])


def test_relu_kernel_in_jax_matches_numpy():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(7, 3)), jnp.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(fbnn.relu_kernel_jax)(x, x)), relu_kernel(np.asarray(x)),
                               rtol=1e-4)


def test_functional_kl_on_measurement_points_matches_the_closed_form():
    rng = np.random.default_rng(2)
    d, h, k = 2, 8, 6
    params = fbnn.FBNNParams((jnp.asarray(rng.normal(size=(d, h)), jnp.float32), jnp.asarray(rng.normal(size=h),
                                                                                          jnp.float32)),
                             jnp.asarray(rng.normal(size=h + 1), jnp.float32),
                             jnp.asarray(0.3 * rng.normal(size=(h + 1, h + 1)), jnp.float32))
    z = rng.normal(size=(k, d))
    # numpy: the same features written out, q(f) = N(Φ m, Φ L Lᵀ Φᵀ), p(f) = N(0, K), both + jitter
    w, c = (np.asarray(v, np.float64) for v in params.layer0)
    phi = np.c_[np.maximum(z @ w * np.sqrt(WEIGHT0_VAR / d) + c * np.sqrt(BIAS0_VAR), 0) * np.sqrt(WEIGHT1_VAR / h),
                np.full(k, np.sqrt(BIAS1_VAR))]
    raw = np.asarray(params.scale_raw, np.float64)
    low = np.tril(raw, -1) + np.diag(np.log1p(np.exp(np.diag(raw))))
    jit = 0.05
    want = _np_kl(phi @ np.asarray(params.mean), phi @ low @ low.T @ phi.T + jit * np.eye(k), np.zeros(k),
                  relu_kernel(z) + jit * np.eye(k))
    kl = jax.jit(fbnn.functional_kl)
    got = kl(params, jnp.asarray(z, jnp.float32), jnp.ones(k), jnp.float32(jit))
    np.testing.assert_allclose(float(got), want, rtol=2e-3)
    # padded rows (mask 0) do not count
    zp = np.r_[z, rng.normal(size=(3, d))]
    masked = kl(params, jnp.asarray(zp, jnp.float32), jnp.asarray(np.r_[np.ones(k), np.zeros(3)], jnp.float32),
                jnp.float32(jit))
    np.testing.assert_allclose(float(masked), want, rtol=2e-3)
    # the gradient (which does not differentiate the decompositions) agrees with a finite difference of the closed form
    step = np.zeros_like(raw)
    step[2, 1] = 1e-2
    shifted = params._replace(scale_raw=params.scale_raw + jnp.asarray(step, jnp.float32))
    low2 = np.tril(raw + step, -1) + np.diag(np.log1p(np.exp(np.diag(raw + step))))
    want2 = _np_kl(phi @ np.asarray(params.mean), phi @ low2 @ low2.T @ phi.T + jit * np.eye(k), np.zeros(k),
                   relu_kernel(z) + jit * np.eye(k))
    grad = jax.grad(lambda p: kl(p, jnp.asarray(z, jnp.float32), jnp.ones(k), jnp.float32(jit)))(params)
    np.testing.assert_allclose(float(grad.scale_raw[2, 1]) * 1e-2, want2 - want, rtol=0.05)
    assert float(kl(shifted, jnp.asarray(z, jnp.float32), jnp.ones(k), jnp.float32(jit))) == pytest.approx(want2,
                                                                                                            rel=2e-3)


def test_fbnn_predictive_mean_is_close_to_the_gp_posterior_mean():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(10, 1))
    y = np.sin(2 * x[:, 0]) + 0.1 * rng.normal(size=10)
    xt = np.linspace(-2, 2, 25)[:, None]
    gp = GPRegression(kernel=relu_kernel, noise_var=0.01).fit(x, y)
    m_gp, s_gp = gp.predict(xt)
    model = FBNNRegression(hidden=32, num_steps=300, learning_rate=1e-2, num_measurement=10)
    post = model.fit(x, y, seed=0)
    mean, std = post.predict(xt)
    assert np.sqrt(np.mean((mean - m_gp) ** 2)) < 0.15
    f = post.sample_functions(xt, 4000, seed=0)
    np.testing.assert_allclose(f.mean(0), mean, atol=0.1)
    np.testing.assert_allclose(np.cov(f, rowvar=False), post.covariance(xt), atol=0.05 * std.max() ** 2 + 1e-3)


def test_rbf_prior_kernel_in_jax_matches_numpy_and_enters_the_kl_as_given():
    from jtk.regression.gp import rbf_kernel

    rng = np.random.default_rng(4)
    x = rng.normal(size=(7, 3))
    ls, sv = np.array([0.7, 1.3, 2.0]), 1.7
    got = jax.jit(fbnn.rbf_kernel_jax)(jnp.asarray(x, jnp.float32), jnp.asarray(x, jnp.float32),
                                       jnp.asarray(ls, jnp.float32), jnp.float32(sv))
    np.testing.assert_allclose(np.asarray(got), rbf_kernel(x, lengthscale=ls, signal_var=sv), rtol=1e-4, atol=1e-6)
    # functional_kl with an RBF prior covariance: the closed form against numpy's KL of the two Gaussians
    d, h, k, jit = 3, 6, 7, 0.05
    params = fbnn.init_params(jax.random.PRNGKey(0), d, h)._replace(
        mean=jnp.asarray(rng.normal(size=h + 1), jnp.float32))
    phi = np.asarray(bnn.hidden_features(params.layer0, jnp.asarray(x, jnp.float32)), np.float64)
    low = np.asarray(fbnn.scale_tril(params.scale_raw), np.float64)
    want = _np_kl(phi @ np.asarray(params.mean), phi @ low @ low.T @ phi.T + jit * np.eye(k), np.zeros(k),
                  rbf_kernel(x, lengthscale=ls, signal_var=sv) + jit * np.eye(k))
    hyper = {"lengthscale": jnp.asarray(ls, jnp.float32), "signal_var": jnp.float32(sv)}
    xz = jnp.asarray(x, jnp.float32)
    kl = fbnn.functional_kl(params, xz, jnp.ones(k), jnp.float32(jit), fbnn.prior_cov("rbf", xz, hyper))
    np.testing.assert_allclose(float(kl), want, rtol=2e-3)


def test_fbnn_with_an_rbf_prior_fits_the_prior_by_ml2_and_fit_many_equals_fit():
    rng = np.random.default_rng(5)
    xs = rng.normal(size=(2, 30, 3))
    ys = np.sin(xs[..., 0]) + 0.1 * rng.normal(size=(2, 30))
    model = FBNNRegression(hidden=16, num_steps=60, learning_rate=1e-2, num_measurement=8, noise_var=0.01,
                           prior="rbf")
    hp = model.prior_hyperparameters(xs[0], ys[0])
    want = GPRegression(noise_var=0.01, ard=True).fit(xs[0], ys[0]).hyperparameters
    np.testing.assert_allclose(hp["lengthscale"], np.broadcast_to(want["lengthscale"], (3,)))
    assert hp["signal_var"] == pytest.approx(float(want["signal_var"]))
    many = model.fit_many(xs, ys, seed=3)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    for i in range(2):
        one = model.fit(xs[i], ys[i], seed=keys[i])
        np.testing.assert_allclose(many[i].covariance(xs[i][:5]), one.covariance(xs[i][:5]), rtol=1e-5, atol=1e-7)
    # The two priors differ where the RBF prior's fitted lengthscale says so: on inputs 4 lengthscales apart along the
    # relevant input the RBF prior's correlation is exp(-4²/2) ≈ 3.4e-4 at most (closed form, whatever ℓ the ML-II
    # fit returns), while the ReLU kernel still correlates neighbours near 1 (arc-cosine kernel of inputs on a line).
    # Both are properties of the priors' covariances, far from round-off; after 60 steps the trained q(f) is still
    # near its initialisation (the width-H ReLU prior), so its correlations would not tell the priors apart.
    line = np.zeros((8, 3))
    line[:, 0] = (np.arange(8) - 3.5) * 4 * hp["lengthscale"][0]
    hyper = {k: jnp.asarray(v) for k, v in hp.items()}

    def correlations(prior):
        c = np.asarray(fbnn.prior_cov(prior, jnp.asarray(line), hyper))
        return np.abs((c / np.sqrt(np.outer(np.diag(c), np.diag(c))))[np.triu_indices(8, 1)])

    rbf, relu = correlations("rbf"), correlations("relu")
    assert rbf.max() < 1.01 * np.exp(-8.0)
    assert relu.max() > 0.9 and relu.mean() > 0.3
    with pytest.raises(ValueError, match="prior must be one of"):
        FBNNRegression(prior="matern")


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("cls, field", [(HMCRegression, "step_size"), (HMCRegression, "noise_var"),
                                        (NNGRegression, "learning_rate"), (NNGRegression, "prior_scale"),
                                        (FBNNRegression, "measurement_var"), (FBNNRegression, "kl_jitter")])
def test_nonpositive_hyperparameters_are_refused(cls, field):
    with pytest.raises(ValueError, match=field):
        cls(**{field: 0.0})
    with pytest.raises(ValueError, match=field):
        cls(**{field: -1.0})


@pytest.mark.parametrize("cls", [HMCRegression, NNGRegression, FBNNRegression])
def test_bad_shapes_are_refused_before_training(cls):
    model = cls()
    x, y = np.zeros((5, 2)), np.zeros(5)
    with pytest.raises(ValueError, match="y must have 5 entries"):
        model.fit(x, y[:4])
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        model.fit(x[:, 0], y)
    with pytest.raises(ValueError, match="ys must have shape"):
        model.fit_many(x[None], y[None, :4])
    with pytest.raises(ValueError, match="xs must have 3 dimensions"):
        model.fit_many(x, y)
    with pytest.raises(ValueError, match="nan|NaN|finite"):
        model.fit(np.full((5, 2), np.nan), y)


def test_other_hyperparameter_checks():
    with pytest.raises(ValueError, match="target_accept"):
        HMCRegression(target_accept=1.5)
    with pytest.raises(ValueError, match="num_chains"):
        HMCRegression(num_chains=1, samples_per_chain=1)
    with pytest.raises(TypeError, match="learn_prior_var"):
        HMCRegression(learn_prior_var="yes")
    with pytest.raises(ValueError, match="ema"):
        NNGRegression(ema=1.5)
    with pytest.raises(ValueError, match="num_measurement"):
        FBNNRegression(num_measurement=-1)


# ------------------------------------------------------------------ fit_many: no deadlock-prone batched LAPACK calls
@pytest.mark.parametrize("cls", [NNGRegression, FBNNRegression, HMCRegression])
def test_fit_many_makes_no_batched_lapack_call(cls, monkeypatch):
    # Vmapped over data sets, NNG's eigh of its Kronecker factors (FBNN's of the prior covariance) became batched
    # LAPACK calls; jaxlib splits those over XLA's intra-op pool and blocks a pool thread on the parts, so two such
    # calls at once on a 2-thread pool slept at 0 % CPU forever (the all-families PPC run). fit_many must run every
    # decomposition on single matrices: read the program it compiles.
    seen = []
    original = bnn.map_datasets

    def spy(fn, key, batches, hyper, **kw):
        seen.append((fn, key, batches, hyper, kw))
        return original(fn, key, batches, hyper, **kw)

    monkeypatch.setattr(bnn, "map_datasets", spy)
    small = {NNGRegression: dict(num_steps=3), FBNNRegression: dict(num_steps=3),
             HMCRegression: dict(burn_in=3, thin=1, samples_per_chain=2)}[cls]
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(3, 12, 2))
    posts = cls(hidden=5, **small).fit_many(xs, xs[..., 0], seed=0)
    assert len(posts) == 3 and len(seen) == 1
    fn, key, batches, hyper, kw = seen[0]
    calls = bnn.lapack_calls(lambda k, b, h: original(fn, k, b, h, **kw), key, batches, hyper)
    assert all(len(shape) <= 2 for _, shape in calls), calls
    if cls is not HMCRegression:  # the check sees them: NNG and FBNN do decompose
        assert calls and any(name.startswith("lapack_ssyevd") for name, _ in calls)
        vmapped = bnn.lapack_calls(lambda k, b, h: original(fn, k, b, h, vectorize=True), key, batches, hyper)
        assert any(len(shape) == 3 for _, shape in vmapped)  # what the vmapped fit_many ran: batched


def test_map_datasets_equals_one_fit_per_data_set():
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(3, 10, 2))
    batches, n, d = bnn.stack_full_batches(xs, xs[..., 1])
    model = NNGRegression(hidden=4, num_steps=5)
    fn = _nng_fit_fn(d, 4, 5)
    key = jax.random.PRNGKey(3)
    many = bnn.map_datasets(fn, key, batches, model._hyper(n))
    for i, k in enumerate(jax.random.split(key, 3)):
        one = fn(k, jax.tree_util.tree_map(lambda a: a[i], batches), model._hyper(n))
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(np.asarray(a[i]), np.asarray(b), rtol=1e-5,
                                                                       atol=1e-6), many, one)


def test_map_datasets_completes_on_two_threads(tmp_path):
    # The hang itself, as far as a test can provoke it: 50 data sets, the PPC study's sizes, XLA's pool at two
    # threads (the process pinned to two CPUs), fits repeated. Before the fix this slept at 0 % CPU within seconds
    # to minutes on a 2-core machine, not on every run (a race); the subprocess's timeout turns a hang into a failure.
    # test_fit_many_makes_no_batched_lapack_call is the deterministic check.
    import os
    import subprocess
    import sys

    script = tmp_path / "fits.py"
    script.write_text(
        "import os\n"
        "if hasattr(os, 'sched_setaffinity'):\n"
        "    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])\n"
        "import numpy as np\n"
        "from jtk.regression import FBNNRegression, NNGRegression\n"
        "xs = np.random.default_rng(0).normal(size=(50, 45, 9))\n"
        "for r in range(3):\n"
        "    NNGRegression(hidden=50, num_steps=20).fit_many(xs, xs[..., 0], seed=r)\n"
        "FBNNRegression(hidden=50, num_steps=5).fit_many(xs, xs[..., 0], seed=0)\n"
        "print('ok')\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("fit_many on 50 data sets did not finish in 600 s: a deadlocked thread pool?")
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
