"""Text alternatives of the figures: each ``*_alt`` function says what the data say, checked against the data.

Every figure of a lab stores its alternative (``jtk.plots.layout.alt_text``) and carries it when displayed
(``text/plain`` and the ``image/png`` metadata ``alt``, which ``jtk export`` writes into ``<img alt>``); the apps keep
it in a caption for screen readers.
"""

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from jtk.envs.coin import decision_table  # noqa: E402
from jtk.plots import active as aplots, bandit as bplots, coins as cplots, grading as gplots  # noqa: E402
from jtk.plots import layout, regression as rplots, testbed as tplots  # noqa: E402
from jtk.widgets import coins as wc  # noqa: E402

import _fakes  # noqa: E402


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", text)]


# ------------------------------------------------------------------ the mechanism
def test_a_figure_carries_its_alternative_when_displayed():
    fig = Figure()
    ax = fig.add_subplot()
    layout.set_alt_text(ax, "a panel that says what it shows")
    data, metadata = fig._repr_mimebundle_()
    assert data == {"text/plain": "a panel that says what it shows."}
    assert metadata == {"image/png": {"alt": "a panel that says what it shows."}}
    layout.set_alt_text(fig, "the whole figure")  # the figure's own text wins over its panels'
    assert layout.alt_text(fig) == "the whole figure"
    with pytest.raises(ValueError, match="text must be a non-empty string"):
        layout.set_alt_text(fig, " ")
    with pytest.raises(TypeError, match="target must be a matplotlib Figure or Axes, got str"):
        layout.set_alt_text("fig", "text")


def test_panels_without_their_own_text_are_described_by_title_and_labels():
    fig, (a, b, cbar) = plt.subplots(1, 3)
    fig.suptitle("Two panels")
    a.set(title="left", xlabel="t", ylabel="regret")
    layout.set_alt_text(b, "b shows a histogram")
    cbar.set_label("<colorbar>")  # colour bars are left out
    text = layout.alt_text(fig)
    assert text == "Two panels. Panel 1 of 2: left; regret against t. Panel 2 of 2: b shows a histogram."
    plt.close(fig)


def test_mathtext_labels_read_as_the_plain_notation():
    assert layout.plain_label(r"mean reward $\bar{R}_x$") == "mean reward R\u0304_x"
    assert layout.plain_label(tplots.KL_LABEL % r"\tau" + " (nats)") == "d_KL^τ (nats)"
    fig, ax = plt.subplots()
    ax.hist([0.1, 0.9])
    ax.set(title="sure wins or losses", xlabel=r"mean reward $\bar{R}_x$", ylabel="actions")
    assert layout.alt_text(fig) == "sure wins or losses; actions against mean reward R\u0304_x."
    plt.close(fig)


# ------------------------------------------------------------------ testbed figures
def _fig5_results():
    rows = []
    for seed in range(3):
        for n, (ens, plus) in zip((1, 3, 10, 30, 100), ((5, 4), (4, 3), (3, 2), (1, 1.5), (0.5, 0.6))):
            for tau in (1, 10):
                rows += [{"agent": "ensemble", "num_train": n, "seed": seed, "tau": tau, "kl": ens * tau / 10 + seed},
                         {"agent": "ensemble+", "num_train": n, "seed": seed, "tau": tau,
                          "kl": plus * tau / 10 + seed}]
    return pd.DataFrame(rows)


def test_kl_vs_num_train_alt_names_where_ensemble_plus_is_below():
    results = _fig5_results()
    text = tplots.kl_vs_num_train_alt(results)
    assert "d_KL^10 against num_train: ensemble+ below ensemble for num_train ≤ 10" in text
    assert "d_KL^1 against num_train: ensemble+ below ensemble for num_train ≤ 10" in text
    assert "over 3 seeds" in text and "from 1 to 100" in text
    fig = tplots.plot_kl_vs_num_train(results)
    assert layout.alt_text(fig) == text
    flipped = results.assign(agent=results["agent"].map({"ensemble": "ensemble+", "ensemble+": "ensemble"}))
    assert "d_KL^10 against num_train: ensemble below ensemble+ for num_train ≤ 10" in \
        tplots.kl_vs_num_train_alt(flipped)


def test_values_text_describes_a_subset_of_the_grid():
    grid = [1, 3, 10, 30, 100]
    assert tplots.values_text([1, 3], grid) == "num_train ≤ 3"
    assert tplots.values_text([30, 100], grid) == "num_train ≥ 30"
    assert tplots.values_text([3, 30], grid) == "num_train = 3 and 30"
    assert tplots.values_text(grid, grid) == "every num_train" and tplots.values_text([], grid) == "no num_train"


def test_kl_tau_alt_orders_the_agents_at_the_chosen_tau():
    taus = np.arange(1, 101)
    curves = {"mlp": 0.12 * taus, "ensemble": 0.11 * taus, "ensemble+": 0.075 * taus ** 0.8}
    text = tplots.kl_tau_alt(curves, 10)
    at10 = {a: float(c[9]) for a, c in curves.items()}
    assert f"at τ = 10: ensemble+ {layout.fixed_digits(at10['ensemble+'], 2)}" in text
    assert "(ensemble+ lowest)" in text and "at τ = 100: ensemble+" in text
    live = tplots.KLTauFigure(curves, 10, "title")
    assert live.alt.startswith("title. d_KL^τ in nats against τ from 1 to 100")
    live.update(curves, 1)
    assert "at τ = 1: ensemble+ 0.075, ensemble 0.11, mlp 0.12" in live.alt


def test_probability_maps_report_their_shares_and_points():
    axis = np.linspace(-1, 1, 10)
    probs = np.where(axis[None, :] > 0, 0.95, 0.02) * np.ones((10, 1))  # right half class 1, all sure
    view = {"axis": axis, "probs": probs, "x_train": np.zeros((4, 2)), "y_train": np.array([0, 1, 1, 1]),
            "temperature": 0.1, "seed": 3}
    text = tplots.environment_alt(view)
    assert "temperature 0.1, seed 3" in text and "class 1 is more likely on 50 % of the square" in text
    assert "below 0.1 or above 0.9 on 100 %" in text and "4 training points (3 of class 1" in text
    assert tplots.EnvironmentFigure(view).alt == text


def test_agent_alt_tells_identical_samples_from_disagreeing_ones():
    axis = np.linspace(-1, 1, 10)
    base = np.where(axis[None, :] > 0, 0.9, 0.1) * np.ones((10, 1))
    view = {"axis": axis, "agent": "mlp", "mean": base, "samples": np.stack([base] * 4), "x_train": np.zeros((1, 2)),
            "y_train": np.array([1]), "num_train": 1}
    assert "all of them identical" in tplots.agent_alt(view)
    flipped = base.copy()
    flipped[:, :2] = 0.9  # one sample favours class 1 on two more columns of ten: they disagree on 20 %
    samples = np.stack([base, base, base, flipped])
    text = tplots.agent_alt({**view, "agent": "ensemble+", "samples": samples})
    share = tplots.disagreement(samples).mean()
    assert share == pytest.approx(0.2) and "disagree (some favour class 1, others class 0) on 20 %" in text


def test_comparison_alt_reports_each_agents_disagreement():
    axis = np.linspace(-1, 1, 10)
    base = np.where(axis[None, :] > 0, 0.9, 0.1) * np.ones((10, 1))
    other = np.where(axis[None, :] > -0.5, 0.9, 0.1) * np.ones((10, 1))
    view = {"axis": axis, "true_probs": base, "x_train": np.zeros((2, 2)), "y_train": np.array([0, 1]),
            "rows": {"ensemble": {"mean": base, "samples": np.stack([base, base])},
                     "ensemble+": {"mean": base, "samples": np.stack([base, other])}},
            "prior_scale": 3.0, "num_members": 2, "temperature": 0.1}
    text = tplots.comparison_alt(view)
    assert "ensemble's 2 members shown disagree on 0 %" in text
    share = round(100 * tplots.disagreement(view["rows"]["ensemble+"]["samples"]).mean())
    assert share == 20 and f"ensemble+'s 2 members shown disagree on {share} %" in text
    assert tplots.ComparisonFigure(view, max_samples=2).alt == text


# ------------------------------------------------------------------ coin figures
def test_joint_grids_alt_lists_the_sequences_of_each_coin():
    text = cplots.joint_grids_alt(wc.joint_grid_update(2)["joints"], wc.joint_grid_update(2)["marginals"])
    assert "coin £: P(heads) on one flip 0.5; joint of 2 flips: TT, TH, HT and HH 0.25 each" in text
    assert "coin $: P(heads) on one flip 0.5; joint of 2 flips: TT and HH 0.5 each, TH and HT 0 each" in text
    assert layout.alt_text(wc.joint_grid_figure(2)).endswith(text)


def test_decision_alt_gives_the_exact_totals():
    h = 10
    text = cplots.decision_alt(decision_table(h), h)
    # the module's closed forms: oracle 3H/4, try-then-commit (3H − 1)/4, marginal H/2
    assert f"oracle {3 * h / 4:.2f}; try $ once, then commit {(3 * h - 1) / 4:.2f}" in text
    assert text.endswith(f"marginal {h / 2:.2f}.")


def test_coin_posterior_alt_follows_the_flips():
    view = wc.flip_update([(1, 1), (0, 0)])
    text = cplots.coin_posterior_alt(view, list(wc.paper_coins()))
    assert "coin $, 1 heads and 0 tails seen: bias 0 with probability 0, bias 1 with probability 1" in text
    assert "P(next flip heads) 1; next two flips HH 1, TT, TH and HT 0 each" in text


def test_the_coin_apps_keep_their_figures_alternative_in_a_caption():
    app = wc.joint_grid_app(flips=2)
    assert app.image.caption in app.children
    assert app.image.caption.alt_text == layout.alt_text(wc.joint_grid_figure(2))
    app.controls["flips"].value = 4
    assert "joint of 4 flips" in app.image.caption.alt_text and "Figure: " in app.image.caption.value
    flip = wc.coin_flip_app(seed=0)
    flip.buttons["$"].click()
    assert re.search(r"coin \$, (1 heads and 0 tails|0 heads and 1 tails) seen", flip.image.caption.alt_text)


# ------------------------------------------------------------------ bandit figures
def test_regret_alt_orders_agents_by_final_regret():
    t = np.arange(1, 11)
    frame = pd.concat([pd.DataFrame({"agent": a, "seed": s, "t": t, "cumulative_regret": slope * t + s})
                       for a, slope in (("uniform", 3.0), ("ensemble+", 1.0), ("mlp", 2.0)) for s in (0, 1)])
    stats = bplots.regret_stats(frame)
    text = bplots.regret_curves_alt(stats)
    assert "at t = 10: ensemble+ 10.5, mlp 20.5, uniform 30.5 (ensemble+ lowest)" in text
    ax = bplots.plot_regret_curves(frame)
    assert text in layout.alt_text(ax.figure)
    plt.close(ax.figure)


def test_action_map_alt_finds_the_best_action_and_its_pulls():
    actions = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]])
    probs = np.array([0.2, 0.95, 0.6])
    pulls = np.array([1, 7, 2])
    text = bplots.action_map_alt(actions, probs, pulls)
    assert "3 actions" in text and "2 have a mean reward above 0.5" in text
    assert "best action, a star, is at (1.0, 2.0) with mean reward 0.95" in text
    assert "pulled 7 times (70 %)" in text


# ------------------------------------------------------------------ active learning and regression figures
def test_toy_view_and_tal_alts():
    grid = np.linspace(-4, 4, 30)
    view = {"x_grid": grid, "f_grid": np.sin(grid), "x_train": grid[:3], "y_train": np.sin(grid[:3]),
            "x_test": grid[[-1, -2]], "x_query": grid[[12, 10]], "y_query": np.sin(grid[[12, 10]]),
            "mean": np.sin(grid), "std": np.full(30, 0.1), "criterion": "batchmig", "test_log_likelihood": 0.1234}
    text = aplots.toy_view_alt(view)
    assert text.startswith("BatchMIG:") and f"queried x = {grid[10]:.1f}, {grid[12]:.1f}" in text
    assert "test log-likelihood after the query 0.123" in text and "3 training points" in text
    curves = pd.DataFrame({"criterion": ["mig", "mig", "tig", "tig"], "num_train": [5, 10, 5, 10],
                           "test_log_likelihood": [0.1, 0.2, 0.0, 0.3], "split": [0, 0, 0, 0]})
    assert "at 10 points, best first: TIG 0.300, MIG 0.200" in aplots.tal_criteria_alt(curves)


def _result(method, k=4, seed=0):
    return _fakes.coverage_result(method, k, seed)


def test_fit_alt_counts_where_the_band_covers_the_truth():
    r = _result("BD")
    covered = np.abs(r.mean[0] - r.truth) <= 1.959963984540054 * r.std[0]
    text = rplots.fit_alt(r)
    assert f"covers the truth at {100 * covered.mean():.0f} % of the test inputs" in text
    assert f"({100 * covered[r.in_distribution].mean():.0f} % in the training range" in text
    assert "10 training points" in text


def test_coverage_profile_and_heatmap_alts_report_the_mean_coverage():
    results = {m: _result(m, seed=i) for i, m in enumerate(("BLR", "BD"))}
    text = rplots.coverage_profile_alt(results)
    for m, r in results.items():
        assert f"{m} between {r.coverage().min():.2f} and {r.coverage().max():.2f}, mean {r.coverage().mean():.2f}" \
            in text
    side = 5
    x1, x2 = np.meshgrid(np.linspace(-5, 5, side), np.linspace(-5, 5, side))
    cov = np.where((x1 >= 1) & (x2 >= 1), 1.0, 0.25)  # covers inside the training square [1, 4]², rarely outside
    table = pd.DataFrame({"method": "BD", "input": np.arange(side * side), "deviation": 0.1, "uncertainty": 0.1,
                          "coverage": cov.ravel()})
    inside = (x1 >= 1) & (x1 <= 4) & (x2 >= 1) & (x2 <= 4)
    text = rplots.heatmaps_alt(table, (side, side))
    assert f"BD: mean coverage {cov.mean():.2f} ({cov[inside].mean():.2f} inside the training square, " \
           f"{cov[~inside].mean():.2f} outside)" in text


def test_sweep_alt_and_misconception_alt():
    results = {m: _result(m, seed=i) for i, m in enumerate(("BLR", "BD"))}
    table = pd.concat([r.per_input().assign(f_main=f) for f in (0.5, 1.0) for r in results.values()])
    text = rplots.sweep_alt(table, [1.2])
    assert "coverage from f_main = 0.5 to 1: BLR" in text and "x = 1.20 (in distribution)" in text
    summary = pd.DataFrame({"check": ["c1", "c2"], "code": ["M1", "M2"], "students": [2, 5]})
    assert gplots.misconception_alt(summary, 10).endswith("hit it: c2 M2: 5; c1 M1: 2.")
    assert layout.alt_text(gplots.misconception_figure(summary, 10)) == gplots.misconception_alt(summary, 10)



def test_a_blank_answer_is_not_a_misconception_bar():
    """One blank student: "not implemented" on seven checks is one note in the title, not seven bars."""
    checks = [f"ex{i}-check" for i in range(7)]
    summary = pd.DataFrame({"check": checks + ["ex1-check"], "code": ["generic.not_implemented"] * 7 + ["jll.mean_of_logs"],
                            "students": [1] * 7 + [2]})
    fig = gplots.misconception_figure(summary, 3)
    ax = fig.axes[0]
    assert len(ax.patches) == 1 and "not_implemented" not in " ".join(t.get_text() for t in ax.get_yticklabels())
    assert "up to 1 student left a check blank" in ax.get_title()
    alt = gplots.misconception_alt(summary, 3)
    assert alt.endswith("hit it: ex1-check jll.mean_of_logs: 2.") and "not_implemented" not in alt
    only_blank = gplots.misconception_figure(summary.iloc[:7], 3)
    assert not only_blank.axes[0].patches and "no misconception was hit" in layout.alt_text(only_blank)
