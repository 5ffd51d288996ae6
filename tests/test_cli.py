import pandas as pd
import pytest

from jtk import cli


def test_testbed_command_prints_summary_and_writes_rows(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    code = cli.main(["testbed", "--agent", "uniform", "--grid", "quick", "--seeds", "1", "--out", str(out),
                     "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "kl_1" in printed and "kl_10" in printed and "uniform" in printed
    rows = pd.read_csv(out)
    assert len(rows) == 8 and set(rows.tau) == {1, 10}


def test_hyperparameters_are_passed_to_the_agent(tmp_path, capsys):
    code = cli.main(["testbed", "--agent", "ensemble+", "--grid", "quick", "--seeds", "1", "--no-progress",
                     "--set", "num_members=2", "--set", "num_steps=10"])
    assert code == 0 and "ensemble+" in capsys.readouterr().out


def test_bad_arguments_give_clear_errors(capsys):
    with pytest.raises(SystemExit):
        cli.main(["testbed", "--agent", "mpl"])
    assert "invalid choice: 'mpl'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["testbed", "--agent", "mlp", "--seeds", "0"])
    assert "positive integer" in capsys.readouterr().err
    assert cli.main(["testbed", "--agent", "mlp", "--set", "num_memberz=3", "--no-progress"]) == 2
    assert "unknown hyperparameter" in capsys.readouterr().err


def test_bandit_command_reports_regret_and_writes_curves(tmp_path, capsys):
    out = tmp_path / "curves.csv"
    assert cli.main(["bandit", "--agent", "oracle", "--horizon", "300", "--seeds", "2", "--out", str(out),
                     "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "oracle: total regret 0.00" in printed and "uniform random" in printed
    curves = pd.read_csv(out)
    assert set(curves.seed) == {0, 1} and curves.t.max() == 300 and (curves.cumulative_regret == 0).all()
    assert cli.main(["bandit", "--agent", "knn", "--no-progress"]) == 2
    assert "updated online" in capsys.readouterr().err
    assert cli.main(["bandit", "--agent", "mlp", "--set", "num_memberz=2", "--no-progress"]) == 2
    assert "unknown hyperparameter" in capsys.readouterr().err
