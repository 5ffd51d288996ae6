"""The names #19 moved keep working for a deprecation period, warn, and are the very same objects as the new ones."""

from __future__ import annotations

import pytest

import jtk
from jtk import agents, ppc, regression, results
from jtk.agents import base, records
from jtk.ppc import active
from jtk.regression import coverage
from jtk.testbed import runs

MOVED = [(agents, name, regression, name) for name in (
    "BBBRegression", "BLRPosterior", "BayesianLinearRegression", "DeepRegression", "DeepRegressionPosterior",
    "GPRegression", "GaussianProcessPosterior", "MonteCarloGP", "SGLDRegression", "make_regression")]
MOVED += [(agents, "Prior", base, "ProblemInfo")]
MOVED += [(active, name, ppc, name) for name in active._MOVED_TO_PPC]
MOVED += [(coverage, "summarise", coverage, "summarize")]
MOVED += [(results, name, runs, name) for name in ("verify", "evaluate_to_file", "problems_from_record")]
MOVED += [(results, name, records, name) for name in ("agent_config", "make_agent")]


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
    for module in (jtk.agents, active, coverage, results):
        with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
            getattr(module, "no_such_name")


def _forget_grading(monkeypatch):
    """Imports of jtk.grading below run its module code again (and warn again)."""
    import sys

    monkeypatch.delitem(sys.modules, "jtk.grading", raising=False)
    if "grading" in vars(jtk):  # (getattr would import it through jtk.__getattr__)
        monkeypatch.delattr(jtk, "grading")


def test_jtk_grading_is_jtk_checks(monkeypatch):
    import jtk.checks

    _forget_grading(monkeypatch)
    with pytest.warns(DeprecationWarning, match=r"jtk\.grading is deprecated; use jtk\.checks"):
        from jtk import grading
    assert grading is jtk.checks and grading.check_coin_joint is jtk.checks.check_coin_joint
    _forget_grading(monkeypatch)
    with pytest.warns(DeprecationWarning, match=r"jtk\.grading is deprecated"):
        import jtk.grading
    assert jtk.grading is jtk.checks


def test_patching_the_old_name_patches_the_checks_and_the_guard_covers_both(monkeypatch):
    """A student cannot patch ``jtk.grading.X`` to beat ``jtk.checks.X``: one module, one guard."""
    import jtk.checks

    _forget_grading(monkeypatch)
    with pytest.warns(DeprecationWarning):
        import jtk.grading as old
    monkeypatch.setattr(old, "run_check", lambda *a, **k: None)
    assert jtk.checks.run_check is old.run_check
    monkeypatch.undo()
    from jtk.course import _answers, _judge

    check = _judge.check_by_name("try_then_commit")
    via_old_name = _answers.capture(lambda b, p, h: old.try_then_commit_value(b, p, h), ((0.5,), (1.0,), 2),
                                    forbidden=check.forbidden)
    assert isinstance(via_old_name, _answers.Raised) and via_old_name.kind == "uses_reference"


def test_problem_training_key_is_training_problem():
    problem = jtk.testbed.paper_problems()[0]
    with pytest.warns(DeprecationWarning, match=r"Problem\.training_key is deprecated; use "
                                                r"jtk\.testbed\.Problem\.training_problem"):
        old = problem.training_key
    assert old == problem.training_problem and old.tau == 1


# #19, widgets: one naming scheme (``<topic>_app``) and no fitting or scoring in jtk.widgets.
def _widget_moves():
    import jtk.ppc.active
    import jtk.testbed.ensemble_study
    import jtk.envs.classification
    import jtk.likelihood
    import jtk.widgets
    from jtk.widgets import active as wa
    from jtk.widgets import bandit as wb
    from jtk.widgets import coverage as wc
    from jtk.widgets import ensembles as we

    moves = [(jtk.widgets, "build_toy_app", jtk.widgets, "query_app"),
             (jtk.widgets, "build_bandit_app", jtk.widgets, "bandit_app"),
             (jtk.widgets, "build_coverage_app", jtk.widgets, "coverage_app"),
             (jtk.widgets, "build_comparison", jtk.testbed.ensemble_study, "make_ensemble_comparison"),
             (jtk.widgets, "kl_vs_num_train", jtk.testbed.ensemble_study, "kl_vs_num_train"),
             (wa, "build_toy_app", wa, "query_app"), (wb, "build_bandit_app", wb, "bandit_app"),
             (wc, "build_coverage_app", wc, "coverage_app"),
             (we, "build_comparison", jtk.testbed.ensemble_study, "make_ensemble_comparison"),
             (we, "kl_by_tau", jtk.likelihood, "mixture_kl_by_tau"),
             (jtk.widgets, "make_toy_state", jtk.ppc.active, "make_toy_state"),
             (jtk.widgets, "toy_view", jtk.ppc.active, "toy_view"),
             (wa, "make_toy_state", jtk.ppc.active, "make_toy_state"), (wa, "toy_view", jtk.ppc.active, "toy_view"),
             (wa, "default_toy_models", jtk.ppc.active, "default_toy_models")]
    moves += [(we, name, jtk.testbed.ensemble_study, name) for name in (
        "FitSettings", "fit_ensembles", "member_probs", "member_label_logprobs", "probability_grid",
        "kl_vs_num_train", "CHUNK", "TEST_POOL")]
    moves += [(we, "environment_data", jtk.testbed.ensemble_study, "lab_data")]
    return moves


@pytest.mark.parametrize("i", range(len(_widget_moves())))
def test_old_widget_name_warns_and_is_the_new_object(i):
    old_module, old, new_module, new = _widget_moves()[i]
    with pytest.warns(DeprecationWarning, match=rf"^{old_module.__name__}\.{old} is deprecated; use "
                                                rf"{new_module.__name__}\.{new}$"):
        got = getattr(old_module, old)
    assert got is getattr(new_module, new)


def test_unknown_widget_names_still_raise_attribute_error():
    import jtk.widgets
    from jtk.widgets import active, ensembles

    for module in (jtk.widgets, active, ensembles):
        with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
            getattr(module, "no_such_name")


def test_coin_decision_values_moved_to_the_library():
    from jtk.envs import coin
    from jtk.widgets import coins as wc

    for name in ("expected_cumulative_heads", "decision_summary"):
        with pytest.warns(DeprecationWarning, match=rf"^jtk\.widgets\.coins\.{name} is deprecated; use "
                                                    rf"jtk\.envs\.coin\.{name}$"):
            assert getattr(wc, name) is getattr(coin, name)


# #48: the flat modules moved into packages; the old paths are the very modules of the new ones, and warn once.
OLD_PATHS = {"jtk.active": "jtk.ppc.active", "jtk.bandit": "jtk.testbed.bandit",
             "jtk.coverage": "jtk.regression.coverage", "jtk.ensemble_study": "jtk.testbed.ensemble_study",
             "jtk.sweep": "jtk.testbed.sweep",
             **{f"jtk.{m}": f"jtk.course.{m}" for m in ("challenge", "exercises", "export", "gradebook", "gradescope",
                                                       "labs", "nbgrader", "sandbox")}}


def _forget(monkeypatch, name):
    import sys

    monkeypatch.delitem(sys.modules, name, raising=False)
    short = name.rpartition(".")[2]
    if short in vars(jtk):
        monkeypatch.delattr(jtk, short)


@pytest.mark.parametrize("old, new", OLD_PATHS.items())
def test_an_old_module_path_warns_and_is_the_new_module(monkeypatch, old, new):
    import importlib

    module = importlib.import_module(new)
    _forget(monkeypatch, old)
    with pytest.warns(DeprecationWarning, match=rf"^{old.replace('.', '[.]')} is deprecated; use {new.replace('.', '[.]')}$"):
        got = importlib.import_module(old)
    assert got is module
    _forget(monkeypatch, old)
    with pytest.warns(DeprecationWarning, match="is deprecated"):
        got = getattr(jtk, old.rpartition(".")[2])
    assert got is module
    assert old.rpartition(".")[2] in jtk._DEPRECATED_SUBMODULES


def test_patching_through_an_old_path_patches_the_module_that_owns_the_name(monkeypatch):
    import jtk.testbed.sweep

    _forget(monkeypatch, "jtk.sweep")
    with pytest.warns(DeprecationWarning):
        import jtk.sweep as old
    monkeypatch.setattr(old, "RESULTS_CSV", "elsewhere.csv")
    assert jtk.testbed.sweep.RESULTS_CSV == "elsewhere.csv"


def test_engine_settings_are_not_copied_into_the_testbed_package():
    """``monkeypatch.setattr(jtk.testbed, "MEMBERS_PER_CHUNK", ...)`` would change a copy the engine never reads: the
    package refuses the name and says where it lives."""
    import jtk.testbed.engine

    with pytest.raises(AttributeError, match=r"jtk\.testbed\.engine\.MEMBERS_PER_CHUNK"):
        jtk.testbed.MEMBERS_PER_CHUNK
    assert jtk.testbed.engine.MEMBERS_PER_CHUNK > 0


def test_jtk_checks_is_the_course_checks_module_without_a_warning():
    import jtk.checks
    import jtk.course.checks

    assert jtk.checks is jtk.course.checks and "checks" in jtk._SUBMODULES


def test_the_old_gradescope_command_still_grades(tmp_path):
    """An autograder bundle built before #48 runs ``python -m jtk.gradescope``: it warns and runs the new module."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-m", "jtk.gradescope",
                           str(tmp_path / "no-autograder")],
                          capture_output=True, text=True, timeout=300)
    assert "jtk.gradescope is deprecated; use jtk.course.gradescope" in done.stderr
    assert done.returncode == 0 and (tmp_path / "no-autograder" / "results" / "results.json").is_file(), done.stderr


def test_jtk_checks_imports_without_a_warning():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           "import jtk.checks, jtk.testbed, jtk.ppc, jtk.regression.coverage"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
