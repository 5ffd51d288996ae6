"""jtk reproduce: the registry of the papers' figures and tables (jtk.reproduce), its command and one real run."""

import importlib
import shutil
from pathlib import Path

import pandas as pd
import pytest

from jtk import cli, reproduce

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ALL_STEPS = [(s.name, preset, i) for s in reproduce.STUDIES for preset, steps in s.presets.items()
             for i in range(len(steps))]


def test_the_registry_names_every_paper_and_its_figures_and_tables():
    names = [s.name for s in reproduce.STUDIES]
    assert len(names) == len(set(names)) == len(reproduce.BY_NAME)
    assert {s.paper for s in reproduce.STUDIES} == set(reproduce.PAPERS)
    for expected in ("testbed-table2", "testbed-fig2", "bandit-fig89", "bandit-lab", "coverage-fig3", "coverage-fig6",
                     "ppc-fig3", "ppc-fig4", "ppc-fig5", "ppc-fig6", "ppc-table1", "tal-oracle"):
        assert expected in reproduce.BY_NAME, expected
    for s in reproduce.STUDIES:
        assert s.presets and set(s.presets) <= set(reproduce.PRESETS), s.name
        assert s.csvs and s.page.startswith("docs/") and s.target, s.name
        page = ROOT / s.page.split("#")[0].split(" ")[0]
        assert page.exists(), (s.name, page)


@pytest.mark.parametrize("module", sorted({m for s in reproduce.STUDIES for m in s.modules}))
def test_every_study_is_a_library_module_with_main(module):
    mod = importlib.import_module(module)
    assert callable(mod.main) and mod.__doc__
    assert module.split(".")[1] in ("testbed", "regression", "ppc")  # in the package that owns the paper


@pytest.mark.parametrize("name,preset,index", ALL_STEPS)
def test_every_preset_is_accepted_by_the_studys_own_parser(name, preset, index, tmp_path):
    step = reproduce.steps(name, preset)[index]
    assert "{results}" not in " ".join(step.argv)
    args = reproduce.parse(step)
    assert getattr(args, "out_dir", None) in (None, RESULTS)  # the checkout's folders unless --out-dir is given
    routed = reproduce.steps(name, preset, out_dir=tmp_path, extra=["--help-not-an-option"])[index]
    assert routed.argv[-3:] == ("--out-dir", str(tmp_path), "--help-not-an-option")
    assert Path(reproduce.parse(routed._replace(argv=routed.argv[:-1])).out_dir) == tmp_path
    with pytest.raises(SystemExit):  # the study's parser, not ours, refuses what it does not know
        reproduce.parse(routed)


def test_the_list_names_the_three_papers_and_each_quick_time_or_says_not_recorded(capsys, tmp_path):
    assert cli.main(["reproduce", "list"]) == 0
    out = capsys.readouterr().out
    assert "Osband" in out and "Schmähling" in out and "Wang, Sun & Grosse" in out
    for s in reproduce.STUDIES:
        assert f"  {s.name}: " in out
    assert out.count("      quick    ") == len(reproduce.STUDIES)
    # read from the stored records, never typed in
    stages = pd.read_csv(RESULTS / f"ppc_{reproduce.PPC_QUICK_TAG}_stages.csv").set_index("stage")["seconds"]
    assert reproduce.quick_time(reproduce.get("ppc-fig3")).seconds == pytest.approx(stages["total (this run)"])
    fig5 = reproduce.quick_time(reproduce.get("ppc-fig5")).source
    assert "stage 'Figs. 5-6 (XLL, " in fig5, fig5  # the stage is found by its prefix, whatever its settings count
    meta = pd.read_csv(RESULTS / "ppc_real_quick_meta.csv")
    assert reproduce.quick_time(reproduce.get("ppc-table1")).seconds == pytest.approx(meta["wall"].iloc[0])
    assert "not recorded" not in out  # the checkout's results hold a quick time for every study
    empty = reproduce.listing(tmp_path)  # ... and a folder without records says so for each
    assert empty.count("not recorded") == sum("quick" in s.presets for s in reproduce.STUDIES)
    assert reproduce.quick_time(reproduce.get("ppc-fig3"), results=Path("/nonexistent")) is None


def test_the_command_errors_are_clear(capsys):
    assert cli.main(["reproduce", "no-such-figure"]) == 2
    err = capsys.readouterr().err
    assert "unknown study 'no-such-figure'" in err and "bandit-fig89" in err and "jtk reproduce list" in err
    assert cli.main(["reproduce", "bandit-lab", "--preset", "paper"]) == 2
    assert "bandit-lab has no preset 'paper'; its presets: quick, report" in capsys.readouterr().err
    assert cli.main(["reproduce", "list", "--dry-run"]) == 2
    with pytest.raises(ValueError, match="unknown study"):
        reproduce.get("fig-99")


def test_dry_run_prints_the_commands_and_runs_nothing(tmp_path, capsys):
    assert cli.main(["reproduce", "ppc-fig4", "--dry-run", "--out-dir", str(tmp_path), "--", "--splits", "3"]) == 0
    out = capsys.readouterr().out
    assert f"python -m jtk.ppc.synthetic_study --preset quick --tag quick_all --out-dir {tmp_path} --splits 3" in out
    assert not list(tmp_path.glob("*.csv"))


def test_report_preset_end_to_end_into_a_folder(tmp_path, capsys):
    """A real run: the bandit lab preset's report from copies of the stored CSVs, written into tmp_path only."""
    for f in RESULTS.glob("bandit_lab_*.csv"):
        shutil.copy(f, tmp_path / f.name)
    before = {f: f.stat().st_mtime_ns for f in RESULTS.glob("bandit_lab_*.csv")}
    assert cli.main(["reproduce", "bandit-lab", "--preset", "report", "--out-dir", str(tmp_path)]) == 0
    assert "python -m jtk.testbed.bandit_study --preset lab --report-only --out-dir" in capsys.readouterr().out
    for name in ("bandit_lab_summary.csv", "bandit_lab_correlation.csv", "bandit_lab_points.csv"):
        assert (tmp_path / name).read_bytes() == (RESULTS / name).read_bytes(), name  # bit-identical to the stored
    assert before == {f: f.stat().st_mtime_ns for f in RESULTS.glob("bandit_lab_*.csv")}  # the checkout untouched


def test_without_a_checkout_the_results_go_to_jtk_results(monkeypatch, tmp_path):
    from jtk import _paths

    monkeypatch.setattr(_paths, "checkout_root", lambda: None)
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(reproduce, "parse", lambda step: calls.append(step))
    assert reproduce.run("ppc-fig3", "report", dry_run=True) == 0
    assert calls[0].argv[-2:] == ("--out-dir", "jtk-results") and (tmp_path / "jtk-results").is_dir()


def test_a_completed_run_records_its_time_and_the_list_shows_it(tmp_path, monkeypatch):
    """A study that keeps no timing of its own gets the time `jtk reproduce` measured; dry runs and runs with extra
    arguments (not the preset as listed) record nothing; a study's own record wins over the registry's."""
    calls = []
    module = importlib.import_module("jtk.testbed.known_limits")
    monkeypatch.setattr(module, "main", lambda argv=None: calls.append(argv) or 0)
    study = reproduce.get("testbed-known-limits")
    assert reproduce.quick_time(study, tmp_path) is None
    assert reproduce.run("testbed-known-limits", out_dir=tmp_path, dry_run=False) == 0
    assert reproduce.run("testbed-known-limits", out_dir=tmp_path, extra=["--help-me"]) == 0
    assert len(calls) == 2
    rows = pd.read_csv(tmp_path / reproduce.TIMES_CSV)
    assert list(rows["study"]) == ["testbed-known-limits"] and list(rows["preset"]) == ["quick"]
    assert rows["seconds"].iloc[0] >= 0 and rows["cpus"].iloc[0] >= 1
    t = reproduce.quick_time(study, tmp_path)
    assert t is not None and t.seconds == pytest.approx(rows["seconds"].iloc[0])
    assert reproduce.TIMES_CSV in t.source and "jtk reproduce testbed-known-limits" in t.source
    assert reproduce.run("testbed-known-limits", out_dir=tmp_path) == 0  # a second run is appended
    assert len(pd.read_csv(tmp_path / reproduce.TIMES_CSV)) == 2
    assert f"{t.seconds:,.0f} s ({reproduce.TIMES_CSV}" in reproduce.listing(tmp_path)
    # a study with its own record shows that one, whatever the registry recorded
    ppc = reproduce.get("ppc-table1")
    pd.DataFrame([{"wall": 12.0, "seeds": 5}]).to_csv(tmp_path / "ppc_real_quick_meta.csv", index=False)
    pd.concat([pd.read_csv(tmp_path / reproduce.TIMES_CSV),
               pd.DataFrame([{"study": "ppc-table1", "preset": "quick", "seconds": 99.0, "finished": "2026-11-28T00:00",
                              "cpus": 2, "load_before": 1.0, "load_after": 1.0}])]).to_csv(
        tmp_path / reproduce.TIMES_CSV, index=False)
    assert reproduce.quick_time(ppc, tmp_path).seconds == 12.0
