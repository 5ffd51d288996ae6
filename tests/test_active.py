"""TIG / MIG / BatchMIG, the TAL loop and the PPC metrics of Wang, Sun & Grosse (2021)."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

from jtk import ppc
from jtk.ppc import active
from jtk.regression.gp import GPRegression
from jtk.envs.gp import ReLUKernelGP

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def _problem(seed, n=None, rank=None, full_rank=False):
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(6, 14))
    rank = rank or int(rng.integers(1, n + 2))
    if full_rank:  # the same draws as without it, then at least rank n
        rank = max(rank, n)
    a = rng.normal(size=(n, rank)) * rng.uniform(0.2, 2.0, size=(n, 1))
    cov = a @ a.T
    perm = rng.permutation(n)
    k = int(rng.integers(2, n - 1))
    return cov, perm[:k], perm[k:], rng


def _brute_force_greedy_check(cov, pool, test, noise_var, batch_size):
    chosen, scores = active.batch_mig(cov, pool, test, noise_var, batch_size, return_scores=True)
    selected = []
    for step in range(batch_size):
        cands = [int(p) for p in pool if p not in selected]
        brute = np.array([active.batch_mig_score(cov, np.array(selected + [p]), test, noise_var) for p in cands])
        # the incremental score of the pick equals the direct score, and it is the best one
        picked = active.batch_mig_score(cov, np.array(selected + [int(chosen[step])]), test, noise_var)
        np.testing.assert_allclose(scores[step], picked, rtol=1e-6, atol=1e-7)
        assert picked >= brute.max() - 1e-7 * max(1.0, abs(brute.max()))
        top2 = np.sort(brute)[-2:] if len(brute) > 1 else brute
        if len(brute) == 1 or top2[1] - top2[0] > 1e-6 * max(1.0, abs(top2[1])):
            assert int(chosen[step]) == cands[int(np.argmax(brute))]
        selected.append(int(chosen[step]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), noise_var=st.sampled_from([0.0, 1e-3, 0.05, 1.0]), data=st.data())
def test_batch_mig_greedy_equals_brute_force(seed, noise_var, data):
    # Noise-free with a rank-deficient covariance, a batch can explain a test point exactly: its term is
    # -log(1 - 1) = +inf, and both computations return a floored approximation of infinity that need not agree
    # (seed 915: 248.68 and 247.71). The comparison is made where the score is finite.
    cov, pool, test, _ = _problem(seed, full_rank=noise_var == 0.0)
    batch_size = data.draw(st.integers(1, len(pool)))
    _brute_force_greedy_check(cov, pool, test, noise_var, batch_size)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), noise_var=st.sampled_from([1e-3, 0.05, 1.0]))
def test_first_batch_mig_pick_is_mig_pick_and_scores_agree(seed, noise_var):
    cov, pool, test, _ = _problem(seed)
    first = active.batch_mig(cov, pool, test, noise_var, 1)[0]
    scores = active.mig_scores(cov, pool, test, noise_var)
    assert scores[list(pool).index(first)] >= scores.max() - 1e-9 * max(1, scores.max())
    direct = [active.batch_mig_score(cov, np.array([p]), test, noise_var) for p in pool]
    np.testing.assert_allclose(scores, direct, rtol=1e-6, atol=1e-8)


def test_first_pick_equals_mig_on_oracle_problem():
    oracle = ReLUKernelGP(3)
    s = oracle.sample_split(seed=1, num_pool=80, num_test=30)
    post = GPRegression(kernel=oracle.kernel, noise_var=0.01).fit(s.x_train, s.y_train)
    cov = post.covariance(np.concatenate([s.x_pool, s.x_test]))
    pool, test = np.arange(80), 80 + np.arange(30)
    b = active.batch_mig(cov, pool, test, 0.01, 5)
    assert b[0] == active.mig(cov, pool, test, 0.01, 1)[0]
    assert len(set(b.tolist())) == 5 and set(b.tolist()) <= set(pool.tolist())
    _brute_force_greedy_check(cov, pool[:25], test, 0.01, 4)


def test_tig_and_mig_orders():
    cov = np.diag([1.0, 3.0, 2.0, 5.0, 1.0])
    cov[0, 4] = cov[4, 0] = 0.9
    pool, test = np.array([0, 1, 2, 3]), np.array([4])
    np.testing.assert_array_equal(active.tig(cov, pool, test, 0.1, 3), [3, 1, 2])
    # only point 0 is correlated with the test point
    assert active.mig(cov, pool, test, 0.1, 1)[0] == 0
    np.testing.assert_array_equal(np.sort(active.batch_mig(cov, pool, test, 0.1, 4)), pool)


def test_batch_mig_prefers_diverse_points_over_duplicates():
    # points 0 and 1 are copies; point 2 explains another test point
    a = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.9], [1.0, 0.0], [0.0, 1.0]])
    cov = a @ a.T + np.diag([0, 0, 0, 0.01, 0.01])
    pool, test = np.array([0, 1, 2]), np.array([3, 4])
    assert set(active.mig(cov, pool, test, 0.01, 2).tolist()) == {0, 1}
    assert set(active.batch_mig(cov, pool, test, 0.01, 2).tolist()) == {0, 2}


def test_bad_inputs_name_the_argument():
    cov, pool, test, _ = _problem(0, n=8)
    with pytest.raises(ValueError, match="square"):
        active.batch_mig(cov[:, :5], pool, test, 0.1, 1)
    bad = cov.copy()
    bad[0, 0] = -5.0
    with pytest.raises(ValueError, match="positive semi-definite"):
        active.batch_mig(bad, pool, test, 0.1, 1)
    indefinite = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="cov must be positive semi-definite, got smallest eigenvalue -1"):
        active.mig(indefinite, [0, 1], [2], 0.1, 1)
    asym = cov.copy()
    asym[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        active.tig(asym, pool, test, 0.1, 1)
    with pytest.raises(ValueError, match="pool and test must be disjoint"):
        active.batch_mig(cov, pool, np.concatenate([test, pool[:1]]), 0.1, 1)
    with pytest.raises(ValueError, match=f"batch_size must be <= the pool size {len(pool)}, got {len(pool) + 1}"):
        active.batch_mig(cov, pool, test, 0.1, len(pool) + 1)
    with pytest.raises(ValueError, match="noise_var must be a finite number >= 0, got -0.1"):
        active.batch_mig(cov, pool, test, -0.1, 1)
    with pytest.raises(ValueError, match="pool must hold indices in"):
        active.batch_mig(cov, np.array([0, 99]), test, 0.1, 1)
    with pytest.raises(ValueError, match="finite"):
        active.batch_mig(np.full_like(cov, np.nan), pool, test, 0.1, 1)
    with pytest.raises(ValueError, match="criterion"):
        active.select("bald", cov, pool, test, 0.1, 1)
    with pytest.raises(ValueError, match="repeat"):
        active.batch_mig(cov, np.array([pool[0], pool[0]]), test, 0.1, 1)


def test_reference_batch_size():
    assert active.reference_batch_size(45, 500, 200) == 7
    assert active.reference_batch_size(5, 10, 10) == 1
    assert active.reference_batch_size(25, 500, 200) == 7


def _oracle_split(d=2, seed=0):
    oracle = ReLUKernelGP(d)
    return oracle, oracle.sample_split(seed=seed, num_pool=60, num_test=20)


def test_run_tal_one_and_several_rounds():
    oracle, s = _oracle_split()
    model = GPRegression(kernel=oracle.kernel, noise_var=0.01)
    res = active.run_tal(s, model, model, "batchmig", batch_size=3, num_rounds=3)
    np.testing.assert_array_equal(res.num_train, [10, 13, 16, 19])
    assert res.queried.shape == (3, 3) and len(np.unique(res.queried)) == 9
    assert res.test_log_likelihood.shape == (4,) and np.all(np.isfinite(res.test_log_likelihood))
    # decoupled: the queried points depend only on the selection model
    rbf = GPRegression(noise_var=0.01, lengthscale=0.3, signal_var=1.0)
    other = active.run_tal(s, rbf, model, "batchmig", batch_size=3)
    assert not np.array_equal(other.queried[0], res.queried[0])
    # the default batch size is the reference one, and random ignores the selection model
    r1 = active.run_tal(s, None, model, "random", seed=3)
    r2 = active.run_tal(s, None, model, "random", seed=3)
    assert r1.queried.shape == (1, 1)
    np.testing.assert_array_equal(r1.queried, r2.queried)
    with pytest.raises(ValueError, match="batch_size \\* num_rounds"):
        active.run_tal(s, model, model, "tig", batch_size=30, num_rounds=3)


def test_tal_oracle_queries_help_on_average():
    oracle = ReLUKernelGP(1)
    model = GPRegression(kernel=oracle.kernel, noise_var=0.01)
    splits = [oracle.sample_split(seed=i, num_pool=60, num_test=20) for i in range(6)]
    df = active.tal_comparison(splits, model, model, criteria=("batchmig", "random"), batch_size=3)
    first = df[df["round"] == 1].groupby("criterion")["test_log_likelihood"].mean()
    start = df[df["round"] == 0]["test_log_likelihood"].mean()
    assert first["batchmig"] > start
    summary = active.summarize(df[df["round"] == 1])
    assert set(summary.columns) == {"mean", "stderr", "n"}


def test_metacorrelation_properties():
    oracle, s = _oracle_split()
    x = np.concatenate([s.x_pool, s.x_test])
    cov = GPRegression(kernel=oracle.kernel, noise_var=0.01).fit(s.x_train, s.y_train).covariance(x)
    pool, test = np.arange(60), 60 + np.arange(20)
    m = ppc.metacorrelation(cov, cov, pool, test)
    np.testing.assert_allclose(m, [1, 1, 1, 1], atol=1e-12)
    m2 = ppc.metacorrelation(3.0 * cov, cov, pool, test)  # correlations are scale-free
    np.testing.assert_allclose(m2, [1, 1, 1, 1], atol=1e-12)
    noisy = ppc.metacorrelation(cov + np.diag(np.linspace(0, 1, 80)), cov, pool, test)
    assert noisy.pearson < 1 and noisy.variance_spearman < 1
    corr = ppc.correlation_matrix(cov)
    np.testing.assert_allclose(corr[3, 7], cov[3, 7] / np.sqrt(cov[3, 3] * cov[7, 7]))


def test_top_correlated_batches_and_xll():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 4))
    cov = a @ a.T + 0.1 * np.eye(30)
    batches = ppc.top_correlated_batches(cov, 5)
    assert batches.shape == (30, 5)
    np.testing.assert_array_equal(batches[:, 0], np.arange(30))
    corr = np.abs(ppc.correlation_matrix(cov))
    for i in range(30):
        others = np.setdiff1d(np.arange(30), batches[i])
        assert corr[i, batches[i, 1:]].min() >= corr[i, others].max() - 1e-12
    y, mean, noise = rng.normal(size=30), rng.normal(size=30), 0.05
    # XLL with the model as its own reference is its top-correlated joint log-likelihood
    np.testing.assert_allclose(ppc.cross_normalized_log_likelihood(y, mean, cov, cov, noise),
                               ppc.top_correlated_log_likelihood(y, mean, cov, noise), rtol=1e-8)
    # direct evaluation of eq. (3) for one batch
    model_cov = np.diag(np.linspace(1, 2, 30)) + 0.5
    b = batches[:1]
    sd = np.sqrt(np.diag(cov) + noise)[b[0]]
    c_m = ppc.correlation_matrix(model_cov + noise * np.eye(30))[np.ix_(b[0], b[0])]
    direct = scipy.stats.multivariate_normal(mean[b[0]], np.outer(sd, sd) * c_m).logpdf(y[b[0]]) / 5
    np.testing.assert_allclose(ppc.cross_normalized_log_likelihood(y, mean, cov, model_cov, noise, batches=b),
                               direct, rtol=1e-6)


def test_xll_prefers_the_true_correlations():
    oracle, s = _oracle_split(d=1, seed=2)
    x = s.x_test
    post = GPRegression(kernel=oracle.kernel, noise_var=0.01).fit(s.x_train, s.y_train)
    mean, cov = post.mean_and_covariance(x)
    rng = np.random.default_rng(0)
    wins = 0
    for i in range(10):  # fresh targets drawn from the true posterior predictive
        y = mean + np.linalg.cholesky(cov + 0.01 * np.eye(20)) @ rng.normal(size=20)
        table = ppc.xll_table(y, {"true": mean, "independent": mean},
                                 {"true": cov, "independent": np.diag(np.diag(cov))}, 0.01)
        assert set(table["xllr"]) <= {0.0, 1.0, 0.5}
        wins += ppc.xll_summary(table).index[0] == "true"
    assert wins >= 8


def test_xll_table_rejects_mismatched_models():
    with pytest.raises(ValueError, match="same model names"):
        ppc.xll_table(np.zeros(3), {"a": np.zeros(3)}, {"b": np.eye(3)}, 0.1)


def test_prediction_gram_gives_the_same_evaluation_and_tal_as_kernel_refits():
    """The precomputed oracle kernel (prediction_gram) changes nothing but the speed: the same queries, the same
    log-likelihoods up to round-off, for every criterion over several rounds (docs/ppc.md, "Speed of the scoring")."""
    oracle_env = ReLUKernelGP(3)
    split = oracle_env.sample_split(seed=4, num_pool=40, num_test=30)
    oracle = GPRegression(kernel=oracle_env.kernel, noise_var=0.01)
    gram = active.prediction_gram(split, oracle)
    assert gram.shape == (15 + 40 + 30,) * 2
    for q in (np.zeros(0, np.int64), np.array([3, 0, 17])):
        np.testing.assert_allclose(active.evaluate_prediction(split, q, oracle, gram=gram),
                                   active.evaluate_prediction(split, q, oracle), rtol=0, atol=1e-10)
    twin = GPRegression(kernel=ReLUKernelGP(3).kernel, noise_var=0.01)  # equal, not the same object
    for criterion in active.CRITERIA:
        old = active.run_tal(split, oracle, oracle, criterion, batch_size=2, num_rounds=3, seed=1)
        new = active.run_tal(split, twin, oracle, criterion, batch_size=2, num_rounds=3, seed=1, gram=gram)
        np.testing.assert_array_equal(new.queried, old.queried)
        np.testing.assert_allclose(new.test_log_likelihood, old.test_log_likelihood, rtol=0, atol=1e-10)
        np.testing.assert_allclose(new.test_rmse, old.test_rmse, rtol=0, atol=1e-10)
    a = active.tal_comparison([split], oracle, oracle, criteria=("batchmig", "tig"), progress=False, num_rounds=2,
                              batch_size=2)
    b = active.tal_comparison([split], oracle, oracle, criteria=("batchmig", "tig"), progress=False, num_rounds=2,
                              batch_size=2, use_gram=True)
    np.testing.assert_allclose(b["test_log_likelihood"], a["test_log_likelihood"], rtol=0, atol=1e-10)
    other = GPRegression(noise_var=0.01, lengthscale=1.0)  # a different selection model: its own refits
    np.testing.assert_array_equal(
        active.run_tal(split, other, oracle, "mig", batch_size=2, seed=0, gram=gram).queried,
        active.run_tal(split, other, oracle, "mig", batch_size=2, seed=0).queried)
    with pytest.raises(ValueError, match="gram must be prediction_model's kernel"):
        active.evaluate_prediction(split, [0], oracle, gram=2.0 * gram)
    with pytest.raises(TypeError, match="prediction_model must be a GP with a given kernel"):
        active.evaluate_prediction(split, [0], GPRegression(noise_var=0.01), gram=gram)


def test_paired_gaps_are_scipys_paired_t_intervals():
    act = active
    rng = np.random.default_rng(3)
    base = rng.normal(size=6)
    df = pd.DataFrame({"criterion": ["batchmig"] * 6 + ["mig"] * 6, "split": list(range(6)) * 2,
                       "test_log_likelihood": np.concatenate([base + 0.5 + 0.1 * rng.normal(size=6), base])})
    gaps = act.paired_gaps(df, [("batchmig", "mig")])
    row = gaps.loc["batchmig − mig"]
    wide = df.pivot(index="split", columns="criterion", values="test_log_likelihood")
    ci = scipy.stats.ttest_rel(wide["batchmig"], wide["mig"]).confidence_interval()
    assert (row.difference - row.half_width, row.difference + row.half_width) == pytest.approx((ci.low, ci.high))
    assert not row.within_noise and row.n == 6
    with pytest.raises(ValueError, match="'tig'"):
        act.paired_gaps(df, [("tig", "mig")])
