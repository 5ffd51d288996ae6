"""ipywidgets apps for the notebooks: one builder per app, pure update functions tested in tests/.

The package wires controls to the library; it may import everything below it (the platform, models, studies and
:mod:`jtk.plots`), never :mod:`jtk.course` (whose export renders its apps) or :mod:`jtk.cli`
(tests/test_architecture.py).

Naming: ``<topic>_app(...)`` builds and returns an app; constructors of the state an app indexes are named for
what they build and live in the library with the fitting and scoring (``jtk.ppc.active.make_toy_state``,
``jtk.testbed.ensemble_study.make_ensemble_comparison``), never here.
"""

from jtk.widgets import active, bandit, coins, coverage, ensembles, joint  # noqa: F401
from jtk.widgets._app import CAPTION_CLASS, App
from jtk.widgets.active import query_app
from jtk.widgets.bandit import BanditExplorer, bandit_app
from jtk.widgets.coins import coin_flip_app, decision_app, joint_grid_app
from jtk.widgets.coverage import coverage_app
from jtk.widgets.ensembles import ensemble_app
from jtk.widgets.joint import JointPredictions, joint_predictions_app

__all__ = ["App", "CAPTION_CLASS", "BanditExplorer", "JointPredictions", "bandit_app", "coin_flip_app", "coverage_app", "decision_app",
           "ensemble_app", "joint_grid_app", "joint_predictions_app", "query_app"]
