"""jtk.testbed.bandit_study: resumable runs, Figs. 8/9's points (regret against the 2-D testbed scores),
per-dimension correlations beside the paper's, and the cost estimates."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jtk.testbed import bandit

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study():
    from jtk.testbed import bandit_study

    return bandit_study


def test_estimate_from_a_paper_scale_run_and_from_the_speed_runs(study):
    measured = pd.DataFrame({"agent": ["mlp"], "input_dim": [2], "agent_seed": [0], "seconds": [4.0],
                             "horizon": [50_000]})
    hours, how = study.estimate_hours("mlp", 2, measured)
    assert hours == pytest.approx(4.0 * 20 / 3600) and how.startswith("measured")
    # not run at paper scale, d = 50: one problem's steps per second at d = 50 (bandit_speed_d50.csv)
    d50 = pd.read_csv(study.MEASURED / "bandit_speed_d50.csv").set_index("agent")
    for agent in ("ensemble", "ensemble+", "hypermodel"):
        hours, how = study.estimate_hours(agent, 50, measured)
        assert hours == pytest.approx(1e6 / d50.loc[agent, "agent_steps_per_s"] / 3600) and "d50" in how
    # d = 10: the speed run's steps per second (ensembles), else the lab preset's seconds per problem
    speed = pd.read_csv(study.MEASURED / "bandit_speed.csv")
    rate = speed[(speed.agent == "ensemble+") & (speed.num_members == 100) & (speed.input_dim == 10)].agent_steps_per_s
    hours, _ = study.estimate_hours("ensemble", 10, measured)
    assert hours == pytest.approx(1e6 / rate.mean() / 3600)
    lab = pd.read_csv(study.MEASURED / "bandit_lab_summary.csv").set_index(["agent", "input_dim"])
    hours, _ = study.estimate_hours("dropout", 10, measured)
    assert hours == pytest.approx(lab.loc[("dropout", 10), "sec_per_problem"] / 2000 * 1e6 / 3600)


def test_correlations_are_per_dimension_never_pooled(study):
    rng = np.random.default_rng(0)
    rows = []
    for d, sign in ((10, -1.0), (50, 1.0)):  # opposite relations: pooling would mix them
        kl = np.exp(rng.normal(size=12))
        rows.append(pd.DataFrame({"agent": [f"a{i % 6}" for i in range(12)], "input_dim": d, "kl_1": kl[::-1],
                                  "kl_10": kl, "total_regret": np.exp(sign * np.log(kl) + 0.1 * rng.normal(size=12))}))
    points = pd.concat(rows, ignore_index=True)
    corr = study.per_dim_correlations(points).set_index(["input_dim", "metric"])
    assert sorted(corr.index) == [(10, "kl_1"), (10, "kl_10"), (50, "kl_1"), (50, "kl_10")]  # no pooled row
    for d in (10, 50):
        g = points[points.input_dim == d]
        expected = np.corrcoef(np.log(g.kl_10), np.log(g.total_regret))[0, 1]
        assert corr.loc[(d, "kl_10"), "r"] == pytest.approx(expected)
        assert corr.loc[(d, "kl_10"), "num_points"] == 12 and corr.loc[(d, "kl_10"), "num_agents"] == 6
    assert corr.loc[(10, "kl_10"), "r"] < -0.9 < 0.9 < corr.loc[(50, "kl_10"), "r"]
    # the paper's Figs. 8/9 (d = 50) sit beside jtk's d = 50 rows only
    assert tuple(corr.loc[(50, "kl_1"), ["paper_r", "paper_lo", "paper_hi"]]) == (-0.12, -0.34, 0.09)
    assert tuple(corr.loc[(50, "kl_10"), ["paper_r", "paper_lo", "paper_hi"]]) == (0.69, 0.62, 0.75)
    assert corr.loc[(10, "kl_10"), ["paper_r", "paper_lo", "paper_hi"]].isna().all()
    # fewer than 3 points: no correlation, not an error
    few = study.per_dim_correlations(points[points.input_dim == 50].head(2))
    assert few.r.isna().all() and (few.num_points == 2).all()


def test_verdict_reads_the_intervals():
    def corr(m, j):
        return pd.DataFrame([{"input_dim": 50, "metric": "kl_1", "r": m[0], "lo": m[1], "hi": m[2]},
                             {"input_dim": 50, "metric": "kl_10", "r": j[0], "lo": j[1], "hi": j[2]}])

    assert bandit.paper_verdict(corr((-0.1, -0.3, 0.1), (0.7, 0.6, 0.8))).startswith("Agrees")
    no = bandit.paper_verdict(corr((0.4, -1.0, 1.0), (-0.3, -1.0, 1.0)))
    assert no.startswith("Does not yet agree") and "includes 0" in no and "not above" in no
    assert "excludes 0" in bandit.paper_verdict(corr((0.5, 0.2, 0.7), (0.7, 0.6, 0.8)))
    assert bandit.paper_verdict(corr((np.nan,) * 3, (np.nan,) * 3)).startswith("Too few points")


def test_points_use_common_problems_and_the_same_seeds_2d_scores(study):
    regret = pd.DataFrame({"agent": ["a"] * 3 + ["b"] * 2 + ["a"], "input_dim": 50, "horizon": 100,
                           "agent_seed": [0, 0, 0, 0, 0, 1], "seed": [0, 1, 2, 0, 1, 0],
                           "total_regret": [1.0, 3.0, 100.0, 5.0, 7.0, 2.0]})
    scores = pd.DataFrame({"agent": ["a", "a", "a", "a", "b", "b"], "seed": [0, 0, 1, 1, 0, 0],
                           "tau": [1, 10, 1, 10, 1, 10], "kl": [0.1, 1.0, 0.2, 2.0, 0.3, 3.0]})
    points, common = study.points_2d(regret, scores, ["a", "b"], [0, 1], [0, 1, 2], 100)
    assert common[50] == {0, 1}  # b did not run problem 2
    p = points.set_index(["agent", "agent_seed"])
    assert p.loc[("a", 0), "total_regret"] == pytest.approx(2.0)  # mean over problems 0 and 1, not 2
    assert p.loc[("b", 0), "total_regret"] == pytest.approx(6.0)
    assert ("a", 1) not in p.index  # seed 1 of a lacks problem 1
    assert p.loc[("a", 0), "kl_10"] == 1.0 and p.loc[("b", 0), "kl_1"] == 0.3


def test_equal_subset_is_what_every_agent_ran(study):
    """Uneven runs (a GPU finished some agents' seeds): the seeds and problems all agents share, nothing more."""
    rows = [("a", s, p) for s in range(3) for p in range(4)]  # a: seeds 0-2, all 4 problems
    rows += [("b", 0, p) for p in (0, 1, 3)] + [("b", 2, p) for p in (1, 3)]  # b: seed 0 without 2, seed 2 part
    rows += [("c", 0, p) for p in range(4)] + [("c", 2, 3)]
    regret = pd.DataFrame(rows, columns=["agent", "agent_seed", "seed"]).assign(input_dim=50, horizon=100,
                                                                                  total_regret=1.0)
    # seeds 0 and 2 are shared; the problems every agent ran with both: {3} (c ran only problem 3 at seed 2)
    assert study.equal_subset(regret, ["a", "b", "c"], 50, 100, range(3), range(4)) == ([0, 2], [3])
    assert study.equal_subset(regret, ["a", "b"], 50, 100, [0], range(4)) == ([0], [0, 1, 3])
    assert study.equal_subset(regret, ["a", "b", "d"], 50, 100, range(3), range(4)) == ([], [])  # d ran nothing
    assert study.equal_subset(regret, ["a", "b"], 50, 100, [1], range(4)) == ([], [])  # b never ran seed 1
    assert study.equal_subset(regret, ["a"], 10, 100, range(3), range(4)) == ([], [])  # another d


def test_runs_resume_after_a_kill_and_the_page_quotes_the_paper(study, tmp_path, monkeypatch):
    out = tmp_path / "out"
    base = ["--preset", "subset", "--horizon", "250", "--dims", "2", "--seeds", "2", "--out-dir", str(out)]
    real_run = study.bandit.run_seeds
    calls = []

    def killed_at_dropout(agent, agent_seeds, problems, **kw):
        calls.append((kw["name"], tuple(agent_seeds), tuple(tuple(p.seeds) for p in problems)))
        if kw["name"] == "dropout":
            raise KeyboardInterrupt  # the session is stopped during dropout's program
        return real_run(agent, agent_seeds, problems, progress=False, **kw)

    monkeypatch.setattr(study.bandit, "run_seeds", killed_at_dropout)
    with pytest.raises(KeyboardInterrupt):
        study.main(base + ["--agents", "mlp", "dropout", "--problems", "3"])
    # one program per agent: mlp's two seeds together, then dropout's (cheapest first)
    assert calls == [("mlp", (0, 1), ((0, 1, 2), (0, 1, 2))), ("dropout", (0, 1), ((0, 1, 2), (0, 1, 2)))]
    regret = pd.read_csv(out / "bandit_paper_regret.csv")  # the subset writes the paper preset's run CSV
    assert list(zip(regret.agent, regret.agent_seed, regret.seed)) == [("mlp", s, p) for s in (0, 1) for p in range(3)]
    assert (regret.horizon == 250).all()
    # each seed's rows are those of its own run (bandit.run, one seed)
    alone = real_run("mlp", [1], study.bandit.make_problems(2, seeds=3), horizon=250, progress=False)[0]
    np.testing.assert_array_equal(regret[regret.agent_seed == 1].total_regret, alone.total_regret.astype(float))

    calls.clear()
    monkeypatch.setattr(study.bandit, "run_seeds", lambda agent, seeds, problems, **kw: calls.append(kw["name"])
                        or real_run(agent, seeds, problems, progress=False, **kw))
    study.main(base + ["--agents", "mlp", "dropout", "--problems", "2"])
    assert calls == ["dropout"]  # mlp's rows are kept
    regret2 = pd.read_csv(out / "bandit_paper_regret.csv")
    pd.testing.assert_frame_equal(regret2.head(6), regret)  # finished rows neither rerun nor lost
    assert len(regret2) == 6 + 2 * 2
    assert not list((out / ".bandit_paper_checkpoints").glob("*.npz"))  # stored runs leave no checkpoint

    points = pd.read_csv(out / "bandit_subset_points.csv").set_index(["agent", "agent_seed"])
    assert len(points) == 4 and (points.problems == 2).all()
    first = regret[(regret.agent_seed == 0) & (regret.seed < 2)]
    assert points.loc[("mlp", 0), "total_regret"] == pytest.approx(first.total_regret.mean())
    # the x of each point is the agent's 2-D paper-grid score of the same seed, copied from the measured rows
    scores = pd.read_csv(out / "bandit_testbed_2d.csv")
    assert set(scores.source) == {"testbed_mlp_paper.csv", "zoo_dropout_paper.csv"}
    assert scores.groupby(["agent", "seed"]).size().eq(42).all()  # 21 problems × τ ∈ {1, 10} per seed
    src = pd.read_csv(study.MEASURED / "testbed_mlp_paper.csv")
    assert points.loc[("mlp", 1), "kl_10"] == pytest.approx(src[(src.seed == 1) & (src.tau == 10)].kl.mean())

    corr = pd.read_csv(out / "bandit_subset_correlation.csv")
    assert set(corr.input_dim) == {2} and set(corr.metric) == {"kl_1", "kl_10"}  # per d only
    page = (out / "bandit.md").read_text()
    assert "<!-- bandit-fig89 begin -->" in page and "Verdict." in page
    assert "-0.12 (-0.34, 0.09)" in page and "0.69 (0.62, 0.75)" in page
    assert "never pooled" in page and "![" in page and (out / "bandit_fig89_subset.png").exists()

    # --report-only runs nothing and gives the same tables
    summary = (out / "bandit_subset_summary.csv").read_text()
    calls.clear()
    study.main(["--preset", "subset", "--report-only", "--horizon", "250", "--dims", "2", "--seeds", "2",
                "--problems", "2", "--agents", "mlp", "dropout", "--out-dir", str(out)])
    assert calls == [] and (out / "bandit_subset_summary.csv").read_text() == summary


def test_problems_drawn_per_seed_run_and_report_by_index(study, tmp_path, monkeypatch):
    """--preset figs89 (problems drawn per seed): seed s runs problem seeds s·J + i, the report counts them by
    their index i, and rows of the fixed draw (seed 1 on problem 0) are neither reused nor reported."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setitem(study.bandit.PRESETS, "figs89", {**study.bandit.PRESETS["figs89"], "num_seeds": 3})
    fixed = pd.DataFrame({"agent": "mlp", "input_dim": 2, "agent_seed": [1], "seed": [0], "horizon": 250,
                          "total_regret": [1.0], "seconds": [1.0]})
    fixed.to_csv(out / "bandit_paper_regret.csv", index=False)
    study.main(["--preset", "figs89", "--horizon", "250", "--dims", "2", "--seeds", "2", "--problems", "2",
                "--agents", "mlp", "--runs-only", "--out-dir", str(out)])
    regret = pd.read_csv(out / "bandit_paper_regret.csv")
    assert sorted(zip(regret.agent_seed, regret.seed)) == [(0, 0), (0, 1), (1, 0), (1, 3), (1, 4)]  # J = 3: 3, 4
    view = study.problem_view(regret, 3, "per-seed")
    assert sorted(zip(view.agent_seed, view.seed)) == [(0, 0), (0, 1), (1, 0), (1, 1)]  # the fixed row is out
    assert study.bandit.problem_seeds(2, 20, "per-seed") == list(range(40, 60))
    assert study.bandit.problem_seeds(2, 20) == list(range(20))
    with pytest.raises(ValueError, match="draw"):
        study.bandit.problem_seeds(0, 20, "random")


def test_report_only_without_an_earlier_run_says_what_is_missing(study, tmp_path, capsys):
    with pytest.raises(SystemExit):
        study.main(["--preset", "paper", "--report-only", "--out-dir", str(tmp_path)])
    assert "bandit_paper_regret.csv is missing" in capsys.readouterr().err


def test_import_log_adds_printed_runs_and_refuses_a_mistyped_total(study, tmp_path):
    """--import-log: rows come back with their source and device; a digit off, a missing total or a total that
    disagrees with the CSV is refused before anything is written."""
    csv = tmp_path / "bandit_paper_regret.csv"
    header = "# device: Test GPU\n# horizon: 50000\n"
    line = ("mlp d = 50 seed 3 problems [0, 1]: total regret [241.39999389648438, 370.1000061035156], 30 s, "
            "load 0.4 → 3.1\n")
    log = tmp_path / "log.txt"
    log.write_text(header + line, encoding="utf-8")
    rows = study.import_log(log, csv)
    assert rows.seed.tolist() == [0, 1] and rows.total_regret.tolist() == [241.39999389648438, 370.1000061035156]
    assert set(rows.source) == {"log.txt"} and set(rows.device) == {"Test GPU"} and rows.seconds.tolist() == [15, 15]
    stored = pd.read_csv(csv)
    assert len(stored) == 2 and stored.horizon.eq(50000).all()
    assert len(study.import_log(log, csv)) == 0 and len(pd.read_csv(csv)) == 2  # idempotent
    bad = {"a mistyped digit": line.replace("241.39999389648438", "241.39999389648428"),
           "a missing total": line.replace("241.39999389648438, ", ""),
           "a clash": line.replace("370.1000061035156", "370.20001220703125")}
    for what, text in bad.items():
        log.write_text(header + text, encoding="utf-8")
        with pytest.raises(ValueError):
            study.import_log(log, csv)
        assert len(pd.read_csv(csv)) == 2, what
    log.write_text(line, encoding="utf-8")
    with pytest.raises(ValueError, match="header"):
        study.import_log(log, tmp_path / "other.csv")
