"""The cells after each exercise's check tell a right answer from every wrong one the check knows.

notebooks/00_start_here tells students that if the cells after a check print what the lab shows, their answer is
probably right. So for each exercise (solutions/ is the source), the cells after the check must print something
else for each misconception of tests/_misconceptions.py than for the solution. The cells run here in one Python
namespace: the solution notebook's code up to the answer, then the cells after the check with the solution, then,
for each wrong answer, the cells that call the answer function again with the wrong answer in its place (the cells
that set up their data are not rerun; cells after the last call cannot change what the calls print).

    JAX_PLATFORMS=cpu python tests/test_exercise_after_checks.py   # prints every output, for the record
"""

from __future__ import annotations

import contextlib
import functools
import io
import pathlib
import re
import sys

import nbformat
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _misconceptions  # noqa: E402

from jtk.course import checks as course_checks  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


def _grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def exercises_in(path: pathlib.Path) -> list[dict]:
    """Each answer of a solution notebook: its function's name, its check's name and the cells around it.

    Returns:
      One dict per answer cell: function, check, before (code cells up to and including the answer, checks left
      out), after (the code cells between the check and the next answer).
    """
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    out, before = [], []
    for i, cell in enumerate(cells):
        if _grade_id(cell).endswith("-check"):
            continue
        before.append(cell.source)
        if _grade_id(cell).endswith("-answer"):
            function = re.search(r"^def (\w+)\(", cell.source, re.M).group(1)
            check_cell = next(c for c in cells[i + 1:] if _grade_id(c).endswith("-check"))
            check = re.search(r"checks\.check_(\w+)\(", check_cell.source).group(1)
            start = cells.index(check_cell) + 1
            stop = next((j for j in range(start, len(cells)) if _grade_id(cells[j]).endswith("-answer")), len(cells))
            out.append({"function": function, "check": check, "before": list(before),
                        "after": [c.source for c in cells[start:stop]]})
    return out


def _run(source: str, namespace: dict) -> str:
    """What a cell prints (or the exception it raises) when run in ``namespace``."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            exec(compile(source, "<cell>", "exec"), namespace)
        except Exception as error:  # a wrong answer may make a later line fail: that is what the student sees
            print(f"raised {type(error).__name__}: {error}")
    return buffer.getvalue()


@functools.lru_cache(maxsize=None)
def after_check_outputs(notebook: str, check: str) -> dict[str, str]:
    """{"solution": what the cells after ``check`` print, code: what they print with that wrong answer}."""
    exercise = next(e for e in exercises_in(ROOT / "solutions" / notebook) if e["check"] == check)
    namespace: dict = {"__name__": "__main__"}
    for source in exercise["before"]:
        _run(source, namespace)
    calls = [i for i, s in enumerate(exercise["after"]) if re.search(rf"\b{exercise['function']}\b", s)]
    after = exercise["after"][: calls[-1] + 1] if calls else []
    outputs = {"solution": "".join(_run(s, namespace) for s in after)}
    solution = namespace[exercise["function"]]
    for code, wrong in _misconceptions.WRONG_ANSWERS[check].items():
        namespace[exercise["function"]] = wrong
        outputs[code] = "".join(_run(after[i], namespace) for i in calls)
    namespace[exercise["function"]] = solution
    return outputs


CASES = [(p.name, e["check"]) for p in SOLUTIONS for e in exercises_in(p)]
WRONG = [(name, check, code) for name, check in CASES for code in _misconceptions.WRONG_ANSWERS[check]]


def test_every_exercise_and_check_has_wrong_answers():
    assert {check for _, check in CASES} == set(_misconceptions.WRONG_ANSWERS), CASES


def test_every_specific_misconception_has_a_wrong_answer():
    """Each code a judge gives for a known mistake (not the catch-alls, not the generic ones) is represented."""
    prefixes = {"coin", "ttc", "jll", "prior", "blr", "batchmig", "thompson"}
    specific = {c for c in course_checks._judge_module().MISCONCEPTIONS
                if c.split(".")[0] in prefixes and c not in _misconceptions.CATCH_ALL}
    have = {code for answers in _misconceptions.WRONG_ANSWERS.values() for code in answers}
    assert specific <= have, sorted(specific - have)


@pytest.mark.parametrize("check, code", [(c, k) for c, a in _misconceptions.WRONG_ANSWERS.items() for k in a],
                         ids=lambda v: v)
def test_the_check_names_each_wrong_answer(check, code):
    """The check gives the wrong answer its code on at least one case (seeds 0 and 1, visible and hidden cases)."""
    wrong = _misconceptions.WRONG_ANSWERS[check][code]
    codes = {f.code for seed in (0, 1) for hidden in (False, True)
             for f in course_checks.run_check(check, wrong, seed=seed, hidden=hidden).failures}
    assert code in codes, codes


@pytest.mark.parametrize("notebook, check, code", WRONG, ids=[f"{c}-{k}" for _, c, k in WRONG])
def test_cells_after_the_check_print_something_else_for_a_wrong_answer(notebook, check, code):
    outputs = after_check_outputs(notebook, check)
    assert outputs["solution"].strip() and "raised" not in outputs["solution"], outputs["solution"]
    assert outputs[code] != outputs["solution"], (code, outputs[code])


if __name__ == "__main__":
    for notebook, check in CASES:
        for who, text in after_check_outputs(notebook, check).items():
            print(f"--- {notebook} · {check} · {who}\n{text.rstrip()}")
