"""The coverage study: deviation, uncertainty, coverage ± binomial error bars, in/out summaries."""

import numpy as np
import pandas as pd
import pytest

from jtk.regression import coverage as cv
from jtk.regression import deep as dr
from jtk.envs.regression import SinusoidRegression

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics

TINY = dict(hidden=(8,), num_members=2, epochs_per_complexity=40, num_samples=8, learning_rate=3e-2)


def synthetic(method="A", k=4):
    """Three test inputs; at input 0 all k sets are covered, at input 1 half, at input 2 none."""
    truth = np.zeros(3)
    std = np.ones((k, 3))
    mean = np.zeros((k, 3))
    mean[: k // 2, 1] = 3.0  # |dev| = 3 > 1.96 for half of the sets at input 1
    mean[:, 2] = 2.0  # |dev| = 2 > 1.96 at input 2
    return cv.CoverageResult(method, np.array([-5.0, 0.0, 1.0]), np.array([[-5.0], [0.0], [1.0]]), truth, mean,
                             std, np.array([False, True, True]), {"f_main": 1.0})


def test_coverage_arithmetic():
    r = synthetic(k=4)
    np.testing.assert_allclose(r.coverage(), [1.0, 0.5, 0.0])
    np.testing.assert_allclose(r.coverage_se(), [0.0, np.sqrt(0.25 / 4), 0.0])
    np.testing.assert_allclose(r.deviation.mean(0), [0.0, 1.5, 2.0])
    table = r.per_input()
    assert list(table["in_distribution"]) == [False, True, True]
    np.testing.assert_allclose(table["rmse"], [0.0, np.sqrt(4.5), 2.0])
    s = r.summary().set_index("region")
    assert s.loc["in", "coverage"] == 0.25 and s.loc["out", "coverage"] == 1.0
    assert s.loc["in", "num_inputs"] == 2 and s.loc["in", "deviation"] == pytest.approx(1.75)
    assert r.first(2).k == 2 and r.index_of(0.9) == 2


def test_anchor_study_and_lemma1():
    env = SinusoidRegression(1.0, seed=0)
    res = cv.coverage_study(env, ["BLR"], k=400, seed=0, progress=False)["BLR"]
    assert res.k == 400 and res.mean.shape == (400, 1000)
    s = res.summary().set_index("region")
    assert abs(s.loc["in", "coverage"] - 0.95) < 0.01 and abs(s.loc["out", "coverage"] - 0.95) < 0.01
    assert np.all(np.abs(res.coverage() - 0.95) < 0.05)
    # A method with half the anchor's uncertainty and the same predictions: Lemma 1 flags all inputs.
    fake = cv.CoverageResult("Half", res.coordinate, res.x_test, res.truth, res.mean, res.std / 2,
                             res.in_distribution, res.info)
    lem = cv.lemma1_check({"BLR": res, "Half": fake}).set_index("method")
    assert lem.loc["Half", "frac_unc_ge_blr"] == 0.0
    assert lem.loc["Half", "median_ratio"] == pytest.approx(0.5)
    assert lem.loc["Half", "frac_below_rmse_when_smaller"] == 1.0
    assert lem.loc["Half", "frac_violations"] == 0.0
    # Predictions equal to the truth (RMSE 0, unbiased) with u < u_BLR: what the Cramér–Rao bound forbids.
    overconfident_but_unbiased = cv.CoverageResult("Bad", res.coordinate, res.x_test, res.truth,
                                                   np.broadcast_to(res.truth, res.mean.shape), res.std * 0.9,
                                                   res.in_distribution, res.info)
    lem = cv.lemma1_check({"BLR": res, "Bad": overconfident_but_unbiased}).set_index("method")
    assert lem.loc["Bad", "frac_violations"] == 1.0


def test_deep_study_and_sweep_tables():
    models = [dr.make_regression(m, preset="paper", **TINY) for m in ("BD", "EnsBS")]
    res = cv.sweep(lambda f: SinusoidRegression(f, seed=0), [1.0, 0.5], "f_main", ["BLR", *models], k=4, seed=0,
                   progress=False)
    assert set(res) == {(f, m) for f in (1.0, 0.5) for m in ("BLR", "BD", "EnsBS")}
    table = cv.per_input_table(res)
    assert len(table) == 6 * 1000 and {"f_main", "coverage", "coverage_se", "deviation", "uncertainty"} <= set(
        table.columns)
    summ = cv.summary_table(res, by=("f_main",))
    assert len(summ) == 2 * 3 * 2 and summ["coverage"].between(0, 1).all()
    at = cv.at_inputs(table, [-2.38, 1.2, -5.11])
    assert len(at) == 3 * 6 and np.allclose(sorted(set(at["requested"])), [-5.11, -2.38, 1.2])
    lem = cv.lemma1_check(res, by="f_main")
    assert len(lem) == 4 and lem["frac_unc_ge_blr"].between(0, 1).all()
    # Same training sets for every method: BLR in the sweep equals a stand-alone anchor study.
    alone = cv.coverage_study(SinusoidRegression(1.0, seed=0), ["BLR"], k=4, seed=0, progress=False)["BLR"]
    np.testing.assert_allclose(alone.mean, res[(1.0, "BLR")].mean)
    assert isinstance(table, pd.DataFrame)


def test_labelled_variants():
    """(label, model) pairs run a configured variant beside the default under its own name."""
    env = SinusoidRegression(1.0, seed=0)
    half = dr.make_regression("EnsBS", preset="paper", **{**TINY, "bootstrap_size": 0.5})
    res = cv.coverage_study(env, ["BLR", ("anchor", "BLR"), ("EnsBS(0.5)", half)], k=3, seed=0, progress=False)
    assert list(res) == ["BLR", "anchor", "EnsBS(0.5)"]
    np.testing.assert_allclose(res["anchor"].mean, res["BLR"].mean)
    assert res["EnsBS(0.5)"].method == "EnsBS(0.5)" and res["EnsBS(0.5)"].std.shape == (3, 1000)
    lem = cv.lemma1_check(res)
    assert list(lem["method"]) == ["anchor", "EnsBS(0.5)"]
    with pytest.raises(ValueError, match="distinct names"):
        cv.coverage_study(env, ["BLR", ("BLR", "BLR")], k=2, progress=False)
    with pytest.raises(TypeError, match="labelled method"):
        cv.coverage_study(env, [("x", "BLR", 1)], k=2, progress=False)
    with pytest.raises(TypeError, match="labelled method"):
        cv.coverage_study(env, [(1, "BLR")], k=2, progress=False)


def test_bad_input():
    env = SinusoidRegression(1.0)
    with pytest.raises(ValueError, match="k must be >= 2"):
        cv.coverage_study(env, ["BLR"], k=1, progress=False)
    with pytest.raises(TypeError, match="k must be an integer"):
        cv.coverage_study(env, ["BLR"], k=2.5, progress=False)
    with pytest.raises(ValueError, match="methods"):
        cv.coverage_study(env, ["GP"], k=2, progress=False)
    with pytest.raises(TypeError, match="methods"):
        cv.coverage_study(env, [42], k=2, progress=False)
    with pytest.raises(ValueError, match="f_mains"):
        cv.sweep_f_main([1.0, -2.0], ["BLR"], k=2, progress=False)
    with pytest.raises(ValueError, match="dims"):
        cv.sweep_dim([0], ["BLR"], k=2, progress=False)
    with pytest.raises(ValueError, match="BLR"):
        cv.lemma1_check({"A": synthetic()})
    with pytest.raises(ValueError, match="k must be <= 4"):
        synthetic().first(5)


def test_a_sweep_gives_the_same_numbers_side_by_side_and_one_study_at_a_time(monkeypatch, request):
    """Side by side (one study per thread) and beside 2 × the cores of busy processes, whatever order the threads
    finish in, the numbers are those of one study at a time on a quiet machine."""
    model = dr.make_regression("EnsBS", preset="paper", **TINY)
    runs = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("JTK_THREADS", threads)
        if threads == "2":
            request.getfixturevalue("busy_cpus")
        runs[threads] = cv.sweep(lambda f: SinusoidRegression(f, seed=0), [1.0, 2.0], "f_main", ["BLR", model],
                                 k=2, seed=0, progress=False)
    assert list(runs["1"]) == list(runs["2"]) == [(f, m) for f in (1.0, 2.0) for m in ("BLR", "EnsBS")]
    for key, r in runs["1"].items():
        np.testing.assert_array_equal(r.mean, runs["2"][key].mean)
        np.testing.assert_array_equal(r.std, runs["2"][key].std)
