"""Deprecated alias of :mod:`jtk.testbed.sweep` (#48 moved it): ``import jtk.sweep`` warns once and gives that very module, so
``jtk.sweep.X is jtk.testbed.sweep.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.testbed.sweep as _module

warnings.warn("jtk.sweep is deprecated; use jtk.testbed.sweep", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
