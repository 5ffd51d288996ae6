"""The names #19 moved keep working for a deprecation period, warn, and are the very same objects as the new ones."""

from __future__ import annotations

import pytest

import jtk
from jtk import active, agents, ppc, regression
from jtk.agents import base

MOVED = [(agents, name, regression, name) for name in (
    "BBBRegression", "BLRPosterior", "BayesianLinearRegression", "DeepRegression", "DeepRegressionPosterior",
    "GPRegression", "GaussianProcessPosterior", "MonteCarloGP", "SGLDRegression", "make_regression")]
MOVED += [(agents, "Prior", base, "ProblemInfo")]
MOVED += [(active, name, ppc, name) for name in active._MOVED_TO_PPC]


@pytest.mark.parametrize("old_module, old, new_module, new", MOVED, ids=[f"{m.__name__}.{o}" for m, o, _, _ in MOVED])
def test_old_name_warns_and_is_the_new_object(old_module, old, new_module, new):
    with pytest.warns(DeprecationWarning, match=rf"{old_module.__name__}\.{old} is deprecated; use "
                                                rf"{new_module.__name__}\.{new}"):
        got = getattr(old_module, old)
    assert got is getattr(new_module, new)


def test_from_import_of_an_old_name_works():
    with pytest.warns(DeprecationWarning, match="jtk.agents.Prior is deprecated"):
        from jtk.agents import Prior
    assert Prior(input_dim=2, num_classes=2, num_train=4) == base.ProblemInfo(input_dim=2, num_classes=2, num_train=4)


def test_unknown_names_still_raise_attribute_error():
    for module in (jtk.agents, jtk.active):
        with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
            getattr(module, "no_such_name")
