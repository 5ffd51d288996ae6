"""The authors' EM-HMC (jtk.regression.hmc.em_hmc_chain, HMCRegression(schedule="authors")) against independent
computations: the exact posterior of a conjugate linear model, its ML-II prior variance, and the step-size rule."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jtk.regression import hmc

SCHEDULE = dict(num_leapfrog=5, steps_per_em=10, adapt_steps=3)  # the authors' synthetic scripts


def test_kept_iterations_follow_the_authors_driver():
    # T = S · thin + burn_in − 1 iterations, kept: g > burn_in, g % thin == 0
    np.testing.assert_array_equal(hmc.kept_em_steps(100, 100, 3), [200, 300])  # S − 1 on the synthetic grid
    assert len(hmc.kept_em_steps(1000, 100, 200)) == 199
    real = hmc.kept_em_steps(5999, 100, 100)  # their real-data setting: exactly S
    assert len(real) == 100 and real[0] == 6000 and real[-1] == 15900
    np.testing.assert_array_equal(hmc.kept_em_steps(5, 2, 4), [6, 8, 10])  # T = 12
    # brute force over the driver's loop
    for burn, thin, s in [(0, 1, 3), (7, 3, 5), (10, 10, 2), (3, 5, 1)]:
        total = s * thin + burn - 1
        expect = [g for g in range(total) if g > burn and g % thin == 0]
        np.testing.assert_array_equal(hmc.kept_em_steps(burn, thin, s), expect)


def _linear_problem(n, d, noise, eta, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x @ (rng.normal(size=d) * np.sqrt(eta)) + rng.normal(size=n) * np.sqrt(noise)
    return x, y


def test_adapted_chain_recovers_the_conjugate_posterior():
    n, d, noise, eta = 40, 3, 0.25, 2.0
    x, y = _linear_problem(n, d, noise, eta, 0)
    cov = np.linalg.inv(x.T @ x / noise + np.eye(d) / eta)  # exact posterior N(mean, cov)
    mean = cov @ x.T @ y / noise
    xj, yj = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)

    def log_prob(q, h):
        return -0.5 * jnp.sum((yj - xj @ q) ** 2) / noise - 0.5 * jnp.sum(q ** 2) / eta

    res = jax.jit(lambda k: hmc.em_hmc_chain(log_prob, jnp.zeros(d), {}, k, step_size=0.01, learning_rate=0.0,
                                             em_scale=1.0 / n, burn_in=100, thin=2, num_samples=2000,
                                             **SCHEDULE))(jax.random.PRNGKey(0))
    s = np.asarray(res.samples, np.float64)
    assert s.shape == (1999, d)
    # thinned by 2 EM iterations = 20 transitions: the draws are close to independent; 4 standard errors
    np.testing.assert_array_less(np.abs(s.mean(0) - mean), 4 * np.sqrt(np.diag(cov) / len(s)))
    np.testing.assert_allclose(s.var(0, ddof=1), np.diag(cov), rtol=0.15)
    assert float(res.step_size) > 0.05  # adapted up from 0.01 towards acceptance 0.75
    assert 0.5 < float(res.accept_rate) < 0.9


def test_em_step_finds_the_ml2_prior_variance():
    n, d, noise = 60, 20, 0.25
    x, y = _linear_problem(n, d, noise, 0.5, 1)

    def neg_log_evidence(log_eta):
        c = np.exp(log_eta) * x @ x.T + noise * np.eye(n)
        chol = np.linalg.cholesky(c)
        a = np.linalg.solve(chol, y)
        return 0.5 * a @ a + np.log(np.diag(chol)).sum()

    eta_ml2 = float(np.exp(scipy.optimize.minimize_scalar(neg_log_evidence, bounds=(-8, 5), method="bounded").x))
    xj, yj = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)

    def log_prob(q, h):  # η = softplus(a), the authors' parameterisation, with the prior's normaliser
        e = jax.nn.softplus(h["a"])
        return -0.5 * jnp.sum((yj - xj @ q) ** 2) / noise - 0.5 * jnp.sum(q ** 2) / e - 0.5 * d * jnp.log(e)

    res = jax.jit(lambda k: hmc.em_hmc_chain(log_prob, jnp.zeros(d), {"a": jnp.float32(np.log(np.e - 1))}, k,
                                             step_size=0.01, learning_rate=0.01, em_scale=1.0 / n, burn_in=1500,
                                             thin=10, num_samples=50, **SCHEDULE))(jax.random.PRNGKey(0))
    # Monte-Carlo EM's fixed point is the evidence maximum; Adam's constant rate leaves a few % of jitter
    assert float(jax.nn.softplus(res.hyper["a"])) == pytest.approx(eta_ml2, rel=0.1)


def test_step_size_rule_counts_the_adapting_transitions():
    # a flat target accepts every proposal (ΔH = 0), so each adapting transition multiplies ε by 1.01
    res = hmc.em_hmc_chain(lambda q, h: 0.0 * jnp.sum(q), jnp.zeros(2), {}, jax.random.PRNGKey(0), step_size=0.01,
                           learning_rate=0.0, em_scale=1.0, burn_in=7, thin=3, num_samples=4, **SCHEDULE)
    iterations = hmc.kept_em_steps(7, 3, 4)[-1] + 1  # run up to the last kept state
    assert float(res.step_size) == pytest.approx(0.01 * 1.01 ** (3 * iterations), rel=1e-4)
    assert float(res.accept_rate) == 1.0


def test_regression_keeps_s_minus_one_states_and_longer_runs_extend_shorter_ones():
    x = np.random.default_rng(0).normal(size=(12, 2))
    y = np.sin(x[:, 0])
    kw = dict(hidden=8, schedule="authors", burn_in=10, thin=10, steps_per_em=2, adapt_steps=1, learning_rate=1e-2)
    short = hmc.HMCRegression(samples_per_chain=3, **kw)
    long = hmc.HMCRegression(samples_per_chain=5, **kw)
    assert (short.num_kept, long.num_kept) == (2, 4)
    a, b = short.fit(x, y, seed=3), long.fit(x, y, seed=3)
    assert a.num_moment_samples == 2 and b.num_moment_samples == 4
    for u, v in zip(jax.tree_util.tree_leaves(a.samples), jax.tree_util.tree_leaves(b.samples)):
        np.testing.assert_allclose(u, v[:2], rtol=1e-5, atol=1e-6)
    # several chains: one joint state with shared hyperparameters; the noise variance is learned when asked
    post = hmc.HMCRegression(samples_per_chain=3, num_chains=3, learn_noise_var=True, noise_var=float(np.exp(-4)),
                             **kw).fit(x, y, seed=0)
    assert post.num_moment_samples == 6 and np.all(post.noise_var == post.noise_var[0])
    assert post.noise_var[0] != pytest.approx(np.exp(-4))


@pytest.mark.parametrize("kw, match", [
    (dict(schedule="tfp"), "schedule"),
    (dict(schedule="authors", target_accept=0.8), "target_accept"),
    (dict(schedule="authors", burn_in=100, thin=100, samples_per_chain=2), "keeps 1 state"),
    (dict(schedule="authors", steps_per_em=0), "steps_per_em"),
    (dict(schedule="authors", learning_rate=-1.0), "learning_rate"),
])
def test_bad_authors_settings_name_themselves(kw, match):
    with pytest.raises(ValueError, match=match):
        hmc.HMCRegression(**kw)


def test_a_schedule_that_keeps_nothing_is_refused():
    with pytest.raises(ValueError, match="keep no state"):
        hmc.em_hmc_chain(lambda q, h: -jnp.sum(q ** 2), jnp.zeros(1), {}, jax.random.PRNGKey(0), step_size=0.1,
                         learning_rate=0.0, em_scale=1.0, burn_in=10, thin=10, num_samples=1, **SCHEDULE)
