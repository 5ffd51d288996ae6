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
