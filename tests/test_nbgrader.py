"""jtk's exercises in an nbgrader course: a source notebook is an nbgrader source notebook, and nbgrader's points are
`jtk grade`'s points for the visible checks.

End to end (module fixture): nbgrader is installed from the package registry at the version constraints.txt pins,
into a throwaway environment layered over this one (a venv without system site-packages whose ``.pth`` adds this
environment's site-packages: nbgrader resolves against jtk's pinned Jupyter stack, and this environment, whose
JupyterLab students and tests/browser use, never gets nbgrader's server and JupyterLab extensions). ``jtk exercises
nbgrader`` writes the course; nbgrader's own commands ``generate_assignment``, ``autograde`` and
``generate_feedback`` run there; a class of six hands in exercise 1 (the solution, the untouched release, a partial
answer whose code warns, a tampered check cell, jtk's own exercises/ copy collected by nbgrader, and an answer cell
that switches the check off); every check's points from nbgrader's gradebook (its Python API) are compared with
``jtk grade`` of the same submitted notebooks. examples/nbgrader_points.py reuses these helpers for all six
exercises.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import time

import nbformat
import pytest

import jtk
from jtk import cli
from jtk.course import exercises, nbgrader

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
NAMES = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
NB1 = "01_coin_joint.ipynb"
A1 = NB1.removesuffix(".ipynb")


# ------------------------------------------------------------------ helpers (also used by examples/nbgrader_points.py)
def nbgrader_pin() -> str:
    """nbgrader's requirement as constraints.txt pins it (``nbgrader==X.Y.Z``)."""
    (pin,) = [line.strip() for line in (ROOT / "constraints.txt").read_text().splitlines()
              if line.lower().startswith("nbgrader==")]
    return pin


def nbgrader_environment(folder: pathlib.Path) -> dict:
    """Installs nbgrader into a venv at ``folder`` layered over this environment; returns the env to run it with.

    The venv has no system site-packages; a ``.pth`` adds this environment's site-packages (``site.addsitedir``, so
    jtk's editable install works there too), so pip installs only what nbgrader adds, at the pinned versions. The
    kernel nbgrader starts is that venv's Python (``JUPYTER_PATH`` names its kernelspec first, then this
    environment's Jupyter data: nbconvert's templates), which imports jtk; the Jupyter config and data directories
    are fresh, so no user's nbgrader_config.py or kernelspec interferes.

    Raises:
      RuntimeError: pip failed (its output's end in the message).
    """
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (pathlib.Path(purelib) / "_jtk_environment.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c",
                           str(ROOT / "constraints.txt"), nbgrader_pin()], capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"pip install {nbgrader_pin()} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    kernel = folder / "jupyter-path" / "kernels" / "python3"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python 3",
        "language": "python"}))
    for name in ("jupyter-config", "jupyter-data"):
        (folder / name).mkdir()
    return {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "JUPYTER_PATH": os.pathsep.join([str(folder / "jupyter-path"), os.path.join(sys.prefix, "share", "jupyter")]),
            "JUPYTER_CONFIG_DIR": str(folder / "jupyter-config"),
            "JUPYTER_DATA_DIR": str(folder / "jupyter-data"), "JAX_PLATFORMS": "cpu"}


def run_nbgrader(env: dict, course: pathlib.Path, *args: str, timeout: float = 1200) -> str:
    """``nbgrader ARGS`` in ``course``; returns its log, raises AssertionError with the log's end if it fails."""
    done = subprocess.run(["python", "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True, text=True,
                          timeout=timeout)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "| ERROR]" not in log, f"nbgrader {' '.join(args)}:\n{log[-4000:]}"
    return log


GRADES_SCRIPT = """
import json
from nbgrader.api import Gradebook
rows = []
with Gradebook("sqlite:///gradebook.db") as gb:
    for assignment in gb.assignments:
        for sub in assignment.submissions:
            for nb in sub.notebooks:
                for grade in nb.grades:
                    rows.append({"student": sub.student.id, "assignment": assignment.name, "notebook": nb.name + ".ipynb",
                                 "grade_id": grade.name, "score": grade.score, "max_score": grade.max_score})
print(json.dumps(rows))
"""


def nbgrader_points(env: dict, course: pathlib.Path) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(student, notebook, grade_id) -> (score, max_score) from nbgrader's gradebook, read with its Python API."""
    done = subprocess.run(["python", "-c", GRADES_SCRIPT], cwd=course, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    return {(r["student"], r["notebook"], r["grade_id"]): (r["score"], r["max_score"]) for r in json.loads(done.stdout)}


def submit(course: pathlib.Path, assignment: str, student: str, name: str, nb) -> None:
    """Puts a notebook where ``nbgrader collect`` would: ``submitted/STUDENT/ASSIGNMENT/NAME``."""
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


def jtk_grade(submitted: pathlib.Path, *extra: str) -> list[dict]:
    """``jtk grade --json`` of nbgrader's ``submitted/`` folder (its layout is one jtk grade reads)."""
    done = subprocess.run([sys.executable, "-m", "jtk.cli", "grade", str(submitted), "--source", str(SOLUTIONS),
                           "--json", "--no-progress", "--workers", "2", "--salt", "nbgrader", *extra],
                          capture_output=True, text=True, timeout=1800, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def visible_points(check: dict) -> float:
    """A check's points in `jtk grade` counting its visible cases only: points × passed / all visible cases."""
    cases = check["cases_total"] - check["hidden_cases_total"]
    passed = check["cases_passed"] - check["hidden_cases_passed"]
    return round(check["max_points"] * passed / cases, 4) if cases else 0.0


def released(course: pathlib.Path, name: str, assignment: str | None = None):
    """nbgrader's student version of ``name`` (``release/ASSIGNMENT/NAME``)."""
    return nbformat.read(course / "release" / (assignment or name.removesuffix(".ipynb")) / name, as_version=4)


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def answer(name: str, grade_id: str) -> str:
    """The solution's answer of cell ``grade_id``, as a student would type it (no markers)."""
    source = _cell(nbformat.read(SOLUTIONS / name, as_version=4), grade_id).source
    return "\n".join(line for line in source.splitlines() if line.strip() not in (exercises.BEGIN, exercises.END))


# ------------------------------------------------------------------ without nbgrader: the mapping and the course
def test_every_source_maps_onto_nbgrader_roles_with_jtk_points():
    for name in NAMES:
        source = exercises.load_source(SOLUTIONS / name)
        roles = nbgrader.roles(SOLUTIONS / name)
        assert [g for g, r in roles.items() if r == "check"] == [c.grade_id for c in source.checks], name
        assert {g for g, r in roles.items() if r == "answer"} == set(source.answer_ids), name
        for cell in nbformat.read(SOLUTIONS / name, as_version=4).cells:
            meta = cell.metadata.get("nbgrader")
            if meta and meta["grade"]:  # nbgrader's "Autograder tests": locked, with the points jtk grade reads
                assert meta["locked"] and not meta["solution"] and cell.cell_type == "code"
                assert meta["points"] == next(c.points for c in source.checks if c.grade_id == meta["grade_id"])


@pytest.mark.parametrize("edit, message", [
    (lambda nb: _cell(nb, "ex1a-check").metadata.nbgrader.update(locked=False), "locked code cell"),
    (lambda nb: _cell(nb, "ex1a-check").metadata.nbgrader.update(schema_version=2), "schema_version 3"),
    (lambda nb: setattr(_cell(nb, "ex1a-answer"), "source", "def coin_joint(b, p, f):\n    return 0"),
     "BEGIN SOLUTION"),
    (lambda nb: _cell(nb, "ex1b-answer").metadata.nbgrader.update(grade_id="ex1a-answer"), "appears twice"),
    (lambda nb: nb.cells[1].update(source=nb.cells[1].source + "\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS"),
     "no nbgrader metadata"),
])
def test_roles_names_metadata_that_nbgrader_or_jtk_would_read_differently(tmp_path, edit, message):
    nb = nbformat.read(SOLUTIONS / NB1, as_version=4)
    edit(nb)
    nbformat.write(nb, tmp_path / NB1)
    with pytest.raises(ValueError, match=message):
        nbgrader.roles(tmp_path / NB1)


def test_course_holds_the_sources_byte_for_byte_and_a_config(tmp_path, capsys):
    course = tmp_path / "course"
    assert cli.main(["exercises", "nbgrader", "--course", str(course)]) == 0
    assert "nbgrader generate_assignment 01_coin_joint" in capsys.readouterr().out
    for name in NAMES:
        assert (course / "source" / name.removesuffix(".ipynb") / name).read_bytes() == (SOLUTIONS / name).read_bytes()
    config = (course / nbgrader.CONFIG_NAME).read_text()
    assert repr(exercises.PLACEHOLDER) in config
    assert f"Execute.timeout = {exercises.DEFAULT_TIMEOUT * exercises.WALL_FACTOR}\n" in config
    assert f"jtk {jtk.__version__}" in config
    compile(config, "nbgrader_config.py", "exec")
    # an instructor's edits are kept unless --force
    (course / nbgrader.CONFIG_NAME).write_text(config + "c.Execute.timeout = 5\n")
    assert cli.main(["exercises", "nbgrader", "--course", str(course)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (course / nbgrader.CONFIG_NAME).read_text().endswith("= 5\n")
    assert cli.main(["exercises", "nbgrader", "--course", str(course), "--force", "--assignment", "week1"]) == 0
    assert (course / nbgrader.CONFIG_NAME).read_text() == config
    assert sorted(p.name for p in (course / "source" / "week1").iterdir()) == NAMES
    assert cli.main(["exercises", "nbgrader"]) == 2 and "--course" in capsys.readouterr().err
    assert cli.main(["exercises", "nbgrader", "--course", str(course), "--assignment", "a/b"]) == 2


def test_jtk_grade_does_not_flag_a_check_cell_as_nbgrader_releases_it():
    source = exercises.load_source(SOLUTIONS / NB1)
    nb = nbformat.read(EXERCISES / NB1, as_version=4)
    for check in source.checks:  # nbgrader drops the hidden-tests region; jtk leaves a note in its place
        _cell(nb, check.grade_id).source = check.code.split(exercises.BEGIN_HIDDEN)[0].rstrip()
    assert exercises.prepare(nb, source, lambda gid: 1).tampered == {"ex1a-check": False, "ex1b-check": False}
    _cell(nb, "ex1a-check").source = "checks.check_coin_joint(lambda *a: 0)"
    assert exercises.prepare(nb, source, lambda gid: 1).tampered == {"ex1a-check": True, "ex1b-check": False}


def test_jtk_feedback_page_names_the_jtk_version_that_graded_it():
    row = exercises._empty_row(exercises.Submission("ann", NB1, SOLUTIONS / NB1),
                               exercises.load_source(SOLUTIONS / NB1), "graded", "")
    page = exercises.feedback_html(row)
    assert f"Graded by jtk {jtk.__version__}" in page and page.rstrip().endswith("</html>")


# ------------------------------------------------------------------ nbgrader itself, end to end
WARNS = ["    import warnings", "    warnings.warn('a student warning', RuntimeWarning)"]


PATCH = "checks.check_coin_joint = lambda *args, **kwargs: None  # the check the next cell calls, switched off"


def _class(course: pathlib.Path) -> dict[str, dict[str, float]]:
    """Hands in exercise 1 for six students; returns the points each check earns under `jtk grade`."""
    submit(course, A1, "teacher", NB1, nbformat.read(SOLUTIONS / NB1, as_version=4))
    submit(course, A1, "blank", NB1, released(course, NB1))
    partial = released(course, NB1)  # 1a right (its code warns on stderr, after the docstring), 1b untouched
    lines = answer(NB1, "ex1a-answer").splitlines()
    _cell(partial, "ex1a-answer").source = "\n".join(lines[:2] + WARNS + lines[2:])
    submit(course, A1, "partial", NB1, partial)
    tamperer = released(course, NB1)  # 1a blank behind a check cell that prints a pass line for 100 points
    _cell(tamperer, "ex1a-check").source = "print('✅ passed')"
    _cell(tamperer, "ex1a-check").metadata.nbgrader["points"] = 100
    _cell(tamperer, "ex1b-answer").source = answer(NB1, "ex1b-answer")
    submit(course, A1, "tamperer", NB1, tamperer)
    jtk_copy = nbformat.read(EXERCISES / NB1, as_version=4)  # jtk's exercises/ handed out, nbgrader collects it
    _cell(jtk_copy, "ex1b-answer").source = answer(NB1, "ex1b-answer")
    submit(course, A1, "jtk_copy", NB1, jtk_copy)
    patcher = released(course, NB1)  # replaces the check function from the answer cell (docs/nbgrader.md)
    _cell(patcher, "ex1a-answer").source += "\n" + PATCH
    submit(course, A1, "patcher", NB1, patcher)
    return {"teacher": {"ex1a-check": 1, "ex1b-check": 1}, "blank": {"ex1a-check": 0, "ex1b-check": 0},
            "partial": {"ex1a-check": 1, "ex1b-check": 0}, "tamperer": {"ex1a-check": 0, "ex1b-check": 1},
            "jtk_copy": {"ex1a-check": 0, "ex1b-check": 1}, "patcher": {"ex1a-check": 0, "ex1b-check": 0}}


NBGRADER_DIFFERS = {("patcher", "ex1a-check"): 1}
"""Where nbgrader's points are not jtk grade's: nbgrader judges in the student's kernel."""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nbgrader")
    seconds = {}
    start = time.perf_counter()
    try:
        env = nbgrader_environment(tmp / "env")
    except RuntimeError as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"nbgrader could not be installed from the package registry: {str(err)[-300:]}")
    seconds["install"] = time.perf_counter() - start
    course = tmp / "course"
    nbgrader.write_course(course, SOLUTIONS)
    start = time.perf_counter()
    run_nbgrader(env, course, "generate_assignment", A1)
    expected = _class(course)
    run_nbgrader(env, course, "autograde", A1)
    run_nbgrader(env, course, "generate_feedback", A1)
    points = nbgrader_points(env, course)
    seconds["nbgrader"] = time.perf_counter() - start
    start = time.perf_counter()
    rows = jtk_grade(course / "submitted", "--feedback", str(tmp / "jtk-feedback"))
    seconds["jtk grade"] = time.perf_counter() - start
    print(f"\n[nbgrader end to end, seconds: {json.dumps({k: round(v, 1) for k, v in seconds.items()})}]")
    return course, expected, points, {r["student"]: r for r in rows}, tmp


def test_nbgrader_releases_jtks_exercise(graded):
    course = graded[0]
    nb, ours = released(course, NB1), nbformat.read(EXERCISES / NB1, as_version=4)
    assert [c.get("id") for c in nb.cells] == [c.get("id") for c in ours.cells]
    for cell, mine in zip(nb.cells, ours.cells):
        if cell.metadata.get("nbgrader", {}).get("grade"):  # the check: jtk's copy less the note on hidden cases
            assert cell.source == mine.source.replace("\n" + exercises.HIDDEN_NOTE, "") and "HIDDEN" not in cell.source
            assert cell.metadata["editable"] is False and cell.metadata["deletable"] is False
        else:  # answers (nbgrader's stub is jtk's placeholder), prose, set-up and demonstrations
            assert cell.source == mine.source
        assert not cell.get("outputs")


def test_nbgrader_and_jtk_grade_give_the_same_points(graded):
    course, expected, points, rows, _ = graded
    assert set(rows) == set(expected)
    for student, want in expected.items():
        row = rows[student]
        assert row["status"] == "graded" and row["notebook"] == NB1, row
        for check in row["checks"]:
            gid = check["id"]
            got = points[(student, NB1, gid)]
            assert got == (NBGRADER_DIFFERS.get((student, gid), want[gid]), check["max_points"]), (student, gid, got)
            assert check["points"] == visible_points(check) == want[gid], (student, check)
        assert row["score"] == sum(want.values())
    tampered = {s: sorted(c["id"] for c in r["checks"] if c["tampered"]) for s, r in rows.items()}
    assert tampered == {"teacher": [], "blank": [], "partial": [], "tamperer": ["ex1a-check"], "jtk_copy": [],
                        "patcher": []}


def test_nbgrader_trusts_the_kernel_where_jtk_grade_does_not(graded):
    # A check function replaced from the answer cell: nbgrader sees a check cell without an error (full points);
    # jtk grade reloads jtk.checks before each check and judges the recorded answers itself (not implemented: 0).
    _, _, points, rows, _ = graded
    assert points[("patcher", NB1, "ex1a-check")] == (1.0, 1.0)
    check = next(c for c in rows["patcher"]["checks"] if c["id"] == "ex1a-check")
    assert check["points"] == 0 and check["misconception"] == "generic.not_implemented"


def test_nbgrader_feedback_and_jtk_feedback_are_written(graded):
    course, expected, _, _, tmp = graded
    for student, want in expected.items():
        page = (course / "feedback" / student / A1 / NB1.replace(".ipynb", ".html")).read_text()
        total = sum(NBGRADER_DIFFERS.get((student, gid), value) for gid, value in want.items())
        assert re.search(rf"Score: {total:.1f} / 2\.0", page), student
        mine = (tmp / "jtk-feedback" / student / NB1.replace(".ipynb", ".html")).read_text()
        assert f"Graded by jtk {jtk.__version__}" in mine
    # the warning the partial answer printed did not cost its check (nbgrader_config.py's IgnorePattern)
    autograded = nbformat.read(course / "autograded" / "partial" / A1 / NB1, as_version=4)
    assert not [o for o in _cell(autograded, "ex1a-check").outputs if o.get("name") == "stderr"]


def test_the_tampered_check_was_restored_by_nbgrader(graded):
    autograded = nbformat.read(graded[0] / "autograded" / "tamperer" / A1 / NB1, as_version=4)
    cell = _cell(autograded, "ex1a-check")
    assert "check_coin_joint" in cell.source and cell.metadata.nbgrader["points"] == 1
    assert any(o.output_type == "error" for o in cell.outputs)
