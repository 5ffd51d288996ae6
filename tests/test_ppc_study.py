"""The PPC study's library pieces (jtk.ppc.xll_table, split_mean_correlation, jtk.ppc.active.select_many,
split_data) against independent computations, and jtk.ppc.synthetic_study end to end on toy sizes."""


import jax
import numpy as np
import pandas as pd
import pytest
import scipy.stats

from jtk import ppc
from jtk.ppc import active
from jtk.envs.gp import NOISE_VAR, ReLUKernelGP
from jtk.regression.gp import GPRegression

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics



def _models(n=40, m=5, seed=0):
    rng = np.random.default_rng(seed)
    means, covs = {}, {}
    for k in range(m):
        a = rng.normal(size=(n, 3 + k))
        covs[f"m{k}"] = a @ a.T / (3 + k)
        means[f"m{k}"] = 0.1 * rng.normal(size=n)
    return rng.normal(size=n), means, covs


# ------------------------------------------------------------------ XLL
def test_xll_table_equals_the_pairwise_definition():
    y, means, covs = _models()
    fast = ppc.xll_table(y, means, covs, NOISE_VAR, batch_size=4)
    assert list(fast.columns) == ["reference", "model", "xll", "xllr"]
    # every pair by the single-pair function (the definition, eq. 3), ranked per reference (XLLR, 0 = best)
    slow = []
    for ref in means:
        vals = [ppc.cross_normalized_log_likelihood(y, means[ref], covs[ref], covs[m], NOISE_VAR, batch_size=4)
                for m in means]
        ranks = scipy.stats.rankdata(-np.asarray(vals), method="average") - 1.0
        slow += [{"reference": ref, "model": m, "xll": v, "xllr": r} for m, v, r in zip(means, vals, ranks)]
    slow = pd.DataFrame(slow)
    assert list(fast["reference"]) == list(slow["reference"]) and list(fast["model"]) == list(slow["model"])
    np.testing.assert_allclose(fast["xll"], slow["xll"], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(fast["xllr"], slow["xllr"])


def test_xll_table_rejects_bad_inputs():
    y, means, covs = _models(m=2)
    with pytest.raises(ValueError, match="same model names"):
        ppc.xll_table(y, means, {"m0": covs["m0"]}, NOISE_VAR)
    with pytest.raises(ValueError, match=r"means\['m1'\].*40 points"):
        ppc.xll_table(y, {**means, "m1": means["m1"][:-1]}, covs, NOISE_VAR)
    with pytest.raises(ValueError, match="batch_size"):
        ppc.xll_table(y, means, covs, NOISE_VAR, batch_size=41)
    with pytest.raises(ValueError, match="positive semi-definite"):
        ppc.xll_table(y, means, {**covs, "m0": -covs["m0"]}, NOISE_VAR)


# ------------------------------------------------------------------ Fig. 4 statistics
def test_split_mean_correlation_matches_scipy_and_a_loop_bootstrap():
    rng = np.random.default_rng(1)
    signal = rng.normal(size=(12, 1))
    x = signal + 0.3 * rng.normal(size=(12, 15))
    y = 0.5 * signal + 0.5 * rng.normal(size=(12, 15))
    res = ppc.split_mean_correlation(x, y, num_resamples=4000, seed=3)
    assert res.pearson == pytest.approx(scipy.stats.pearsonr(x.mean(1), y.mean(1))[0], rel=1e-12)
    assert res.spearman == pytest.approx(scipy.stats.spearmanr(x.mean(1), y.mean(1))[0], rel=1e-12)
    assert (res.num_models, res.num_splits) == (12, 15)
    # an independent, plain-loop bootstrap over splits (another generator): the same interval up to MC error
    loop = np.random.default_rng(99)
    rs = []
    for _ in range(4000):
        idx = loop.integers(0, 15, 15)
        rs.append(scipy.stats.pearsonr(x[:, idx].mean(1), y[:, idx].mean(1))[0])
    low, high = np.percentile(rs, [2.5, 97.5])
    assert res.low == pytest.approx(low, abs=0.04) and res.high == pytest.approx(high, abs=0.04)
    assert res.low < res.pearson < res.high


def test_split_mean_reliability_against_the_variance_components():
    # v[c, s] = a_c + e_cs with Var(a) = 1, Var(e) = 4, S = 16: the noise of a mean is 4 / 16 = 0.25,
    # so the expected reliability is 1 / (1 + 0.25) = 0.8.
    rng = np.random.default_rng(2)
    vals = [ppc.split_mean_reliability(rng.normal(size=(200, 1)) + 2.0 * rng.normal(size=(200, 16)))
            for _ in range(20)]
    assert np.mean(vals) == pytest.approx(0.8, abs=0.03)
    # without noise every model mean is signal; a common split effect is not noise either
    a = rng.normal(size=(6, 1)) + rng.normal(size=(1, 10))
    assert ppc.split_mean_reliability(a) == pytest.approx(1.0)


def test_split_mean_correlation_rejects_bad_inputs():
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"y must have x's shape \(4, 3\)"):
        ppc.split_mean_correlation(x, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="at least 3 models"):
        ppc.split_mean_correlation(np.zeros((2, 3)), np.zeros((2, 3)))
    bad = np.ones((4, 3))
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ppc.split_mean_correlation(bad, np.ones((4, 3)))
    with pytest.raises(ValueError, match="level must be in"):
        ppc.split_mean_correlation(np.random.rand(4, 3), np.random.rand(4, 3), level=1.5)
    with pytest.raises(ValueError, match="at least 2 of each"):
        ppc.split_mean_reliability(np.zeros((1, 5)))


def test_metacorrelation_without_spearman():
    a = np.random.default_rng(0).normal(size=(30, 6))
    cov, other = a @ a.T, a[:, :4] @ a[:, :4].T
    pool, test = np.arange(20), np.arange(20, 30)
    full = ppc.metacorrelation(other, cov, pool, test)
    fast = ppc.metacorrelation(other, cov, pool, test, spearman=False)
    assert fast.pearson == full.pearson and fast.variance_pearson == full.variance_pearson
    assert np.isnan(fast.spearman) and np.isnan(fast.variance_spearman)


# ------------------------------------------------------------------ acquisition
def test_select_many_equals_select():
    a = np.random.default_rng(4).normal(size=(40, 8))
    cov = a @ a.T
    pool, test = np.arange(30), np.arange(30, 40)
    many = active.select_many(cov, pool, test, 0.1, 4, criteria=active.CRITERIA, seed=7)
    for c in active.CRITERIA:
        np.testing.assert_array_equal(many[c], active.select(c, cov, pool, test, 0.1, 4, seed=7))
    with pytest.raises(ValueError, match="criteria"):
        active.select_many(cov, pool, test, 0.1, 4, criteria=("bald",))
    with pytest.raises(ValueError, match="at least one"):
        active.select_many(cov, pool, test, 0.1, 4, criteria=())


# ------------------------------------------------------------------ a researcher's own data
def test_split_data_protocol_and_standardisation():
    rng = np.random.default_rng(5)
    x = rng.normal(3.0, 2.0, size=(500, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=500)
    s = active.split_data(x, y, seed=0)
    assert (len(s.y_train), len(s.y_pool), len(s.y_test)) == (100, 300, 100)
    assert s.query_size == 5  # 1 % of 500
    seen = np.concatenate([s.x_train, s.x_pool])
    np.testing.assert_allclose(seen.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(seen.std(0), 1.0, atol=1e-12)
    # the rows are a permutation of the data: undo the scaling and find every one
    back = np.concatenate([s.x_train, s.x_pool, s.x_test]) * s.x_scale + s.x_mean
    assert np.allclose(np.sort(back[:, 0]), np.sort(x[:, 0]))
    yb = np.concatenate([s.y_train, s.y_pool, s.y_test]) * s.y_scale + s.y_mean
    assert np.allclose(np.sort(yb), np.sort(y))
    # the same seed gives the same split; another seed another
    assert np.array_equal(active.split_data(x, y, seed=0).y_test, s.y_test)
    assert not np.array_equal(active.split_data(x, y, seed=1).y_test, s.y_test)
    # and TAL runs on it
    gp = GPRegression(noise_var=0.1, lengthscale=2.0, signal_var=1.0)
    res = active.run_tal(s, gp, gp, "batchmig", batch_size=s.query_size, num_rounds=2, noise_var=0.1)
    assert list(res.num_train) == [100, 105, 110]


def test_split_data_from_a_dataframe():
    df = pd.DataFrame({"a": np.arange(50.0), "b": np.sin(np.arange(50.0)), "target": np.arange(50.0) % 5})
    s = active.split_data(df, target="target", standardize=False, seed=2)
    assert s.feature_names == ("a", "b") and s.x_train.shape == (10, 2)
    assert s.y_scale == 1.0 and set(np.concatenate([s.y_train, s.y_pool, s.y_test])) <= set(range(5))
    s2 = active.split_data(df[["a", "b"]], df["target"], standardize=False, seed=2)
    np.testing.assert_array_equal(s.y_test, s2.y_test)


@pytest.mark.parametrize("kwargs, match", [
    (dict(target="nope"), "target must name a column"),
    (dict(target="t", y=np.zeros(20)), "either y or target"),
    (dict(train_fraction=0.6, test_fraction=0.5), "train_fraction \\+ test_fraction must be < 1"),
    (dict(target="t", train_fraction=1.5), "train_fraction must be in"),
])
def test_split_data_errors_name_the_argument(kwargs, match):
    df = pd.DataFrame({"a": np.arange(20.0), "t": np.arange(20.0)})
    kw = dict(kwargs)
    kw.setdefault("target", "t")
    y = kw.pop("y", None)
    with pytest.raises(ValueError, match=match):
        active.split_data(df, y, **kw)


def test_split_data_rejects_bad_tables():
    with pytest.raises(TypeError, match="numeric columns only.*'c'"):
        active.split_data(pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "c": list("abcde")}), np.arange(5.0))
    with pytest.raises(ValueError, match="y must be given"):
        active.split_data(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="one target per row"):
        active.split_data(np.zeros((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="must be finite"):
        active.split_data(np.full((10, 2), np.nan), np.zeros(10))
    with pytest.raises(ValueError, match="enough rows"):
        active.split_data(np.zeros((2, 1)), np.arange(2.0))
    with pytest.raises(ValueError, match="constant target"):
        active.split_data(np.random.rand(20, 2), np.ones(20))


# ------------------------------------------------------------------ the benchmark
@pytest.fixture(scope="module")
def study():
    from jtk.ppc import synthetic_study

    return synthetic_study


def test_shared_splits_repartition_one_draw(study):
    splits = study.make_splits(2, 3, "shared")
    everything = [np.sort(np.concatenate([s.f_train, s.f_pool, s.f_test])) for s in splits]
    assert all(np.array_equal(everything[0], e) for e in everything[1:])  # one function, re-split
    assert not np.array_equal(splits[0].f_test, splits[1].f_test)
    # the paper's text (§5.1): 5d training, 500 test and 200 pool points
    assert (len(splits[0].x_train), len(splits[0].x_pool), len(splits[0].x_test)) == (10, 200, 500)
    ind = study.make_splits(2, 2, "independent")
    assert not np.array_equal(np.sort(ind[0].f_test), np.sort(ind[1].f_test))
    with pytest.raises(ValueError, match="data must be"):
        study.make_splits(2, 2, "other")


def test_paper_preset_trains_the_papers_families_and_the_oracle_line(study):
    """The paper preset's default leaves out SGLD (not a family of the paper's, a tenth of its run); quick keeps it."""
    paper, quick = study.default_families("paper"), study.default_families("quick")
    assert set(study.PAPER_FAMILIES) <= set(paper) and "oracle, S samples" in paper
    assert study.SGLD not in paper and study.SGLD in quick
    assert set(quick) == set(study.PAPER_FAMILIES + study.EXTRA_FAMILIES)
    assert [g.family for g in study.grid(study.preset_for("paper"), paper)].count("HMC") == 6
    with pytest.raises(ValueError, match="preset_name must be one of"):
        study.default_families("full")


def test_paper_grid_has_the_reference_size(study):
    # the code: 3 samples × 2 widths × 3 learning rates × 3 epoch counts per network family; 9 GP-RBF settings
    fams = ("Ensemble", "Dropout", "BBB", "HMC (SGLD)", "GP-RBF")
    groups = study.grid(study.preset_for("paper", "code"), fams)
    per_family = pd.Series([g.family for g in groups for _ in g.settings]).value_counts()
    assert per_family.to_dict() == {"Ensemble": 54, "Dropout": 54, "BBB": 54, "HMC (SGLD)": 54, "GP-RBF": 9}
    # the text: 1,000 epochs for every model
    groups = study.grid(study.preset_for("paper", "text"), fams)
    per_family = pd.Series([g.family for g in groups for _ in g.settings]).value_counts()
    assert per_family.to_dict() == {"Ensemble": 18, "Dropout": 18, "BBB": 18, "HMC (SGLD)": 18, "GP-RBF": 9}
    assert {g.epochs for g in groups if g.family != "GP-RBF"} == {1000}


def test_protocols_state_the_papers_sizes(study):
    text, code = study.preset_for("paper", "text"), study.preset_for("paper", "code")
    for p, (test, pool) in ((text, (500, 200)), (code, (200, 500))):  # 50 data sets at d = 9 under both protocols;
        # the text's 500 test / 200 pool, the scripts' (generate_toy_data.py) 200 test / 500 pool
        assert (p["splits"], p["num_test"], p["num_pool"], p["dim"]) == (50, test, pool, 9)
    assert (text["data"], text["epochs"]) == ("independent", (1000,))  # fresh inputs and function per data set
    assert (code["data"], code["epochs"]) == ("shared", (100, 300, 1000))  # one draw re-split
    quick = study.preset_for("quick", "text")
    assert (quick["num_test"], quick["num_pool"], quick["data"]) == (500, 200, "independent")
    with pytest.raises(ValueError, match="protocol must be"):
        study.preset_for("paper", "other")
    s = study.make_splits(2, 2, "independent", num_pool=7, num_test=5)[0]
    assert (len(s.x_train), len(s.x_pool), len(s.x_test)) == (10, 7, 5)


def _their_toy_data(dim, iseed, num_pool, num_test):
    """The authors' tasks/toy/generate_toy_data.py and utils/toy_utils.py (their kernel), transcribed."""
    import random

    n_train = 5 * dim
    n = n_train + num_pool + num_test
    np.random.seed(121)
    random.seed(121)
    x = np.random.randn(n, dim)
    k = 2.5 + 1.414 * (x @ x.T) / dim
    d = np.diag(k).reshape(-1, 1)
    det = np.sqrt(-k ** 2 + d @ d.T) + 1e-10
    k = (2 * det + k * np.pi + 2 * k * np.arctan(k / det)) / (4 * np.pi) * 1.737 + 2.5
    f = np.linalg.cholesky(k) @ np.random.normal(0, 1.0, size=n)
    y = f + np.random.normal(0, 0.01 ** 0.5, size=n)
    idx = list(range(n))
    np.random.seed(iseed)
    random.seed(iseed)
    random.shuffle(idx)
    tr, po, te = idx[:n_train], idx[n_train:n_train + num_pool], idx[n_train + num_pool:]
    return x[tr], y[tr], x[po], y[po], x[te], y[te]


@pytest.mark.parametrize("num_pool, num_test", [(500, 200), (200, 500)])
def test_authors_data_are_their_draw_and_re_splits(study, num_pool, num_test):
    splits = study.make_splits(3, 4, "authors", num_pool=num_pool, num_test=num_test)
    for iseed in (1, 4):
        theirs = _their_toy_data(3, iseed, num_pool, num_test)
        s = splits[iseed - 1]
        for mine, ref in zip((s.x_train, s.y_train, s.x_pool, s.y_pool, s.x_test, s.y_test), theirs):
            np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-9)


def test_authors_preset_is_their_grid_frozen(study):
    code, text = study.preset_for("authors", "code"), study.preset_for("authors", "text")
    assert (code["num_pool"], code["num_test"], code["data"]) == (500, 200, "authors")
    assert (text["num_pool"], text["num_test"], text["data"]) == (200, 500, "authors")
    assert code["epochs"] == text["epochs"] == (100, 300, 1000) and code["hmc"] == "authors"
    with pytest.raises(TypeError):
        study.PRESETS["authors"]["splits"] = 5  # frozen
    fams = study.default_families("authors")
    assert study.SGLD not in fams and set(study.PAPER_FAMILIES) <= set(fams)
    groups = study.grid(code, study.PAPER_FAMILIES)
    per_family = pd.Series([g.family for g in groups for _ in g.settings]).value_counts().to_dict()
    # scripts/gen_scripts.py, toy_metrics: 9 S × 3 lr × 3 epochs × 2 widths per network family; FBNN 18; the GP 9
    assert per_family == {"Ensemble": 162, "Dropout": 162, "BBB": 162, "NNG": 162, "HMC": 162, "FBNN": 18,
                          "GP-RBF": 9}
    assert sorted({st.samples for g in groups for st in g.settings if g.family == "HMC"}) == [
        3, 6, 9, 10, 20, 50, 100, 150, 200]


def test_authors_hmc_in_the_study_keeps_their_states(study):
    splits = study.make_splits(2, 2, "authors", num_pool=20, num_test=10)
    sets = tuple(study.Setting("HMC", s, 8, 1e-2, 10, f"HMC S={s}") for s in (3, 6))
    group = study.Group("HMC", 8, 1e-2, 10, sets)
    hmc_kw = dict(study.AUTHORS_HMC, thin=5, steps_per_em=2)  # their schedule, shortened
    posts = study.train_group(group, splits, jax.random.PRNGKey(0), 6, 10, hmc_authors=hmc_kw)
    for post in posts:
        # their driver keeps S − 1 states when the burn-in is a multiple of the thinning; S = 3 is S = 6's first 2
        assert (post[3].num_moment_samples, post[6].num_moment_samples) == (2, 5)
        for a, b in zip(jax.tree_util.tree_leaves(post[3].samples), jax.tree_util.tree_leaves(post[6].samples)):
            np.testing.assert_array_equal(a, b[:2])
        mean, cov = study.moments(post[3], splits[0].x_test, 3)
        assert cov.shape == (10, 10) and np.linalg.matrix_rank(cov) == 1  # two states: a rank-one covariance


def test_authors_preset_end_to_end_on_a_tiny_slice(study, tmp_path, monkeypatch):
    from types import MappingProxyType

    tiny = dict(study.PRESETS["authors"], dim=2, splits=2, samples=(3, 6), units=(8,), lrs=(1e-2,), epochs=(10,),
                fbnn_units=(8, 16), gp_lengthscales=(2.0,), gp_ml2=("iso",), fig3_dims=(1,), fig3_splits=2,
                fig3_rounds=1, ablation_splits=2)
    monkeypatch.setitem(study.PRESETS, "authors", MappingProxyType(tiny))
    monkeypatch.setattr(study, "AUTHORS_HMC", dict(study.AUTHORS_HMC, thin=5, steps_per_em=2))
    assert study.main(["--preset", "authors", "--protocol", "code", "--families", "HMC", "FBNN", "GP-RBF",
                       "--out-dir", str(tmp_path)]) == 0
    meta = pd.read_csv(tmp_path / "ppc_authors_code_meta.csv").iloc[0]
    assert (meta["data"], meta["num_pool"], meta["num_test"], meta["protocol"]) == ("authors", 500, 200, "code")
    runs = pd.read_csv(tmp_path / "ppc_authors_code_runs.csv")
    assert runs.groupby("family")["setting"].nunique().to_dict() == {"FBNN": 2, "GP-RBF": 2, "HMC": 2}
    assert "<!-- ppc-authors_code begin -->" in (tmp_path / "ppc.md").read_text()


def test_networks_only_correlation_leaves_out_the_gp(study):
    rng = np.random.default_rng(0)
    rows = []
    for fam, count in (("Ensemble", 4), ("BBB", 3), ("GP-RBF", 3)):
        for j in range(count):
            level = rng.normal()
            for split in range(6):
                rows.append({"family": fam, "setting": f"{fam} {j}", "split": split,
                             "pearson": level + 0.1 * rng.normal(), "batchmig_ll": level + rng.normal()})
    runs = pd.DataFrame(rows)
    every, nets = study.fig4_correlations(runs, seed=3)
    assert (every["settings"], nets["settings"]) == (10, 7)
    sub = runs[runs["family"] != "GP-RBF"]
    a = sub.pivot(index="setting", columns="split", values="pearson").to_numpy()
    b = sub.pivot(index="setting", columns="split", values="batchmig_ll").to_numpy()
    want = ppc.split_mean_correlation(a, b, seed=3)
    assert nets["pearson"] == pytest.approx(want.pearson) and nets["low"] == pytest.approx(want.low)
    assert nets["high"] == pytest.approx(want.high)
    assert every["pearson"] != pytest.approx(nets["pearson"])


def test_batched_ensemble_trainer_matches_the_owners(study):
    """Every (learning rate, data set, epoch count) of the batched trainer = deep's "Ens" trained alone."""
    import jax
    import jax.numpy as jnp

    from jtk.regression import batched, deep

    splits = study.make_splits(2, 2, "independent", num_pool=3, num_test=3)
    lrs, eps, k, h = (1e-2, 3e-2), (4, 9), 3, 5
    keys = jnp.stack([jax.random.split(jax.random.PRNGKey(i), 2) for i in range(len(lrs))])  # [L, D]
    xs, ys = study._training_stacks(splits)
    got = batched.ensemble_snapshots(h, k, eps, keys, xs, ys, lrs, 0.01, study.DROPOUT_RATE)
    assert jax.tree_util.tree_leaves(got.net)[0].shape[:4] == (2, 2, 2, k)  # [E, L, D, K, ...]
    for e, ep in enumerate(eps):
        for li, lr in enumerate(lrs):
            group = study.Group("Ensemble", h, lr, ep, ())
            model = study.ensemble_model(group, k, ep, 0.01)
            for i, s in enumerate(splits):
                member_keys = deep._member_keys(jax.random.fold_in(keys[li, i], 0), k)
                x = jnp.asarray(s.x_train, jnp.float32)
                y = jnp.broadcast_to(jnp.asarray(s.y_train, jnp.float32), (k, len(s.y_train)))
                want = deep._train_networks(model._arch(), model._hyper(s.x_train), member_keys, x, y)
                for a, b in zip(jax.tree_util.tree_leaves(want.net),
                                jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda t: t[e, li, i], got.net))):
                    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)


def test_train_group_one_split_at_a_time_equals_vmapped(study):
    """lax.map over the data sets (the speed-up) gives the owners' vmapped results, for SGLD and an ensemble."""
    import jax

    splits = study.make_splits(2, 2, "independent", num_pool=3, num_test=3)
    key = jax.random.PRNGKey(1)
    for fam, ep in (("HMC (SGLD)", 3), ("Ensemble", 6)):
        group = study.Group(fam, 4, 1e-2, ep, (study.Setting(fam, 3, 4, 1e-2, ep, "S=3"),))
        before = study._vmapped_group(group, splits, key, 3, group.epochs)
        after = study.train_group(group, splits, key, 3, group.epochs)
        for i in range(len(splits)):
            post = after[i][3]  # S = 3 = all of them
            got = post.state.net if group.family == "Ensemble" else post.samples
            want = jax.tree_util.tree_map(lambda a: a[i], before)
            want = want.net if group.family == "Ensemble" else want
            for a, b in zip(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(got)):
                np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:An input array is constant")  # toy sizes: some XLL columns are constant
@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")  # ... so no Spearman ρ
def test_benchmark_end_to_end_on_toy_sizes(study, tmp_path):
    rc = study.main(["--preset", "smoke", "--families", "GP-RBF", "oracle, S samples", "--out-dir", str(tmp_path)])
    assert rc == 0
    page = (tmp_path / "ppc.md").read_text()
    assert "<!-- ppc-smoke begin -->" in page and "Fig. 4 (right): Pearson r =" in page
    for name in ("fig3", "fig4", "fig5", "fig6"):
        png = tmp_path / f"ppc_{name}_smoke.png"
        assert png.stat().st_size > 1000
        assert f"]({png.name})" in page and "![" in page  # every figure has its text alternative
    runs = pd.read_csv(tmp_path / "ppc_smoke_runs.csv")
    assert set(runs["family"]) == {"GP-RBF", "oracle, S samples"} and runs["split"].nunique() == 3
    assert np.isfinite(runs["batchmig_ll"]).all()
    oracle_ll = pd.read_csv(tmp_path / "ppc_smoke_baselines.csv")
    assert {"oracle_batchmig_ll", "oracle_random_ll", "no_query_ll"} <= set(oracle_ll.columns)


@pytest.mark.filterwarnings("ignore:An input array is constant")
@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
def test_a_stopped_run_continues_from_its_checkpoints(study, tmp_path, monkeypatch):
    """Killed in the middle of Fig. 4, the study keeps its finished groups; the next call trains only the rest and
    writes the same rows as a run that was never stopped; a checkpoint of another run is refused by name."""
    argv = ["--preset", "smoke", "--families", "GP-RBF", "oracle, S samples", "--no-docs"]
    whole = tmp_path / "whole"
    assert study.main(argv + ["--out-dir", str(whole)]) == 0
    assert not (whole / ".ppc_smoke_checkpoints").exists()  # gone once the CSVs are written

    stopped = tmp_path / "stopped"
    real, calls = study.train_group, []

    def dies_on_the_third(group, *a, **k):
        calls.append(group.settings[0].label)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(group, *a, **k)

    monkeypatch.setattr(study, "train_group", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        study.main(argv + ["--out-dir", str(stopped)])
    folder = stopped / ".ppc_smoke_checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == ["fig3.npz", "group-000.npz", "group-001.npz"]
    assert not (stopped / "ppc_smoke_runs.csv").exists()

    calls.clear()
    monkeypatch.setattr(study, "train_group", lambda group, *a, **k: calls.append(group) or real(group, *a, **k))
    assert study.main(argv + ["--out-dir", str(stopped)]) == 0
    groups = study.grid(study.preset_for("smoke"), ["GP-RBF", "oracle, S samples"])
    ablation = study.grid(study.preset_for("smoke"), ["GP-RBF", "oracle, S samples"])
    assert calls == groups[2:] + ablation  # Fig. 4 trained only the groups not saved; the ablation all of its own
    assert not folder.exists()
    assert (whole / "ppc_smoke_xll.csv.gz").exists() and not (whole / "ppc_smoke_xll.csv").exists()  # gzipped
    for name in ("runs.csv", "fig3.csv", "xll.csv.gz", "baselines.csv", "runs_shared.csv"):
        a, b = (pd.read_csv(d / f"ppc_smoke_{name}") for d in (whole, stopped))
        pd.testing.assert_frame_equal(a, b)
    timings = pd.read_csv(stopped / "ppc_smoke_timings.csv")
    assert timings["resumed"].tolist() == [True, True] + [False] * (len(groups) - 2)
    assert pd.read_csv(stopped / "ppc_smoke_meta.csv")["resumed_groups"].item() == 2

    # a torn piece is recomputed, not trusted
    monkeypatch.setattr(study, "train_group", dies_on_the_third)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        study.main(argv + ["--out-dir", str(stopped)])
    (folder / "group-000.npz").write_bytes(b"PK\x03\x04 torn")
    monkeypatch.setattr(study, "train_group", lambda group, *a, **k: calls.append(group) or real(group, *a, **k))
    calls.clear()
    assert study.main(argv + ["--out-dir", str(stopped)]) == 0
    assert calls[:1] == groups[:1] and groups[1] not in calls[:len(groups) - 1]
    pd.testing.assert_frame_equal(*(pd.read_csv(d / "ppc_smoke_runs.csv") for d in (whole, stopped)))

    # a checkpoint left by another run (here: another seed) is refused, naming the way out; --fresh starts over
    monkeypatch.setattr(study, "train_group", dies_on_the_third)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        study.main(argv + ["--out-dir", str(stopped)])
    monkeypatch.setattr(study, "train_group", real)
    with pytest.raises(ValueError, match="belongs to another run.*--fresh"):
        study.main(argv + ["--out-dir", str(stopped), "--seed", "1"])
    assert study.main(argv + ["--out-dir", str(stopped), "--seed", "1", "--fresh"]) == 0
    assert not folder.exists()


def test_xll_leaves_out_a_setting_that_diverged_on_one_split(study):
    """The paper preset's first run stopped here: NNG at H = 100, lr = 0.01 diverged on some splits, had the best
    mean marginal LL over the others, and its NaN covariance reached xll_table. Such a setting is not a candidate."""
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    u, splits = 6, [SimpleNamespace(y_test=rng.normal(size=6)) for _ in range(2)]

    def moments(scale):
        a = rng.normal(size=(2, u, u))
        return np.zeros((2, u), np.float32), (scale * a @ a.transpose(0, 2, 1) + np.eye(u)).astype(np.float32)

    kept = {lab: moments(sc) for lab, sc in (("A", 0.1), ("B", 0.2), ("C", 0.3))}
    kept["A"][1][1] = np.nan  # A diverged on split 1
    runs = pd.DataFrame([{"family": "F", "setting": lab, "split": i, "marginal_ll": ll if not (lab == "A" and i)
                          else np.nan, "diverged": lab == "A" and i == 1}
                         for lab, ll in (("A", 0.0), ("B", -1.0), ("C", -2.0)) for i in range(2)])
    xll, chosen = study.xll_study(runs, kept, splits, 2)
    assert chosen == ["B", "C"] and set(xll["model"]) == {"B", "C"} and np.isfinite(xll["xll"]).all()
    # a setting whose stored moments are not finite is left out even if no row says it diverged
    xll, chosen = study.xll_study(runs.assign(diverged=False), kept, splits, 2)
    assert chosen == ["B", "C"]


def test_benchmark_refuses_bad_arguments(study, capsys):
    with pytest.raises(SystemExit):
        study.main(["--preset", "smoke", "--families", "Bogus"])
    assert "--families must be among" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        study.main(["--preset", "smoke", "--splits", "1"])


def test_oracle_covariance_context_matches_the_gp(study):
    splits = study.make_splits(2, 1, "independent")
    ctx = study.contexts(splits)[0]
    exact = GPRegression(kernel=ReLUKernelGP(2).kernel, noise_var=NOISE_VAR).fit(splits[0].x_train,
                                                                                splits[0].y_train)
    np.testing.assert_allclose(ctx.oracle_cov, exact.covariance(ctx.x_all), atol=1e-10)
    assert ctx.batch == 7  # max(⌊0.01 · (10 + 500 + 200)⌋, 1)


def test_fast_scoring_equals_the_public_functions_one_by_one(study):
    """score's fast path (the context's oracle kernel matrix and correlations, the oracle's covariance validated
    once) gives the rows of the public functions called one by one (fast=False), up to round-off; and the baselines
    read the same context."""
    splits = study.make_splits(2, 2, "independent", num_pool=30, num_test=20)
    ctxs = study.contexts(splits)
    oracle = GPRegression(kernel=ReLUKernelGP(2).kernel, noise_var=NOISE_VAR)  # equal to the context's, not it
    assert oracle is not ctxs[0].oracle
    for i, ctx in enumerate(ctxs):
        models = [GPRegression(noise_var=NOISE_VAR, lengthscale=ls, ard=False).fit(ctx.split.x_train, ctx.split.y_train)
                  for ls in (0.5, 3.0)]
        moments = [study.moments(m, ctx.x_all, 0) for m in models]
        moments.append(study.moments(study.MonteCarloGP(oracle, 3).fit(ctx.split.x_train, ctx.split.y_train, seed=i),
                                     ctx.x_all, 3))
        for mean, cov in moments:
            old, new = study.score(ctx, mean, cov, oracle, fast=False), study.score(ctx, mean, cov, oracle)
            assert set(old) == set(new)
            for k in old:
                assert abs(new[k] - old[k]) <= 1e-10, (k, old[k], new[k])
    np.testing.assert_allclose(ctxs[0].gram, active.prediction_gram(splits[0], oracle))


def test_headline_families_let_sgld_stand_in_only_without_hmc(study):
    assert study.headline_families(["Ensemble", "HMC (SGLD)", "GP-RBF", "oracle, S samples"]) == (
        "Ensemble", "GP-RBF", "HMC (SGLD)")
    assert study.headline_families(["Ensemble", "HMC", "HMC (SGLD)"]) == ("Ensemble", "HMC")
    assert "HMC (SGLD)" in study.NETWORK_FAMILIES and "GP-RBF" not in study.NETWORK_FAMILIES


@pytest.mark.skipif(not getattr(__import__("jtk.regression", fromlist=["x"]), "NNGRegression", None),
                    reason="the NNG / FBNN / HMC modules are not in this jtk")
def test_new_families_train_on_toy_sizes(study):
    """NNG, FBNN and the real HMC run through the grid's training and give finite moments for every setting."""
    import jax

    preset = dict(samples=(2, 3), units=(4,), lrs=(1e-2,), epochs=(5,), gp_lengthscales=(), gp_ml2=())
    splits = study.make_splits(2, 2, "independent", num_pool=3, num_test=3)
    groups = study.grid(preset, ["NNG", "FBNN", "HMC"])
    assert [len(g.settings) for g in groups] == [2, 1, 2]  # FBNN: an explicit covariance, no S
    for g in groups:
        posts = study.train_group(g, splits, jax.random.PRNGKey(0), 3, 5)
        for i, s in enumerate(splits):
            for st in g.settings:
                mean, cov = study.moments(posts[i][st.samples], np.concatenate([s.x_pool, s.x_test]), st.samples)
                assert mean.shape == (6,) and cov.shape == (6, 6) and np.all(np.isfinite(cov))


@pytest.mark.parametrize("m", [0, 1, 63, 64, 65, 700])
def test_kernel_diag_equals_the_kernels_diagonal(m):
    from jtk.regression.gp import kernel_diag, rbf_kernel

    x = np.random.default_rng(m).normal(size=(m, 9))
    relu = ReLUKernelGP(9).kernel
    for kernel in (relu, lambda a, b=None: rbf_kernel(a, b, lengthscale=2.0)):
        want = np.diag(kernel(x)) if m else np.zeros(0)
        for chunk in (1, 64, 512):
            got = kernel_diag(kernel, x, chunk=chunk)
            assert got.shape == (m,)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
