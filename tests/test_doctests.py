"""The examples in jtk's docstrings run and print what they say (doctest, every module of the package)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import jtk

# jtk.checks is jtk.course.checks under the students' name: its examples run once, under the module's own name.
MODULES = sorted(m.name for m in pkgutil.walk_packages(jtk.__path__, "jtk.")
                 if m.name.removeprefix("jtk.") not in jtk._ALIAS_SUBMODULES)


def test_every_module_is_found():
    assert {"jtk.testbed", "jtk.results", "jtk.regression.deep", "jtk.likelihood"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
