"""Testbed classification agents: anything with ``fit(x, y, seed, prior) -> posterior``; jtk's are built by name.

>>> import jtk
>>> agent = jtk.agents.make("ensemble+", num_members=10)
>>> "ensemble+" in jtk.agents.names()
True

Regression models live in :mod:`jtk.regression`; the old names here (``jtk.agents.BayesianLinearRegression``, ...)
still work and warn.
"""

import warnings as _warnings

from jtk.agents.base import Agent, JaxAgent, JaxPosterior, Posterior, ProblemInfo, fit_many, make, names, register
from jtk.agents.baseline import UniformAgent
from jtk.agents.ensemble import EnsembleAgent
# The agent zoo: importing the modules registers their agents.
from jtk.agents import bayes_optimal, bbb, deep_kernel, dropout, epinet, hypermodel, nonparametric, sgmcmc  # noqa: F401

__all__ = ["Agent", "EnsembleAgent", "JaxAgent", "JaxPosterior", "Posterior", "ProblemInfo", "UniformAgent",
           "fit_many", "make", "names", "register"]

# Deprecated names: old name -> (module, new name).
_MOVED = {name: ("jtk.regression", name) for name in (
    "BBBRegression", "BLRPosterior", "BayesianLinearRegression", "DeepRegression", "DeepRegressionPosterior",
    "GPRegression", "GaussianProcessPosterior", "MonteCarloGP", "SGLDRegression", "make_regression")}
_MOVED["Prior"] = ("jtk.agents.base", "ProblemInfo")


def __getattr__(name: str):
    """Old names keep working for a deprecation period, with a warning that names the new one."""
    if name in _MOVED:
        import importlib

        module, new = _MOVED[name]
        _warnings.warn(f"jtk.agents.{name} is deprecated; use {module}.{new}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), new)
    raise AttributeError(f"module 'jtk.agents' has no attribute {name!r}")
