"""Testbed classification agents: anything with ``fit(x, y, seed, prior) -> posterior``; jtk's are built by name.

The package owns the agents, their registry and their records in results manifests (:mod:`jtk.agents.records`); it
may import the platform (jtk's top-level modules) and :mod:`jtk.envs`, nothing above (tests/test_architecture.py).

>>> import jtk
>>> agent = jtk.agents.make("ensemble+", num_members=10)
>>> "ensemble+" in jtk.agents.names()
True

Regression models live in :mod:`jtk.regression`.
"""

from jtk.agents.base import (Agent, JaxAgent, JaxMixturePosterior, JaxPosterior, MixturePosterior, NeuralAgent,
                             Posterior, ProblemInfo, as_mixture, fit_many, make, names, register)
from jtk.agents.baseline import UniformAgent
from jtk.agents.ensemble import EnsembleAgent
# The agent zoo: importing the modules registers their agents.
from jtk.agents import bayes_optimal, bbb, deep_kernel, dropout, epinet, hypermodel, nonparametric, sgmcmc  # noqa: F401

__all__ = ["Agent", "EnsembleAgent", "JaxAgent", "JaxMixturePosterior", "JaxPosterior", "MixturePosterior",
           "NeuralAgent", "Posterior", "ProblemInfo", "UniformAgent", "as_mixture", "fit_many", "make", "names",
           "register"]
