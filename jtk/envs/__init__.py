"""Generative models: the coin example, the testbed classification prior, regression problems, the GP oracle, the UCI tables.

The bottom of jtk's models: the package may import the platform (jtk's top-level modules) only
(tests/test_architecture.py)."""

from jtk.envs.classification import MLPClassification
from jtk.envs.coin import Coin
from jtk.envs.gp import GPSplit, ReLUKernelGP, relu_kernel, toy_split_1d
from jtk.envs.regression import PolynomialRegression, SinusoidRegression, StyblinskiTangRegression
from jtk.envs.uci import UCI_DATASETS, UCIChecksumError, load_uci

__all__ = ["Coin", "GPSplit", "MLPClassification", "PolynomialRegression", "ReLUKernelGP", "SinusoidRegression",
           "StyblinskiTangRegression", "UCI_DATASETS", "UCIChecksumError", "load_uci", "relu_kernel",
           "toy_split_1d"]
