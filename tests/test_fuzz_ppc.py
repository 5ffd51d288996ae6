"""Bad inputs to jtk.ppc (active learning, posterior predictive correlations and their studies)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

import jtk
import jtk.ppc.real_study as SREAL
import jtk.ppc.synthetic_study as SSYN
import jtk.ppc.tal_oracle as STAL
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (call, case, cases, frame_of, GP_ORACLE, refused_clearly, TE, VE)


@functools.lru_cache(None)
def cov_problem():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(12, 4))
    return z @ z.T + 1e-3 * np.eye(12), np.arange(8), np.arange(8, 12)


def indefinite(n: int = 12) -> np.ndarray:
    """A symmetric matrix with one clearly negative eigenvalue; for large n it has no bad 2 × 2 minor."""
    if n == 12:
        c = cov_problem()[0]
        w, u = np.linalg.eigh(c)
        return c + (-0.5 * w[-1] - w[0]) * np.outer(u[:, 0], u[:, 0])
    v = np.full(n, 1.0 / np.sqrt(n))
    return np.eye(n) - 1.5 * np.outer(v, v)  # eigenvalue −0.5 along v, every entry small

# --- active learning
A = jtk.ppc.active


def cp(**kw):
    cov, pool, test = cov_problem()
    args = dict(cov=cov, pool=pool, test=test, noise_var=0.1, batch_size=2)
    args.update(kw)
    return args


for fn in (A.tig, A.mig, A.batch_mig):
    nm = fn.__name__
    case(fn, "overlap", lambda f=fn: f(**cp(test=np.arange(6, 12))), VE, "pool")
    case(fn, "index-out-of-range", lambda f=fn: f(**cp(pool=np.arange(5, 13))), VE, "pool")
    case(fn, "index-negative", lambda f=fn: f(**cp(test=np.array([-1, 9]))), VE, "test")
    case(fn, "index-float", lambda f=fn: f(**cp(pool=np.arange(8) * 1.0)), TE, "pool")
    case(fn, "index-repeat", lambda f=fn: f(**cp(pool=np.array([0, 0, 1]))), VE, "pool")
    case(fn, "pool-empty", lambda f=fn: f(**cp(pool=np.array([], int))), VE, "pool")
    case(fn, "non-psd", lambda f=fn: f(**cp(cov=indefinite())), VE, "cov")
    case(fn, "asymmetric", lambda f=fn: f(**cp(cov=cov_problem()[0] + np.triu(np.ones((12, 12)), 1))), VE, "cov")
    case(fn, "cov-nan", lambda f=fn: f(**cp(cov=np.full((12, 12), np.nan))), VE, "cov")
    case(fn, "cov-not-square", lambda f=fn: f(**cp(cov=np.zeros((12, 11)))), VE, "cov")
    case(fn, "noise_var-neg", lambda f=fn: f(**cp(noise_var=-0.1)), VE, "noise_var")
    case(fn, "noise_var-nan", lambda f=fn: f(**cp(noise_var=np.nan)), VE, "noise_var")
    case(fn, "batch_size-0", lambda f=fn: f(**cp(batch_size=0)), VE, "batch_size")
    case(fn, "batch_size>pool", lambda f=fn: f(**cp(batch_size=9)), VE, "batch_size")
    case(fn, "batch_size-float", lambda f=fn: f(**cp(batch_size=2.0)), TE, "batch_size")
case(jtk.ppc.active.batch_mig, "non-psd-3500", lambda: A.batch_mig(**cp(cov=indefinite(3500), pool=np.arange(3000),
                                                          test=np.arange(3000, 3500))), VE, "cov")
for fn in (A.tig, A.mig, A.batch_mig):  # σ² / max diag(cov) overflows float64: inf / NaN inside the criteria
    case(fn, "cov-1e-320-vs-noise_var", lambda f=fn: f(**cp(cov=cov_problem()[0] * 1e-320)), VE,
         "cov noise_var")
    case(fn, "noise_var-1e300-vs-cov-1e-310",
         lambda f=fn: f(**cp(cov=cov_problem()[0] * 1e-310, noise_var=1e300)), VE, "cov noise_var")
case(jtk.ppc.active.mig_scores, "cov-1e-320-vs-noise_var",
     lambda: A.mig_scores(cov_problem()[0] * 1e-320, cov_problem()[1], cov_problem()[2], 0.1), VE, "cov noise_var")
case(jtk.ppc.active.batch_mig_score, "batch-repeat", lambda: A.batch_mig_score(cov_problem()[0], [0, 0], cov_problem()[2], 0.1), VE,
     "batch")
case(jtk.ppc.active.batch_mig_score, "batch-float", lambda: A.batch_mig_score(cov_problem()[0], [0.0, 1.0], cov_problem()[2], 0.1),
     TE, "batch")
case(jtk.ppc.active.batch_mig_score, "batch-overlaps-test", lambda: A.batch_mig_score(cov_problem()[0], [8], cov_problem()[2], 0.1),
     VE, "batch")
case(jtk.ppc.active.select, "criterion-unknown", lambda: A.select("bald", **cp()), VE, "criterion")
case(jtk.ppc.active.random_selection, "seed-2**32", call(A.random_selection, np.arange(5), 2, seed=2 ** 32), VE, "seed")
case(jtk.ppc.active.random_selection, "batch_size>pool", call(A.random_selection, np.arange(5), 6), VE, "batch_size")
case(jtk.ppc.active.random_selection, "pool-float", call(A.random_selection, np.array([0.5, 1.5]), 1), TE, "pool")
case(jtk.ppc.active.random_selection, "pool-repeat", call(A.random_selection, np.array([1, 1]), 2), VE, "pool")
case(jtk.ppc.active.random_selection, "pool-negative", call(A.random_selection, np.array([-1, 2]), 1), VE, "pool")
TOY = functools.lru_cache(None)(lambda: jtk.envs.toy_split_1d(seed=0))
case(jtk.ppc.active.evaluate_prediction, "queried-out-of-range", lambda: A.evaluate_prediction(TOY(), [1000], GP_ORACLE()), VE,
     "queried split.x_pool")
case(jtk.ppc.active.evaluate_prediction, "queried-float", lambda: A.evaluate_prediction(TOY(), [0.5], GP_ORACLE()), TE, "queried")
case(jtk.ppc.active.evaluate_prediction, "queried-repeat", lambda: A.evaluate_prediction(TOY(), [1, 1], GP_ORACLE()), VE,
     "queried")
case(jtk.ppc.active.evaluate_prediction, "split-y_pool-short",
     lambda: A.evaluate_prediction(TOY()._replace(y_pool=TOY().y_pool[:-1]), [0], GP_ORACLE()), VE, "split.y_pool")
case(jtk.ppc.active.run_tal, "split-x_pool-nan",
     lambda: A.run_tal(TOY()._replace(x_pool=np.full_like(TOY().x_pool, np.nan)), GP_ORACLE(), GP_ORACLE()), VE,
     "split.x_pool")
case(jtk.ppc.active.run_tal, "split-x_test-wrong-d",
     lambda: A.run_tal(TOY()._replace(x_test=np.zeros((len(TOY().x_test), 2))), GP_ORACLE(), GP_ORACLE()), VE,
     "split.x_test")
case(jtk.ppc.correlation_matrix, "non-square", call(jtk.ppc.correlation_matrix, np.zeros((3, 2))), VE, "cov")
case(jtk.ppc.top_correlated_batches, "batch_size-0", lambda: jtk.ppc.top_correlated_batches(cov_problem()[0], 0), VE,
     "batch_size")
case(jtk.ppc.metacorrelation, "shape-mismatch",
     lambda: jtk.ppc.metacorrelation(cov_problem()[0], np.eye(5), np.arange(8), np.arange(8, 12)), VE, "model_cov")
case(jtk.ppc.metacorrelation, "oracle_cov-non-psd",
     lambda: jtk.ppc.metacorrelation(cov_problem()[0], indefinite(), np.arange(8), np.arange(8, 12)), VE, "oracle_cov")
case(jtk.ppc.metacorrelation, "oracle_cov-not-square",
     lambda: jtk.ppc.metacorrelation(np.zeros((12, 11)), np.zeros((12, 11)), np.arange(8), np.arange(8, 12)), VE,
     "oracle_cov")
case(jtk.ppc.metacorrelation, "pool-out-of-range",
     lambda: jtk.ppc.metacorrelation(cov_problem()[0], cov_problem()[0], np.arange(5, 13), np.arange(0, 4)), VE,
     "pool oracle_cov")
YN = lambda: np.linspace(-1.0, 1.0, 12)  # noqa: E731  targets / means of the 12 points of cov_problem()
case(jtk.ppc.top_correlated_log_likelihood, "batches-out-of-range",
     lambda: jtk.ppc.top_correlated_log_likelihood(YN(), YN(), cov_problem()[0], 0.1, batches=np.array([[0, 20]])), VE,
     "batches")
case(jtk.ppc.top_correlated_log_likelihood, "batches-float",
     lambda: jtk.ppc.top_correlated_log_likelihood(YN(), YN(), cov_problem()[0], 0.1, batches=np.array([[0.0, 1.0]])),
     TE, "batches")
case(jtk.ppc.cross_normalized_log_likelihood, "batches-1d",
     lambda: jtk.ppc.cross_normalized_log_likelihood(YN(), YN(), cov_problem()[0], cov_problem()[0], 0.1,
                                                     batches=np.array([0, 1])), VE, "batches")
case(jtk.ppc.xll_table, "means-nan",
     lambda: jtk.ppc.xll_table(YN(), {"a": np.full(12, np.nan)}, {"a": cov_problem()[0]}, 0.1), VE, "means['a']")
case(jtk.ppc.xll_table, "means-short", lambda: jtk.ppc.xll_table(YN(), {"a": YN()[:5]}, {"a": cov_problem()[0]}, 0.1), VE,
     "means['a']")
case(jtk.ppc.xll_table, "covs-wrong-n", lambda: jtk.ppc.xll_table(YN()[:5], {"a": YN()[:5]}, {"a": cov_problem()[0]}, 0.1),
     VE, "covs['a']")
case(jtk.ppc.active.reference_batch_size, "neg", call(A.reference_batch_size, -1, 10, 10), VE, "num_train")
case(jtk.ppc.active.make_toy_state, "seed-2**32", call(jtk.ppc.active.make_toy_state, seed=2 ** 32), VE, "seed")
case(jtk.ppc.active.make_toy_state, "num_pool-0", call(jtk.ppc.active.make_toy_state, num_pool=0), VE, "num_pool")
case(jtk.ppc.active.make_toy_state, "unknown-kwarg", call(jtk.ppc.active.make_toy_state, num_pools=5), TE, "num_pools")
case(jtk.ppc.active.make_toy_state, "models-empty", call(jtk.ppc.active.make_toy_state, models={}), VE, "models")

# active learning: the helpers around the criteria
case(A.paired_gaps, "df-text", call(A.paired_gaps, "bad-text", None), TE, "df")
case(A.check_covariance, "not-square", call(A.check_covariance, np.zeros((3, 2))), VE, "cov")
case(A.check_covariance, "nan", call(A.check_covariance, np.full((3, 3), np.nan)), VE, "cov")
case(A.check_covariance, "str", call(A.check_covariance, np.full((2, 2), "a")), TE, "cov")
case(A.select_many, "criteria-unknown", lambda: A.select_many(**cp(), criteria=("bald",)), VE, "criteria")
case(A.select_many, "criteria-str", lambda: A.select_many(**cp(), criteria="mig"), TE, "criteria")
case(A.select_many, "seed-2**32", lambda: A.select_many(**cp(), criteria=("random",), seed=2 ** 32), VE, "seed")
case(A.split_data, "x-nan", call(A.split_data, np.full((10, 2), np.nan), np.zeros(10)), VE, "x")
case(A.split_data, "y-rows", call(A.split_data, np.zeros((10, 2)), np.zeros(9)), VE, "y")
case(A.split_data, "train_fraction-1.5", call(A.split_data, np.zeros((10, 2)), np.zeros(10), train_fraction=1.5), VE,
     "train_fraction")
case(A.split_data, "fractions-sum>1",
     call(A.split_data, np.zeros((10, 2)), np.zeros(10), train_fraction=0.6, test_fraction=0.6), VE, "test_fraction")
case(A.split_data, "target-missing", call(A.split_data, pd.DataFrame({"a": [1.0] * 10}), target="b"), VE, "target")
case(A.summarize, "not-a-frame", call(A.summarize, [1, 2]), TE, "df")
case(A.summarize, "value-missing", call(A.summarize, pd.DataFrame({"criterion": ["a"], "x": [1.0]})), VE,
     "df test_log_likelihood")
case(A.tal_comparison, "splits-empty", lambda: A.tal_comparison([], GP_ORACLE(), GP_ORACLE(), progress=False), VE,
     "splits")
case(A.tal_comparison, "criteria-unknown",
     lambda: A.tal_comparison([TOY()], GP_ORACLE(), GP_ORACLE(), criteria=("bald",), progress=False), VE, "criteria")
TOY_STATE = functools.lru_cache(None)(lambda: A.make_toy_state(num_pool=20, num_test=10))
case(A.toy_view, "state-wrong", call(A.toy_view, 3, "mig", 2, "GP"), TE, "state")
case(A.toy_view, "criterion-unknown", lambda: A.toy_view(TOY_STATE(), "bald", 2, "oracle GP"), VE, "criterion")
case(A.toy_view, "batch_size-0", lambda: A.toy_view(TOY_STATE(), "mig", 0, "oracle GP"), VE, "batch_size")
case(A.toy_view, "model-unknown", lambda: A.toy_view(TOY_STATE(), "mig", 2, "nope"), VE, "model")
case(A.default_toy_models, "oracle-wrong", call(A.default_toy_models, 3), TE, "oracle")

# ppc
case(jtk.ppc.ppc_study, "splits-empty",
     lambda: jtk.ppc.ppc_study([], {"GP": GP_ORACLE()}, GP_ORACLE(), progress=False), VE, "splits")
case(jtk.ppc.ppc_study, "models-empty", lambda: jtk.ppc.ppc_study([TOY()], {}, GP_ORACLE(), progress=False), VE,
     "models")
case(jtk.ppc.ppc_study, "noise_var-neg",
     lambda: jtk.ppc.ppc_study([TOY()], {"GP": GP_ORACLE()}, GP_ORACLE(), noise_var=-1.0, progress=False), VE,
     "noise_var")
case(jtk.ppc.ppc_per_model, "not-a-mapping", call(jtk.ppc.ppc_per_model, [1, 2]), TE, "study")
case(jtk.ppc.split_mean_correlation, "length-mismatch", call(jtk.ppc.split_mean_correlation, np.zeros((4, 3)),
                                                             np.zeros((5, 3))), VE, "y")
case(jtk.ppc.split_mean_correlation, "nan", call(jtk.ppc.split_mean_correlation, np.full((4, 3), np.nan),
                                                 np.zeros((4, 3))), VE, "x")
case(jtk.ppc.split_mean_correlation, "level-2", call(jtk.ppc.split_mean_correlation, np.ones((4, 3)), np.ones((4, 3)),
                                                     level=2.0), VE, "level")
case(jtk.ppc.split_mean_correlation, "num_resamples-0",
     call(jtk.ppc.split_mean_correlation, np.ones((4, 3)), np.ones((4, 3)), num_resamples=0), VE, "num_resamples")
case(jtk.ppc.split_mean_reliability, "nan", call(jtk.ppc.split_mean_reliability, np.full((4, 3), np.nan)), VE,
     "values")
case(jtk.ppc.split_mean_reliability, "str", call(jtk.ppc.split_mean_reliability, "abc"), TE, "values")
case(jtk.ppc.xll_summary, "not-a-frame", call(jtk.ppc.xll_summary, [1, 2]), TE, "table")


# ------------------------------------------------------------------ the paper studies and jtk.reproduce (#48 items 3
# and 5): each study module's public surface is its __all__ (main(argv) and the few functions others call; the
# package docstrings say so); every case fails at entry, before any training, file or import of a study

for mod in (SSYN, SREAL, STAL):  # every study's command: argv is a list of str or None
    short = mod.__name__.rsplit(".", 1)[1]
    case(mod.main, f"{short}-argv-str", call(mod.main, "--preset quick"), TE, "argv")
    case(mod.main, f"{short}-argv-int", call(mod.main, ["--seeds", 3]), TE, "argv")
TAL_ROWS = frame_of(dataset=["boston"], seed=[0], round=[1], selector=["Random"], test_ll=[-1.0])
XLL_ROWS = frame_of(dataset=["boston"], seed=[0], model=["BBB"], xllr=[0.1])
TAB_ROWS = frame_of(dataset=["boston"], model=["BBB"], xllr=[0.1], tal_gain=[0.2], tal_gain_se=[0.1])
# --- jtk.ppc.synthetic_study
case(SSYN.preset_for, "name-unknown", call(SSYN.preset_for, "huge"), VE, "name huge")
case(SSYN.preset_for, "protocol-unknown", call(SSYN.preset_for, "quick", "paper"), VE, "protocol")
case(SSYN.make_splits, "dim-0", call(SSYN.make_splits, 0, 2, "shared"), VE, "dim")
case(SSYN.make_splits, "num_splits-float", call(SSYN.make_splits, 3, 2.0, "shared"), TE, "num_splits")
case(SSYN.make_splits, "data-unknown", call(SSYN.make_splits, 3, 2, "fresh"), VE, "data")
case(SSYN.make_splits, "seed-2**32", call(SSYN.make_splits, 3, 2, "shared", seed=2 ** 32), VE, "seed")
case(SSYN.make_splits, "num_pool-0", call(SSYN.make_splits, 3, 2, "shared", num_pool=0), VE, "num_pool")
# --- jtk.ppc.real_study
case(SREAL.authors_settings, "dataset-unknown", call(SREAL.authors_settings, "mnist"), VE, "dataset")
case(SREAL.authors_settings, "families-str", call(SREAL.authors_settings, "boston", "BBB"), TE, "families")
case(SREAL.authors_settings, "families-int", call(SREAL.authors_settings, "boston", [3]), TE, "families[0]")
case(SREAL.derive_settings, "runs-list", call(SREAL.derive_settings, [1]), TE, "runs")
case(SREAL.derive_settings, "runs-columns", call(SREAL.derive_settings, frame_of(family=["BBB"])), VE,
     "runs batchmig_ll")
case(SREAL.derive_settings, "families-str", lambda: SREAL.derive_settings(
    pd.DataFrame(columns=[*SREAL.SETTING_COLUMNS, "split", "batchmig_ll"]), "BBB"), TE, "families")
case(SREAL.table, "tal-none", call(SREAL.table, None, XLL_ROWS), TE, "tal")
case(SREAL.table, "xll-columns", call(SREAL.table, TAL_ROWS, frame_of(dataset=["boston"])), VE, "xll xllr")
case(SREAL.xllr_shown, "tab-columns", call(SREAL.xllr_shown, frame_of(dataset=["boston"])), VE, "tab tal_gain")
case(SREAL.xllr_shown, "z-neg", call(SREAL.xllr_shown, TAB_ROWS, z=-1.0), VE, "z")
case(SREAL.xllr_shown, "z-str", call(SREAL.xllr_shown, TAB_ROWS, z="2"), TE, "z")
case(SREAL.disagreements, "tab-none", call(SREAL.disagreements, None, TAL_ROWS, XLL_ROWS), TE, "tab")
case(SREAL.disagreements, "tal-columns", call(SREAL.disagreements, TAB_ROWS, XLL_ROWS, XLL_ROWS), VE, "tal")
case(SREAL.disagreements, "z-nan", call(SREAL.disagreements, TAB_ROWS, TAL_ROWS, XLL_ROWS, z=np.nan), VE, "z")
# --- jtk.ppc.tal_oracle
case(STAL.run, "num_splits-1", call(STAL.run, 1, 9, False), VE, "num_splits")
case(STAL.run, "dim-float", call(STAL.run, 5, 9.0, False), TE, "dim")
case(STAL.run, "with_bnn-int", call(STAL.run, 5, 9, 1), TE, "with_bnn")
case(STAL.summarize, "res-list", call(STAL.summarize, []), TE, "res")
case(STAL.summarize, "res-keys", call(STAL.summarize, {"criteria": None}), VE, "res models")
case(STAL.summarize, "res-criteria", call(STAL.summarize, {"criteria": None, "models": None}), TE, "res['criteria']")
# the precomputed oracle kernel matrix of the PPC scoring and Fig. 3 TAL (issue #47)
GRAM = functools.lru_cache(None)(lambda: A.prediction_gram(TOY(), GP_ORACLE()))
case(A.prediction_gram, "prediction_model-rbf", lambda: A.prediction_gram(TOY(), jtk.regression.GPRegression()), TE,
     "prediction_model")
case(A.prediction_gram, "split-x_pool-nan",
     lambda: A.prediction_gram(TOY()._replace(x_pool=np.full_like(TOY().x_pool, np.nan)), GP_ORACLE()), VE,
     "split.x_pool")
case(A.evaluate_prediction, "gram-wrong-shape", lambda: A.evaluate_prediction(TOY(), [0], GP_ORACLE(), gram=np.eye(3)),
     VE, "gram")
case(A.evaluate_prediction, "gram-other-kernel",
     lambda: A.evaluate_prediction(TOY(), [0], GP_ORACLE(), gram=2.0 * GRAM()), VE, "gram prediction_model")
case(A.evaluate_prediction, "gram-rbf-model",
     lambda: A.evaluate_prediction(TOY(), [0], jtk.regression.GPRegression(noise_var=0.01), gram=GRAM()), TE,
     "prediction_model")
case(A.run_tal, "gram-nan",
     lambda: A.run_tal(TOY(), GP_ORACLE(), GP_ORACLE(), gram=np.full_like(GRAM(), np.nan)), VE, "gram")
case(A.tal_comparison, "use_gram-text",
     lambda: A.tal_comparison([TOY()], GP_ORACLE(), GP_ORACLE(), progress=False, use_gram="yes"), TE, "use_gram")
case(A.tal_comparison, "use_gram-rbf-model",
     lambda: A.tal_comparison([TOY()], GP_ORACLE(), jtk.regression.GPRegression(noise_var=0.01), progress=False,
                              use_gram=True), TE, "prediction_model")


def test_batch_mig_is_scale_invariant():
    cov, pool, test = cov_problem()
    base = A.batch_mig(cov, pool, test, 0.1, 5, return_scores=True)
    for s in (1e-300, 1e300):
        got = A.batch_mig(cov * s, pool, test, 0.1 * s, 5, return_scores=True)
        np.testing.assert_array_equal(got[0], base[0])
        np.testing.assert_allclose(got[1], base[1], rtol=1e-9)
    # cov · 1e300 with σ² = 0.1 is a valid problem: every criterion computes on cov / max diag, so nothing
    # overflows, and σ² / max diag ≈ 1e-302 makes it the noise-free problem (what is refused: σ² / max diag
    # overflowing, the cases "cov-1e-320-vs-noise_var" above)
    for fn in (A.batch_mig, A.mig, A.tig):
        np.testing.assert_array_equal(fn(cov * 1e300, pool, test, 0.1, 5), fn(cov, pool, test, 0.0, 5))


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
