"""Exercise notebooks from solution notebooks, and grading of students' notebooks.

``solutions/`` is the source. In code cells, everything between a line
``### BEGIN SOLUTION`` and a line ``### END SOLUTION`` (nbgrader's markers) is the
answer; :func:`build` replaces each region with ``raise NotImplementedError(...)``
at the same indentation, clears outputs and writes ``exercises/``. Cells carry
nbgrader metadata (``solution`` / ``grade`` / ``grade_id`` / ``points``), so
instructors can also use nbgrader.

Check cells are the code cells whose nbgrader metadata has ``grade: true``;
:func:`grade` runs a notebook in a fresh kernel (errors in one exercise do not
stop the others) and scores each check cell: passed when it ran without error.
"""

from __future__ import annotations

import copy
import pathlib
from dataclasses import dataclass

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
PLACEHOLDER = 'raise NotImplementedError("Exercise: replace this line with your answer")'


def strip_solutions(source: str) -> str:
    """Replaces every BEGIN/END SOLUTION region of a cell's source with the placeholder.

    Raises:
      ValueError: unbalanced markers.
    """
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in cell:\n{source}")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            out.append(indent + PLACEHOLDER)
        elif stripped == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r} in cell:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r} in cell:\n{source}")
    return "\n".join(out)


def exercise_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of a solution notebook: answers stripped, outputs cleared."""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    return nb


def _paths(solutions_dir, exercises_dir):
    src = pathlib.Path(solutions_dir)
    if not src.is_dir():
        raise ValueError(f"solutions_dir must be a directory of notebooks, got {str(src)!r}")
    return sorted(src.glob("*.ipynb")), pathlib.Path(exercises_dir)


def _exercise_text(solution_path: pathlib.Path) -> str:
    return nbformat.writes(exercise_notebook(nbformat.read(solution_path, as_version=4))) + "\n"


def build(solutions_dir="solutions", exercises_dir="exercises") -> list[pathlib.Path]:
    """Writes ``exercises_dir/NAME.ipynb`` for every ``solutions_dir/NAME.ipynb``; returns the paths."""
    notebooks, dst = _paths(solutions_dir, exercises_dir)
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        out = dst / path.name
        out.write_text(_exercise_text(path))
        written.append(out)
    return written


def stale(solutions_dir="solutions", exercises_dir="exercises") -> list[str]:
    """Names of exercise notebooks that are missing or differ from what :func:`build` would write."""
    notebooks, dst = _paths(solutions_dir, exercises_dir)
    problems = []
    for path in notebooks:
        want = _exercise_text(path)
        target = dst / path.name
        if not target.exists() or target.read_text() != want:
            problems.append(path.name)
    extra = {p.name for p in dst.glob("*.ipynb")} - {p.name for p in notebooks} if dst.exists() else set()
    return problems + sorted(f"{name} (no solution)" for name in extra)


@dataclass(frozen=True)
class Score:
    exercise: str
    points: float
    max_points: float
    status: str  # "passed", "failed" or "not run"
    message: str


def _check_cells(nb):
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade"):
            yield i, meta.get("grade_id", f"cell-{i}"), float(meta.get("points", 1))


def _error_text(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {out.get('evalue')}"
    return None


def grade(path, timeout: int = 120) -> list[Score]:
    """Executes a notebook in a fresh kernel and scores each check cell.

    Args:
      path: the student's notebook.
      timeout: seconds allowed per cell.

    Returns:
      One :class:`Score` per check cell, in notebook order.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"path must be an existing .ipynb file, got {str(path)!r}")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # noqa: BLE001 - a broken file is reported, not crashed on
        raise ValueError(f"{path.name} is not a readable notebook: {err}") from None
    checks = list(_check_cells(nb))
    if not checks:
        raise ValueError(f"{path.name} has no check cells (code cells with nbgrader metadata grade: true)")
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    crashed = None
    try:
        client.execute()
    except (CellTimeoutError, DeadKernelError, RuntimeError) as err:
        crashed = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    scores = []
    for index, grade_id, points in checks:
        cell = nb.cells[index]
        error = _error_text(cell)
        if cell.get("execution_count") is None and not cell.get("outputs"):
            scores.append(Score(grade_id, 0.0, points, "not run", crashed or "the cell did not run"))
        elif error:
            scores.append(Score(grade_id, 0.0, points, "failed", error))
        else:
            scores.append(Score(grade_id, points, points, "passed", ""))
    return scores
