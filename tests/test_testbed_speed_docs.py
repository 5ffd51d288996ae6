"""benchmarks/testbed_speed.py: its tables in docs/ are made from the stored CSVs (never by hand), and --patch sets a
module constant for a trial run or refuses a name the module does not have."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import testbed_speed  # noqa: E402
from jtk._docs import markers  # noqa: E402


def test_the_speed_tables_in_docs_are_what_the_stored_csvs_give():
    tables = testbed_speed.doc_tables("paper")
    assert set(tables) == {"testbed-speed-paper", "gpu-paper-grid"}
    for name, (text, path) in tables.items():
        page = path.read_text()
        begin, end = markers(name)
        assert page.count(begin) == 1 and page.count(end) == 1, name
        stored = page.split(begin, 1)[1].split(end, 1)[0].strip("\n")
        assert stored == text, f"{path.name}'s {name!r} table is stale: run python benchmarks/testbed_speed.py --docs"
    gpu = tables["gpu-paper-grid"][0].splitlines()
    assert len(gpu) == 2 + 12  # header, rule, the twelve H200 runs of benchmarks/gpu_session.sh
    assert all("H200" in row for row in gpu[2:])


def test_patch_sets_a_module_constant_and_refuses_unknown_names(monkeypatch):
    from jtk.testbed import engine

    monkeypatch.setattr(engine, "MEMBERS_PER_CHUNK", engine.MEMBERS_PER_CHUNK)  # restored after the test
    testbed_speed._patch(["jtk.testbed.engine.MEMBERS_PER_CHUNK=4096"])
    assert engine.MEMBERS_PER_CHUNK == 4096
    with pytest.raises(SystemExit, match="jtk.testbed has no NO_SUCH_CONSTANT"):
        testbed_speed._patch(["jtk.testbed.NO_SUCH_CONSTANT=1"])
