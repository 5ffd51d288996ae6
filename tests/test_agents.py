import numpy as np
import pytest

import jtk
from jtk.agents import ProblemInfo, base
from jtk.agents.ensemble import EnsembleAgent, bootstrap_weights
from jtk.envs import MLPClassification

FAST = dict(num_steps=200)


def _data(n=60, temperature=0.1, seed=0):
    env = MLPClassification(temperature, seed=seed)
    x, y = env.sample(n, seed=1)
    return env, np.asarray(x), np.asarray(y)


def test_registry_lists_and_builds_agents():
    assert {"uniform", "mlp", "ensemble", "ensemble+"} <= set(jtk.agents.names())
    assert jtk.agents.make("mlp").num_members == 1
    assert jtk.agents.make("ensemble").num_members == 100
    plus = jtk.agents.make("ensemble+", num_members=7)
    assert plus.num_members == 7 and plus.prior_scale == 3.0


def test_unknown_agent_and_hyperparameter_are_clear_errors():
    with pytest.raises(ValueError, match=r"name must be one of \[.*'mlp'.*\], got 'mpl'"):
        jtk.agents.make("mpl")
    with pytest.raises(TypeError, match="unknown hyperparameter"):
        jtk.agents.make("mlp", num_memberz=3)
    with pytest.raises(ValueError, match="bootstrap"):
        jtk.agents.make("ensemble", bootstrap="poisson")
    with pytest.raises(ValueError, match="num_members must be >= 1"):
        jtk.agents.make("ensemble", num_members=0)


def test_l2_and_prior_scale_follow_reference_formulas():
    prior = ProblemInfo(input_dim=2, num_classes=2, num_train=50, temperature=0.04)
    assert np.isclose(jtk.agents.make("mlp").hyper(prior)["l2"], 1.0 * 0.2 * 2 / 50)
    h = jtk.agents.make("ensemble+", num_members=10).hyper(prior)
    assert np.isclose(h["l2"], 0.2 * 2 / (10 * 50)) and np.isclose(h["prior_scale"], 3 / 0.2)


def test_mlp_learns_the_environment():
    env, x, y = _data(n=300, temperature=0.01)
    post = jtk.agents.make("mlp").fit(x, y, seed=0, prior=ProblemInfo(2, 2, 300, 0.01))
    xt, yt = env.sample(2000, seed=5)
    acc = jtk.accuracy(np.asarray(post.mean_probs(xt)), np.asarray(yt))
    assert acc > 0.85, acc


def test_samples_are_coherent_functions_across_inputs():
    _, x, y = _data()
    post = jtk.agents.make("ensemble", num_members=5, num_steps=20).fit(x, y, seed=0)
    xa, xb = x[:7], x[7:20]
    joint = post.sample_logits(np.concatenate([xa, xb]), 16, seed=3)
    assert joint.shape == (16, 20, 2)
    np.testing.assert_allclose(joint[:, :7], post.sample_logits(xa, 16, seed=3), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(joint[:, 7:], post.sample_logits(xb, 16, seed=3), rtol=1e-5, atol=1e-5)
    # samples are drawn from the members (exact enumeration is available)
    comps = np.asarray(post.components(x[:20]))
    assert post.num_components == 5
    assert all(any(np.allclose(s, c, atol=1e-5) for c in comps) for s in np.asarray(joint))


def test_prior_networks_spread_members_away_from_data():
    _, x, y = _data(n=20, temperature=0.1)
    far = np.random.default_rng(0).normal(size=(200, 2)) * 4
    spread = {}
    for name in ("ensemble", "ensemble+"):
        post = jtk.agents.make(name, num_members=8, **FAST).fit(x, y, seed=0, prior=ProblemInfo(2, 2, 20, 0.1))
        p1 = np.asarray(jax_softmax(post.components(far)))[..., 1]  # [K, n]
        spread[name] = p1.std(0).mean()
    assert spread["ensemble+"] > spread["ensemble"] + 0.05, spread


def jax_softmax(logits):
    e = np.exp(logits - np.max(logits, -1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("kind", ["none", "exponential", "bernoulli"])
def test_bootstrap_weights_have_mean_one(kind):
    import jax

    w = np.asarray(bootstrap_weights(jax.random.key(0), kind, (50, 1000)))
    assert abs(w.mean() - 1) < 0.02 and w.min() >= 0
    if kind == "bernoulli":
        assert set(np.unique(w)) == {0.0, 2.0}
    assert EnsembleAgent(num_members=2, bootstrap=kind, **FAST).fit(*_data()[1:]).num_components == 2


def test_new_num_train_and_temperature_do_not_recompile():
    agent = jtk.agents.make("mlp", num_steps=50)
    _, x, y = _data(n=400)
    agent.fit(x[:150], y[:150], prior=ProblemInfo(2, 2, 150, 0.1))
    before = base._train_one._cache_size()
    agent.fit(x[:390], y[:390], prior=ProblemInfo(2, 2, 390, 0.5))  # same minibatch bucket, other temperature
    agent.fit(x[:120], y[:120], prior=ProblemInfo(2, 2, 120, 0.01))
    assert base._train_one._cache_size() == before


def test_uniform_agent_predicts_one_half():
    _, x, y = _data()
    post = jtk.agents.make("uniform").fit(x, y)
    np.testing.assert_allclose(post.mean_probs(x), 0.5)
    assert post.sample_logits(x, 3).shape == (3, 60, 2)


@pytest.mark.parametrize("x, y, err, match", [
    (np.zeros((5, 2)), np.zeros(4, int), ValueError, "same number of rows"),
    (np.full((5, 2), np.nan), np.zeros(5, int), ValueError, "x must be finite"),
    (np.zeros(5), np.zeros(5, int), ValueError, "x must have 2 dimensions"),
    (np.zeros((5, 2)), np.full(5, 3), ValueError, r"y must be labels in \[0, 2\)"),
    (np.zeros((5, 3)), np.zeros(5, int), ValueError, "prior.input_dim=2"),
])
def test_fit_rejects_bad_training_data(x, y, err, match):
    with pytest.raises(err, match=match):
        jtk.agents.make("mlp", num_steps=5).fit(x, y, prior=ProblemInfo(2, 2, 5, 0.1))


def test_posterior_rejects_bad_queries():
    _, x, y = _data()
    post = jtk.agents.make("mlp", num_steps=5).fit(x, y)
    with pytest.raises(ValueError, match=r"x must have shape \[n, 2\]"):
        post.sample_logits(np.zeros((3, 4)), 2)
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        post.sample_logits(x, 0)
    with pytest.raises(ValueError, match="temperature"):
        ProblemInfo(2, 2, 5, temperature=0.0)


def test_fit_many_equals_fitting_one_by_one():
    agent = jtk.agents.make("ensemble+", num_members=3, num_steps=30)
    _, x, y = _data(n=250)
    sizes = (5, 40, 250)
    priors = [ProblemInfo(2, 2, n, t) for n, t in zip(sizes, (0.1, 0.5, 0.01))]
    many = jtk.agents.fit_many(agent, [x[:n] for n in sizes], [y[:n] for n in sizes], priors, [0, 1, 2])
    for n, prior, seed, post in zip(sizes, priors, [0, 1, 2], many):
        one = agent.fit(x[:n], y[:n], seed=seed, prior=prior)
        np.testing.assert_allclose(post.components(x[:9]), one.components(x[:9]), rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="equal length"):
        jtk.agents.fit_many(agent, [x], [y, y], priors[0], 0)
