"""Canvas and Moodle gradebook files for a class of 30 with 3 students missing and 1 not on the roster.

    python examples/gradebook_example.py [--grades benchmarks/results/grading/grades.csv]

Starts from the grades of examples/grading_class.py (30 students x 6 exercises, graded by ``jtk grade``), takes
away three students' submissions (they handed nothing in) and adds one submission from a student the roster does
not know, writes a roster of the 30 and submission times for a late policy, then runs ``jtk gradebook`` as an
instructor would: once without ``--allow-unmatched`` (it must stop, naming the unknown student, and write nothing)
and then with it, for Canvas (with the late policy) and for Moodle. The files go to
benchmarks/results/gradebook/; their first rows and the missing students' rows are written into docs/grading.md
(section ``gradebook-example``).
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

import pandas as pd
from jtk._docs import DOCS, write_section

ROOT = pathlib.Path(__file__).resolve().parents[1]
MISSING = ("student27", "student28", "student29")
UNKNOWN = "visitor01"
DEADLINE = "2026-03-01T23:59:00+00:00"


def jtk(*args: str) -> subprocess.CompletedProcess:
    """Runs the jtk command from the repository root, so the messages shown in the docs name relative paths."""
    return subprocess.run([sys.executable, "-m", "jtk.cli", *args], capture_output=True, text=True, cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grades", default=str(ROOT / "benchmarks" / "results" / "grading" / "grades.csv"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gradebook"))
    args = parser.parse_args()
    out = pathlib.Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if out.is_relative_to(ROOT):
        out = out.relative_to(ROOT)  # the paths the docs show; jtk runs from ROOT
    out_abs = ROOT / out

    grades = pd.read_csv(args.grades, dtype={"student": str})
    students = sorted(grades.student.unique())
    if len(students) != 30:
        raise SystemExit(f"--grades: expected the class of 30 of examples/grading_class.py, got {len(students)}")
    roster = pd.DataFrame({"student": students,
                           "name": [f"Student {k:02d}, Test" for k in range(30)],
                           "sis_login_id": students, "section": ["A" if k < 15 else "B" for k in range(30)],
                           "idnumber": [str(1000 + k) for k in range(30)],
                           "email": [f"{s}@uni.edu" for s in students],
                           "extension_days": ["2" if k == 3 else "" for k in range(30)]})
    stranger = grades[grades.student == students[0]].assign(student=UNKNOWN)
    handed_in = pd.concat([grades[~grades.student.isin(MISSING)], stranger], ignore_index=True)
    # submission times: on time, except student01 (1 day 2 h late: 2 started days) and student03 (late by a day,
    # inside their 2-day extension)
    late_by = {"student01": pd.Timedelta(hours=26), "student03": pd.Timedelta(hours=20)}
    deadline = pd.Timestamp(DEADLINE)
    submitted = handed_in[["student", "notebook"]].assign(submitted=[
        (deadline + late_by.get(s, pd.Timedelta(hours=-5))).isoformat() for s in handed_in.student])
    paths = {name: out / f"{name}.csv" for name in ("grades", "roster", "submitted")}
    handed_in.to_csv(ROOT / paths["grades"], index=False)
    roster.to_csv(ROOT / paths["roster"], index=False)
    submitted.to_csv(ROOT / paths["submitted"], index=False)

    refused = jtk("gradebook", str(paths["grades"]), "--roster", str(paths["roster"]), "--format", "canvas",
                  "--out", str(out / "refused.csv"))
    assert refused.returncode == 1 and UNKNOWN in refused.stderr and not (out_abs / "refused.csv").exists(), refused
    canvas = jtk("gradebook", str(paths["grades"]), "--roster", str(paths["roster"]), "--format", "canvas",
                 "--out", str(out / "canvas.csv"), "--allow-unmatched", "--force", "--deadline", DEADLINE,
                 "--submitted", str(paths["submitted"]), "--penalty-per-day", "0.1")
    moodle = jtk("gradebook", str(paths["grades"]), "--roster", str(paths["roster"]), "--format", "moodle",
                 "--out", str(out / "moodle.csv"), "--allow-unmatched", "--force")
    for done in (canvas, moodle):
        if done.returncode:
            raise SystemExit(done.stderr)

    canvas_rows = pd.read_csv(out_abs / "canvas.csv", dtype=str, keep_default_na=False)
    moodle_rows = pd.read_csv(out_abs / "moodle.csv", dtype=str, keep_default_na=False)
    late = pd.read_csv(out_abs / "canvas.late.csv", dtype={"student": str})
    shown = lambda frame, rows: "```csv\n" + frame.iloc[rows].to_csv(index=False).strip() + "\n```"  # noqa: E731
    empty_rows = canvas_rows[canvas_rows.iloc[:, 5:].eq("").all(axis=1)]
    text = "\n".join([
        f"A class of 30 on the roster ({len(roster)} rows), {handed_in.student.nunique()} students who handed "
        f"notebooks in: 3 roster students handed nothing in ({', '.join(MISSING)}) and one submission comes from "
        f"`{UNKNOWN}`, who is not on the roster. Made by `python examples/gradebook_example.py` from "
        "examples/grading_class.py's grades; the files are in benchmarks/results/gradebook/.",
        "",
        "Without `--allow-unmatched`, `jtk gradebook` stops (exit status "
        f"{refused.returncode}) and writes nothing:",
        "",
        "```text\n" + refused.stderr.strip() + "\n```",
        "",
        f"With it, Canvas (late policy: deadline {DEADLINE}, 10 % of the points per started day, student03 has a "
        "2-day extension): the header, the `Points Possible` row and the first three students,",
        "",
        shown(canvas_rows, slice(0, 4)),
        "",
        f"and the {len(empty_rows)} students without a submission, whose cells are empty (no grade), not 0:",
        "",
        shown(empty_rows, slice(None)),
        "",
        "The late policy per submission (`canvas.late.csv`), the late rows only:",
        "",
        "```csv\n" + late[late.days_late > 0].to_csv(index=False).strip() + "\n```",
        "",
        "Moodle (keyed by ID number), the first three students:",
        "",
        shown(moodle_rows, slice(0, 3)),
        "",
        f"Canvas file: {len(canvas_rows) - 1} student rows and {canvas_rows.shape[1] - 5} exercise columns; Moodle "
        f"file: {len(moodle_rows)} rows. The unknown student is named on stderr: "
        f"{canvas.stderr.strip().splitlines()[0] if canvas.stderr.strip() else '(nothing)'}",
    ])
    write_section("gradebook-example", text, DOCS / "grading.md")


if __name__ == "__main__":
    main()
