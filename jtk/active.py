"""Deprecated alias of :mod:`jtk.ppc.active` (#48 moved it): ``import jtk.active`` warns once and gives that very module, so
``jtk.active.X is jtk.ppc.active.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.ppc.active as _module

warnings.warn("jtk.active is deprecated; use jtk.ppc.active", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
