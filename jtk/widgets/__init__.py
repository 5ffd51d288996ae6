"""ipywidgets apps for the notebooks: one builder per app, pure update functions tested in tests/."""

from jtk.widgets import active, bandit, coins, coverage, ensembles, joint  # noqa: F401
from jtk.widgets.active import build_toy_app, make_toy_state, toy_view
from jtk.widgets.bandit import BanditExplorer, build_bandit_app
from jtk.widgets.coverage import build_coverage_app
from jtk.widgets.coins import coin_flip_app, decision_app, joint_grid_app
from jtk.widgets.ensembles import build_comparison, ensemble_app, kl_vs_num_train
from jtk.widgets.joint import JointPredictions, joint_predictions_app
