"""Agents: anything with ``fit(x, y, seed, prior) -> posterior``; jtk's are built by name.

>>> import jtk
>>> agent = jtk.agents.make("ensemble+", num_members=10)
>>> "ensemble+" in jtk.agents.names()
True
"""

from jtk.agents.base import Agent, JaxAgent, JaxPosterior, Posterior, Prior, fit_many, make, names, register
from jtk.agents.baseline import UniformAgent
from jtk.agents.ensemble import EnsembleAgent
from jtk.agents.gp import GaussianProcessPosterior, GPRegression, MonteCarloGP
from jtk.agents.bnn_regression import BBBRegression, SGLDRegression
from jtk.agents.blr import BayesianLinearRegression, BLRPosterior
from jtk.agents.deep_regression import DeepRegression, DeepRegressionPosterior, make_regression
# The agent zoo: importing the modules registers their agents.
from jtk.agents import bayes_optimal, bbb, deep_kernel, dropout, epinet, hypermodel, nonparametric, sgmcmc  # noqa: F401

__all__ = ["Agent", "BBBRegression", "BayesianLinearRegression", "BLRPosterior", "DeepRegression",
           "DeepRegressionPosterior", "EnsembleAgent", "GaussianProcessPosterior", "GPRegression", "JaxAgent",
           "JaxPosterior", "MonteCarloGP", "Posterior", "Prior", "SGLDRegression", "UniformAgent",
           "fit_many", "make", "make_regression", "names", "register"]
