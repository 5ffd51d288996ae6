"""Deprecated alias of :mod:`jtk.regression.coverage` (#48 moved it): ``import jtk.coverage`` warns once and gives that very module, so
``jtk.coverage.X is jtk.regression.coverage.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.regression.coverage as _module

warnings.warn("jtk.coverage is deprecated; use jtk.regression.coverage", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
