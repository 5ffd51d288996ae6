import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from jtk import cli, sweep, testbed

ARGS = ["sweep", "--agents", "mlp", "--grid", "quick", "--seeds", "1", "--set", "num_steps=20", "--no-progress"]


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, capsys):
    interrupted, fresh = tmp_path / "interrupted", tmp_path / "fresh"
    proc = subprocess.Popen([sys.executable, "-m", "jtk.cli", *ARGS, "--results", str(interrupted)],
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    deadline = time.time() + 240
    while time.time() < deadline and not list(interrupted.glob("*/chunk-*.csv")):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    done = {p: p.stat().st_mtime_ns for p in interrupted.glob("*/chunk-*.csv")}
    assert done, "the sweep wrote no chunk before it was killed"
    for path in done:  # atomic writes: every .csv that exists is complete (a killed write leaves a .tmp)
        assert len(pd.read_csv(path)) > 0 and "kl" in pd.read_csv(path)
    assert cli.main([*ARGS, "--results", str(interrupted)]) == 0
    for path, mtime in done.items():
        assert path.stat().st_mtime_ns == mtime, f"{path.name} was recomputed"
    files = list(interrupted.glob("*/chunk-*.csv"))
    assert len(files) == 3 * 2  # 3 values of l2_scale × 2 minibatch buckets of the quick grid
    assert cli.main([*ARGS, "--results", str(fresh)]) == 0
    a, b = sweep.load(interrupted), sweep.load(fresh)
    cols = [c for c in a.columns if not c.endswith("seconds")]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert "mlp__l2_scale=" in capsys.readouterr().out


def test_best_config_minimises_aggregate_kl():
    rows = []
    for config, (k1, k10) in {"mlp__l2_scale=1": (0.10, 1.5), "mlp__l2_scale=10": (0.12, 1.0),
                              "ensemble__l2_scale=1": (0.2, 2.0)}.items():
        for tau, kl in ((1, k1), (10, k10)):
            rows.append(dict(config=config, agent=config, tau=tau, seed=0, num_train=1, temperature=0.1,
                             input_dim=2, kl=kl, accuracy=1, ece=0, train_seconds=0, eval_seconds=0))
    best = sweep.best_configs(pd.DataFrame(rows))
    assert best.loc["mlp", "config"] == "mlp__l2_scale=10"  # 0.12 + 0.1 < 0.10 + 0.15
    assert best.loc["mlp", "num_configs"] == 2 and best.loc["ensemble", "num_configs"] == 1


def test_sweep_grids_have_at_least_three_values_per_agent():
    for name in ("mlp", "ensemble", "ensemble+", "sgmcmc"):
        assert len(sweep.configs(sweep.SMALL_SWEEPS, [name])) >= 3
    assert len(sweep.configs(sweep.PAPER_SWEEPS, ["ensemble"])) == 35
    assert len(sweep.configs(sweep.PAPER_SWEEPS, ["sgmcmc"])) == 12  # the reference's lr × prior-variance sweep
    assert all(c.make().momentum == 0.9 for c in sweep.configs(sweep.PAPER_SWEEPS, ["sgmcmc"]))
    with pytest.raises(ValueError, match="agents must be among"):
        sweep.configs(sweep.SMALL_SWEEPS, ["bbb"])
