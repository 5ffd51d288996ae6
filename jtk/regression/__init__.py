"""Regression models with a joint posterior over functions (Schmähling et al.; Wang et al.).

Every model here follows one protocol (:class:`jtk.regression.base.RegressionPosterior`): ``fit(x, y)`` returns a
posterior with ``sample_functions(x, num_samples, seed)`` → [M, n] coherent function draws, ``predict(x)`` → (mean,
std) and ``covariance(x)`` → [n, n], so coverage (:mod:`jtk.regression.coverage`, the study of Schmähling et al.,
which lives here), transductive active learning (``jtk.ppc.active``) and XLL (``jtk.ppc``) work with any of them.
The package may import the platform (jtk's top-level modules) and :mod:`jtk.envs`; never :mod:`jtk.agents`,
:mod:`jtk.testbed`, :mod:`jtk.ppc` or anything above them (tests/test_architecture.py). ``coverage`` is a submodule,
not re-exported (its ``summarize`` and ``sweep`` are the study's).

The public surface of a study module (:mod:`~jtk.regression.coverage_study`,
:mod:`~jtk.regression.coverage_readings`) is its command, ``main(argv)`` (``argv`` a list of str, or None for the
command line; ``python -m MODULE`` and ``jtk reproduce`` call it), and the few functions that another module, a
notebook or a page calls, named in its ``__all__``; each checks its arguments at entry (tests/test_fuzz_regression.py
holds a bad-input case for every one). Its other functions are the study's internals: importable (its tests use
them), not documented, and free to change.

>>> import numpy as np, jtk
>>> env = jtk.envs.PolynomialRegression()
>>> x, y = env.sample_train(seed=0)
>>> mean, std = jtk.regression.BayesianLinearRegression(env.features, env.noise_std).fit(x, y).predict(env.test_inputs())
>>> mean.shape == std.shape
True
"""

from jtk.regression.base import RegressionPosterior, SampledRegressionPosterior
from jtk.regression.blr import BayesianLinearRegression, BLRPosterior
from jtk.regression.bnn import BBBRegression, SGLDRegression
from jtk.regression.deep import DeepRegression, DeepRegressionPosterior, make_regression
from jtk.regression.fbnn import FBNNPosterior, FBNNRegression
from jtk.regression.gp import GaussianProcessPosterior, GPRegression, MonteCarloGP
from jtk.regression.hmc import HMCPosterior, HMCRegression
from jtk.regression.nng import KFACWeightPosterior, NNGRegression

__all__ = ["BBBRegression", "BLRPosterior", "BayesianLinearRegression", "DeepRegression", "DeepRegressionPosterior",
           "FBNNPosterior", "FBNNRegression", "GPRegression", "GaussianProcessPosterior", "HMCPosterior",
           "HMCRegression", "KFACWeightPosterior", "MonteCarloGP", "NNGRegression", "RegressionPosterior",
           "SGLDRegression", "SampledRegressionPosterior", "make_regression"]


def __getattr__(name: str):
    """``jtk.regression.coverage`` (the study) loads on first use."""
    if name == "coverage":
        import importlib

        return importlib.import_module("jtk.regression.coverage")
    raise AttributeError(f"module 'jtk.regression' has no attribute {name!r}")
