"""What an instructor runs: the exercise checks students call (:mod:`~jtk.course.checks`, also importable as
``jtk.checks``), building and grading exercises (:mod:`~jtk.course.exercises`) in a sandboxed worker
(:mod:`~jtk.course.sandbox`), the grade book and Gradescope (:mod:`~jtk.course.gradebook`,
:mod:`~jtk.course.gradescope`), nbgrader (:mod:`~jtk.course.nbgrader`), the labs a wheel carries
(:mod:`~jtk.course.labs`), static interactive pages (:mod:`~jtk.course.export`) and the class challenge
(:mod:`~jtk.course.challenge`); privately, the judge, the answer records and the wire between grader and worker. It
may import everything below it (the platform, envs, agents, regression, testbed, ppc, plots, widgets); only
:mod:`jtk.cli` imports it (tests/test_architecture.py). Submodules load on first use: a student's
``from jtk import checks`` loads nothing else of the course.
"""

import importlib as _importlib

__all__ = ["challenge", "checks", "exercises", "export", "gradebook", "gradescope", "labs", "nbgrader", "sandbox"]


def __getattr__(name: str):
    if name in __all__:
        return _importlib.import_module(f"jtk.course.{name}")
    raise AttributeError(f"module 'jtk.course' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
