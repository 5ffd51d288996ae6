"""benchmarks/bandit_study.py: resumable paper-preset runs, the common-problem rule and the cost estimates."""

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bandit_study

    return bandit_study


def test_estimate_from_a_paper_scale_run_and_from_the_lab_preset(study):
    measured = pd.DataFrame({"agent": ["mlp"], "input_dim": [2], "agent_seed": [0], "seconds": [4.0],
                             "horizon": [50_000]})
    hours, how = study.estimate_hours("mlp", 2, measured)
    assert hours == pytest.approx(4.0 * 20 / 3600) and how.startswith("measured")
    # not run at paper scale: the speed run's steps per second, else the lab preset's seconds per problem
    speed = pd.read_csv(study.MEASURED / "bandit_speed.csv")
    rate = speed[(speed.agent == "ensemble+") & (speed.num_members == 100) & (speed.input_dim == 10)].agent_steps_per_s
    for agent in ("ensemble", "ensemble+"):
        hours, how = study.estimate_hours(agent, 50, measured)
        assert hours == pytest.approx(1e6 / rate.mean() / 3600) and "lower bound" in how
    lab = pd.read_csv(study.MEASURED / "bandit_lab_summary.csv").set_index(["agent", "input_dim"])
    hours, _ = study.estimate_hours("dropout", 10, measured)
    assert hours == pytest.approx(lab.loc[("dropout", 10), "sec_per_problem"] / 2000 * 1e6 / 3600)


def test_paper_preset_subset_resumes_and_compares_agents_on_common_problems(study, tmp_path):
    out = tmp_path / "out"
    base = ["--preset", "paper", "--horizon", "250", "--dims", "2", "--seeds", "1", "--out-dir", str(out)]
    study.main(base + ["--agents", "mlp", "--problems", "3"])
    regret = pd.read_csv(out / "bandit_paper_regret.csv")
    assert len(regret) == 3 and set(regret.seed) == {0, 1, 2} and (regret.horizon == 250).all()
    # a second agent on fewer problems, added with --resume: mlp is neither rerun nor lost
    study.main(base + ["--agents", "mlp", "dropout", "--problems", "2", "--resume"])
    regret2 = pd.read_csv(out / "bandit_paper_regret.csv")
    pd.testing.assert_frame_equal(regret2[regret2.agent == "mlp"].reset_index(drop=True), regret)
    assert set(regret2[regret2.agent == "dropout"].seed) == {0, 1}
    points = pd.read_csv(out / "bandit_paper_points.csv").set_index("agent")
    # each point's regret is the mean over the problems both agents ran (0 and 1), not over mlp's three
    assert points.loc["mlp", "total_regret"] == pytest.approx(regret[regret.seed < 2].total_regret.mean())
    testbed = pd.read_csv(out / "bandit_paper_testbed.csv")
    assert testbed.groupby("agent").size().nunique() == 1  # mlp was scored once, not twice
    page = (out / "bandit.md").read_text()
    assert "<!-- bandit-paper begin -->" in page and "d = 2: 2 problems" in page
    assert "| 2 | dropout | 2 |" in page and "| 2 | mlp | 3 |" in page
    assert "The agents in order, lowest first: d = 2: regret " in page
    # --report-only runs nothing: the same rows, the same tables
    summary = (out / "bandit_paper_summary.csv").read_text()
    study.main(["--preset", "paper", "--report-only", "--out-dir", str(out)])
    pd.testing.assert_frame_equal(pd.read_csv(out / "bandit_paper_regret.csv"), regret2)
    assert (out / "bandit_paper_summary.csv").read_text() == summary


def test_report_only_without_an_earlier_run_says_what_is_missing(study, tmp_path, capsys):
    with pytest.raises(SystemExit):
        study.main(["--preset", "paper", "--report-only", "--out-dir", str(tmp_path)])
    assert "bandit_paper_regret.csv is missing" in capsys.readouterr().err
