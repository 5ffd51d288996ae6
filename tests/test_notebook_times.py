"""README's labs table: its "headless run" column and "Measured on" line come from benchmarks/notebook_times.py."""

import datetime
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import notebook_times as nt  # noqa: E402


def rows(**overrides):
    out = [{"notebook": name, "cache": "cold", "median_s": 1.0 + i + 0.04, "max_s": 9.0, "runs": 2, "load_1min": 0.5}
           for i, name in enumerate(nt.LABS)]
    for r in out:
        r.update(overrides)
    return out


def test_the_readme_has_the_table_the_script_writes():
    text = (ROOT / "README.md").read_text()
    table = text.split(nt.README_START, 1)[1].split(nt.README_END, 1)[0]
    assert len(nt.README_MEASURED.findall(table)) == 1
    for name in nt.LABS:
        assert f"`{name}`" in table
    assert len(nt.LABS) == 6


def test_write_readme_rewrites_the_column_and_the_measured_line_only(tmp_path):
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    before = readme.read_text()
    nt.write_readme(rows(), readme, today=datetime.date(2030, 1, 2))
    after = readme.read_text()
    lab_rows = [line for line in after.splitlines() if line.startswith("| ") and ".ipynb`" in line]
    assert [line.rsplit("|", 2)[1].strip() for line in lab_rows] == [f"{1.0 + i:.1f} s" for i in range(6)]
    assert ("Measured on 2030-01-02: the median of 2 cold run(s) per lab, load average at most 0.5 "
            "(`benchmarks/notebook_times.py --readme`).") in after
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(before.splitlines()) == len(after.splitlines()) and len(changed) <= 7  # six rows and one line
    for a, b in changed:  # a row keeps everything but its last cell
        if a.startswith("| "):
            assert a.rsplit("|", 2)[0] == b.rsplit("|", 2)[0]
    nt.write_readme(rows(), readme, today=datetime.date(2030, 1, 2))
    assert readme.read_text() == after  # idempotent


def test_write_readme_refuses_warm_or_partial_runs_before_writing(tmp_path):
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    before = readme.read_text()
    with pytest.raises(ValueError, match="cold"):
        nt.write_readme(rows(cache="warm"), readme)
    with pytest.raises(ValueError, match="every lab"):
        nt.write_readme(rows()[:5], readme)
    readme.write_text("no table here\n")
    with pytest.raises(ValueError, match="no labs table"):
        nt.write_readme(rows(), readme)
    assert nt.main(["--readme", "--warm"]) == 2 and nt.main(["01_coins.ipynb", "--readme"]) == 2
    assert (ROOT / "README.md").read_text().count("Measured on") == before.count("Measured on")
