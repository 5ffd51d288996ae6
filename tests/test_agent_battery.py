"""One battery of contract tests over every registered agent (optax's ``_OPTIMIZERS_UNDER_TEST`` pattern).

Each agent is made with small settings, fitted on a tiny problem and checked for the agent contract:
shapes, finiteness, coherence (sample m is one function), mixture consistency, clear errors for bad
keywords, and hashability (agents are static ``jax.jit`` arguments).
"""

import dataclasses
import functools
import warnings

import jax
import numpy as np
import pytest

import jtk
from jtk.agents import records
from jtk.agents import base

# Small settings per agent (fast on 2 CPU cores); agents not listed use their defaults.
SMALL = {
    "mlp": dict(num_steps=20),
    "ensemble": dict(num_members=3, num_steps=20),
    "ensemble+": dict(num_members=3, num_steps=20),
    "dropout": dict(num_steps=20),
    "bbb": dict(num_steps=20, num_index_samples=2),
    "hypermodel": dict(num_steps=20, num_index_samples=2),
    "epinet": dict(num_steps=20, num_index_samples=2),
    "sgmcmc": dict(num_steps=60, burn_in=20, thin=20, warm_start_steps=10),
    "sgld": dict(num_steps=60, burn_in=20, thin=20, warm_start_steps=10),
    "deep_kernel": dict(num_steps=20),
    "bayes_optimal": dict(num_particles=64, num_components=8),
    "random_forest": dict(num_trees=5),
}

AGENTS_UNDER_TEST = jtk.agents.names()
M = 6


def _data(n=24, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.int32)
    return x, y


@functools.lru_cache(maxsize=None)
def _fitted(name):
    agent = jtk.agents.make(name, **SMALL.get(name, {}))
    x, y = _data()
    prior = jtk.agents.ProblemInfo(input_dim=2, num_classes=2, num_train=len(x))
    return agent, agent.fit(x, y, seed=0, prior=prior)


def test_battery_covers_every_agent():
    assert set(SMALL) <= set(AGENTS_UNDER_TEST)
    assert len(AGENTS_UNDER_TEST) >= 11


@pytest.mark.parametrize("name", AGENTS_UNDER_TEST)
def test_fit_and_sample_shapes(name):
    agent, post = _fitted(name)
    assert isinstance(agent, jtk.agents.Agent)
    assert isinstance(post, jtk.agents.Posterior)
    xq = np.random.default_rng(1).normal(size=(7, 2)).astype(np.float32)
    out = np.asarray(post.sample_logits(xq, M, 3))
    assert out.shape == (M, 7, 2)
    assert np.all(np.isfinite(out))
    again = np.asarray(post.sample_logits(xq, M, 3))
    np.testing.assert_array_equal(out, again)  # same seed, same samples


@pytest.mark.parametrize("name", AGENTS_UNDER_TEST)
def test_coherence(name):
    """Sample m is one function: a repeated input row gets the same logits within every sample."""
    _, post = _fitted(name)
    base_x = np.random.default_rng(2).normal(size=(4, 2)).astype(np.float32)
    x = base_x[[0, 1, 2, 3, 0, 2, 0]]
    out = np.asarray(post.sample_logits(x, M, 5))
    np.testing.assert_allclose(out[:, 4], out[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 6], out[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 5], out[:, 2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", AGENTS_UNDER_TEST)
def test_mixture_consistency(name):
    """A mixture posterior's components / log_weights agree with num_components and with sample_logits."""
    agent, post = _fitted(name)
    mixture = base.as_mixture(post)
    if isinstance(agent, base.JaxAgent):
        assert agent.is_mixture == (mixture is not None)
        assert isinstance(post, base.MixturePosterior) == agent.is_mixture
    if mixture is None:
        assert not isinstance(post, base.MixturePosterior) or not callable(getattr(post, "components", None))
        return
    xq = np.random.default_rng(3).normal(size=(5, 2)).astype(np.float32)
    comps = np.asarray(mixture.components(xq))
    c = mixture.num_components
    assert comps.shape == (c, 5, 2)
    lw = mixture.log_weights()
    if lw is not None:
        lw = np.asarray(lw, np.float64)
        assert lw.shape == (c,)
        assert abs(np.logaddexp.reduce(lw)) < 1e-4
    samples = np.asarray(post.sample_logits(xq, 40, 0))
    # every sampled function is one of the components (with positive weight)
    allowed = comps if lw is None else comps[np.isfinite(lw)]
    gaps = np.abs(samples[:, None] - allowed[None]).max(axis=(2, 3))  # [M, C]
    assert np.all(gaps.min(axis=1) < 1e-4)


@pytest.mark.parametrize("name", AGENTS_UNDER_TEST)
def test_bad_keyword_names_agent_and_valid_ones(name):
    with pytest.raises(TypeError) as err:
        jtk.agents.make(name, no_such_keyword=1)
    msg = str(err.value)
    assert repr(name) in msg and "'no_such_keyword'" in msg and "valid names" in msg


@pytest.mark.parametrize("name", [n for n in AGENTS_UNDER_TEST if n != "uniform"])
def test_bad_keyword_suggests_close_match(name):
    agent = jtk.agents.make(name)
    field = next(f.name for f in dataclasses.fields(agent) if f.init and f.name not in ("batch_size", "num_classes"))
    with pytest.raises(TypeError, match="did you mean"):
        jtk.agents.make(name, **{field + "x": 1})


@pytest.mark.parametrize("name", AGENTS_UNDER_TEST)
def test_hashable_and_equal(name):
    a, b = jtk.agents.make(name, **SMALL.get(name, {})), jtk.agents.make(name, **SMALL.get(name, {}))
    assert a == b and hash(a) == hash(b)
    if dataclasses.is_dataclass(a):
        fields = [f for f in dataclasses.fields(a) if f.name == "num_classes"]
        if fields:
            c = dataclasses.replace(a, num_classes=3)
            assert c != a and hash(dataclasses.replace(c, num_classes=2)) == hash(a)


@pytest.mark.parametrize("name", [n for n in AGENTS_UNDER_TEST if isinstance(jtk.agents.make(n), base.JaxAgent)])
def test_jit_static_argument(name):
    agent = jtk.agents.make(name, **SMALL.get(name, {}))

    @functools.partial(jax.jit, static_argnums=(0,))
    def num_classes_plus(a, x):
        return x + a.num_classes

    assert int(num_classes_plus(agent, 1)) == agent.num_classes + 1
    assert int(num_classes_plus(dataclasses.replace(agent), 1)) == agent.num_classes + 1  # equal: cache hit


@pytest.mark.parametrize("name", [n for n in AGENTS_UNDER_TEST if isinstance(jtk.agents.make(n), base.JaxAgent)])
def test_shared_fields_checked_once(name):
    agent = jtk.agents.make(name)
    with pytest.raises(ValueError, match="batch_size"):
        dataclasses.replace(agent, batch_size=0)
    with pytest.raises(ValueError, match="num_classes"):
        dataclasses.replace(agent, num_classes=1)
    if isinstance(agent, base.NeuralAgent):
        with pytest.raises(ValueError, match="learning_rate"):
            dataclasses.replace(agent, learning_rate=-1.0)
        with pytest.raises(ValueError, match="num_steps"):
            dataclasses.replace(agent, num_steps=0)


@pytest.mark.parametrize("name", AGENTS_UNDER_TEST)
def test_docstring_lists_hyper_keys(name):
    agent = jtk.agents.make(name)
    if not isinstance(agent, base.JaxAgent):
        return
    doc = type(agent).__doc__
    assert "Attributes:" in doc
    assert "Hyper keys" in doc
    prior = jtk.agents.ProblemInfo(input_dim=2, num_classes=2, num_train=10)
    for key in agent.hyper(prior):
        assert key in doc, f"{type(agent).__name__} does not document hyper key {key!r}"


@pytest.mark.parametrize("name", [n for n in AGENTS_UNDER_TEST if isinstance(jtk.agents.make(n), base.JaxAgent)
                                  and "l2" in jtk.agents.make(n).hyper(jtk.agents.ProblemInfo(2, 2, 10))])
def test_l2_multiplier_is_l2_scale(name):
    """Every agent with an L2 penalty names its multiplier l2_scale."""
    assert "l2_scale" in {f.name for f in dataclasses.fields(jtk.agents.make(name))}


@pytest.mark.parametrize("name, old, value, new_value", [
    ("dropout", "length_scale", 2.0, 2.0),
    ("deep_kernel", "weight_decay", 3.0, 3.0),
    ("sgmcmc", "prior_variance", 0.1, 10.0),
    ("sgld", "prior_variance", 0.2, 5.0),
])
def test_renamed_keywords_warn_and_map(name, old, value, new_value):
    with pytest.warns(DeprecationWarning, match=rf"^jtk\.agents\.{name}\({old}=\.\.\.\) is deprecated; use l2_scale"):
        agent = jtk.agents.make(name, **{old: value})
    assert agent.l2_scale == new_value
    assert agent == jtk.agents.make(name, l2_scale=new_value)
    with pytest.warns(DeprecationWarning, match=rf"^jtk\.agents\.{type(agent).__name__}\({old}=\.\.\.\) is deprecated"):
        assert type(agent)(**{old: value}).l2_scale == new_value
    with pytest.raises(TypeError, match="both"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        jtk.agents.make(name, **{old: value, "l2_scale": 1.0})


def test_sgmcmc_default_l2_bit_identical_to_prior_variance():
    from jtk.agents.zoo_common import reference_l2

    prior = jtk.agents.ProblemInfo(input_dim=2, num_classes=2, num_train=37, temperature=0.1)
    assert jtk.agents.make("sgmcmc").l2_scale == 1.0 / 0.1
    for v in (0.05, 0.1, 0.2):
        with pytest.warns(DeprecationWarning):
            agent = jtk.agents.make("sgmcmc", prior_variance=v)
        assert reference_l2(prior, agent.l2_scale) == reference_l2(prior, 1.0 / v)
        assert agent.hyper(prior)["l2"] == reference_l2(prior, 1.0 / v)


def test_third_party_agent_without_mixture_methods():
    class Plain:
        def fit(self, x, y, seed=0, prior=None):
            return self

        def sample_logits(self, x, num_samples, seed=0):
            return np.zeros((num_samples, len(x), 2), np.float32)

    class NoWeights(Plain):
        num_components = 2

        def components(self, x):
            return np.zeros((2, len(x), 2), np.float32)

    assert isinstance(Plain(), jtk.agents.Agent) and isinstance(Plain(), jtk.agents.Posterior)
    assert base.as_mixture(Plain()) is None
    mixture = base.as_mixture(NoWeights())
    assert mixture is not None and mixture.num_components == 2 and mixture.log_weights() is None
    assert mixture.components(np.zeros((3, 2))).shape == (2, 3, 2)


def test_results_rebuild_records_with_old_keyword_names():
    """A manifest written before the l2_scale rename rebuilds the same agent, without a warning."""

    cfg = records.agent_config("sgmcmc", name="sgmcmc", hyperparameters={"l2_scale": 5.0})
    fields = dict(cfg["fields"])
    fields["prior_variance"] = 1.0 / fields.pop("l2_scale")
    old = {**cfg, "hyperparameters": {"prior_variance": 0.2}, "fields": fields}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert records.make_agent(old) == jtk.agents.make("sgmcmc", l2_scale=5.0)
