"""Results files: atomic writes, locks, checksummed chunks, manifests, verification (jtk.results)."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from jtk import results, testbed
from jtk.testbed import runs
from jtk.agents import records


# ---------------------------------------------------------------- atomic writes under concurrency
def _hammer(path, tag, count):
    body = (tag * 5000).encode()
    for i in range(count):
        results.write_atomic(path, body + f"|{i}".encode())


def _hammer_store(directory, identity, worker, count):
    store = results.ChunkStore(directory, identity)
    for i in range(count):
        store.write(f"w{worker}-{i}", pd.DataFrame({"kl": np.arange(50.0) * (worker + 1) + i}))


@pytest.mark.filterwarnings("ignore:.*fork.*:RuntimeWarning", "ignore:.*fork.*:DeprecationWarning")
def test_concurrent_atomic_writes_never_tear_or_collide(tmp_path):
    path = tmp_path / "shared.csv"
    ctx = multiprocessing.get_context("fork")  # the children only write files (no JAX), so fork is safe and fast
    procs = [ctx.Process(target=_hammer, args=(str(path), tag, 60)) for tag in "ABCD"]
    for p in procs:
        p.start()
    seen = 0
    while seen == 0 or any(p.is_alive() for p in procs):
        if path.exists():
            data = path.read_bytes()  # every read is one writer's complete bytes
            head, _, tail = data.partition(b"|")
            assert len(head) == 5000 and len(set(head)) == 1 and tail.isdigit(), data[:20]
            seen += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]  # no temporary file left behind

    # Several processes writing chunks of one store: every chunk verifies afterwards.
    identity = {"kind": "stress"}
    procs = [ctx.Process(target=_hammer_store, args=(str(tmp_path / "store"), identity, w, 10)) for w in range(4)]
    results.ChunkStore(tmp_path / "store", identity)
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    store = results.ChunkStore(tmp_path / "store", identity)
    assert len(store.chunk_ids()) == 40 and all(store.finished(c) for c in store.chunk_ids())


# ---------------------------------------------------------------- checkpoints of a run in progress
def test_checkpoint_round_trip_and_what_it_refuses(tmp_path, capsys):
    path = tmp_path / "sub" / "piece.npz"
    arrays = {"regret": np.arange(6.0).reshape(2, 3), "chunks": 3}
    results.write_checkpoint(path, "run-a", arrays, {"rows": [{"kl": 0.5}], "seconds": 1.5})
    payload, got = results.read_checkpoint(path, "run-a")
    assert payload == {"rows": [{"kl": 0.5}], "seconds": 1.5}
    np.testing.assert_array_equal(got["regret"], arrays["regret"])
    assert int(got["chunks"]) == 3 and set(got) == {"regret", "chunks"}
    # another run's file is never used: the message names the file and what to do
    with pytest.raises(ValueError, match=r"piece\.npz.*belongs to another run.*use --fresh"):
        results.read_checkpoint(path, "run-b", mismatch="use --fresh")
    assert results.read_checkpoint(tmp_path / "absent.npz", "run-a") is None
    # torn (truncated) or not an npz at all: None, with a message, so the caller recomputes the piece
    data = path.read_bytes()
    for body in (data[: len(data) // 2], b"", b"not a zip"):
        path.write_bytes(body)
        assert results.read_checkpoint(path, "run-a") is None
        assert "unreadable" in capsys.readouterr().out
    # reserved names and a bad fingerprint are refused before anything is written
    with pytest.raises(ValueError, match="arrays must not use the names"):
        results.write_checkpoint(tmp_path / "x.npz", "run-a", {"payload": np.zeros(1)})
    with pytest.raises(TypeError, match="fingerprint must be a non-empty string"):
        results.write_checkpoint(tmp_path / "x.npz", "", {})
    assert not (tmp_path / "x.npz").exists()


def test_checkpoint_never_reads_a_fifo_a_link_or_a_folder(tmp_path):
    """A FIFO in a piece's place would block np.load forever; a link or folder is not what write_checkpoint left."""
    real = results.write_checkpoint(tmp_path / "real.npz", "run-a", {"a": np.ones(2)})
    os.mkfifo(tmp_path / "fifo.npz")
    os.symlink(real, tmp_path / "link.npz")
    (tmp_path / "dir.npz").mkdir()
    for name in ("fifo.npz", "link.npz", "dir.npz"):
        with pytest.raises(ValueError, match=f"{name}.*not a regular file"):
            results.read_checkpoint(tmp_path / name, "run-a")


def test_written_files_get_the_usual_permissions(tmp_path):
    path = results.write_atomic(tmp_path / "a.csv", b"x\n")
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


# ---------------------------------------------------------------- locks
def test_lock_refuses_a_second_writer_and_takes_over_a_dead_ones(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from jtk import results; "
                               f"l = results.Lock({str(out)!r}).acquire(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.perf_counter()
        with pytest.raises(results.LockedError, match=f"being written by process {holder.pid}"):
            results.Lock(out).acquire()
        assert time.perf_counter() - t0 < 30.0  # refused, not waited for: the holder keeps the lock 60 s
    finally:
        holder.kill()
        holder.wait()
    assert (tmp_path / "rows.csv.lock").exists()  # SIGKILL leaves the lock behind ...
    with results.Lock(out) as lock:  # ... and the next writer takes it over
        assert lock.held and json.loads((tmp_path / "rows.csv.lock").read_text())["pid"] == os.getpid()
    assert "taking over the stale lock" in capsys.readouterr().err
    assert not (tmp_path / "rows.csv.lock").exists()
    # A lock of another host cannot be checked: refused.
    (tmp_path / "rows.csv.lock").write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": "t"}))
    with pytest.raises(results.LockedError, match="elsewhere"):
        results.Lock(out).acquire()


def test_deferred_interrupt_sets_a_flag_then_raises_on_the_second(capfd):
    # signal.raise_signal delivers SIGINT to this thread and runs the Python handler before it returns; os.kill to
    # the process lets the kernel pick any of its threads (XLA's among them), which a busy machine may not run for
    # longer than a fixed sleep.
    old = signal.getsignal(signal.SIGINT)
    with results.DeferredInterrupt() as interrupt:
        signal.raise_signal(signal.SIGINT)
        assert interrupt.requested
        assert "interrupt received" in capfd.readouterr().err  # written to fd 2
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is old


# ---------------------------------------------------------------- output checks
def test_check_output_names_the_option_and_what_it_expects(tmp_path):
    with pytest.raises(results.OutputError, match=r"--out: expected an existing directory .* does not exist"):
        results.check_output(tmp_path / "missing" / "rows.csv", option="--out")
    (tmp_path / "rows.csv").write_text("x\n")
    with pytest.raises(results.OutputError, match="--out: expected a new file.*--force"):
        results.check_output(tmp_path / "rows.csv", option="--out")
    assert results.check_output(tmp_path / "rows.csv", option="--out", force=True)
    with pytest.raises(results.OutputError, match="is a directory"):
        results.check_output(tmp_path, option="--out")
    with pytest.raises(results.OutputError, match="--results: expected a directory"):
        results.check_output(tmp_path / "rows.csv", option="--results", directory=True)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # root can write anywhere
            with pytest.raises(results.OutputError, match="not writable"):
                results.check_output(ro / "rows.csv", option="--out")
    finally:
        ro.chmod(0o700)


# ---------------------------------------------------------------- chunk stores
def _store_with_chunk(tmp_path):
    store = results.ChunkStore(tmp_path / "parts", {"agent": "x", "problems": [1, 2]})
    store.write("abc", pd.DataFrame({"seed": [0, 1, 2], "kl": [0.125, 0.25, 0.5]}))
    assert store.finished("abc")
    return store


def test_truncated_chunk_is_detected_reported_and_removed(tmp_path):
    store = _store_with_chunk(tmp_path)
    path = store.csv_path("abc")
    path.write_bytes(path.read_bytes().rsplit(b"\n", 2)[0] + b"\n")  # last row cut off
    with pytest.warns(results.ResultsWarning, match=r"chunk-abc\.csv.*damaged.*2 rows, 3 recorded"):
        assert not store.finished("abc")
    assert not path.exists() and not store.sidecar_path("abc").exists()


def test_edited_chunk_is_detected(tmp_path):
    store = _store_with_chunk(tmp_path)
    path = store.csv_path("abc")
    path.write_text(path.read_text().replace("0.25", "0.26"))
    with pytest.raises(results.ManifestMismatch, match="SHA-256"):
        store.read("abc")
    with pytest.warns(results.ResultsWarning, match="edited: same row count"):
        assert not store.finished("abc", remove=False)
    assert path.exists()  # remove=False only reports
    store.sidecar_path("abc").unlink()
    with pytest.warns(results.ResultsWarning, match="no checksum sidecar"):
        assert not store.finished("abc")


def test_store_of_another_configuration_is_refused(tmp_path):
    _store_with_chunk(tmp_path)
    with pytest.raises(results.ConfigMismatch, match=r"different configuration: problems \(recorded 2, given 3\)"):
        results.ChunkStore(tmp_path / "parts", {"agent": "x", "problems": [1, 2, 3]})
    with pytest.raises(results.ConfigMismatch, match="agent"):
        results.ChunkStore(tmp_path / "parts", {"agent": "y", "problems": [1, 2]})
    results.ChunkStore(tmp_path / "parts", {"agent": "x", "problems": [1, 2]})  # same: fine


# ---------------------------------------------------------------- manifests
def test_save_results_writes_a_provenance_manifest_and_load_checks_it(tmp_path):
    problems = testbed.problems("quick", seeds=1)
    df = pd.DataFrame({"agent": ["mlp"] * 2, "kl": [0.1, 0.2], "likelihood": ["exact", "exact"]})
    path = tmp_path / "rows.csv"
    m = results.save_results(df, path, agent="mlp", problems=problems, config={"grid": "quick"}, estimator="auto",
                             started="2026-01-01T00:00:00+00:00")
    on_disk = json.loads((tmp_path / "rows.manifest.json").read_text())
    assert on_disk == json.loads(json.dumps(m))
    prov = on_disk["provenance"]
    assert prov["jtk"] and prov["jax"] and prov["jaxlib"] and prov["backend"] == "cpu" and prov["python"]
    assert prov["git_commit"] is None or len(prov["git_commit"]) == 40
    assert on_disk["agent"]["name"] == "mlp" and on_disk["agent"]["registered"]
    assert on_disk["agent"]["fields"]["num_members"] == 1 and on_disk["agent"]["fields"]["hidden"] == [50, 50]
    assert len(on_disk["problems"]) == 8 and on_disk["problems"][0]["temperature"] in (0.1, 0.5)
    assert on_disk["estimator"] == {"requested": "auto", "likelihood": ["exact"]}
    assert on_disk["rows"] == 2 and on_disk["sha256"] == results.sha256_file(path)
    assert on_disk["started"] == "2026-01-01T00:00:00+00:00" and on_disk["ended"]
    loaded = results.load_results(path)
    pd.testing.assert_frame_equal(loaded, df)
    assert loaded.attrs["manifest"]["rows"] == 2
    assert testbed.load_results is results.load_results
    with pytest.raises(results.OutputError, match="exists"):
        results.save_results(df, path, agent="mlp")
    results.save_results(df, path, agent="mlp", force=True)


def test_load_results_refuses_a_csv_that_does_not_match_its_manifest(tmp_path):
    df = pd.DataFrame({"agent": ["uniform"] * 3, "kl": [0.1, 0.2, 0.3]})
    path = tmp_path / "rows.csv"
    results.save_results(df, path, agent="uniform")
    path.write_text(path.read_text().replace("0.2", "0.19"))
    with pytest.raises(ValueError, match="does not match the SHA-256"):
        results.load_results(path)
    path.write_text("agent,kl\nuniform,0.1\n")
    with pytest.raises(ValueError, match="has 1 rows but its manifest records 3"):
        results.load_results(path)
    results.manifest_path(path).unlink()
    with pytest.raises(ValueError, match="has no manifest"):
        results.load_results(path)
    with pytest.raises(ValueError, match="does not exist"):
        results.load_results(tmp_path / "nope.csv")


def test_agent_config_records_registered_and_user_agents():
    from jtk import agents

    cfg = records.agent_config(agents.make("ensemble+", num_members=3))
    rebuilt = records.make_agent(cfg)
    assert rebuilt == agents.make("ensemble+", num_members=3)

    class MyAgent:
        def fit(self, x, y, seed=0, prior=None):
            raise NotImplementedError

        def __repr__(self):
            return "MyAgent(k=3)"

    cfg = records.agent_config(MyAgent())
    assert not cfg["registered"] and cfg["class"].endswith("MyAgent") and cfg["repr"] == "MyAgent(k=3)"
    with pytest.raises(ValueError, match="registered jtk agent"):
        records.make_agent(cfg)
    changed = records.agent_config("mlp")
    changed["fields"]["hidden"] = [20, 20]
    with pytest.raises(ValueError, match="differs from the recorded configuration"):
        records.make_agent(changed)


# ---------------------------------------------------------------- verification
def test_verify_recomputes_and_catches_a_consistently_rewritten_kl(tmp_path):
    out = tmp_path / "rows.csv"
    df = runs.evaluate_to_file("uniform", testbed.problems("quick", seeds=1), out, progress=False)
    assert len(df) == 8 and not results.parts_dir(out).exists()
    table = runs.verify(out, sample=8)
    assert len(table) == 8 and table["ok"].all() and (table["abs_diff"] <= 1e-5).all()

    # Tamper with one kl and rewrite the manifest's checksum consistently: only recomputation catches it.
    rows = pd.read_csv(out)
    rows.loc[3, "kl"] *= 0.9
    data = results.csv_bytes(rows)
    out.write_bytes(data)
    manifest = json.loads(results.manifest_path(out).read_text())
    manifest["sha256"] = results.sha256_bytes(data)
    results.manifest_path(out).write_text(json.dumps(manifest))
    assert len(results.load_results(out)) == 8  # passes the checksum ...
    table = runs.verify(out, sample=8)
    bad = table[~table["ok"]]  # ... but not the recomputation
    assert len(bad) == 1 and bad.iloc[0]["recorded"] == pytest.approx(rows.loc[3, "kl"])
    with pytest.raises(ValueError, match="sample must be a positive integer"):
        runs.verify(out, sample=0)


def test_manifests_record_the_numerics_and_verify_picks_its_tolerance_by_them(tmp_path):
    """Same numerics key: jtk verify's tight tolerance; another key (or none recorded): the cross-machine one."""
    from jtk import _info

    out = tmp_path / "rows.csv"
    runs.evaluate_to_file("uniform", testbed.problems("quick", seeds=1), out, progress=False)
    manifest = json.loads(results.manifest_path(out).read_text())
    numerics = manifest["provenance"]["numerics"]
    assert numerics["numerics_key"] == _info.numerics()["numerics_key"]
    assert numerics["numerics_key"].startswith(f"{numerics['machine']}/{numerics['xla_cpu_isa'] or 'native'}")
    assert "the same numerics key" in runs.verify(out, sample=2).attrs["tolerance"]
    manifest["provenance"]["numerics"]["numerics_key"] = "x86_64/AVX512"
    results.manifest_path(out).write_text(json.dumps(manifest))
    table = runs.verify(out, sample=2)
    assert table["ok"].all() and table.attrs["tolerance"].startswith(
        f"rtol {results.CROSS_MACHINE_RTOL:g}, atol {results.CROSS_MACHINE_ATOL:g} (numerics key x86_64/AVX512 recorded")


def test_numerics_key_follows_the_xla_isa_cap(monkeypatch):
    from jtk import _info

    monkeypatch.setattr(_info, "_cpu", lambda: ("Some CPU", frozenset({"sse4_2", "avx", "avx2", "avx512f"})))
    monkeypatch.setattr(_info.platform, "machine", lambda: "x86_64")
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    assert _info.numerics()["numerics_key"] == "x86_64/AVX512"
    # XLA's YNN dot kernels and platform-dependent math follow the host's instructions, not the cap: an AVX-512 host
    # capped at AVX2 gave other bits than an AVX2 host (docs/reference.md), so it is a key of its own.
    monkeypatch.setenv("XLA_FLAGS", _info.PORTABLE_XLA_FLAG)
    assert _info.numerics()["numerics_key"] == "x86_64/AVX2-on-AVX512"
    monkeypatch.setattr(_info, "_cpu", lambda: ("AVX2 CPU", frozenset({"sse4_2", "avx", "avx2"})))
    assert _info.numerics()["numerics_key"] == "x86_64/AVX2"
    monkeypatch.setattr(_info, "_cpu", lambda: ("Some CPU", frozenset({"sse4_2", "avx", "avx2", "avx512f"})))
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX512_VNNI")
    assert _info.numerics()["xla_cpu_isa"] == "AVX512"
    monkeypatch.setattr(_info, "_cpu", lambda: ("Old CPU", frozenset({"sse4_2", "avx"})))
    monkeypatch.setenv("XLA_FLAGS", _info.PORTABLE_XLA_FLAG)
    assert _info.numerics()["numerics_key"] == "x86_64/AVX"


def test_numerics_key_names_the_cpu_vendor(monkeypatch):
    """The same ISAs and cap on an Intel Xeon and an AMD EPYC gave other bits for one agent (hypermodel,
    docs/reference.md): the vendor is part of the key when the model name gives it."""
    from jtk import _info

    avx512 = frozenset({"sse4_2", "avx", "avx2", "avx512f"})
    monkeypatch.setattr(_info.platform, "machine", lambda: "x86_64")
    monkeypatch.setenv("XLA_FLAGS", _info.PORTABLE_XLA_FLAG)
    for model, vendor in (("Intel(R) Xeon(R) Processor", "Intel"), ("AMD EPYC", "AMD"),
                          ("AMD Ryzen 9 7950X 16-Core Processor", "AMD"), ("Some CPU", None)):
        monkeypatch.setattr(_info, "_cpu", lambda model=model: (model, avx512))
        numerics = _info.numerics()
        assert numerics["cpu_vendor"] == vendor
        assert numerics["numerics_key"] == "x86_64/AVX2-on-AVX512" + (f"/{vendor}" if vendor else "")
