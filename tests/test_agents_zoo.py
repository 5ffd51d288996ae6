"""The agent zoo: selection by name, coherent samples, argument checks, and independent references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jtk
from jtk import testbed
from jtk.agents import ProblemInfo
from jtk.agents.bbb import BBBAgent, diag_gaussian_log_prob, gaussian_kl, scale_mixture_log_prob
from jtk.agents.deep_kernel import direct_covariance, woodbury_covariance
from jtk.agents.sgmcmc import PRESETS, langevin_chain
from jtk.agents.zoo_common import systematic_resample
from jtk.envs import MLPClassification

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics

# Small settings so every agent fits in about a second (not the paper defaults).
FAST = {
    "dropout": dict(num_steps=50),
    "bbb": dict(num_steps=50),
    "hypermodel": dict(num_steps=50),
    "epinet": dict(num_steps=50),
    "sgmcmc": dict(num_steps=300, burn_in=100, thin=20, warm_start_steps=50),
    "sgld": dict(num_steps=300, burn_in=100, thin=20, warm_start_steps=50),
    "knn": {},
    "random_forest": dict(num_trees=10),
    "deep_kernel": dict(num_steps=50),
    "bayes_optimal": dict(num_particles=256, num_components=16),
}
ZOO = ["dropout", "bbb", "hypermodel", "epinet", "sgmcmc", "knn", "random_forest", "deep_kernel", "bayes_optimal"]


def _data(n=20, temperature=0.1, seed=0):
    env = MLPClassification(temperature, seed=seed)
    x, y = env.sample(n, seed=1)
    return env, np.asarray(x), np.asarray(y)


def test_every_zoo_agent_is_registered():
    assert set(ZOO) | {"sgld"} <= set(jtk.agents.names())


@pytest.mark.parametrize("name", ZOO)
def test_agent_fits_and_samples_coherent_functions(name):
    _, x, y = _data()
    post = jtk.agents.make(name, **FAST[name]).fit(x, y, seed=0, prior=ProblemInfo(2, 2, len(x), 0.1))
    xa, xb = x[:5], x[5:12]
    joint = np.asarray(post.sample_logits(np.concatenate([xa, xb]), 6, seed=3))
    assert joint.shape == (6, 12, 2) and np.all(np.isfinite(joint))
    # sample m is one function: evaluating it on two halves separately gives the same numbers
    np.testing.assert_allclose(joint[:, :5], post.sample_logits(xa, 6, seed=3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(joint[:, 5:], post.sample_logits(xb, 6, seed=3), rtol=1e-4, atol=1e-4)
    probs = np.asarray(post.mean_probs(x[:4]))
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("name, kwargs, arg", [
    ("dropout", dict(dropout_rate=1.0), "dropout_rate"),
    ("dropout", dict(l2_scale=-1.0), "l2_scale"),
    ("bbb", dict(mixture_weight=1.5), "mixture_weight"),
    ("bbb", dict(sigma1=0.0), "sigma1"),
    ("hypermodel", dict(index_dim=0), "index_dim"),
    ("hypermodel", dict(num_index_samples=0), "num_index_samples"),
    ("sgmcmc", dict(momentum=1.0), "momentum"),
    ("sgmcmc", dict(num_steps=10, burn_in=10), "num_steps"),
    ("sgmcmc", dict(preset="slow"), "preset"),
    ("knn", dict(num_neighbors=0), "num_neighbors"),
    ("knn", dict(weights="cosine"), "weights"),
    ("random_forest", dict(criterion="mse"), "criterion"),
    ("deep_kernel", dict(sigma_squared_factor=0.0), "sigma_squared_factor"),
    ("bayes_optimal", dict(num_particles=0), "num_particles"),
    ("bayes_optimal", dict(activation="cube"), "activation"),
])
def test_bad_hyperparameters_name_the_argument(name, kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        jtk.agents.make(name, **kwargs)


def test_nonparametric_agents_are_deterministic_and_clipped():
    _, x, y = _data(n=1)  # one point: the origin points still make both classes present
    for name in ("knn", "random_forest"):
        post = jtk.agents.make(name, **FAST[name]).fit(x, y, seed=0, prior=ProblemInfo(2, 2, 1, 0.1))
        p = np.asarray(jax.nn.softmax(post.sample_logits(np.random.default_rng(0).normal(size=(50, 2)), 3), -1))
        assert p.min() >= 0.01 - 1e-6 and p.max() <= 0.99 + 1e-6
        np.testing.assert_allclose(p[0], p[1])  # every sample is the same function


# ------------------------------------------------------------------ independent references
def test_deep_kernel_woodbury_equals_direct_formula():
    rng = np.random.default_rng(0)
    phi, phi_test = rng.normal(size=(30, 8)), rng.normal(size=(5, 8))
    for sigma2 in (0.04, 1.0):
        np.testing.assert_allclose(woodbury_covariance(phi, phi_test, sigma2), direct_covariance(phi, phi_test, sigma2),
                                   rtol=1e-3, atol=1e-4)


def test_deep_kernel_samples_have_the_woodbury_covariance():
    _, x, y = _data(n=40)
    agent = jtk.agents.make("deep_kernel", num_steps=100)
    prior = ProblemInfo(2, 2, 40, 0.1)
    post = agent.fit(x, y, seed=0, prior=prior)
    xt = x[:3] + 0.5
    s = np.asarray(post.sample_logits(xt, 20000, seed=1))[..., 0]  # [M, 3] logits of class 0
    from jtk.agents.deep_kernel import normalized_features
    params = post.state.params
    hyper = agent.hyper(prior)
    phi, phi_t = normalized_features(params, jnp.asarray(x)), normalized_features(params, jnp.asarray(xt))
    want = woodbury_covariance(phi, phi_t, hyper["sigma2"]) * hyper["scale"] ** 2 / hyper["sigma2"]
    np.testing.assert_allclose(np.cov(s.T), want, rtol=0.1, atol=0.05 * np.max(np.abs(want)))


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgld_recovers_a_gaussian_target(momentum):
    mu, sd = jnp.array([1.0, -2.0, 0.5]), jnp.array([0.5, 1.0, 2.0])
    grad_u = lambda th, k: (th - mu) / sd ** 2  # U = ½ Σ (θ − μ)²/σ²  # noqa: E731
    samples = np.asarray(jax.jit(lambda k: langevin_chain(grad_u, jnp.zeros(3), k, step_size=0.01 * (1 - momentum),
                                                          momentum=momentum, num_steps=60_000, burn_in=5_000,
                                                          thin=25))(jax.random.key(0)))
    assert samples.shape == (2200, 3)
    assert np.all(np.abs(samples.mean(0) - np.asarray(mu)) < 0.25 * np.asarray(sd)), samples.mean(0)
    np.testing.assert_allclose(samples.std(0), sd, rtol=0.15)


def test_sgmcmc_presets_keep_the_documented_schedules():
    ref = jtk.agents.make("sgmcmc", preset="reference")
    assert (ref.num_steps, ref.burn_in, ref.thin, ref.num_samples) == (500_000, 100_000, 1000, 400)
    fast = jtk.agents.make("sgmcmc")
    assert fast.num_samples == 100 and fast.momentum == 0.9 and fast.learning_rate == 1e-4
    assert jtk.agents.make("sgld").momentum == 0.0 and PRESETS["fast"]["warm_start_steps"] == 1000


def test_bbb_kl_matches_monte_carlo():
    rng = np.random.default_rng(0)
    mu, sigma = jnp.asarray(rng.normal(size=40) * 0.5), jnp.asarray(rng.uniform(0.05, 1.5, size=40))
    eps = jax.random.normal(jax.random.key(0), (20_000, 40))
    theta = mu + sigma * eps
    log_q = jax.vmap(lambda t: diag_gaussian_log_prob(t, mu, sigma))(theta)
    for weight, want_fn in ((1.0, lambda: gaussian_kl(mu, sigma, 1.0)), (0.5, None)):
        log_p = jax.vmap(lambda t: scale_mixture_log_prob(t, 1.0, 0.75, weight))(theta)
        mc = float(jnp.mean(log_q - log_p))
        agent = BBBAgent(mixture_weight=weight)
        # the agent's per-sample KL term averages to the Monte Carlo KL (exactly analytic for weight 1)
        term = float(jnp.mean(jax.vmap(lambda t: agent.kl_term(mu, sigma, t))(theta[:2000])))
        if want_fn is not None:
            assert abs(float(want_fn()) - mc) < 0.02 * abs(mc) + 0.1
            assert abs(term - float(want_fn())) < 1e-3 * abs(mc) + 1e-3
        else:
            assert abs(term - mc) < 0.05 * abs(mc) + 0.5


def test_systematic_resampling_keeps_weights():
    log_w = jnp.log(jnp.array([0.5, 0.3, 0.15, 0.05]))
    idx, lw = systematic_resample(jax.random.key(0), log_w, 100)
    w = np.zeros(4)
    np.add.at(w, np.asarray(idx), np.asarray(jax.nn.softmax(lw)))
    np.testing.assert_allclose(w, [0.5, 0.3, 0.15, 0.05], atol=0.011)


def test_bayes_optimal_equals_exact_enumeration_over_a_finite_prior():
    table = jnp.asarray(np.random.default_rng(1).normal(size=(3, 2, 2)) * 2.0)  # 3 linear environments

    def sampler(key, input_dim, num_classes):
        return jax.random.randint(key, (), 0, 3)

    def apply(i, x):
        return x @ table[i]

    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 2)).astype(np.float32)
    y = rng.integers(0, 2, size=4)
    agent = jtk.agents.make("bayes_optimal", env_sampler=sampler, env_apply=apply, num_particles=30_000,
                            num_components=3000)
    post = agent.fit(x, y, seed=0, prior=ProblemInfo(2, 2, 4, 1.0))
    # exact posterior over the three environments
    ll = np.array([np.sum(np.asarray(jax.nn.log_softmax(apply(i, x), -1))[np.arange(4), y]) for i in range(3)])
    w = np.exp(ll - ll.max()) / np.exp(ll - ll.max()).sum()
    xt = rng.normal(size=(3, 2)).astype(np.float32)
    pe = np.stack([np.asarray(jax.nn.softmax(apply(i, xt), -1)) for i in range(3)])  # [3, 3, K]
    np.testing.assert_allclose(post.mean_probs(xt), np.einsum("e,enk->nk", w, pe), atol=0.02)
    # joint predictive of a τ = 3 sequence
    yt = np.array([0, 1, 1])
    exact = np.sum(w * np.prod(pe[:, np.arange(3), yt], axis=1))
    comps = np.asarray(jax.nn.softmax(post.components(xt), -1))
    lw = np.asarray(jax.nn.softmax(post.log_weights()))
    approx = np.sum(lw * np.prod(comps[:, np.arange(3), yt], axis=1))
    assert abs(approx - exact) < 0.02 * exact + 1e-3
    assert agent.diagnostics(post.state)["ess"] > 5000


def test_bayes_optimal_beats_mlp_on_small_problems():
    problems = testbed.grid(temperatures=(0.5,), num_train=(3,), taus=(1, 10), seeds=2, num_test=100,
                            num_samples=100)
    bo = testbed.evaluate(jtk.agents.make("bayes_optimal", num_particles=2048, num_components=128), problems,
                          name="bayes_optimal", progress=False)
    mlp = testbed.evaluate("mlp", problems, progress=False)
    table = testbed.summarize(pd_concat(bo, mlp))
    for tau in (1, 10):
        assert table.loc["bayes_optimal", f"kl_{tau}"] <= table.loc["mlp", f"kl_{tau}"] + 0.01, table


def pd_concat(*frames):
    import pandas as pd
    return pd.concat(frames, ignore_index=True)
