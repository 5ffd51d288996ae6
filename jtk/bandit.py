"""Deprecated alias of :mod:`jtk.testbed.bandit` (#48 moved it): ``import jtk.bandit`` warns once and gives that very module, so
``jtk.bandit.X is jtk.testbed.bandit.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.testbed.bandit as _module

warnings.warn("jtk.bandit is deprecated; use jtk.testbed.bandit", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
