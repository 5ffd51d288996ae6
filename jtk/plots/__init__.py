"""Matplotlib / seaborn figures, one module a topic; every figure is titled and labelled.

The package draws results the studies computed; it may import the platform and the packages of models and studies
(envs, agents, regression, testbed, ppc), never widgets, course or cli (tests/test_architecture.py)."""

from jtk.plots import active, bandit, coins, regression, testbed  # noqa: F401
from jtk.plots.active import plot_ppc_study, plot_tal_criteria, plot_toy_view

__all__ = ["active", "bandit", "coins", "plot_ppc_study", "plot_tal_criteria", "plot_toy_view", "regression",
           "testbed"]
