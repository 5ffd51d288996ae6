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
    assert "num_memberz" in capsys.readouterr().err


def test_bandit_command_reports_regret_and_writes_curves(tmp_path, capsys):
    out = tmp_path / "curves.csv"
    assert cli.main(["bandit", "--agent", "oracle", "--horizon", "300", "--seeds", "2", "--out", str(out),
                     "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "oracle: total regret 0.00" in printed and "uniform random" in printed
    curves = pd.read_csv(out)
    assert set(curves.seed) == {0, 1} and curves.t.max() == 300 and (curves.cumulative_regret == 0).all()
    assert (tmp_path / "curves.manifest.json").exists()  # every results CSV has its manifest
    assert cli.main(["bandit", "--agent", "knn", "--no-progress"]) == 2
    assert "updated online" in capsys.readouterr().err
    assert cli.main(["bandit", "--agent", "mlp", "--set", "num_memberz=2", "--no-progress"]) == 2
    assert "num_memberz" in capsys.readouterr().err


# ---------------------------------------------------------------- results files that never lose work
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from jtk import results  # noqa: E402
from jtk.testbed import engine  # noqa: E402

# mlp with a short schedule: two chunks on the quick grid (n = 10 and n = 100 buckets), real training.
MLP = ["testbed", "--agent", "mlp", "--grid", "quick", "--seeds", "1", "--set", "num_steps=50", "--no-progress"]
ENV = {**os.environ, "JAX_PLATFORMS": "cpu"}


def _rows_equal_bitwise(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cols = [c for c in a.columns if not c.endswith("seconds")]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert np.array_equal(a["kl"].to_numpy().view(np.int64), b["kl"].to_numpy().view(np.int64))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "rows.csv"
    assert cli.main([*MLP, "--out", str(out)]) == 0
    return results.load_results(out)


def _wait_for(predicate, proc, timeout=120.0):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None and not predicate():
        time.sleep(0.02)
    assert predicate(), f"condition not reached (process exited with {proc.poll()})"


def test_out_is_checked_before_any_computation(tmp_path, capsys, monkeypatch):
    def no_compute(*args, **kwargs):
        raise AssertionError("computed before checking --out")

    monkeypatch.setattr(engine, "evaluate_chunk", no_compute)
    assert cli.main([*MLP, "--out", str(tmp_path / "missing" / "rows.csv")]) == 2  # no_compute: nothing ran first
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "jtk testbed: --out: expected an existing directory" in err and "missing" in err
    (tmp_path / "rows.csv").write_text("old\n")
    assert cli.main([*MLP, "--out", str(tmp_path / "rows.csv")]) == 2
    assert "--out: expected a new file" in capsys.readouterr().err and (tmp_path / "rows.csv").read_text() == "old\n"
    assert cli.main([*MLP, "--out", str(tmp_path / "rows.csv"), "--force", "--resume"]) == 2
    assert "exclusive" in capsys.readouterr().err
    results.parts_dir(tmp_path / "new.csv").mkdir()
    assert cli.main([*MLP, "--out", str(tmp_path / "new.csv")]) == 2
    assert "pass --resume to continue it" in capsys.readouterr().err
    assert cli.main(["bandit", "--agent", "oracle", "--out", str(tmp_path / "missing" / "c.csv")]) == 2
    assert "jtk bandit: --out: expected an existing directory" in capsys.readouterr().err
    assert cli.main(["sweep", "--agents", "mlp", "--results", str(tmp_path / "missing" / "dir")]) == 2
    assert "jtk sweep: --results: expected an existing directory" in capsys.readouterr().err


def test_force_overwrites_and_resume_of_a_complete_file_recomputes_nothing(tmp_path, capsys, monkeypatch):
    out = tmp_path / "rows.csv"
    out.write_text("old\n")
    args = ["testbed", "--agent", "uniform", "--grid", "quick", "--seeds", "1", "--no-progress", "--out", str(out)]
    assert cli.main([*args, "--force"]) == 0
    rows = results.load_results(out)
    assert len(rows) == 8 and rows.attrs["manifest"]["agent"]["name"] == "uniform"
    monkeypatch.setattr(engine, "evaluate_chunk", lambda *a, **k: pytest.fail("recomputed a complete run"))
    assert cli.main([*args, "--resume"]) == 0
    assert cli.main(["testbed", "--agent", "uniform", "--grid", "quick", "--seeds", "2", "--no-progress",
                     "--out", str(out), "--resume"]) == 2  # another problem set: not mixed in
    assert "different configuration" in capsys.readouterr().err


def test_sigint_exits_130_keeps_finished_chunks_and_resume_matches_uninterrupted(tmp_path, capsys, uninterrupted):
    out = tmp_path / "rows.csv"
    proc = subprocess.Popen([sys.executable, "-m", "jtk.cli", *MLP, "--out", str(out)], env=ENV,
                            stderr=subprocess.PIPE, text=True)
    try:
        # The handler is installed before the parts directory is made: interrupt while the first chunk compiles.
        _wait_for(lambda: (results.parts_dir(out) / "manifest.json").exists(), proc)
        # A second writer to the same --out fails fast with the lock message.
        t0 = time.perf_counter()
        assert cli.main([*MLP, "--out", str(out), "--resume"]) == 2
        assert time.perf_counter() - t0 < 30.0  # refused, not waited for (the run holds the lock for minutes)
        assert f"is being written by process {proc.pid}" in capsys.readouterr().err
        time.sleep(0.3)  # into the first chunk (compiling or training) on most machines
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-2000:]  # not -11 / 139: no segfault
    match = re.search(r"interrupted: (\d+) of 8 problems are saved in .*rows\.csv\.parts.*--resume", err)
    assert match, err[-2000:]
    # the running chunks (one per thread, jtk.executors.local_threads) are finished and kept; 0: none had started
    assert int(match.group(1)) in (0, 4, 8)
    assert len(list(results.parts_dir(out).glob("chunk-*.csv"))) == int(match.group(1)) // 4
    assert not out.exists() and not (tmp_path / "rows.csv.lock").exists()
    assert cli.main([*MLP, "--out", str(out), "--resume"]) == 0
    assert not results.parts_dir(out).exists()
    _rows_equal_bitwise(results.load_results(out), uninterrupted)


def _killed_after_first_chunk(out) -> int:
    """Starts ``jtk testbed ... --out out`` in a subprocess, SIGKILLs it once its first chunk is saved; its exit code."""
    parts = results.parts_dir(out)
    # One chunk at a time: with a thread per core both chunks can finish before the kill lands.
    proc = subprocess.Popen([sys.executable, "-m", "jtk.cli", *MLP, "--out", str(out)],
                            env={**ENV, "JTK_THREADS": "1"}, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: any(parts.glob("chunk-*.json")), proc)
        proc.kill()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    return proc.returncode


def test_sigkill_loses_at_most_the_running_chunk(tmp_path, capsys, uninterrupted):
    out = tmp_path / "rows.csv"
    parts = results.parts_dir(out)
    assert _killed_after_first_chunk(out) == -signal.SIGKILL
    kept = {p.name: p.read_bytes() for p in parts.glob("chunk-*.csv")}
    assert len(kept) == 1  # the finished chunk survived
    assert (tmp_path / "rows.csv.lock").exists()
    seen = []
    original = engine.evaluate_chunk

    def spy(agent, chunk, name, *args, **kwargs):
        seen.append(sum(len(g) for g in chunk))
        return original(agent, chunk, name, *args, **kwargs)

    engine.evaluate_chunk, restore = spy, engine.evaluate_chunk
    try:
        assert cli.main([*MLP, "--out", str(out), "--resume"]) == 0
    finally:
        engine.evaluate_chunk = restore
    assert seen == [4]  # only the chunk that was running is recomputed
    assert "taking over the stale lock" in capsys.readouterr().err
    _rows_equal_bitwise(results.load_results(out), uninterrupted)


def test_resume_recomputes_a_truncated_chunk(tmp_path, uninterrupted):
    out = tmp_path / "rows.csv"
    store = results.ChunkStore(results.parts_dir(out), {"kind": "placeholder"})  # a foreign parts directory
    del store
    assert cli.main([*MLP, "--out", str(out), "--resume"]) == 2  # refused: a different configuration
    import shutil

    shutil.rmtree(results.parts_dir(out))
    _killed_after_first_chunk(out)
    chunk = next(results.parts_dir(out).glob("chunk-*.csv"))
    chunk.write_bytes(chunk.read_bytes()[:-40])
    with pytest.warns(results.ResultsWarning, match=re.escape(chunk.name)):
        assert cli.main([*MLP, "--out", str(out), "--resume"]) == 0
    _rows_equal_bitwise(results.load_results(out), uninterrupted)


def test_verify_command_passes_a_true_file_and_fails_a_tampered_one(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert cli.main(["testbed", "--agent", "uniform", "--grid", "quick", "--seeds", "1", "--no-progress",
                     "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["verify", str(out), "--sample", "8", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "verified: 8 recomputed rows match" in printed and "recomputed" in printed
    rows = pd.read_csv(out)
    rows.loc[5, "kl"] += 0.01
    out.write_bytes(results.csv_bytes(rows))
    assert cli.main(["verify", str(out), "--no-progress"]) == 1  # checksum no longer matches
    assert "FAILED" in capsys.readouterr().err
    manifest = json.loads(results.manifest_path(out).read_text())
    manifest["sha256"] = results.sha256_file(out)  # rewrite the manifest consistently
    results.manifest_path(out).write_text(json.dumps(manifest))
    assert cli.main(["verify", str(out), "--sample", "8", "--no-progress"]) == 1
    assert "FAILED: 1 of 8 recomputed rows differ" in capsys.readouterr().err
    assert cli.main(["verify", str(tmp_path / "nope.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_grade_only_names_students_among_the_submissions(tmp_path, capsys):
    """--only (the regrade the timeout summary suggests) refuses a name that is not a student, before grading."""
    from pathlib import Path

    (tmp_path / "alice").mkdir()
    exercise = Path(__file__).resolve().parents[1] / "exercises" / "01_coin_joint.ipynb"
    (tmp_path / "alice" / "01_coin_joint.ipynb").write_text(exercise.read_text())
    assert cli.main(["grade", str(tmp_path), "--only", "bob", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--only" in err and "alice" in err and "'bob'" in err
