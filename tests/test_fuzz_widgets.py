"""Bad inputs to jtk.widgets (the apps and their pure update functions)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import functools

import pandas as pd
import pytest

import jtk
import jtk.widgets.bandit as WBANDIT
import jtk.widgets.coins as WCOINS
import jtk.widgets.coverage as WCOV
import jtk.widgets.ensembles as WENS
import jtk.widgets.joint as WJOINT
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (call, case, cases, refused_clearly, TE, VE)

# --- widgets (builders and their pure update functions)
W = jtk.widgets
case(jtk.widgets.coin_flip_app, "seed-neg", call(W.coin_flip_app, seed=-1), VE, "seed")
case(jtk.widgets.coin_flip_app, "seed-2**32", call(W.coin_flip_app, seed=2 ** 32), VE, "seed")
case(jtk.widgets.coin_flip_app, "seed-str", call(W.coin_flip_app, seed="0"), TE, "seed")
case(jtk.widgets.decision_app, "horizon-0", call(W.decision_app, horizon=0), VE, "horizon")
case(jtk.widgets.decision_app, "horizon>max", call(W.decision_app, horizon=60, max_horizon=50), VE, "horizon")
case(jtk.widgets.joint_grid_app, "flips-0", call(W.joint_grid_app, flips=0), VE, "flips")
case(jtk.widgets.joint_grid_app, "flips-huge", call(W.joint_grid_app, flips=40), VE, "flips")
case(jtk.widgets.joint_grid_app, "coins-not-mapping", call(W.joint_grid_app, coins=[1, 2]), TE, "coins")
case(jtk.widgets.BanditExplorer, "num_problems-0", call(W.BanditExplorer, num_problems=0), VE, "num_problems")
case(jtk.widgets.BanditExplorer, "max_horizon-float", call(W.BanditExplorer, max_horizon=10.0), TE, "max_horizon")
case(jtk.widgets.BanditExplorer, "max_horizon-huge", call(W.BanditExplorer, max_horizon=10 ** 13), VE, "max_horizon")
case(jtk.widgets.JointPredictions, "resolution-0", call(W.JointPredictions, resolution=0), VE, "resolution")
case(jtk.widgets.JointPredictions, "resolution-huge", call(W.JointPredictions, resolution=10 ** 6), VE, "resolution")
case(jtk.widgets.JointPredictions, "num_train_values-empty", call(W.JointPredictions, num_train_values=()), VE,
     "num_train_values")
case(jtk.widgets.joint_predictions_app, "temperature-0", call(W.joint_predictions_app, temperature=0.0, background=False), VE,
     "temperature")
case(jtk.widgets.coverage_app, "results-none", call(W.coverage_app, None), TE, "results")
case(jtk.widgets.ensemble_app, "comp-none", call(W.ensemble_app, None), TE, "comp")
case(jtk.widgets.query_app, "state-wrong", call(W.query_app, state=3), TE, "state")
case(jtk.widgets.bandit_app, "explorer-none", call(W.bandit_app, None), TE, "explorer")

# the coin widgets' pure update functions
for fn in (WCOINS.joint_table, WCOINS.joint_grid_update, WCOINS.joint_grid_figure):
    case(fn, "flips-0", call(fn, 0), VE, "flips")
    case(fn, "flips-float", call(fn, 2.0), TE, "flips")
case(WCOINS.hidden_biases, "coins-list", call(WCOINS.hidden_biases, [1]), TE, "coins")
case(WCOINS.hidden_biases, "seed-neg", call(WCOINS.hidden_biases, seed=-1), VE, "seed")
case(WCOINS.draw_flip, "bias-2", call(WCOINS.draw_flip, 2.0, 0, 0, 0), VE, "bias")
case(WCOINS.draw_flip, "flip_number-neg", call(WCOINS.draw_flip, 0.5, 0, 0, -1), VE, "flip_number")
for fn in (WCOINS.flip_update, WCOINS.flip_figure):
    case(fn, "history-outcome-2", call(fn, [(0, 2)]), VE, "history")
    case(fn, "history-str", call(fn, "HT"), VE, "history[0]")
case(WCOINS.decision_figure, "horizon-0", call(WCOINS.decision_figure, 0), VE, "horizon")
case(WCOINS.decision_totals_html, "not-a-frame", call(WCOINS.decision_totals_html, [1], 3), TE, "table")

# the joint-predictions widget's pure functions
JP = functools.lru_cache(None)(lambda: W.JointPredictions(resolution=8, num_train_values=(10,)))
case(WJOINT.environment_update, "temperature-0", lambda: WJOINT.environment_update(JP(), 0.0, 0, 10), VE, "temperature")
case(WJOINT.environment_update, "model-wrong", call(WJOINT.environment_update, None, 0.1, 0, 10), TE, "model")
case(WJOINT.environment_figure, "seed-neg", lambda: WJOINT.environment_figure(JP(), 0.1, -1, 10), VE, "seed")
case(WJOINT.agent_update, "agent-unknown", lambda: WJOINT.agent_update(JP(), "nope", 0.1, 0, 10), VE, "agent")
case(WJOINT.agent_figure, "agent-unknown", lambda: WJOINT.agent_figure(JP(), "nope", 0.1, 0, 10), VE, "agent")
case(WJOINT.kl_update, "tau-0", lambda: WJOINT.kl_update(JP(), 0.1, 0, 10, 0), VE, "tau")
case(WJOINT.kl_figure, "tau-0", lambda: WJOINT.kl_figure(JP(), 0.1, 0, 10, 0), VE, "tau")
case(WJOINT.kl_table, "taus-empty", lambda: WJOINT.kl_table(JP(), 0.1, 0, taus=()), VE, "taus")
case(WJOINT.temperature_figure, "temperatures-empty", lambda: WJOINT.temperature_figure(JP(), temperatures=()), VE,
     "temperatures")
case(WJOINT.fit_status, "seconds-neg", call(WJOINT.fit_status, 0.1, 0, seconds=-1.0), VE, "seconds")

for fn, arg, nargs, exc in [
        (WCOV.coverage_text, "covered", 2, TE), (WCOV.fit_panel_data, "results", 5, TE),
        (WCOV.sweep_panel_data, "results", 4, TE), (WENS.comparison_figure, "comp", 3, TE),
        (WENS.comparison_update, "comp", 3, TE), (WENS.kl_summary, "results", 1, TE),
        (WENS.kl_vs_num_train_figure, "results", 1, TE), (WENS.kl_wins, "results", 1, TE),
        (WBANDIT.curves_view, "explorer", 4, TE), (WBANDIT.regret_table, "explorer", 1, TE),
        (WBANDIT.run_times, "explorer", 1, TE), (WBANDIT.expected_seconds, "explorer", 2, TE),
        (WBANDIT.pulls_view, "explorer", 6, TE), (WBANDIT.figure_data, "explorer", 5, TE),
        (WENS.kl_prior_effect, "results", 1, TE)]:
    case(fn, f"{arg}-text", call(fn, "bad-text", *[None] * (nargs - 1)), exc, arg)
case(WBANDIT.run_status, "temperature-0", call(WBANDIT.run_status, "mlp", 2, 0.0), VE, "temperature")
case(WBANDIT.run_status, "elapsed-neg", call(WBANDIT.run_status, "mlp", 2, 0.1, elapsed=-1.0), VE, "elapsed")
case(WBANDIT.run_status, "agent-int", call(WBANDIT.run_status, 3, 2, 0.1), TE, "agent")
case(WBANDIT.draw, "fig-str", call(WBANDIT.draw, "fig", None, "mlp", 2, 10, 0.1), TE, "fig")
case(WCOV.draw, "fig-str", call(WCOV.draw, "fig", {}, 0.5, "BLR", 2, 0.0), TE, "fig")
case(WCOV.explorer_alt, "fit-empty", call(WCOV.explorer_alt, {}, pd.DataFrame(), 0.5, "BLR"), VE, "fit x_train")


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
