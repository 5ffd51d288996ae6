"""Generative models: the coin example, the testbed classification prior, regression problems."""

from jtk.envs.classification import MLPClassification
from jtk.envs.coin import Coin

__all__ = ["Coin", "MLPClassification"]
