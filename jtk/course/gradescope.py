"""jtk's grades as a Gradescope autograder result (``results.json``).

Gradescope runs an autograder per submission and reads one JSON file, ``/autograder/results/results.json``. What
jtk writes into it (Gradescope's autograder specification, in jtk's words):

* ``score``: the submission's total points; ``execution_time``: seconds the grading took; ``output``: text shown
  above the tests (here: a summary, and the reason when a file is not a notebook of this assignment).
* ``tests``: one entry per graded item with ``name``, ``number`` (ordering), ``score``, ``max_score``, ``status``
  (``passed`` / ``failed``), ``output`` (what the student reads) and ``visibility``: ``visible`` (always shown),
  ``hidden`` (never shown to students), ``after_due_date`` or ``after_published`` (shown once the instructor
  publishes the grades).

jtk makes one test per check cell for its visible cases, scored as they would be in ``jtk grade``, and, where the
check has hidden cases, a second test for those, with the visibility the instructor picks (default
``after_published``: the points count at once, the case details show when grades are published). The two parts
add up to the check's points in ``jtk grade``'s CSV.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Mapping, Sequence

from jtk import _checks

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")

INSECURE_SETTING = "insecure_marks_without_sandbox"
"""The bundle file that lets :func:`run_autograder` grade where bubblewrap cannot start: its name says what it
costs. Without it, no sandbox means no marks: results.json says why and how to mend it."""

NO_SANDBOX = (
    "The autograder did not grade this submission: its sandbox (bubblewrap) cannot start on this machine, and "
    "without it a notebook could read the teacher's solutions and the salt. Mend it: build the autograder on "
    "Gradescope's Ubuntu base image with the bundle's setup.sh (it installs bubblewrap), on a machine that allows "
    "unprivileged user namespaces (bwrap --unshare-all true must work as root there). Or, knowing that the marks "
    "are then not secure, build the bundle with jtk exercises autograder --insecure-marks-without-sandbox (it adds "
    "the file {setting}). Tell your instructor.")


def _tests(row: dict, hidden_visibility: str, start: int) -> list[dict]:
    tests = []
    for check in row["checks"]:
        total, hidden = check.get("cases_total", 0), check.get("hidden_cases_total", 0)
        feedback = " ".join(part for part in (
            check.get("message") or "", f"[{check['misconception']}]" if check.get("misconception") else "",
            "(this cell was edited; it was graded as distributed)" if check.get("tampered") else "") if part)
        name = f"{row['notebook']}: {check['id']}"
        if not total:  # the cell did not run or recorded nothing: one failed test for the whole check
            tests.append({"name": name, "score": 0.0, "max_score": check["max_points"], "status": "failed",
                          "output": feedback or check["status"], "visibility": "visible"})
            continue
        # the points come from the drawn cases, once every fixed edge case (a gate) passed: each part's share is
        # its drawn cases' share, so that the parts add up to the check's points in jtk grade
        drawn_total = check.get("drawn_cases_total", total) or total
        hidden_drawn = check.get("hidden_drawn_cases_total", hidden)
        gates = check.get("gates_passed", True)
        parts = [("visible cases", total - hidden, check["cases_passed"] - check.get("hidden_cases_passed", 0),
                  drawn_total - hidden_drawn, check.get("drawn_cases_passed", check["cases_passed"])
                  - check.get("hidden_drawn_cases_passed", check.get("hidden_cases_passed", 0)), "visible")]
        if hidden:
            parts.append(("hidden cases", hidden, check.get("hidden_cases_passed", 0), hidden_drawn,
                          check.get("hidden_drawn_cases_passed", check.get("hidden_cases_passed", 0)),
                          hidden_visibility))
        for label, cases, passed, drawn, drawn_passed, visibility in parts:
            if not cases:
                continue
            tests.append({
                "name": f"{name} ({label})",
                "score": round(check["max_points"] * drawn_passed / drawn_total, 4) if gates else 0.0,
                "max_score": round(check["max_points"] * drawn / drawn_total, 4),
                "status": "passed" if passed == cases else "failed",
                "output": f"{passed} of {cases} cases passed." + (f" {feedback}" if passed < cases and feedback else ""),
                "visibility": visibility})
    for i, test in enumerate(tests):
        test["number"] = str(start + i + 1)
    return tests


def results_json(rows: Sequence[dict], *, hidden_visibility: str = "after_published",
                 execution_time: float | None = None) -> dict:
    """The ``results.json`` of one submission from its ``jtk grade`` rows (one row per notebook it holds).

    Args:
      rows: rows of :func:`jtk.course.exercises.grade_class` (``--json``), all of one student.
      hidden_visibility: the visibility of the hidden cases' tests, one of :data:`VISIBILITIES`.
      execution_time: seconds the grading took (omitted when None).

    Returns:
      A dict in Gradescope's format: score, output, tests (and execution_time).

    Raises:
      ValueError: an unknown ``hidden_visibility``, or rows of more than one student.
    """
    if isinstance(rows, (str, bytes, Mapping)) or not hasattr(rows, "__iter__"):
        raise TypeError(f"rows must be a list of jtk grade rows (dicts), got {type(rows).__name__} {rows!r}")
    rows = list(rows)
    for i, row in enumerate(rows):
        _checks.keyed(f"rows[{i}]", row, ("student", "notebook", "status", "checks"))
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {list(VISIBILITIES)}, got {hidden_visibility!r}")
    students = sorted({row["student"] for row in rows})
    if len(students) > 1:
        raise ValueError(f"rows must be one student's submission, got rows of {students}")
    tests, notes = [], []
    for row in rows:
        if row["status"] != "graded":
            notes.append(f"{row['notebook']}: {row['message'] or row['status']}")
        tests += _tests(row, hidden_visibility, len(tests))
    max_score = round(sum(t["max_score"] for t in tests), 4)
    score = min(round(sum(t["score"] for t in tests), 4), max_score)
    if not rows:
        notes.append("no notebook was found in the submission: upload the .ipynb files of the exercise")
    lines = [f"jtk graded {len(rows)} notebook(s): {score:g} of {max_score:g} points."] + notes
    late = sum(c.get("cases_timed_out", 0) for row in rows for c in row["checks"])
    if late:
        lines.append(f"{late} case(s) ran out of time: they earn no points and are reported as timeouts.")
    out = {"score": score, "output": "\n".join(lines), "tests": tests}
    if execution_time is not None:
        out["execution_time"] = int(round(execution_time))
    return out


def write_results(rows: Sequence[dict], path, **kwargs) -> pathlib.Path:
    """Writes :func:`results_json` of ``rows`` to ``path`` atomically; returns the path."""
    from jtk.results import write_atomic

    path = _checks.path("path", path)
    write_atomic(path, (json.dumps(results_json(rows, **kwargs), indent=1, ensure_ascii=False) + "\n").encode())
    return path


# ------------------------------------------------------------------ the autograder bundle
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (choose its Ubuntu 24.04 base image:
# constraints.txt pins versions for Python >= 3.11). It installs Python, Debian's bubblewrap (the sandbox jtk grade
# keeps student code in) and jtk at the versions jtk's CI tested.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3 python3-venv bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q -c /autograder/source/constraints.txt /autograder/source/{wheel}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this once per submission: grade /autograder/submission, write /autograder/results/results.json.
exec /autograder/venv/bin/python -m jtk.course.gradescope /autograder
"""


def _checkout() -> pathlib.Path | None:
    here = pathlib.Path(__file__).resolve().parents[2]  # jtk/course/gradescope.py -> the checkout
    return here if (here / "pyproject.toml").exists() and (here / "jtk").is_dir() else None


def build_autograder(out, source="solutions", *, salt: str, force: bool = False,
                     insecure_marks_without_sandbox: bool = False) -> pathlib.Path:
    """Writes Gradescope's autograder bundle (a zip) for the exercises whose sources are in ``source``.

    The zip holds, at its top level as Gradescope asks: ``setup.sh`` (installs Python, bubblewrap and jtk at the
    pinned versions), ``run_autograder`` (grades one submission), and what they use: the source notebooks with
    their hidden checks (``solutions/``), the secret ``salt.txt`` that seeds each student's hidden cases (the same
    cases ``jtk grade --salt`` draws), ``constraints.txt`` and a wheel of this jtk. Students never see it: it is
    uploaded by the instructor, and the grader hides it from the kernels that run student code (bubblewrap).

    Args:
      out: the zip file to write (refused if it exists, unless ``force``).
      source: the directory of source (solution) notebooks.
      salt: the secret mixed into every student's case seeds (non-empty).
      force: overwrite ``out``.
      insecure_marks_without_sandbox: add :data:`INSECURE_SETTING`, so that the autograder grades even where
        bubblewrap cannot start (marks are then not secure: a notebook can read the solutions and the salt).

    Raises:
      ValueError: no source notebooks, an empty salt, an existing ``out`` without ``force``, or jtk not running
        from a checkout (the wheel is built from it).
    """
    import shutil
    import subprocess
    import sys
    import tempfile
    import zipfile

    from jtk.course import exercises

    out = _checks.path("out", out)
    _checks.path("source", source)
    if not isinstance(insecure_marks_without_sandbox, bool):
        raise TypeError(f"insecure_marks_without_sandbox must be a bool, got "
                        f"{type(insecure_marks_without_sandbox).__name__}")
    if not isinstance(salt, str):
        raise TypeError(f"salt must be a str (the secret of the hidden cases), got {type(salt).__name__}")
    if out.exists() and not force:
        raise ValueError(f"out: {str(out)!r} exists; pass force=True (--force) to overwrite it")
    if not out.parent.is_dir():
        raise ValueError(f"out: directory {str(out.parent)!r} does not exist")
    if not isinstance(salt, str) or not salt.strip():
        raise ValueError("salt must be a non-empty secret string (it seeds every student's hidden cases)")
    sources = exercises.load_sources(source)  # validates the directory and its notebooks
    root = _checkout()
    if root is None:
        raise ValueError("build_autograder needs jtk running from a checkout of its repository (it builds a wheel "
                         "of it); clone the repository and run the command there")
    with tempfile.TemporaryDirectory(prefix="jtk-autograder-") as tmp:
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(root), "--no-deps",
                               "-q", "-w", tmp], capture_output=True, text=True)
        wheels = sorted(pathlib.Path(tmp).glob("jtk-*.whl"))
        if done.returncode != 0 or not wheels:
            raise RuntimeError(f"building jtk's wheel failed: {done.stderr[-1000:]}")
        staged = out.with_name(f".{out.name}.tmp")
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in (("setup.sh", SETUP_SH.format(wheel=wheels[0].name)), ("run_autograder", RUN_AUTOGRADER)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope runs them
                z.writestr(info, text)
            for name in sorted(sources):
                z.write(pathlib.Path(source) / name, f"solutions/{name}")
            z.writestr("salt.txt", salt.strip() + "\n")
            if insecure_marks_without_sandbox:
                z.writestr(INSECURE_SETTING, "Grade without a sandbox where bubblewrap cannot start: marks are not "
                                             "secure.\n")
            z.write(wheels[0], wheels[0].name)
            if (root / "constraints.txt").exists():
                z.write(root / "constraints.txt", "constraints.txt")
        shutil.move(staged, out)
    return out


def _student_of(root: pathlib.Path) -> str:
    """The submitter's id from Gradescope's submission_metadata.json (email, else name, else the submission id)."""
    try:
        meta = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        return "student"
    users = meta.get("users") or [{}]
    raw = str(users[0].get("email") or users[0].get("name") or meta.get("id") or "student")
    return "".join(ch if ch.isalnum() or ch in "-_.@" else "_" for ch in raw).lstrip(".") or "student"


def _submitted(folder: pathlib.Path) -> tuple[list, list[str], list[str]]:
    """The notebooks of a Gradescope submission as (relative path, bytes), read as data (regular files only, size
    and time limits: :func:`jtk.course.exercises.read_bytes`); the other files' names; the rejected notebooks, each with
    why. Links are never followed."""
    from jtk.course import exercises

    notebooks, ignored, rejected = [], [], []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".ipynb_checkpoints")
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            path = pathlib.Path(dirpath, name)
            rel = path.relative_to(folder)
            if path.suffix != ".ipynb":
                ignored.append(str(rel))
                continue
            try:
                notebooks.append((rel, exercises.read_bytes(path)))
            except exercises.Rejected as err:
                rejected.append(f"{rel}: {err}")
    return notebooks, ignored, rejected


def run_autograder(root="/autograder") -> dict:
    """Grades ``ROOT/submission`` against ``ROOT/source`` and writes ``ROOT/results/results.json``; never raises.

    Gradescope's layout: the bundle unpacked in ``ROOT/source``, the student's files in ``ROOT/submission``, their
    identity in ``ROOT/submission_metadata.json``, the result in ``ROOT/results/results.json``. The notebooks are
    graded as one student's with ``jtk grade``'s engine (one worker, the bubblewrap sandbox, the bundle's salt);
    files that are not notebooks are listed in the output. Where bubblewrap cannot start, nothing is graded and
    the output says how to mend it (:data:`NO_SANDBOX`), unless the bundle holds :data:`INSECURE_SETTING`: then
    the strongest sandbox available grades, and the output says the marks are not secure. Returns the result
    written. (A ``root`` that is not a path is the caller's error and raises TypeError.)
    """
    import tempfile
    import time
    import traceback

    from jtk.course import exercises, sandbox

    root = _checks.path("root", root)
    started = time.perf_counter()
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    try:
        mode = sandbox.resolve("auto")
        insecure = (root / "source" / INSECURE_SETTING).is_file()
        if mode != "bwrap" and not insecure:
            result = {"score": 0.0, "execution_time": int(time.perf_counter() - started), "tests": [],
                      "output": NO_SANDBOX.format(setting=INSECURE_SETTING)}
            return _write_result(results_dir, result)
        sources = exercises.load_sources(root / "source" / "solutions")
        salt = (root / "source" / "salt.txt").read_text().strip()
        submitted, ignored, rejected = _submitted(root / "submission")
        student = _student_of(root)
        with tempfile.TemporaryDirectory(prefix="jtk-gradescope-") as tmp:
            folder = pathlib.Path(tmp) / student
            folder.mkdir()
            for rel, data in submitted:  # one folder per student, as jtk grade expects; names kept, bytes copied
                target = folder.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            subs = exercises.collect([pathlib.Path(tmp)], sources) if submitted else []
            rows = exercises.grade_class(subs, sources, workers=1, salt=salt, sandbox=mode, progress=False)
        result = results_json(rows, execution_time=time.perf_counter() - started)
        if mode != "bwrap":
            result["output"] += (f"\nGraded without bubblewrap (sandbox: {mode}), as the bundle's {INSECURE_SETTING} "
                                 f"allows: these marks are not secure.")
        if rejected:
            result["output"] += "\nNot graded: " + "; ".join(rejected[:20])
        if ignored:
            result["output"] += "\nNot notebooks, not graded: " + ", ".join(ignored[:20])
    except Exception as err:  # noqa: BLE001 - Gradescope must always get a result file
        result = {"score": 0.0, "execution_time": int(time.perf_counter() - started), "tests": [],
                  "output": f"The autograder failed: {type(err).__name__}: {err}. Tell your instructor.\n"
                            + traceback.format_exc()[-1500:]}
    return _write_result(results_dir, result)


def _write_result(results_dir: pathlib.Path, result: dict) -> dict:
    from jtk.results import write_atomic

    write_atomic(results_dir / "results.json", (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    return result


if __name__ == "__main__":  # python -m jtk.course.gradescope /autograder  (what run_autograder runs)
    import sys

    run_autograder(sys.argv[1] if len(sys.argv) > 1 else "/autograder")
