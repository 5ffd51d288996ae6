"""Generative models: the coin example, the testbed classification prior, regression problems."""

from jtk.envs.classification import MLPClassification
from jtk.envs.coin import Coin
from jtk.envs.gp import GPSplit, ReLUKernelGP, relu_kernel, toy_split_1d

__all__ = ["Coin", "GPSplit", "MLPClassification", "ReLUKernelGP", "relu_kernel", "toy_split_1d"]
