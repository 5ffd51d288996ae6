"""Deprecated alias of :mod:`jtk.course.sandbox` (#48 moved it): ``import jtk.sandbox`` warns once and gives that very
module, so ``jtk.sandbox.X is jtk.course.sandbox.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.sandbox as _module

warnings.warn("jtk.sandbox is deprecated; use jtk.course.sandbox", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
