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
import pathlib
from typing import Sequence

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


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
        parts = [("visible cases", total - hidden, check["cases_passed"] - check.get("hidden_cases_passed", 0),
                  "visible")]
        if hidden:
            parts.append(("hidden cases", hidden, check.get("hidden_cases_passed", 0), hidden_visibility))
        for label, cases, passed, visibility in parts:
            if not cases:
                continue
            share = check["max_points"] * cases / total
            tests.append({
                "name": f"{name} ({label})", "score": round(check["max_points"] * passed / total, 4),
                "max_score": round(share, 4), "status": "passed" if passed == cases else "failed",
                "output": f"{passed} of {cases} cases passed." + (f" {feedback}" if passed < cases and feedback else ""),
                "visibility": visibility})
    for i, test in enumerate(tests):
        test["number"] = str(start + i + 1)
    return tests


def results_json(rows: Sequence[dict], *, hidden_visibility: str = "after_published",
                 execution_time: float | None = None) -> dict:
    """The ``results.json`` of one submission from its ``jtk grade`` rows (one row per notebook it holds).

    Args:
      rows: rows of :func:`jtk.exercises.grade_class` (``--json``), all of one student.
      hidden_visibility: the visibility of the hidden cases' tests, one of :data:`VISIBILITIES`.
      execution_time: seconds the grading took (omitted when None).

    Returns:
      A dict in Gradescope's format: score, output, tests (and execution_time).

    Raises:
      ValueError: an unknown ``hidden_visibility``, or rows of more than one student.
    """
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
    score = round(sum(t["score"] for t in tests), 4)
    max_score = round(sum(t["max_score"] for t in tests), 4)
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

    path = pathlib.Path(path)
    write_atomic(path, (json.dumps(results_json(rows, **kwargs), indent=1, ensure_ascii=False) + "\n").encode())
    return path
