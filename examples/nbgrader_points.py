"""nbgrader's points against `jtk grade`'s for the six exercises: the solution, the untouched release, a wrong answer.

    python examples/nbgrader_points.py [--out benchmarks/results/nbgrader_points.csv] [--no-docs | --docs-only]

Installs nbgrader at the pinned version into a throwaway environment layered over this one (as tests/test_nbgrader.py
does, whose helpers this reuses), writes an nbgrader course with ``jtk exercises nbgrader`` (one assignment per
exercise), runs ``nbgrader generate_assignment`` and, for three students, ``nbgrader autograde`` and
``nbgrader generate_feedback``:

* ``solution``: the source notebook itself;
* ``untouched``: nbgrader's release of the exercise, as handed out;
* ``wrong``: the release with each answer replaced by a typical misconception (examples/grading_class.py's
  ``WRONG``), which passes some cases: here ``jtk grade`` gives points per case and nbgrader all or nothing.

The same submitted notebooks are then graded by ``jtk grade`` (its nbgrader-layout input). One row per (exercise,
student, check): nbgrader's points (its gradebook, read with its Python API), ``jtk grade``'s points, its points
for the visible cases alone (points × visible cases passed / visible cases), and the case counts; the per-notebook
sums go into docs/nbgrader.md; the timings into ``OUT.json`` (``--docs-only`` rewrites the docs from these two files).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import nbformat
import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "tests")]
from jtk._docs import DOCS, md_table, write_section  # noqa: E402
from grading_class import WRONG  # noqa: E402
from test_nbgrader import (  # noqa: E402
    SOLUTIONS, _cell, jtk_grade, nbgrader_environment, nbgrader_pin, nbgrader_points, released, run_nbgrader, submit,
    visible_points)

from jtk.course import nbgrader  # noqa: E402

STUDENTS = ("solution", "untouched", "wrong")


def hand_in(course: pathlib.Path, name: str) -> None:
    """The three students' copies of exercise ``name`` in nbgrader's submitted/ folder."""
    assignment = name.removesuffix(".ipynb")
    submit(course, assignment, "solution", name, nbformat.read(SOLUTIONS / name, as_version=4))
    submit(course, assignment, "untouched", name, released(course, name))
    wrong = released(course, name)
    for grade_id, source in WRONG[name].items():
        _cell(wrong, grade_id).source = source
    submit(course, assignment, "wrong", name, wrong)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "nbgrader_points.csv"))
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite the table in docs/nbgrader.md")
    parser.add_argument("--docs-only", action="store_true", help="rewrite docs/nbgrader.md's table from --out and its "
                                                                 ".json, without grading")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    if args.docs_only:
        return write_docs(pd.read_csv(out, keep_default_na=False), json.loads(out.with_suffix(".json").read_text()))
    names = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="jtk-nbgrader-") as tmp:
        tmp = pathlib.Path(tmp)
        start = time.perf_counter()
        env = nbgrader_environment(tmp / "env")
        install_s = time.perf_counter() - start
        course = tmp / "course"
        nbgrader.write_course(course, SOLUTIONS)
        nbgrader_s = {}
        for name in names:
            assignment = name.removesuffix(".ipynb")
            start = time.perf_counter()
            run_nbgrader(env, course, "generate_assignment", assignment)
            hand_in(course, name)
            run_nbgrader(env, course, "autograde", assignment)
            run_nbgrader(env, course, "generate_feedback", assignment)
            nbgrader_s[name] = time.perf_counter() - start
            print(f"nbgrader: {name} in {nbgrader_s[name]:.0f} s", flush=True)
        points = nbgrader_points(env, course)
        start = time.perf_counter()
        rows = jtk_grade(course / "submitted")
        jtk_s = time.perf_counter() - start
    records = []
    for row in rows:
        assert row["status"] == "graded", row
        for check in row["checks"]:
            score, max_score = points[(row["student"], row["notebook"], check["id"])]
            assert max_score == check["max_points"], (row["notebook"], check["id"], max_score)
            records.append({
                "notebook": row["notebook"], "student": row["student"], "check": check["id"],
                "max_points": check["max_points"], "nbgrader_points": score, "jtk_points": check["points"],
                "jtk_visible_points": visible_points(check),
                "visible_cases": f"{check['cases_passed'] - check['hidden_cases_passed']}/"
                                 f"{check['cases_total'] - check['hidden_cases_total']}",
                "hidden_cases": f"{check['hidden_cases_passed']}/{check['hidden_cases_total']}",
                "jtk_status": check["status"], "misconception": check["misconception"] or ""})
    frame = pd.DataFrame(records).sort_values(["notebook", "student", "check"]).reset_index(drop=True)
    frame.to_csv(out, index=False)
    timing = {"nbgrader": nbgrader_pin(), "install_s": round(install_s, 1), "nbgrader_s": round(sum(nbgrader_s.values()), 1),
              "nbgrader_s_per_notebook": {k: round(v, 1) for k, v in nbgrader_s.items()}, "jtk_grade_s": round(jtk_s, 1),
              "cores": os.cpu_count()}
    out.with_suffix(".json").write_text(json.dumps(timing, indent=1) + "\n")
    print(f"wrote {out} ({len(frame)} rows) and {out.with_suffix('.json').name}: {timing}")
    if not args.no_docs:
        write_docs(frame, timing)


def write_docs(frame: pd.DataFrame, timing: dict) -> None:
    """The per-notebook table and the timings, into docs/nbgrader.md's ``nbgrader-points`` section."""
    table = frame.groupby(["notebook", "student"], sort=False).agg(
        max=("max_points", "sum"), nbgrader=("nbgrader_points", "sum"), jtk=("jtk_points", "sum"),
        jtk_visible=("jtk_visible_points", "sum")).reset_index()
    table["notebook"] = table["notebook"].str.removesuffix(".ipynb")
    table = table.rename(columns={"student": "submission", "max": "max points", "jtk": "jtk grade",
                                  "jtk_visible": "jtk grade, visible cases only"})
    same = frame[frame.student != "wrong"]
    agree = (same.nbgrader_points == same.jtk_visible_points) & (same.nbgrader_points == same.jtk_points)
    wrong = frame[frame.student == "wrong"]
    text = (f"Measured by `python examples/nbgrader_points.py` ({timing['nbgrader']}, {timing['cores']} cores); "
            f"points per notebook, summed over its checks (benchmarks/results/nbgrader_points.csv has one row per "
            f"check, with the case counts).\n\n"
            + md_table(table, floatfmt="{:.2f}", index=False) + "\n\n"
            f"Solution and untouched release: nbgrader's points equal `jtk grade`'s and its visible-case points on "
            f"{int(agree.sum())} of {len(same)} checks. Wrong answers: nbgrader gives 0 on "
            f"{int((wrong.nbgrader_points == 0).sum())} of {len(wrong)} checks, where `jtk grade` gives "
            f"{wrong.jtk_points.sum():.2f} points in all for the cases they pass ({int((wrong.jtk_points > 0).sum())} "
            f"checks above 0). Wall time: nbgrader (generate_assignment, autograde and generate_feedback of the "
            f"18 notebooks, one at a time, every cell) {timing['nbgrader_s']:.0f} s; `jtk grade` of the same 18 "
            f"notebooks (2 workers, answer and check cells only) {timing['jtk_grade_s']:.0f} s, one after the other on the "
            f"same machine; installing nbgrader beside jtk {timing['install_s']:.0f} s.")
    write_section("nbgrader-points", text, DOCS / "nbgrader.md")


if __name__ == "__main__":
    main()
