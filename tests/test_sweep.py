import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from jtk import cli, testbed
from jtk.testbed import runs
from jtk.testbed import sweep

ARGS = ["sweep", "--agents", "mlp", "--grid", "quick", "--seeds", "1", "--set", "num_steps=20", "--no-progress"]


# a kill between a chunk's CSV and its checksum sidecar: that chunk is reported damaged and recomputed (expected)
@pytest.mark.filterwarnings("ignore:chunk file .* is damaged")
def test_interrupted_sweep_resumes_without_recomputing(tmp_path, capsys):
    interrupted, fresh = tmp_path / "interrupted", tmp_path / "fresh"
    proc = subprocess.Popen([sys.executable, "-m", "jtk.cli", *ARGS, "--results", str(interrupted)],
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "JTK_THREADS": "1"})
    deadline = time.time() + 240
    while time.time() < deadline and not list(interrupted.glob("*/chunk-*.json")):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    # finished chunks: a CSV with its checksum sidecar (a CSV the kill caught before its sidecar is recomputed)
    done = {p: p.stat().st_mtime_ns for p in interrupted.glob("*/chunk-*.csv") if p.with_suffix(".json").exists()}
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


# ---------------------------------------------------------------- results that cannot lie, writers that cannot collide
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402

from jtk import results  # noqa: E402

UNIFORM = [sweep.Config("uniform")]


def test_sweep_directory_records_its_problems_and_refuses_others(tmp_path):
    root = tmp_path / "sweep"
    rows = sweep.run(UNIFORM, testbed.problems("quick", seeds=1), root, progress=False)
    assert len(rows) == 8
    manifest = json.loads((root / "manifest.json").read_text())["identity"]
    assert manifest["kind"] == "sweep" and len(manifest["problems"]) == 8
    config = json.loads((root / "uniform" / "manifest.json").read_text())["identity"]
    assert config["agent"]["name"] == "uniform" and config["agent"]["registered"]
    with pytest.raises(results.ConfigMismatch, match=r"different configuration: problems \(recorded 8, given 16\)"):
        sweep.run(UNIFORM, testbed.problems("quick", seeds=2), root, progress=False)
    # The combined rows carry a manifest that load_results checks.
    combined = results.load_results(root / sweep.RESULTS_CSV)
    pd.testing.assert_frame_equal(combined, rows)
    assert combined.attrs["manifest"]["agent_column"] == "config"
    assert set(combined.attrs["manifest"]["agents"]) == {"uniform"}
    assert runs.verify(root / sweep.RESULTS_CSV, sample=8)["ok"].all()  # jtk verify works on sweeps too


def test_damaged_chunks_are_reported_and_recomputed(tmp_path):
    root = tmp_path / "sweep"
    problems = testbed.problems("quick", seeds=1)
    sweep.run(UNIFORM, problems, root, progress=False)
    (chunk,) = (root / "uniform").glob("chunk-*.csv")
    good = chunk.read_bytes()

    def same_rows():  # recomputed rows equal the originals (timing columns aside)
        a, b = pd.read_csv(chunk), pd.read_csv(io.BytesIO(good))
        timing = ["train_seconds", "eval_seconds"]
        return a.drop(columns=timing).equals(b.drop(columns=timing))

    chunk.write_bytes(good.rsplit(b"\n", 3)[0] + b"\n")  # truncated: two rows lost
    with pytest.warns(results.ResultsWarning, match=re.escape(chunk.name) + ".*skipping"), \
            pytest.raises(ValueError, match="no finished chunks"):
        sweep.load(root)  # load reports it and leaves it out (uniform's rows are one chunk) ...
    with pytest.warns(results.ResultsWarning, match=re.escape(chunk.name) + ".*recomputing"):
        rows = sweep.run(UNIFORM, problems, root, progress=False)  # ... a rerun recomputes it
    assert len(rows) == 8 and same_rows()
    good = chunk.read_bytes()
    chunk.write_bytes(good.replace(b",0.", b",1.", 1))  # edited, same number of rows
    with pytest.warns(results.ResultsWarning, match="edited"):
        sweep.run(UNIFORM, problems, root, progress=False)
    assert same_rows()


def test_second_writer_of_a_sweep_directory_fails_fast(tmp_path, capsys):
    root = tmp_path / "sweep"
    holder = subprocess.Popen([sys.executable, "-c", "import pathlib, time; from jtk import results; "
                               f"r = pathlib.Path({str(root)!r}); r.mkdir(); "
                               "l = results.Lock(r, r / 'sweep.lock').acquire(); print('held', flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "JAX_PLATFORMS": "cpu", "JTK_THREADS": "1"})
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.perf_counter()
        assert cli.main([*ARGS, "--results", str(root)]) == 2
        assert time.perf_counter() - t0 < 30.0  # refused, not waited for: the holder keeps the lock 60 s
        err = capsys.readouterr().err
        assert f"is being written by process {holder.pid}" in err and err.count("\n") == 1
    finally:
        holder.kill()
        holder.wait()
    (root / "note.txt").write_text("x")
    assert cli.main([*ARGS, "--results", str(root), "--new"]) == 2
    assert "--new expects a missing or empty directory" in capsys.readouterr().err


def test_sigint_stops_a_sweep_between_chunks_with_exit_130(tmp_path):
    root = tmp_path / "sweep"
    proc = subprocess.Popen([sys.executable, "-m", "jtk.cli", *ARGS, "--results", str(root)],
                            env={**os.environ, "JAX_PLATFORMS": "cpu"}, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None and not list(root.glob("*/chunk-*.json")):
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-2000:]
    match = re.search(r"interrupted: (\d) of 6 chunks are saved in .*; run the same command to continue", err)
    assert match and 1 <= int(match.group(1)) < 6, err[-2000:]
    assert len(list(root.glob("*/chunk-*.json"))) == int(match.group(1))
    assert not (root / "sweep.lock").exists()
