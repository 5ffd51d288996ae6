"""jtk.ppc.real_study: Wang et al.'s Table 1 protocol on real data (data sets, Oracle, table, command line)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jtk.ppc import active

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def real():
    from jtk.ppc import real_study

    return real_study


# Published summaries of the UCI tables (the repository's documentation): rows, inputs, target mean.
KNOWN = {"boston": (506, 13, 22.5328), "concrete": (1030, 8, 35.8180)}


def test_the_data_sets_are_the_papers_eight_shipped_ones(real):
    assert tuple(real.DATASETS) == real.PAPER_DATASETS == real.DEFAULT_DATASETS
    assert real.PAPER_DATASETS == ("boston", "concrete", "energy", "wine", "yacht", "kin8nm", "naval", "power_plant")
    assert all("SHA-256 checked" in d.source for d in real.DATASETS.values())


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_data_sets_are_the_real_tables(real, name):
    df = real.DATASETS[name].load()
    rows, cols, mean = KNOWN[name]
    assert df.shape == (rows, cols + 1) and "target" in df.columns
    assert df.notna().all().all() and all(pd.api.types.is_numeric_dtype(df[c]) for c in df.columns)
    assert df["target"].mean() == pytest.approx(mean, abs=1e-3)
    s = active.split_data(df, target="target", seed=0)
    assert (len(s.y_train), len(s.y_test)) == (round(0.2 * rows), round(0.2 * rows))


def test_authors_settings_are_their_scripts(real):
    # values read off the authors' scripts/gen_scripts.py (UCI_HYPERS and the commands built from it)
    s = real.authors_settings("boston").set_index("family")
    assert list(s.index) == list(real.FAMILIES) and (s.dataset == "boston").all()
    assert (s.loc["HMC", "lr"], s.loc["HMC", "units"], s.loc["HMC", "epochs"]) == (0.01, 50, 5999)
    assert (s.loc["Ensemble", "lr"], s.loc["Ensemble", "units"], s.loc["Ensemble", "samples"]) == (0.003, 400, 100)
    assert (s.loc["GP-RBF", "lr"], s.loc["GP-RBF", "samples"]) == (0.0, 0)
    assert (s.drop(index=["HMC", "GP-RBF"]).epochs == 10_000).all()
    assert "batch 5000; 100 measurement points" in s.loc["FBNN", "not_applied"]
    w = real.authors_settings("wine", ["Dropout", "NNG"]).set_index("family")
    assert (w.loc["Dropout", "lr"], w.loc["Dropout", "units"]) == (0.001, 400) and "τ 0.125" in w.loc["Dropout",
                                                                                                       "not_applied"]
    assert real.authors_settings("power_plant", ["NNG"]).iloc[0][["lr", "units"]].tolist() == [0.003, 400]
    with pytest.raises(ValueError, match="dataset"):
        real.authors_settings("diabetes")


def test_authors_preset_end_to_end_on_toy_sizes(real, tmp_path):
    out = tmp_path / "out"
    assert real.main(["--preset", "authors_smoke", "--datasets", "yacht", "--families", "HMC", "GP-RBF",
                      "--out-dir", str(out)]) == 0
    settings = pd.read_csv(out / "ppc_real_authors_smoke_settings.csv")
    assert list(settings.dataset) == ["yacht", "yacht"] and list(settings.family) == ["HMC", "GP-RBF"]
    assert settings.loc[0, "setting"] == "HMC S=100 H=50 lr=0.001 ep=5999 × 10 chains"
    assert settings.loc[0, "run_as"] == "HMC S=3 H=8 lr=0.001 ep=3"  # shrunk by the smoke preset
    tab = pd.read_csv(out / "ppc_real_authors_smoke_table.csv")
    assert set(tab.model) == {"HMC", "GP-RBF", "Oracle (selects for itself)"} and np.isfinite(tab.tal_gain).all()
    page = (out / "ppc.md").read_text()
    assert "the authors' scripts/gen_scripts.py" in page and "| HMC |" in page
    (out / "ppc.md").unlink()
    assert real.main(["--preset", "authors_smoke", "--report-only", "--out-dir", str(out)]) == 0
    assert (out / "ppc.md").read_text() == page


def test_oracle_freezes_the_hyperparameters_fitted_on_train_and_pool(real):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 2))
    df = pd.DataFrame(x, columns=["a", "b"]).assign(target=np.sin(2 * x[:, 0]) + 0.1 * rng.normal(size=60))
    split = active.split_data(df, target="target", seed=3)
    oracle, hp = real.oracle_for(split, seed=0)
    assert oracle.noise_var == pytest.approx(hp["noise_var"])
    # Its prediction from the training set alone is the GP posterior with those hyperparameters (numpy, by hand).
    ls, s2, nv = np.asarray(hp["lengthscale"]), float(hp["signal_var"]), float(hp["noise_var"])
    k = lambda a, b: s2 * np.exp(-0.5 * (((a[:, None, :] - b[None, :, :]) / ls) ** 2).sum(-1))
    xt, yt = split.x_train, split.y_train
    mean = k(split.x_test, xt) @ np.linalg.solve(k(xt, xt) + nv * np.eye(len(xt)), yt)
    pred_mean, _ = oracle.fit(xt, yt).predict(split.x_test)
    np.testing.assert_allclose(pred_mean, mean, rtol=1e-5, atol=1e-6)


def test_table_gains_are_paired_by_seed_and_ranks_averaged_over_references(real):
    rng = np.random.default_rng(1)
    tal, xll = [], []
    for seed in range(4):
        for sel in ("Ensemble", "GP-RBF", "Oracle", "Random"):
            for r in (0, 2):
                tal.append({"dataset": "d", "selector": sel, "seed": seed, "round": r, "num_train": 10 + r,
                            "test_ll": rng.normal()})
        for ref in ("Ensemble", "GP-RBF"):
            for m in ("Ensemble", "GP-RBF"):
                xll.append({"dataset": "d", "seed": seed, "reference": ref, "model": m, "xll": 0.0,
                            "xllr": float(rng.integers(0, 2))})
    tal, xll = pd.DataFrame(tal), pd.DataFrame(xll)
    tab = real.table(tal, xll).set_index("model")
    last = tal[tal["round"] == 2].set_index(["selector", "seed"])["test_ll"]
    for model in ("Ensemble", "GP-RBF"):
        gain = np.array([last[model, s] - last["Random", s] for s in range(4)])
        assert tab.loc[model, "tal_gain"] == pytest.approx(gain.mean())
        assert tab.loc[model, "tal_gain_se"] == pytest.approx(gain.std(ddof=1) / 2)
        ranks = np.array([xll[(xll.model == model) & (xll.seed == s)].xllr.mean() for s in range(4)])
        assert tab.loc[model, "xllr"] == pytest.approx(ranks.mean())
        assert tab.loc[model, "xllr_se"] == pytest.approx(ranks.std(ddof=1) / 2)
    oracle = np.array([last["Oracle", s] - last["Random", s] for s in range(4)])
    assert tab.loc["Oracle (selects for itself)", "tal_gain"] == pytest.approx(oracle.mean())
    assert "Random" not in tab.index


def _diabetes_csv(tmp_path):
    import sklearn.datasets

    df = sklearn.datasets.load_diabetes(as_frame=True).frame.rename(columns={"target": "progression"})
    path = tmp_path / "mydata.csv"
    df.to_csv(path, index=False)
    return path


def test_own_csv_end_to_end_on_toy_sizes(real, tmp_path):
    path = _diabetes_csv(tmp_path)
    out = tmp_path / "out"
    runs = tmp_path / "study_runs.csv"
    runs.write_bytes(real.STUDY_RUNS.read_bytes())
    assert real.main(["--preset", "smoke", "--csv", str(path), "--target", "progression", "--families", "GP-RBF",
                      "--out-dir", str(out), "--study-runs", str(runs)]) == 0
    settings = pd.read_csv(out / "ppc_real_smoke_mydata_settings.csv")
    assert list(settings.family) == ["GP-RBF"] and settings.source_sha256.item() == real.fingerprint(runs)
    tal = pd.read_csv(out / "ppc_real_smoke_mydata_tal.csv")
    facts = pd.read_csv(out / "ppc_real_smoke_mydata_data.csv").iloc[0]
    assert set(tal.selector) == {"GP-RBF", "Oracle", "Random"} and set(tal.seed) == {0, 1}
    q = int(facts.query_per_round)
    assert q == int(np.floor(0.02 * 442)) and (facts.train, facts.pool, facts.test) == (88, 266, 88)
    assert (tal.num_train == facts.train + q * tal["round"]).all()
    # round 0 is before any query: every selector starts from the same Oracle prediction
    assert tal[tal["round"] == 0].groupby("seed")["test_ll"].nunique().eq(1).all()
    tab = pd.read_csv(out / "ppc_real_smoke_mydata_table.csv")
    assert set(tab.model) == {"GP-RBF", "Oracle (selects for itself)"} and (tab.seeds == 2).all()
    assert tab.loc[tab.model == "GP-RBF", "xllr"].item() == 0.0  # the only family ranks first
    page = (out / "ppc.md").read_text()
    assert "<!-- ppc-real-smoke_mydata begin -->" in page and "| GP-RBF |" in page
    (out / "ppc.md").unlink()  # the page again from the CSVs alone, the same text
    assert real.main(["--preset", "smoke", "--csv", str(path), "--target", "progression", "--report-only",
                      "--out-dir", str(out)]) == 0
    assert (out / "ppc.md").read_text() == page
    assert "have changed since this run" not in page
    runs.write_text(runs.read_text() + runs.read_text().splitlines()[-1] + "\n")  # the study is rerun: the page says so
    assert real.main(["--preset", "smoke", "--csv", str(path), "--target", "progression", "--report-only",
                      "--out-dir", str(out)]) == 0
    assert "have changed since this run" in (out / "ppc.md").read_text()


def test_report_only_names_the_missing_files(real, tmp_path, capsys):
    with pytest.raises(SystemExit):
        real.main(["--preset", "smoke", "--report-only", "--out-dir", str(tmp_path)])
    assert "ppc_real_smoke_tal.csv" in capsys.readouterr().err


@pytest.mark.parametrize("argv, match", [
    (["--csv", "x.csv"], "--csv and --target go together"),
    (["--csv", "missing.csv", "--target", "t"], "--csv must name a readable file"),
    (["--seeds", "1"], "--seeds must be at least 2"),
])
def test_bad_arguments_stop_before_any_work(real, argv, match, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        real.main(["--preset", "smoke", *argv])
    assert match in capsys.readouterr().err


def test_a_target_that_is_not_a_column_is_named(real, tmp_path, capsys):
    path = _diabetes_csv(tmp_path)
    with pytest.raises(SystemExit):
        real.main(["--preset", "smoke", "--csv", str(path), "--target", "target"])
    err = capsys.readouterr().err
    assert "--target must name a column" in err and "progression" in err


# ------------------------------------------------------------------ the derived settings
def _runs(means: dict[str, tuple[str, list[float]]]) -> pd.DataFrame:
    """Synthetic-study rows: label → (family, per-split BatchMIG log-likelihoods)."""
    rows = []
    for label, (fam, values) in means.items():
        lr = 8.0 if fam == "GP-RBF" else 0.01
        for split, v in enumerate(values):
            rows.append({"family": fam, "setting": label, "samples": 0 if fam == "GP-RBF" else 10,
                         "units": 0 if fam == "GP-RBF" else 50, "lr": lr, "epochs": 0 if fam == "GP-RBF" else 300,
                         "split": split, "batchmig_ll": v, "pearson": 0.0})
    return pd.DataFrame(rows)


def test_settings_are_the_best_mean_batchmig_per_family_with_a_paired_margin(real):
    runs = _runs({"Ensemble A": ("Ensemble", [-0.2, -0.1, -0.3]), "Ensemble B": ("Ensemble", [-0.1, -0.2, -0.25]),
                  "Ensemble C": ("Ensemble", [-0.5, -0.5, -0.5]), "GP-RBF l=8": ("GP-RBF", [-0.3, -0.3, -0.3])})
    s = real.derive_settings(runs, ["Ensemble", "GP-RBF"]).set_index("family")
    assert s.loc["Ensemble", "setting"] == "Ensemble B" and s.loc["Ensemble", "runner_up"] == "Ensemble A"
    diff = np.array([0.1, -0.1, 0.05])  # B − A, split by split
    assert s.loc["Ensemble", "margin"] == pytest.approx(diff.mean())
    assert s.loc["Ensemble", "margin_se"] == pytest.approx(diff.std(ddof=1) / np.sqrt(3))
    assert s.loc["Ensemble", "batchmig_ll"] == pytest.approx(np.mean([-0.1, -0.2, -0.25]))
    assert s.loc["Ensemble", "settings_in_family"] == 3 and s.loc["Ensemble", "splits"] == 3
    assert s.loc["GP-RBF", "runner_up"] == "" and np.isnan(s.loc["GP-RBF", "margin"])
    # a tie goes to the first label in sorted order, whatever the row order
    tie = _runs({"Z": ("Ensemble", [-0.1, -0.1]), "Y": ("Ensemble", [-0.1, -0.1])})
    assert real.derive_settings(tie.iloc[::-1], ["Ensemble"]).setting.item() == "Y"


def test_derivation_names_what_is_missing(real):
    runs = _runs({"GP-RBF l=8": ("GP-RBF", [-0.3, -0.3])})
    with pytest.raises(ValueError, match="no runs of 'BBB'"):
        real.derive_settings(runs, ["BBB"])
    with pytest.raises(ValueError, match="batchmig_ll"):
        real.derive_settings(runs.drop(columns="batchmig_ll"), ["GP-RBF"])


def test_the_stored_synthetic_study_gives_one_setting_per_family(real):
    s = real.derive_settings(pd.read_csv(real.STUDY_RUNS))
    assert list(s.family) == list(real.FAMILIES) and (s.settings_in_family > 1).all()
    gs = real.groups(real.PRESETS["quick"], s)
    assert [g.settings[0].label for g in gs] == list(s.setting)  # run on real data exactly as derived
    smoke = real.groups(real.PRESETS["smoke"], s)
    assert all(g.settings[0].samples <= 3 for g in smoke if g.family != "GP-RBF")


# ------------------------------------------------------------------ XLLR gating and the checks
def _tab(cells: dict[tuple[str, str], tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"dataset": d, "model": m, "xllr": 1.0, "xllr_se": 0.1, "tal_gain": g, "tal_gain_se": se,
                          "seeds": 4} for (d, m), (g, se) in cells.items()])


def test_xllr_is_given_only_where_a_familys_tal_gain_is_beyond_two_standard_errors(real):
    tab = _tab({("a", "Ensemble"): (0.05, 0.02), ("a", "BBB"): (0.0, 0.01),  # 2.5 s.e.: shown
                ("b", "Ensemble"): (0.039, 0.02), ("b", "BBB"): (-0.1, 0.01),  # 1.95 s.e.; far below 0: not
                ("b", real.ORACLE_ROW): (0.5, 0.01)})  # the Oracle's own gain does not count
    assert real.xllr_shown(tab) == {"a": True, "b": False}


def _frames(gain: dict[str, list[float]], ranks: dict[str, list[float]], ds: str = "boston"):
    """TAL rows whose last-round gains over Random are ``gain`` (per seed) and XLL rows with these XLLR per seed."""
    tal, xll = [], []
    for sel, values in {**gain, "Random": [0.0] * len(next(iter(gain.values())))}.items():
        for seed, v in enumerate(values):
            tal += [{"dataset": ds, "selector": sel, "seed": seed, "round": 0, "num_train": 10, "test_ll": -1.0},
                    {"dataset": ds, "selector": sel, "seed": seed, "round": 1, "num_train": 12, "test_ll": -1.0 + v}]
    for m, values in ranks.items():
        for seed, v in enumerate(values):
            xll.append({"dataset": ds, "seed": seed, "reference": "x", "model": m, "xll": 0.0, "xllr": v})
    return pd.DataFrame(tal), pd.DataFrame(xll)


def test_checks_flag_each_disagreement_with_the_paper(real):
    assert real.FAMILIES == ("Ensemble", "Dropout", "BBB", "NNG", "FBNN", "HMC", "GP-RBF")  # the paper's seven
    gain = {"Ensemble": [0.30, 0.32, 0.31, 0.29], "Dropout": [-0.11, -0.1, -0.09, -0.1],
            "BBB": [0.01, 0.02, 0.0, 0.01], "NNG": [0.02, 0.02, 0.03, 0.01], "FBNN": [0.15, 0.14, 0.16, 0.15],
            "HMC": [0.10, 0.12, 0.08, 0.1], "GP-RBF": [0.2, 0.2, 0.2, 0.2], "Oracle": [0.4, 0.4, 0.4, 0.4]}
    ranks = {"Ensemble": [0, 0, 0, 0], "Dropout": [1, 1, 1, 1], "BBB": [6, 6, 6, 6], "NNG": [4, 4, 4, 4],
             "FBNN": [3, 3, 3, 3], "HMC": [5, 5, 5, 5], "GP-RBF": [2, 2, 2, 2]}
    tal, xll = _frames(gain, ranks)
    tab = real.table(tal, xll)
    c = real.disagreements(tab, tal, xll).set_index(["claim", "dataset"])
    assert set(c.index.get_level_values(0)) <= set(real.PAPER_CLAIMS)
    # Ensemble, not HMC, is the best by both metrics on boston: against the paper, beyond noise (paired by seed)
    assert c.loc[("hmc_best_xllr", "boston"), "verdict"] == "DISAGREES (beyond 2 s.e.)"
    assert c.loc[("hmc_best_xllr", "boston"), "value"] == pytest.approx(5.0)  # HMC's XLLR minus Ensemble's
    assert "Ensemble" in c.loc[("hmc_best_xllr", "boston"), "found"] and "ranks 6 of 7" in c.loc[("hmc_best_xllr", "boston"), "found"]
    assert c.loc[("hmc_best_tal", "boston"), "verdict"] == "DISAGREES (beyond 2 s.e.)"
    assert c.loc[("hmc_best_tal", "boston"), "value"] == pytest.approx(0.205)
    # the better group (HMC, GP-RBF, FBNN, Ensemble) beats BBB, NNG and Dropout by TAL: agrees
    assert c.loc[("tal_groups", "boston"), "verdict"].startswith("agrees")
    # by XLLR the better group averages 2.5, the worse 11/3: agrees
    assert c.loc[("xllr_groups", "boston"), "value"] == pytest.approx(2.5 - 11 / 3)
    assert not c.loc[("xllr_groups", "boston"), "disagrees"]
    # Dropout is not the worst by XLLR (BBB is): flagged
    row = c.loc[("xllr_dropout_worst", "all")]
    assert row["disagrees"] and "BBB" in row["found"]
    # a family whose queries are worse than random is flagged; one better than random is not listed
    fam_rows = c.loc["family_beats_random"]
    assert list(fam_rows["found"].str.split(":").str[0]) == ["Dropout"]
    assert fam_rows["verdict"].item() == "DISAGREES (beyond 2 s.e.)"
    assert c.loc[("oracle_beats_random", "boston"), "verdict"].startswith("agrees")
    rho = c.loc[("xllr_tal_consistent", "boston"), "value"]
    assert rho < 0 and c.loc[("xllr_tal_consistent", "boston"), "verdict"] == "agrees"
    assert set(real.FAMILIES) <= set(tab.model)
    # boston's XLLR is in Table 1: several families' gains are beyond 2 s.e.
    assert bool(c.loc[("xllr_groups", "boston"), "xllr_in_table"])


def test_hmc_best_is_checked_only_where_the_paper_says_so(real):
    gain = {f: [0.1, 0.1, 0.12] for f in real.FAMILIES} | {"Oracle": [0.1, 0.1, 0.1]}
    ranks = {f: [i, i, i] for i, f in enumerate(real.FAMILIES)}
    tal, xll = _frames(gain, ranks, ds="autompg")
    c = real.disagreements(real.table(tal, xll), tal, xll)
    assert not c["claim"].isin(["hmc_best_xllr", "hmc_best_tal"]).any()
