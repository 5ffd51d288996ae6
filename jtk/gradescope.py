"""Deprecated alias of :mod:`jtk.course.gradescope` (#48 moved it): ``import jtk.gradescope`` warns once and gives that very
module, so ``jtk.gradescope.X is jtk.course.gradescope.X`` and setting a name on one sets it on the other."""
# jtk: alias

import sys
import warnings

import jtk.course.gradescope as _module

warnings.warn("jtk.gradescope is deprecated; use jtk.course.gradescope", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _module

if __name__ == "__main__":  # an autograder bundle built before #48 runs python -m jtk.gradescope /autograder
    _module.run_autograder(sys.argv[1] if len(sys.argv) > 1 else "/autograder")
