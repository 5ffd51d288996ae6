"""Deprecated alias of ``jtk.checks`` (:mod:`jtk.course.checks`, the checks exercise notebooks call); ``import
jtk.grading`` warns once and gives the very same module object, so ``jtk.grading.X is jtk.checks.X`` and patching one patches the other."""

import sys
import warnings

import jtk.course.checks as _checks

warnings.warn("jtk.grading is deprecated; use jtk.checks", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _checks
