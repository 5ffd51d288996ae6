"""Deprecated alias of :mod:`jtk.course.export` (#48 moved it): ``import jtk.export`` warns once and gives that very
module, so ``jtk.export.X is jtk.course.export.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.export as _module

warnings.warn("jtk.export is deprecated; use jtk.course.export", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
