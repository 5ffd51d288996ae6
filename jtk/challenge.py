"""Deprecated alias of :mod:`jtk.course.challenge` (#48 moved it): ``import jtk.challenge`` warns once and gives that very
module, so ``jtk.challenge.X is jtk.course.challenge.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.challenge as _module

warnings.warn("jtk.challenge is deprecated; use jtk.course.challenge", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
