"""The epinet agent: reference defaults, coherent samples, an independent numpy forward pass, and a short fit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jtk
from jtk import testbed, train as train_lib
from jtk.agents import ProblemInfo
from jtk.agents.epinet import EpinetAgent
from jtk.envs import MLPClassification

PRIOR = ProblemInfo(2, 2, 30, 0.1)


def _data(n=30, temperature=0.1, seed=0):
    env = MLPClassification(temperature, seed=seed)
    x, y = env.sample(n, seed=1)
    return np.asarray(x, np.float32), np.asarray(y, np.int32)


def _initial_state(agent, x, y, prior=PRIOR, seed=0):
    agent = agent.specialize(prior)
    hyper = {k: jnp.float32(v) for k, v in agent.hyper(prior).items()}
    data = train_lib.pad_dataset(x, y)
    trainable, fixed = agent.init(jax.random.key(seed), data, hyper)
    return agent, data, hyper, trainable, fixed


def test_registered_with_the_reference_defaults():
    agent = jtk.agents.make("epinet")
    assert isinstance(agent, EpinetAgent) and "epinet" in jtk.agents.names()
    assert (agent.index_dim, agent.hidden, agent.epinet_hidden, agent.prior_hidden) == (8, (50, 50), (15, 15), (5, 5))
    assert (agent.prior_scale, agent.epinet_prior_scale, agent.num_index_samples) == (0.3, 0.0, 8)
    assert (agent.l2_scale, agent.learning_rate, agent.num_steps, agent.batch_size) == (0.2, 1e-3, 1000, 100)
    assert not agent.is_mixture  # Gaussian index: scored by sampling
    hyper = agent.hyper(ProblemInfo(2, 2, 30, 0.1))
    assert hyper["l2"] == pytest.approx(0.2 * (2 / 30) ** 0.7)
    assert hyper["prior_scale"] == pytest.approx(0.3 / 0.1)  # linear in 1/ρ, not 1/sqrt(ρ)
    # ×10 steps only when n / d > 500 (never on the paper's 2-D grid, where n ≤ 1000 = 500 d)
    assert agent.specialize(ProblemInfo(2, 2, 1000, 0.1)).num_steps == 1000
    assert agent.specialize(ProblemInfo(2, 2, 1002, 0.1)).num_steps == 10_000


@pytest.mark.parametrize("kwargs, arg", [
    (dict(index_dim=0), "index_dim"), (dict(epinet_hidden=(15, 0)), "epinet_hidden"),
    (dict(prior_scale=-1.0), "prior_scale"), (dict(num_index_samples=0), "num_index_samples"),
    (dict(l2_scale=float("nan")), "l2_scale"), (dict(hidden=()), "hidden"),
    (dict(high_data_steps_factor=0), "high_data_steps_factor"), (dict(num_steps=0), "num_steps"),
])
def test_bad_hyperparameters_name_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        jtk.agents.make("epinet", **kwargs)


def test_samples_are_coherent_and_deterministic():
    x, y = _data()
    agent = jtk.agents.make("epinet", num_steps=50)
    post = agent.fit(x, y, seed=0, prior=PRIOR)
    xq = np.concatenate([x[:6], x[:6]])  # duplicated inputs
    s = np.asarray(post.sample_logits(xq, 9, seed=3))
    assert s.shape == (9, 12, 2) and np.all(np.isfinite(s))
    # one index = one function over all inputs: duplicates get the same logits within a sample
    np.testing.assert_allclose(s[:, :6], s[:, 6:], rtol=0, atol=1e-5)
    assert np.std(s[:, 0, 0]) > 1e-3  # ... and different samples are different functions
    # evaluating the same sample on a subset gives the same numbers
    np.testing.assert_allclose(post.sample_logits(x[:6], 9, seed=3), s[:, :6], rtol=1e-5, atol=1e-5)
    # determinism: the same seeds give the same numbers; another fit seed gives others
    again = agent.fit(x, y, seed=0, prior=PRIOR)
    np.testing.assert_array_equal(np.asarray(again.sample_logits(xq, 9, seed=3)), s)
    other = agent.fit(x, y, seed=1, prior=PRIOR)
    assert not np.allclose(np.asarray(other.sample_logits(xq, 9, seed=3)), s)


def _numpy_mlp(params, x):
    for w, b in params[:-1]:
        x = np.maximum(x @ np.asarray(w, np.float64) + np.asarray(b, np.float64), 0.0)
    w, b = params[-1]
    return x @ np.asarray(w, np.float64) + np.asarray(b, np.float64)


@pytest.mark.parametrize("epinet_prior_scale", [0.0, 0.5])
def test_forward_at_init_matches_numpy(epinet_prior_scale):
    x, y = _data()
    agent = jtk.agents.make("epinet", epinet_prior_scale=epinet_prior_scale)
    agent, data, hyper, trainable, fixed = _initial_state(agent, x, y)
    state = agent.finalize(trainable, fixed)
    xq = np.random.default_rng(0).normal(size=(7, 2)).astype(np.float32)
    z = np.random.default_rng(1).normal(size=8).astype(np.float32)
    got = np.asarray(agent.function(state, jnp.asarray(xq), jnp.asarray(z)))

    # independent forward pass: base MLP, features [x, h2], epinet on [z, x, h2] read as [K, D] · z,
    # plus (0.3 / ρ) Σ_i z_i p_i(x) over the D fixed prior MLPs
    base = trainable[0]
    h = xq.astype(np.float64)
    for w, b in base[:-1]:
        h = np.maximum(h @ np.asarray(w, np.float64) + np.asarray(b, np.float64), 0.0)
    mu = h @ np.asarray(base[-1][0], np.float64) + np.asarray(base[-1][1], np.float64)
    epi_in = np.concatenate([np.tile(z, (7, 1)), xq, h], axis=1)
    assert epi_in.shape == (7, 8 + 2 + 50)
    epi = _numpy_mlp(trainable[1], epi_in).reshape(7, 2, 8) @ z
    prior_nets = [jax.tree_util.tree_map(lambda a: np.asarray(a[i]), fixed.prior_nets) for i in range(8)]
    additive = sum(z[i] * _numpy_mlp(prior_nets[i], xq) for i in range(8))
    want = mu + epi + (0.3 / 0.1) * additive
    if epinet_prior_scale:
        want = want + epinet_prior_scale * (_numpy_mlp(fixed.prior_epinet, epi_in).reshape(7, 2, 8) @ z)
    else:
        assert fixed.prior_epinet is None
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # the initialisation is haiku's default: weights with std ≈ 0.88 / sqrt(fan_in), biases 0
    w2 = np.asarray(base[1][0])
    assert abs(w2.std() * np.sqrt(50) - 0.88) < 0.05 and not np.any(np.asarray(base[1][1]))


def test_epinet_does_not_train_the_base_through_its_features():
    x, y = _data()
    agent, _, _, (base, epi), _ = _initial_state(jtk.agents.make("epinet"), x, y)
    z = jnp.ones(8)

    def head_only(b):
        _, phi = agent.features(b, jnp.asarray(x))
        return jnp.sum(agent.head(epi, phi, z))

    grads = jax.grad(head_only)(base)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree_util.tree_leaves(grads))


def test_short_fit_reduces_training_loss():
    x, y = _data()
    agent, data, hyper, trainable, fixed = _initial_state(jtk.agents.make("epinet"), x, y)
    step = jax.jit(lambda p: train_lib.train(lambda q, b, h, k: agent.loss(q, fixed, b, h, k), p, data, hyper,
                                             jax.random.key(1), optimizer=agent.optimizer(), num_steps=200,
                                             batch_size=agent.batch_size))
    _, losses = step(trainable)
    losses = np.asarray(losses)
    assert np.all(np.isfinite(losses))
    assert losses[-20:].mean() < 0.6 * losses[:20].mean(), (losses[:20].mean(), losses[-20:].mean())


def test_testbed_scores_it_by_sampling():
    problems = [testbed.Problem(temperature=0.1, num_train=10, tau=tau, seed=0, num_test=20, num_samples=50)
                for tau in (1, 10)]
    rows = testbed.evaluate(jtk.agents.make("epinet", num_steps=20), problems, progress=False)
    assert list(rows.tau) == [1, 10] and set(rows.likelihood) == {"mc50"}
    assert np.all(np.isfinite(rows.kl))


def test_runs_online_in_the_bandit():
    from jtk.testbed import bandit
    problems = bandit.make_problems(input_dim=2, seeds=2)
    assert "epinet" in bandit.online_agents()
    res = bandit.run("epinet", problems=problems, horizon=60, progress=False)
    assert res.regret.shape == (2, 60) and np.all(np.isfinite(res.regret))
