"""Bad inputs to jtk.agents (the testbed agents, their registry and records)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import jtk
import jtk.agents.zoo_common as ZOO
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (AG, call, case, cases, env, refused_clearly, TE, VE)


@functools.lru_cache(None)
def train_data():
    return tuple(np.asarray(a) for a in env().sample(8, seed=1))


@functools.lru_cache(None)
def posterior():
    x, y = train_data()
    return jtk.agents.make("ensemble", num_members=2, num_steps=2).fit(x, y, seed=0)


X, Y = lambda: train_data()[0], lambda: train_data()[1]  # noqa: E731

# --- jtk.agents.make: every registered name, bad hyperparameters
for name in jtk.agents.names():
    case(jtk.agents.make, f"{name}-unknown-kwarg", call(jtk.agents.make, name, not_a_hyperparameter=1), TE,
         "not_a_hyperparameter")
for name, kw, e, names in [
        ("ensemble", dict(num_members=0), VE, "num_members"), ("ensemble", dict(num_members=2.0), TE, "num_members"),
        ("ensemble", dict(learning_rate=-1.0), VE, "learning_rate"), ("ensemble", dict(num_steps=0), VE, "num_steps"),
        ("ensemble", dict(batch_size=0), VE, "batch_size"), ("ensemble", dict(hidden=(0,)), VE, "hidden"),
        ("ensemble", dict(bootstrap="poisson"), VE, "bootstrap"), ("ensemble", dict(num_member=3), TE, "num_members"),
        ("ensemble+", dict(prior_scale=np.nan), VE, "prior_scale"), ("mlp", dict(l2_scale=-1.0), VE, "l2_scale"),
        ("dropout", dict(dropout_rate=1.0), VE, "dropout_rate"),
        ("dropout", dict(dropout_rate=-0.1), VE, "dropout_rate"),
        ("bbb", dict(num_index_samples=0), VE, "num_index_samples"), ("bbb", dict(init_sigma=0.0), VE, "init_sigma"),
        ("sgmcmc", dict(burn_in=-1), VE, "burn_in"), ("sgmcmc", dict(thin=0), VE, "thin"),
        ("sgmcmc", dict(preset="slowest"), VE, "preset"), ("knn", dict(num_neighbors=0), VE, "num_neighbors"),
        ("knn", dict(weights="cosine"), VE, "weights"), ("random_forest", dict(num_trees=0), VE, "num_trees"),
        ("deep_kernel", dict(l2_scale=-1.0), VE, "l2_scale"),
        ("bayes_optimal", dict(num_particles=0), VE, "num_particles")]:
    case(jtk.agents.make, f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}", call(jtk.agents.make, name, **kw),
         e, names)
case(jtk.agents.make, "name-unknown", call(jtk.agents.make, "ensembel"), VE, "name")
case(jtk.agents.make, "name-int", call(jtk.agents.make, 3), VE, "name")

# --- agent.fit (through a cheap agent; validation comes before training)
fit = lambda *a, **k: jtk.agents.make("ensemble", num_members=2, num_steps=2).fit(*a, **k)  # noqa: E731
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-1d", lambda: fit(np.zeros(4), np.zeros(4, int)), VE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-nan", lambda: fit(np.full((4, 2), np.nan), np.zeros(4, int)), VE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-inf", lambda: fit(np.full((4, 2), np.inf), np.zeros(4, int)), VE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-1e39-float64", lambda: fit(np.full((4, 2), 1e39), np.zeros(4, int)), VE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-str", lambda: fit(np.full((4, 2), "a"), np.zeros(4, int)), TE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-none", lambda: fit(None, np.zeros(4, int)), TE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "x-complex", lambda: fit(np.zeros((4, 2), complex), np.zeros(4, int)), TE, "x")
case(jtk.agents.ensemble.EnsembleAgent.fit, "y-rows", lambda: fit(np.zeros((4, 2)), np.zeros(3, int)), VE, "y")
case(jtk.agents.ensemble.EnsembleAgent.fit, "y-2d", lambda: fit(np.zeros((4, 2)), np.zeros((4, 1), int)), VE, "y")
case(jtk.agents.ensemble.EnsembleAgent.fit, "y-neg", lambda: fit(np.zeros((4, 2)), -np.ones(4, int)), VE, "y")
case(jtk.agents.ensemble.EnsembleAgent.fit, "y-float-frac", lambda: fit(np.zeros((4, 2)), np.full(4, 0.5)), VE, "y")
case(jtk.agents.ensemble.EnsembleAgent.fit, "y-out-of-range", lambda: fit(np.zeros((4, 2)), np.full(4, 2),
                                                 prior=jtk.agents.ProblemInfo(2, 2, 4)), VE, "y")
case(jtk.agents.ensemble.EnsembleAgent.fit, "y-str", lambda: fit(np.zeros((4, 2)), np.array(["a"] * 4)), TE, "y")
case(jtk.agents.ensemble.EnsembleAgent.fit, "prior-input_dim", lambda: fit(np.zeros((4, 2)), np.zeros(4, int),
                                                  prior=jtk.agents.ProblemInfo(3, 2, 4)), VE, "input_dim")
case(jtk.agents.ensemble.EnsembleAgent.fit, "prior-dict",
     lambda: fit(np.zeros((4, 2)), np.zeros(4, int), prior={"input_dim": 2}), TE, "prior")
for sid, s, e in [("neg", -1, VE), ("2**32", 2 ** 32, VE), ("2**64", 2 ** 64, VE), ("float", 0.5, TE),
                  ("bool", False, TE), ("none", None, TE)]:
    case(jtk.agents.ensemble.EnsembleAgent.fit, f"seed-{sid}", lambda s=s: fit(X(), Y(), seed=s), e, "seed")
for tid, t in [("0", 0.0), ("1e-45", 1e-45), ("nan", np.nan)]:
    case(jtk.agents.ProblemInfo, f"temperature-{tid}", call(jtk.agents.ProblemInfo, 2, 2, 4, temperature=t), VE, "temperature")
case(jtk.agents.ProblemInfo, "num_classes-1", call(jtk.agents.ProblemInfo, 2, 1, 4), VE, "num_classes")
case(jtk.agents.ProblemInfo, "tau-0", call(jtk.agents.ProblemInfo, 2, 2, 4, tau=0), VE, "tau")
for name, cls in (("knn", jtk.agents.nonparametric.KNNAgent), ("random_forest", jtk.agents.nonparametric.RandomForestAgent),
                  ("uniform", jtk.agents.UniformAgent)):
    case(cls.fit, f"{name}-x-nan", lambda n=name: jtk.agents.make(n).fit(np.full((4, 2), np.nan), np.zeros(4, int)),
         VE, "x")
    case(cls.fit, f"{name}-seed-2**32", lambda n=name: jtk.agents.make(n).fit(X(), Y(), seed=2 ** 32), VE, "seed")
KNN_POST = functools.lru_cache(None)(lambda: jtk.agents.make("knn").fit(X(), Y()))
case(jtk.agents.nonparametric.ClassifierPosterior.sample_logits, "knn-num_samples-huge",
     lambda: KNN_POST().sample_logits(X(), 10 ** 12), VE,
     "num_samples")
case(jtk.agents.nonparametric.ClassifierPosterior.sample_logits, "knn-seed-neg",
     lambda: KNN_POST().sample_logits(X(), 2, seed=-1), VE, "seed")
case(jtk.agents.fit_many, "agent-str", call(jtk.agents.fit_many, "mlp", [np.zeros((2, 2))], [np.zeros(2, int)], None, 0),
     TE, "agent")
case(jtk.agents.fit_many, "empty", lambda: jtk.agents.fit_many(jtk.agents.make("mlp"), [], [], None, 0), VE, "xs")

# --- posterior.sample_logits
for mid, m, e in [("0", 0, VE), ("neg", -3, VE), ("float", 2.0, TE), ("bool", True, TE), ("str", "10", TE),
                  ("huge", 10 ** 12, VE)]:
    case(jtk.agents.base.JaxPosterior.sample_logits, f"num_samples-{mid}", lambda m=m: posterior().sample_logits(X(), m), e,
         "num_samples")
case(jtk.agents.base.JaxPosterior.sample_logits, "x-wrong-d", lambda: posterior().sample_logits(np.zeros((3, 5)), 2), VE, "x")
case(jtk.agents.base.JaxPosterior.sample_logits, "x-1d", lambda: posterior().sample_logits(np.zeros(2), 2), VE, "x")
case(jtk.agents.base.JaxPosterior.sample_logits, "x-nan", lambda: posterior().sample_logits(np.full((3, 2), np.nan), 2), VE, "x")
case(jtk.agents.base.JaxPosterior.sample_logits, "x-1e39", lambda: posterior().sample_logits(np.full((3, 2), 1e39), 2), VE, "x")
case(jtk.agents.base.JaxPosterior.sample_logits, "seed-2**32", lambda: posterior().sample_logits(X(), 2, seed=2 ** 32), VE, "seed")
case(jtk.agents.base.JaxMixturePosterior.components, "x-wrong-d", lambda: posterior().components(np.zeros((3, 1))), VE, "x")

# every registered factory called directly, every agent class, and the shared checks
FACTORIES = (AG.ensemble.mlp, AG.ensemble.ensemble, AG.ensemble.ensemble_plus, AG.bbb.bbb, AG.deep_kernel.deep_kernel,
             AG.dropout.dropout, AG.epinet.epinet, AG.hypermodel.hypermodel, AG.nonparametric.knn,
             AG.nonparametric.random_forest, AG.sgmcmc.sgmcmc, AG.sgmcmc.sgld, AG.bayes_optimal.bayes_optimal)
for factory in FACTORIES:
    case(factory, "unknown-kwarg", call(factory, not_a_hyperparameter=1), TE, "not_a_hyperparameter")
AGENT_CLASSES = (AG.ensemble.EnsembleAgent, AG.bbb.BBBAgent, AG.deep_kernel.DeepKernelAgent, AG.dropout.DropoutAgent,
                 AG.epinet.EpinetAgent, AG.hypermodel.HypermodelAgent, AG.nonparametric.KNNAgent,
                 AG.nonparametric.RandomForestAgent, AG.sgmcmc.SGMCMCAgent, AG.bayes_optimal.BayesOptimalAgent,
                 AG.UniformAgent, AG.JaxAgent, AG.NeuralAgent)
for cls in AGENT_CLASSES:
    case(cls, "unknown-kwarg", call(cls, not_a_hyperparameter=1), TE, "not_a_hyperparameter")
    if "num_classes" in getattr(cls, "__dataclass_fields__", {}):
        case(cls, "num_classes-1", call(cls, num_classes=1), VE, "num_classes")
case(AG.base.check_query, "x-nan", call(AG.base.check_query, np.full((3, 2), np.nan), 2), VE, "x")
case(AG.base.check_query, "x-wrong-d", call(AG.base.check_query, np.zeros((3, 5)), 2), VE, "x")
case(AG.base.check_query, "num_samples-0", call(AG.base.check_query, np.zeros((3, 2)), 2, 0), VE, "num_samples")
case(AG.base.check_training_data, "y-rows", call(AG.base.check_training_data, np.zeros((4, 2)), np.zeros(3, int), None),
     VE, "y")
case(AG.base.check_training_data, "prior-dict",
     call(AG.base.check_training_data, np.zeros((4, 2)), np.zeros(4, int), {"input_dim": 2}), TE, "prior")
case(AG.base.check_fit_memory, "num_train-neg",
     lambda: AG.base.check_fit_memory(AG.make("mlp"), -1, 2, 2), VE, "num_train")
case(AG.base.check_sample_memory, "num_samples-0",
     lambda: AG.base.check_sample_memory(AG.make("mlp"), 0, 3, 2, 2), VE, "num_samples")
case(AG.base.register, "name-int", call(AG.base.register, 3), TE, "name")
case(AG.base.register, "name-empty", call(AG.base.register, ""), VE, "name")
case(jtk.agents.records.make_agent, "not-a-mapping", call(jtk.agents.records.make_agent, "mlp"), TE, "config")
case(jtk.agents.records.make_agent, "not-registered", call(jtk.agents.records.make_agent, {"name": "ensembel"}), VE, "agent registered")
case(jtk.agents.records.agent_config, "hyperparameters-list",
     lambda: jtk.agents.records.agent_config(AG.make("mlp"), hyperparameters=[1]), TE, "hyperparameters")


# display and widget helpers that take data: a wrong object is named (first argument a string)
for fn, arg, nargs, exc in [
        (ZOO.flat_mlp, "key", 2, TE)]:
    case(fn, f"{arg}-text", call(fn, "bad-text", *[None] * (nargs - 1)), exc, arg)
KNN_POST = functools.lru_cache(None)(lambda: jtk.agents.make("knn").fit(X(), Y()))
for meth in ("probs", "components"):
    case(getattr(jtk.agents.nonparametric.ClassifierPosterior, meth), "x-wrong-d",
         lambda m=meth: getattr(KNN_POST(), m)(np.zeros((3, 5))), VE, "x")
    case(getattr(jtk.agents.nonparametric.ClassifierPosterior, meth), "x-nan",
         lambda m=meth: getattr(KNN_POST(), m)(np.full((3, X().shape[1]), np.nan)), VE, "x")
case(jtk.agents.base.as_mixture, "not-a-mixture-is-None", lambda: jtk.agents.base.as_mixture(object()), None, "")


def test_agents_make_suggests_close_names():
    with pytest.raises(TypeError, match="did you mean 'num_members'"):
        jtk.agents.make("ensemble", num_member=3)
    with pytest.raises(TypeError, match="did you mean 'num_members'"):
        jtk.testbed.bandit.run("ensemble", horizon=5, seeds=1, agent_kwargs={"num_membres": 3}, progress=False)


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
