"""Deprecated alias of :mod:`jtk.course.exercises` (#48 moved it): ``import jtk.exercises`` warns once and gives that very
module, so ``jtk.exercises.X is jtk.course.exercises.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.exercises as _module

warnings.warn("jtk.exercises is deprecated; use jtk.course.exercises", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
