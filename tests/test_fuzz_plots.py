"""Bad inputs to jtk.plots (the figures)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jtk.plots.active as PACTIVE
import jtk.plots.bandit as PBANDIT
import jtk.plots.coins as PCOINS
import jtk.plots.colors as COLORS
import jtk.plots.grading as PGRADING
import jtk.plots.intervals as INTERVALS
import jtk.plots.layout as PLAYOUT
import jtk.plots.regression as PREG
import jtk.plots.testbed as PTESTBED
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (call, case, cases, refused_clearly, TE, VE)

# plots: colours and intervals
case(COLORS.to_rgb, "unknown-name", call(COLORS.to_rgb, "not-a-colour"), VE, "color")
case(COLORS.to_rgb, "int", call(COLORS.to_rgb, 3), VE, "color RGB")
case(COLORS.srgb_to_linear, "str", call(COLORS.srgb_to_linear, "abc"), TE, "rgb")
case(COLORS.srgb_to_linear, "nan", call(COLORS.srgb_to_linear, [np.nan, 0.0, 0.0]), VE, "rgb")
case(COLORS.linear_to_srgb, "nan", call(COLORS.linear_to_srgb, [np.nan, 0.0, 0.0]), VE, "linear")
case(COLORS.relative_luminance, "unknown-name", call(COLORS.relative_luminance, "nope"), VE, "color")
case(COLORS.contrast_ratio, "background-unknown", call(COLORS.contrast_ratio, "black", "nope"), VE, "background")
case(COLORS.simulate_cvd, "kind-unknown", call(COLORS.simulate_cvd, ["black"], "martian"), VE, "kind")
case(COLORS.to_lab, "wrong-length", call(COLORS.to_lab, [0.1, 0.2]), VE, "rgb")
case(COLORS.min_cvd_distance, "one-colour", call(COLORS.min_cvd_distance, ["black"]), VE, "colors")
case(COLORS.min_cvd_distance, "str", call(COLORS.min_cvd_distance, "black"), TE, "colors")
case(INTERVALS.wilson_interval, "coverage>1", call(INTERVALS.wilson_interval, np.array([1.5]), 10), VE, "coverage")
case(INTERVALS.wilson_interval, "k-0", call(INTERVALS.wilson_interval, np.array([0.5]), 0), VE, "k")
case(INTERVALS.coverage_yerr, "coverage-neg", call(INTERVALS.coverage_yerr, np.array([-0.5]), 4), VE, "coverage")

for fn, arg, nargs, exc in [
        (PBANDIT.plot_action_map, "actions", 2, VE), (PCOINS.figure_to_png, "fig", 1, TE),
        (PLAYOUT.alt_text, "fig", 1, TE), (PTESTBED.plot_kl_vs_num_train, "results", 1, TE),
        (PACTIVE.tal_criteria_alt, "df", 1, TE), (PACTIVE.plot_tal_criteria, "df", 1, TE),
        (PACTIVE.ppc_panel_alt, "per_model", 6, TE), (PACTIVE.plot_ppc_study, "per_model", 1, TE),
        (PBANDIT.regret_vs_kl_alt, "points", 1, TE), (PBANDIT.plot_regret_vs_kl, "points", 1, TE),
        (PGRADING.misconception_alt, "summary", 2, TE), (PGRADING.misconception_figure, "summary", 2, TE),
        (PREG.sweep_curves, "table", 3, TE), (PREG.sweep_alt, "table", 2, TE), (PREG.plot_sweep, "table", 2, TE),
        (PREG.heatmap_grids, "table", 3, TE), (PREG.heatmaps_alt, "table", 2, TE),
        (PREG.plot_heatmaps, "table", 2, TE), (PTESTBED.kl_vs_num_train_alt, "results", 1, TE),
        (PCOINS.decision_alt, "table", 2, TE), (PCOINS.plot_decision, "table", 2, TE),
        (PTESTBED.kl_paired_differences, "results", 2, TE), (PTESTBED.kl_comparison_title, "results", 2, TE)]:
    case(fn, f"{arg}-text", call(fn, "bad-text", *[None] * (nargs - 1)), exc, arg)
case(PACTIVE.toy_view_alt, "view-empty", call(PACTIVE.toy_view_alt, {}), VE, "view x_grid")
case(PACTIVE.plot_toy_view, "view-list", call(PACTIVE.plot_toy_view, [1]), TE, "view")
case(PACTIVE.plot_toy_views, "views-list", call(PACTIVE.plot_toy_views, [1]), TE, "views")
case(PACTIVE.plot_toy_views, "view-empty", call(PACTIVE.plot_toy_views, {"a": {}}), VE, "views['a']")
case(PLAYOUT.set_alt_text, "target-str", call(PLAYOUT.set_alt_text, "fig", "text"), TE, "target")
TB_AXIS = np.linspace(-1, 1, 4)
for fn in (PTESTBED.environment_alt, PTESTBED.EnvironmentFigure, PTESTBED.plot_environment):
    case(fn, "view-missing-keys", call(fn, {"axis": TB_AXIS}), VE, "view probs")
for fn in (PTESTBED.agent_alt, PTESTBED.AgentFigure, PTESTBED.plot_agent_predictions):
    case(fn, "view-str", call(fn, "view"), TE, "view")
for fn in (PTESTBED.comparison_alt, PTESTBED.ComparisonFigure, PTESTBED.plot_ensemble_comparison):
    case(fn, "view-missing-rows", call(fn, {"axis": TB_AXIS}), VE, "view rows")
for fn in (PTESTBED.kl_tau_alt, PTESTBED.KLTauFigure, PTESTBED.plot_kl_vs_tau):
    case(fn, "tau-past-T", call(fn, {"a": np.ones(3)}, 4), VE, "tau")
    case(fn, "curves-list", call(fn, [np.ones(3)], 1), TE, "curves")
case(PTESTBED.probability_map_alt, "probs-1d", call(PTESTBED.probability_map_alt, np.ones(4)), VE, "probs")
for fn in (PTESTBED.ProbabilityMap, PTESTBED.plot_probability_map):
    case(fn, "axis-scalar", lambda f=fn: f(None, 3.0, np.ones((4, 4))), VE, "axis")
for fn in (PREG.fit_curves, PREG.fit_alt):
    case(fn, "result-dict", call(fn, {"mean": 1}), TE, "result")
case(PREG.plot_fit, "result-none", call(PREG.plot_fit, None, None), TE, "result")
for fn in (PREG.plot_fits, PREG.coverage_profile_alt, PREG.plot_coverage_profile):
    case(fn, "results-empty", call(fn, {}), VE, "results")
    case(fn, "results-value-wrong", call(fn, {"BLR": 1}), TE, "results['BLR']")
COIN_JOINTS = {"a": np.full((2, 2), 0.25)}
for fn in (PCOINS.joint_grids_alt, PCOINS.plot_joint_grids):
    case(fn, "joints-shape-differs", call(fn, {**COIN_JOINTS, "b": np.full(2, 0.5)}), VE, "joints['b']")
    case(fn, "marginals-missing-coin", call(fn, COIN_JOINTS, {"b": 0.5}), VE, "marginals")
    case(fn, "joints-list", call(fn, [np.ones(2)]), TE, "joints")
for fn in (PCOINS.coin_posterior_alt, PCOINS.plot_coin_posterior):
    case(fn, "view-empty", call(fn, {}, ["a"]), VE, "view counts")
    case(fn, "names-str", lambda f=fn: f(dict.fromkeys(PCOINS.COIN_VIEW_KEYS, [(0, 0)]), "a"), TE, "names")
case(PCOINS.DecisionFigure, "table-list", call(PCOINS.DecisionFigure, [1], 3), TE, "table")
case(PCOINS.DecisionFigure, "horizon-0",
     lambda: PCOINS.DecisionFigure(pd.DataFrame({"policy": ["a"], "t": [1], "expected_heads": [0.5]}), 0), VE,
     "horizon")
for fn in (PBANDIT.regret_stats, PBANDIT.plot_regret_curves):
    case(fn, "curves-empty", call(fn, []), VE, "curves")
    case(fn, "curves-ints", call(fn, [1, 2]), TE, "curves")
    case(fn, "curves-frame-no-agent", call(fn, pd.DataFrame({"t": [1]})), VE, "curves agent")
case(PBANDIT.regret_curves_alt, "stats-list", call(PBANDIT.regret_curves_alt, [1]), TE, "stats")
case(PBANDIT.regret_curves_alt, "stats-value-list", call(PBANDIT.regret_curves_alt, {"a": [1]}), TE, "stats['a']")
case(PBANDIT.action_map_alt, "actions-3d", call(PBANDIT.action_map_alt, np.zeros((4, 3)), np.zeros(4)), VE,
     "actions")
case(PBANDIT.action_map_alt, "pulls-length", call(PBANDIT.action_map_alt, np.zeros((4, 2)), np.zeros(4), [1]), VE,
     "pulls")
case(PBANDIT.pulls_alt, "pulls-empty", call(PBANDIT.pulls_alt, "mlp", {}), VE, "pulls actions")
case(PBANDIT.pulls_alt, "agent-int", call(PBANDIT.pulls_alt, 3, {}), TE, "agent")
case(PBANDIT.BanditFigure, "curves-list", call(PBANDIT.BanditFigure, [1], {}, "mlp", 2, 0.1, 3), TE, "curves")
case(PBANDIT.BanditFigure, "pulls-empty",
     call(PBANDIT.BanditFigure, pd.DataFrame({"agent": ["a"]}), {}, "mlp", 2, 0.1, 3), VE, "pulls")


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
