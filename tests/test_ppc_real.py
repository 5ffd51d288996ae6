"""benchmarks/ppc_real.py: Wang et al.'s Table 1 protocol on real data (data sets, Oracle, table, command line)."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jtk import active

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def real():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ppc_real

    return ppc_real


# Published summaries of these tables (the UCI and scikit-learn documentation): rows, columns, target mean.
KNOWN = {"boston": (506, 13, 22.5328), "autompg": (392, 7, 23.4459), "diabetes": (442, 10, 152.1335)}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_bundled_data_sets_are_the_real_tables(real, name):
    df = real.DATASETS[name].load()
    rows, cols, mean = KNOWN[name]
    assert df.shape == (rows, cols + 1) and "target" in df.columns
    assert df.notna().all().all() and all(pd.api.types.is_numeric_dtype(df[c]) for c in df.columns)
    assert df["target"].mean() == pytest.approx(mean, abs=1e-3)
    s = active.split_data(df, target="target", seed=0)
    assert (len(s.y_train), len(s.y_test)) == (round(0.2 * rows), round(0.2 * rows))


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
    assert real.main(["--preset", "smoke", "--csv", str(path), "--target", "progression", "--families", "GP-RBF",
                      "--out-dir", str(out)]) == 0
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
