"""Deprecated alias of :mod:`jtk.course.gradebook` (#48 moved it): ``import jtk.gradebook`` warns once and gives that very
module, so ``jtk.gradebook.X is jtk.course.gradebook.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.gradebook as _module

warnings.warn("jtk.gradebook is deprecated; use jtk.course.gradebook", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
