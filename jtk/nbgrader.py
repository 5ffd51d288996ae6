"""Deprecated alias of :mod:`jtk.course.nbgrader` (#48 moved it): ``import jtk.nbgrader`` warns once and gives that very
module, so ``jtk.nbgrader.X is jtk.course.nbgrader.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.nbgrader as _module

warnings.warn("jtk.nbgrader is deprecated; use jtk.course.nbgrader", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
