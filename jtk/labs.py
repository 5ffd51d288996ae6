"""Deprecated alias of :mod:`jtk.course.labs` (#48 moved it): ``import jtk.labs`` warns once and gives that very
module, so ``jtk.labs.X is jtk.course.labs.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.labs as _module

warnings.warn("jtk.labs is deprecated; use jtk.course.labs", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
