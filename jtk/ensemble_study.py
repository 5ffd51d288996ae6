"""Deprecated alias of :mod:`jtk.testbed.ensemble_study` (#48 moved it): ``import jtk.ensemble_study`` warns once
and gives that very module, so ``jtk.ensemble_study.X is jtk.testbed.ensemble_study.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.testbed.ensemble_study as _module

warnings.warn("jtk.ensemble_study is deprecated; use jtk.testbed.ensemble_study", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module
