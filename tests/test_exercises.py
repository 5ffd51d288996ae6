"""Exercises: generated from solutions/, unsolved ones fail every check, `jtk grade` scores 100 % / 0 %.

nbval runs every solution notebook separately (pytest collects solutions/*.ipynb) and compares the
outputs of the check cells, which carry the `nbval-check-output` tag.
"""

import json
import pathlib
import shutil

import nbformat
import pytest

from jtk import cli, exercises

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
        assert "BEGIN SOLUTION" not in text and exercises.PLACEHOLDER in text
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
    assert cli.main(["grade", "--json", *map(str, paths)]) == 0
    return json.loads(capsys.readouterr().out)


def test_grade_scores_solutions_full_and_untouched_exercises_zero(capsys):
    solved = _grade_json([SOLUTIONS / n for n in NAMES], capsys)
    assert solved and all(r["status"] == "passed" for r in solved), [r for r in solved if r["status"] != "passed"]
    unsolved = _grade_json([EXERCISES / n for n in NAMES], capsys)
    assert len(unsolved) == len(solved)
    for row in unsolved:  # an exercise that passes unsolved is a bug
        assert row["status"] == "failed" and row["points"] == 0, row
        assert row["message"].startswith("AssertionError") and "not implemented yet" in row["message"], row


def test_a_syntax_error_in_one_exercise_does_not_lose_the_others(tmp_path, capsys):
    nb = nbformat.read(SOLUTIONS / "01_coin_joint.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1a-answer")
    answer.source = answer.source.replace("return out", "return out)")  # a typo
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    scores = {r["exercise"]: r for r in _grade_json([path], capsys)}
    assert scores["ex1a-check"]["status"] == "failed"
    assert scores["ex1b-check"]["status"] == "passed"


def test_grade_reports_unreadable_notebooks(tmp_path, capsys):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("not json")
    assert cli.main(["grade", str(bad)]) == 2
    assert "not a readable notebook" in capsys.readouterr().err
