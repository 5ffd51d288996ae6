"""Exercises: generated from solutions/, unsolved ones fail every check, `jtk grade` scores 100 % / 0 %.

nbval runs every solution notebook separately (pytest collects solutions/*.ipynb) and compares the
outputs of the check cells, which carry the `nbval-check-output` tag.
"""

import copy
import json
import pathlib

import nbformat
import pytest

from jtk import cli
from jtk.course import exercises

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
NAMES = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))


def test_there_are_at_least_six_graded_exercises():
    assert len(NAMES) >= 6
    for name in NAMES:
        nb = nbformat.read(SOLUTIONS / name, as_version=4)
        checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert checks and answers, name
        assert all("nbval-check-output" in c.metadata.get("tags", []) for c in checks), name
        assert all(exercises.BEGIN in c.source and exercises.END in c.source for c in answers), name


def test_committed_exercises_are_what_the_generator_writes(tmp_path):
    assert exercises.stale(SOLUTIONS, EXERCISES) == [], "run `jtk exercises build`"
    exercises.build(SOLUTIONS, tmp_path)
    for name in NAMES:
        assert (tmp_path / name).read_text() == (EXERCISES / name).read_text()
        nb = nbformat.read(EXERCISES / name, as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and exercises.PLACEHOLDER in text
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_strip_solutions_keeps_indentation_and_rejects_unbalanced_markers():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n\nprint(f)"
    assert exercises.strip_solutions(src) == f"def f(x):\n    {exercises.PLACEHOLDER}\n\nprint(f)"
    with pytest.raises(ValueError, match="without"):
        exercises.strip_solutions("### BEGIN SOLUTION\nx = 1")
    with pytest.raises(ValueError, match="without"):
        exercises.strip_solutions("x = 1\n### END SOLUTION")


def test_check_command_reports_stale_exercises(tmp_path, capsys):
    exercises.build(SOLUTIONS, tmp_path)
    assert cli.main(["exercises", "check", "--exercises", str(tmp_path)]) == 0
    (tmp_path / NAMES[0]).write_text("{}")
    assert cli.main(["exercises", "check", "--exercises", str(tmp_path)]) == 1
    assert NAMES[0] in capsys.readouterr().err


def _grade_json(paths, capsys):
    assert cli.main(["grade", "--json", "--no-progress", "--workers", "1", *map(str, paths)]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_syntax_error_in_one_exercise_does_not_lose_the_others(tmp_path, capsys):
    nb = nbformat.read(SOLUTIONS / "01_coin_joint.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1a-answer")
    answer.source = answer.source.replace("return out", "return out)")  # a typo
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    (row,) = _grade_json([path], capsys)
    scores = {c["id"]: c for c in row["checks"]}
    assert row["student"] == "student" and row["notebook"] == "01_coin_joint.ipynb"
    assert scores["ex1a-check"]["status"] == "error" and "NameError" in scores["ex1a-check"]["message"]
    assert scores["ex1b-check"]["status"] == "passed"


def test_grade_usage_errors_exit_2(tmp_path, capsys):
    assert cli.main(["grade", str(tmp_path / "missing.ipynb")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["grade", str(EXERCISES), "--source", str(tmp_path)]) == 2
    assert "holds no .ipynb" in capsys.readouterr().err
    existing = tmp_path / "grades.csv"
    existing.write_text("keep me")
    assert cli.main(["grade", str(EXERCISES), "--csv", str(existing)]) == 2
    assert "--force" in capsys.readouterr().err and existing.read_text() == "keep me"
    assert cli.main(["grade", str(EXERCISES), "--csv", str(tmp_path / "no" / "dir.csv")]) == 2
    with pytest.raises(SystemExit):
        cli.main(["grade", str(EXERCISES), "--memory", "12"])
    assert "256M" in capsys.readouterr().err


# ---------- what the grader runs: the source's checks over the student's notebook (no kernel needed)
SOURCE = exercises.load_source(SOLUTIONS / "01_coin_joint.ipynb")


def _student():
    return nbformat.read(EXERCISES / "01_coin_joint.ipynb", as_version=4)


def _by_id(nb, gid):
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


def test_hidden_checks_are_in_every_source_and_in_no_exercise():
    for name in NAMES:
        solution = (SOLUTIONS / name).read_text()
        assert solution.count(exercises.BEGIN_HIDDEN) >= 1, name
        assert "HIDDEN TESTS" not in (EXERCISES / name).read_text(), name
        source = exercises.load_source(SOLUTIONS / name)
        assert all(any(hidden for _, hidden in c.calls) for c in source.checks), name


def test_prepare_keeps_the_source_checks_and_the_plan_draws_the_graders_cases():
    prepared = exercises.prepare(_student(), SOURCE, lambda gid: 42)
    cell = prepared.nb.cells[prepared.check_cell["ex1a-check"]]
    assert cell.source == SOURCE.checks[0].code and "hidden=True" in cell.source
    assert prepared.tampered == {"ex1a-check": False, "ex1b-check": False}
    assert SOURCE.checks[0].calls == (("coin_joint", False), ("coin_joint", True))
    assert SOURCE.checks[0].functions == ("coin_joint", "coin_joint")
    visible, hidden = exercises.check_plan(SOURCE.checks[0], 42, timeout=30)
    from jtk.course import _judge

    assert repr(visible.cases) == repr(tuple(_judge.cases("coin_joint", 42))) and hidden.hidden
    assert (visible.seconds, visible.compile_seconds) == (10.0, 30.0)


def test_prepare_restores_edited_deleted_and_duplicated_checks():
    nb = _student()
    nb.cells[_by_id(nb, "ex1a-check")].source = "print('passed')"
    nb.cells[_by_id(nb, "ex1a-check")].metadata["nbgrader"]["points"] = 100
    del nb.cells[_by_id(nb, "ex1b-check")]
    nb.cells.append(copy.deepcopy(nb.cells[_by_id(nb, "ex1a-check")]))
    fake = nbformat.v4.new_code_cell("print('bonus')", metadata={"nbgrader": {"grade": True, "grade_id": "bonus",
                                                                              "points": 50}})
    nb.cells.append(fake)
    prepared = exercises.prepare(nb, SOURCE, lambda gid: 1)
    assert prepared.tampered == {"ex1a-check": True, "ex1b-check": True}
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in prepared.nb.cells]
    assert ids.count("ex1a-check") == 1 and "bonus" not in ids
    assert ids.index("ex1b-check") == ids.index("ex1b-answer") + 1  # put back right after its answer
    assert "print('passed')" not in "\n".join(c.source for c in prepared.nb.cells)


def test_prepare_skips_untouched_demonstrations_but_runs_what_the_student_wrote():
    nb = _student()
    demo = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "two flips: shape" in c.source)
    run = exercises.prepare(nb, SOURCE, lambda gid: 1).run
    assert demo not in run and 1 in run  # the import cell before the first answer runs
    nb.cells[demo].source += "\nhelper = 1"
    nb.cells.insert(demo + 1, nbformat.v4.new_code_cell("mine = 2"))
    run = exercises.prepare(nb, SOURCE, lambda gid: 1).run
    assert demo in run and demo + 1 in run


def test_check_calls_reads_the_plan_of_a_cell():
    assert exercises.check_calls("checks.check_blr_posterior(f)\nchecks.check_blr_posterior(f, hidden=True)") == (
        ("blr_posterior", False), ("blr_posterior", True))
    with pytest.raises(ValueError, match="calls no check"):
        exercises.check_calls("print(1)")
    with pytest.raises(ValueError, match="literal"):
        exercises.check_calls("checks.check_blr_posterior(f, hidden=flag)")


def test_a_failed_check_in_a_notebook_shows_its_message_not_a_traceback():
    from nbclient import NotebookClient

    nb = nbformat.read(EXERCISES / "02_joint_log_likelihood.ipynb", as_version=4)
    NotebookClient(nb, allow_errors=True, kernel_name="python3", timeout=120).execute()
    (check,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (error,) = [o for o in check.outputs if o.output_type == "error"]
    assert len(error.traceback) == 1 and "✗ Exercise 2" in error.traceback[0], error.traceback
    assert "not implemented yet" in error.traceback[0] and "checks.py" not in error.traceback[0]


def test_a_flood_of_prints_costs_the_grader_nothing_and_the_calls_still_answer(tmp_path):
    """What a cell prints goes to the worker's stderr, of which the grader keeps a bounded tail; the check calls
    travel on the protocol's own pipe."""
    code = ("import sys\nfor i in range(400):\n    print('x' * 20000, flush=True)\n"
            "def f(b, p, n):\n    return 0.5 * np.ones((2,) * n)")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np\n" + code),
                                         nbformat.v4.new_code_cell("checks.check_coin_joint(f)")])
    source = exercises.SourceCheck("c", 1.0, "checks.check_coin_joint(f)", "", (("coin_joint", False),), None, ("f",))
    plan = {1: exercises.check_plan(source, 3)}
    done = exercises.execute(nb, [0, 1], workdir=str(tmp_path), timeout=60, plans=plan)
    assert done.fate == {0: "ok", 1: "ok"}
    (answers,) = done.answers[1]
    assert len(answers) == len(plan[1][0].cases) and all("npy" in a for a in answers)


def _restart_notebook(tmp_path, works_on_runs):
    """Cell 0 defines ``x`` on the runs numbered in ``works_on_runs`` (1-based) and raises on the others; cell 1
    runs past the clock so the kernel is restarted and cell 0 re-run; cell 2 uses ``x``."""
    setup = ("import pathlib\n"
             "p = pathlib.Path('runs')\n"
             "n = int(p.read_text()) + 1 if p.exists() else 1\n"
             "p.write_text(str(n))\n"
             f"if n not in {set(works_on_runs)!r}:\n"
             "    raise RuntimeError(f'run {n} of the set-up cell')\n"
             "x = 41\n")
    cells = [setup, "import time\ntime.sleep(60)", "print(x + 1)"]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def test_a_restart_that_cannot_bring_a_cell_back_says_so_in_the_next_cell(tmp_path):
    nb = _restart_notebook(tmp_path, works_on_runs={1})
    done = exercises.execute(nb, [0, 1, 2], workdir=str(tmp_path), timeout=4)
    assert done.fate == {0: "ok", 1: "timeout", 2: "error"}
    assert (tmp_path / "runs").read_text() == "3"  # the first run, then one re-run in each of two fresh workers
    text = done.errors[2]
    assert text.startswith("KernelError: the kernel was restarted and re-running notebook cell 1"), text
    assert "RuntimeError: run 3 of the set-up cell" in text, text


def test_a_restart_whose_re_run_fails_once_tries_a_fresh_kernel(tmp_path):
    nb = _restart_notebook(tmp_path, works_on_runs={1, 3})
    done = exercises.execute(nb, [0, 1, 2], workdir=str(tmp_path), timeout=4)
    assert done.fate == {0: "ok", 1: "timeout", 2: "ok"}
    assert 2 not in done.errors
