"""Exercise notebooks from solution notebooks, and grading a class's submissions against them.

``solutions/`` is the source. In code cells, everything between a line
``### BEGIN SOLUTION`` and a line ``### END SOLUTION`` (nbgrader's markers) is the
answer, and everything between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN
TESTS`` is a hidden check. :func:`build` replaces each answer with ``raise
NotImplementedError(...)`` at the same indentation, removes the hidden checks,
clears outputs and writes ``exercises/``. Cells carry nbgrader metadata
(``solution`` / ``grade`` / ``grade_id`` / ``points``), so a source notebook is also an
nbgrader source notebook (:mod:`jtk.course.nbgrader`, docs/nbgrader.md).

Grading (:func:`grade_notebook`, :func:`grade_class`, ``jtk grade``) trusts the
source, never the submission:

* The check cells (``grade: true``), their code (hidden checks included) and
  their points come from the source notebook, matched by ``grade_id``. Every
  check cell of a submission is replaced by the source's before execution; a
  deleted check is put back after its answer cell; a check whose cell was edited
  is graded from the source and reported with ``tampered: true``; student
  metadata (points, locked, tags) is ignored.
* The grader runs the submission's set-up cells (those before the first answer),
  its answer cells and every cell the student added or changed, in a sandboxed
  worker process (:mod:`jtk.course._grading_worker`, :mod:`jtk.course.sandbox`). The lab's own
  demonstration cells after the first answer are not run: they score nothing and
  would only cost time.
* A check cell runs no code in the worker. The grader draws its cases from a seed
  that is a stable hash of (student, grade_id, salt), or ``seed`` for everybody
  (:func:`check_plan`), calls the student's function in the worker one case's
  inputs at a time, receives each answer as plain data and judges it in its own
  process (:func:`score_check`, :func:`jtk.course._judge.judge`). The worker never holds
  the salt, a seed, a case generator or a reference answer, and in the bwrap
  sandbox jtk's reference functions are stubs (docs/grading.md).
* Each notebook runs in a fresh worker with time limits and a memory limit. A
  timeout or a dead worker costs the cell it hit: the grader starts a new worker,
  re-runs the cells before it and goes on. A worker that cannot start jtk is a
  grader fault (row status ``error``), never the student's 0.
* Submissions are data (:func:`read_bytes`, :func:`collect`): regular files only,
  with a size and a time limit, one per student and exercise.

Time limits do not depend on the load (docs/grading.md, "Time limits under load"). The student's function in a
check gets a budget of the kernel's *CPU* time (``timeout`` seconds per check cell, shared by its calls), which a
busy machine does not shrink. Every cell also has a wall-clock backstop of ``WALL_FACTOR × timeout`` seconds for
code that waits instead of computing; a notebook that hits it is graded again after the rest of the class, alone
(no other notebook being graded) and with twice the backstop, and that second grade counts (``retried`` in its
row). A check that still runs out of time is ``timeout``, never a wrong answer, and :func:`timeout_summary` tells
the instructor which notebooks to regrade.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import hashlib
import json
import os
import pathlib
import stat
import sys
import tempfile
import time
from typing import Any, Callable, Iterable, Sequence

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
PLACEHOLDER = 'raise NotImplementedError("Exercise: replace this line with your answer")'
HIDDEN_NOTE = "# More cases are checked when your notebook is graded."
CHECK_STATUSES = ("passed", "failed", "error", "timeout", "not_run")
DEFAULT_TIMEOUT = 30
DEFAULT_MEMORY = 4 * 2 ** 30
MIN_MEMORY = 2 * 2 ** 30
"""The least ``memory`` grading accepts: about twice what the six solutions need in the worker, so that a correct
answer never runs out of memory (docs/grading.md, "The guarantee, as a property of the design")."""
WALL_FACTOR = 4
"""A cell's wall-clock backstop is WALL_FACTOR × its CPU budget: a correct cell finishes under it with three other
busy processes per core (docs/grading.md, "Time limits under load")."""
NOTEBOOK_FACTOR = 10
"""A notebook's wall-clock cap, the time its cells run (re-runs after a restart included, the grader's start-up of a
worker not), is NOTEBOOK_FACTOR × the per-cell CPU budget: room for two cells stopped by their backstop and the rest
of an honest notebook, while cells that each stay under their own backstop cannot add up past it (docs/grading.md,
"A submission is contained as a whole")."""


# ------------------------------------------------------------------ building exercises/
def _strip_region(source: str, begin: str, end: str, replacement: str | None) -> str:
    if not isinstance(source, str):
        raise TypeError(f"source must be the text of a cell (str), got {type(source).__name__}")
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == begin:
            if inside:
                raise ValueError(f"nested {begin!r} in cell:\n{source}")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            if replacement is not None:
                out.append(indent + replacement)
        elif stripped == end:
            if not inside:
                raise ValueError(f"{end!r} without {begin!r} in cell:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{begin!r} without {end!r} in cell:\n{source}")
    return "\n".join(out)


def strip_solutions(source: str) -> str:
    """Replaces every BEGIN/END SOLUTION region of a cell's source with the placeholder.

    Raises:
      ValueError: unbalanced markers.
    """
    return _strip_region(source, BEGIN, END, PLACEHOLDER)


def strip_hidden_tests(source: str) -> str:
    """Replaces every BEGIN/END HIDDEN TESTS region with a one-line note that more cases are graded.

    Raises:
      ValueError: unbalanced markers.
    """
    return _strip_region(source, BEGIN_HIDDEN, END_HIDDEN, HIDDEN_NOTE)


def _student_source(source: str) -> str:
    return strip_hidden_tests(strip_solutions(source))


def exercise_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of a solution notebook: answers and hidden checks stripped, outputs cleared."""
    if not hasattr(solution, "cells"):
        raise TypeError(f"solution must be a notebook (nbformat.NotebookNode), got {type(solution).__name__}")
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _student_source(cell.source)
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
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


# ------------------------------------------------------------------ the source: what is graded
@dataclasses.dataclass(frozen=True)
class SourceCheck:
    """One graded check cell of the source.

    Attributes:
      grade_id: nbgrader's id of the cell.
      points: its points (from the source only).
      code: its full code, hidden checks included.
      student_code: what the student's copy of the cell holds.
      calls: the (check name, hidden) pairs the cell runs, in order.
      after: grade_id of the nearest cell before it that has one (its answer cell), or None.
      functions: for each call, the expression that names the student's function (e.g. ``"coin_joint"``): the
        grader evaluates it in the student's namespace and calls the result on each case.
    """

    grade_id: str
    points: float
    code: str
    student_code: str
    calls: tuple[tuple[str, bool], ...]
    after: str | None
    functions: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Source:
    """A source notebook: its checks, its answer cells and the demonstration cells grading skips."""

    name: str
    checks: tuple[SourceCheck, ...]
    answer_ids: frozenset[str]
    demo_cells: dict  # cell id -> the student's copy of the cell's code
    modules: frozenset[str] = frozenset()  # the jtk names its code cells import or reach (jtk.a.b); see allowed_modules

    @property
    def max_score(self) -> float:
        return float(sum(c.points for c in self.checks))


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _parse_calls(code: str, where: str) -> list[tuple[str, bool, str]]:
    from jtk.course import checks

    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise ValueError(f"{where} is not valid Python: {err}") from None
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if not fname.startswith("check_") or fname[len("check_"):] not in checks.NAMES:
            continue
        hidden, fn = False, node.args[0] if node.args else None
        for kw in node.keywords:
            if kw.arg == "hidden":
                if not isinstance(kw.value, ast.Constant):
                    raise ValueError(f"{where}: hidden= must be a literal True or False")
                hidden = bool(kw.value.value)
            elif kw.arg == "fn":
                fn = kw.value
        if fn is None:
            raise ValueError(f"{where}: {fname}(...) names no function to check (its first argument)")
        calls.append((node.lineno, node.col_offset, fname[len("check_"):], hidden, ast.unparse(fn)))
    if not calls:
        raise ValueError(f"{where} calls no check of jtk.checks ({', '.join(checks.NAMES)})")
    return [(name, hidden, fn) for _, _, name, hidden, fn in sorted(calls)]


def check_calls(code: str, where: str = "a check cell") -> tuple[tuple[str, bool], ...]:
    """The checks a check cell calls: every ``checks.check_NAME(fn, ..., hidden=...)`` call, in order.

    Raises:
      ValueError: the cell does not parse, calls no known check, names no function, or passes ``hidden`` as a
        non-literal.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be the text of a check cell (str), got {type(code).__name__}")
    return tuple((name, hidden) for name, hidden, _ in _parse_calls(code, where))


def load_source(path) -> Source:
    """Reads a source (solution) notebook and what grading needs from it.

    Raises:
      ValueError: unreadable, no check cells, duplicate grade_ids, or a check cell that calls no check.
    """
    path = pathlib.Path(path)
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # noqa: BLE001
        raise ValueError(f"source notebook {path} is not readable: {err}") from None
    checks, answers, demo, seen, last_id, first_answer = [], set(), {}, set(), None, False
    modules: set[str] = set()
    for i, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        gid = meta.get("grade_id")
        if cell.cell_type == "code":
            modules |= _jtk_names(cell.source)
        if gid is not None:
            if gid in seen:
                raise ValueError(f"{path.name}: grade_id {gid!r} appears twice")
            seen.add(gid)
        if cell.cell_type != "code":
            continue
        if meta.get("grade"):
            if gid is None:
                raise ValueError(f"{path.name}: check cell {i} has no nbgrader grade_id")
            calls = _parse_calls(cell.source, f"{path.name} cell {gid!r}")
            checks.append(SourceCheck(gid, float(meta.get("points", 1)), cell.source, _student_source(cell.source),
                                      tuple((name, hidden) for name, hidden, _ in calls), last_id,
                                      tuple(fn for _, _, fn in calls)))
        elif meta.get("solution"):
            answers.add(gid)
            first_answer = True
        elif first_answer and cell.get("id"):
            demo[cell["id"]] = _student_source(cell.source)
        if gid is not None:
            last_id = gid
    if not checks:
        raise ValueError(f"{path.name} has no check cells (code cells with nbgrader metadata grade: true)")
    return Source(path.name, tuple(checks), frozenset(answers), demo, frozenset(modules))


def _jtk_names(code: str) -> set[str]:
    """The dotted jtk names a cell imports (``import jtk.a``, ``from jtk.a import b``) or reaches (``jtk.a.b.c``)."""
    lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]  # IPython magics
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == "jtk")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "jtk":
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "jtk":
                chain.reverse()
                names.update(".".join(["jtk", *chain[:k]]) for k in range(1, len(chain) + 1))
    return names


def allowed_modules(source: Source) -> frozenset[str]:
    """The jtk modules a worker grading ``source`` may import: what every worker needs
    (:data:`jtk.course.sandbox.WORKER_MODULES`) and what the exercise's own cells import or reach, with everything
    those import (:func:`jtk.course.sandbox.import_closure`). Every other jtk module is absent from its sandbox."""
    from jtk import _checks
    from jtk.course import sandbox as sb

    _checks.instance("source", source, Source, "a Source (load_source's)")
    return sb.import_closure([*sb.WORKER_MODULES, *sorted(source.modules)])


def load_sources(source_dir) -> dict[str, Source]:
    """Every ``*.ipynb`` of ``source_dir`` as a :class:`Source`, by file name."""
    src = pathlib.Path(source_dir)
    if not src.is_dir():
        raise ValueError(f"source must be a directory of solution notebooks, got {str(src)!r}")
    sources = {p.name: load_source(p) for p in sorted(src.glob("*.ipynb"))}
    if not sources:
        raise ValueError(f"source directory {str(src)!r} holds no .ipynb notebooks")
    return sources


# ------------------------------------------------------------------ seeds
def check_seed(student: str, grade_id: str, salt: str = "", seed: int | None = None, *, handin: str = "") -> int:
    """The seed of a check's cases: ``seed`` if given, else a stable hash of (student, grade_id, salt), and of the
    hand-in (:func:`handin_id`) when ``handin`` is given: the hidden cases' seed, so that each hand-in of a
    student gets other hidden cases (a case leaked by one is worth nothing in the next), while a regrade of the
    same hand-in draws the same ones."""
    for name, value in (("student", student), ("grade_id", grade_id), ("salt", salt), ("handin", handin)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an int >= 0 or None, got {seed!r}")
    if seed is not None:
        return int(seed)
    digest = hashlib.sha256("\x1f".join((student, grade_id, salt) + ((handin,) if handin else ())).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def handin_id(data: bytes) -> str:
    """The identity of one hand-in: the SHA-256 (hex) of the file's bytes, recorded in its row as ``handin``."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be the hand-in's bytes, got {type(data).__name__}")
    return hashlib.sha256(data).hexdigest()


def salt_file(path) -> tuple[str, bool]:
    """The grading salt kept in the file ``path``, made when missing: ``(salt, created)``.

    A missing file is created with mode 0600 holding 64 fresh hex digits (``secrets.token_hex``). An existing
    one must be a regular file that only its owner can read or write (no group or other bits): the salt decides
    every student's hidden cases, so a readable salt is a leaked one. The salt never goes on a command line,
    where ``ps`` shows it to every user of the machine.

    Raises:
      ValueError: a file that group or others may read or write, that is not a regular file, or that is empty.
    """
    import secrets

    from jtk import _checks

    path = _checks.path("path", path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        pass
    else:
        salt = secrets.token_hex(32)
        with os.fdopen(fd, "w") as f:
            f.write(salt + "\n")
        return salt, True
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"--salt-file: expected a regular file holding the salt, but {str(path)!r} is not one")
    if info.st_mode & 0o077:
        raise ValueError(f"--salt-file: {str(path)!r} has mode {stat.S_IMODE(info.st_mode):04o}, so others on this "
                         f"machine can read the salt (and every student's hidden cases with it): expected mode 0600; "
                         f"run chmod 600 {path} (and make a new salt if others may have read it)")
    salt = path.read_text().strip()
    if not salt:
        raise ValueError(f"--salt-file: {str(path)!r} is empty: expected the salt (delete the file and jtk grade "
                         f"makes a fresh one)")
    return salt, False


# ------------------------------------------------------------------ preparing a submission
@dataclasses.dataclass
class Prepared:
    """The notebook the grader runs, and what it learned from the submission on the way.

    The check cells hold the source's code, for the record: the grader does not run it in the student's kernel.
    It calls the student's function on its own cases instead (:func:`execute`).
    """

    nb: Any
    run: list[int]  # indices of the cells to execute, in order
    check_cell: dict[str, int]  # grade_id -> index of its cell
    tampered: dict[str, bool]
    seeds: dict[str, int]


def prepare(submission, source: Source, seed_of: Callable[[str], int], timeout: int = DEFAULT_TIMEOUT) -> Prepared:
    """Overlays the source's checks on a submission (pure: no kernel).

    Args:
      submission: the student's notebook (nbformat node); not modified.
      source: the matching source notebook.
      seed_of: grade_id -> seed of that check's cases.
      timeout: the per-cell CPU-time budget (kept for the callers; :func:`check_plan` uses it).
    """
    if not isinstance(source, Source):
        raise TypeError(f"source must be a Source (from load_source), got {type(source).__name__}")
    checks = {c.grade_id: c for c in source.checks}
    seeds = {gid: seed_of(gid) for gid in checks}
    cells, tampered, placed = [], {gid: False for gid in checks}, {}
    for cell in submission.cells:
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        meta = _nbgrader(cell)
        gid = meta.get("grade_id")
        if cell.cell_type == "code" and gid in checks:
            check = checks[gid]
            if gid in placed:  # a second copy of a check cell
                tampered[gid] = True
                continue
            # untouched: jtk's student copy, nbgrader's release of it (hidden tests dropped, no note), or the source
            released = (check.student_code, _strip_region(check.code, BEGIN_HIDDEN, END_HIDDEN, None), check.code)
            if (cell.source.strip() not in {text.strip() for text in released}
                    or meta.get("points", check.points) != check.points):
                tampered[gid] = True
            cell.source = check.code
            cell.metadata = nbformat.from_dict({"nbgrader": {"grade": True, "grade_id": gid}, "jtk_role": "check"})
            placed[gid] = cell
        elif meta.get("grade"):  # a check cell the source does not know: the student's own code now
            cell.metadata.pop("nbgrader", None)
        cells.append(cell)
    for check in source.checks:  # put deleted checks back after their answer cell
        if check.grade_id in placed:
            continue
        tampered[check.grade_id] = True
        new = nbformat.v4.new_code_cell(check.code)
        new.metadata = nbformat.from_dict({"nbgrader": {"grade": True, "grade_id": check.grade_id},
                                           "jtk_role": "check"})
        at = len(cells)
        for j, cell in enumerate(cells):
            if check.after is not None and _nbgrader(cell).get("grade_id") == check.after:
                at = j + 1
        cells.insert(at, new)
        placed[check.grade_id] = new
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(submission.metadata))
    run, first_answer = [], None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        gid = _nbgrader(cell).get("grade_id")
        if gid in source.answer_ids and first_answer is None:
            first_answer = i
        is_demo = cell.get("id") in source.demo_cells and cell.source.strip() == source.demo_cells[cell["id"]].strip()
        if is_demo and first_answer is not None and gid not in checks:
            continue
        run.append(i)
    check_cell = {gid: nb.cells.index(cell) for gid, cell in placed.items()}
    return Prepared(nb, run, check_cell, tampered, seeds)


@dataclasses.dataclass(frozen=True)
class Call:
    """One check call as the grader makes it: the student's function, the cases and the CPU budget.

    Attributes:
      name: the check (a :data:`jtk.course.checks.NAMES` entry); hidden: its hidden case family.
      function: the expression naming the student's function, evaluated in the student's namespace.
      cases: the argument tuples, drawn by the grader (:func:`jtk.course._judge.cases`).
      forbidden: the jtk functions that are the answer (the worker's guard, a second line behind the stubs).
      seeds: 0, or the number of seeds each case calls the function with.
      seconds, compile_seconds: the CPU budget of the call (:class:`jtk.course._answers._Budget`).
    """

    name: str
    hidden: bool
    function: str
    cases: tuple
    forbidden: tuple[str, ...]
    seeds: int
    seconds: float
    compile_seconds: float


def check_plan(check: SourceCheck, seed: int, timeout: float = DEFAULT_TIMEOUT, *,
               hidden_seed: int | None = None) -> list[Call]:
    """The calls the grader makes for one check cell, with the cases ``seed`` draws (in the grader's process);
    the hidden calls' cases are drawn from ``hidden_seed`` when given (:func:`check_seed` with ``handin``)."""
    if not isinstance(check, SourceCheck):
        raise TypeError(f"check must be a SourceCheck (from load_source), got {type(check).__name__}")
    from jtk.course import _judge

    # CPU seconds per call of the student's function: it may run for RUN_SHARE of them, and up to ``timeout``
    # seconds of JAX compilation per call are not counted; the cell's wall-clock backstop is WALL_FACTOR × timeout
    seconds = max(1.0, round(timeout / (len(check.calls) + 1), 1))
    plan = []
    for (name, hidden), function in zip(check.calls, check.functions):
        spec = _judge.check_by_name(name)
        drawn_from = hidden_seed if hidden and hidden_seed is not None else seed
        plan.append(Call(name, hidden, function, tuple(_judge.cases(name, drawn_from, hidden)), spec.forbidden,
                         spec.seeds, seconds, float(timeout)))
    return plan


# ------------------------------------------------------------------ running a notebook in a worker
ANSWER_BYTES = 8 * 2 ** 20
"""The largest frame one answer may take: a larger one ends the worker, and the case is not answered."""

STARTUP_SECONDS = 120
"""Wall-clock seconds a worker has to import jtk, before any student code runs."""

WORKER = ("-I", "-B", "-m", "jtk.course._grading_worker")

REPLAY_TRIES = 2
"""Workers a restart may take to bring back the cells that ran: a re-run that fails once (a busy machine, a flaky
import) is tried once more in a fresh worker before the notebook goes on without them."""


class GraderFault(Exception):
    """The grader could not run a notebook for a reason that is not the student's: the worker could not start
    (a memory limit too small for jtk itself, a broken installation, a full disk)."""


@dataclasses.dataclass
class Execution:
    """What running a prepared notebook gave.

    Attributes:
      fate: cell index -> ``ok``, ``error`` (it raised), ``timeout`` (past the wall clock), ``died`` or ``not_run``.
      errors: cell index -> the error it raised (``Type: message``), or the note that a restart lost a cell.
      answers: check cell index -> one list of answer records per call, in the order of its plan.
      limit: the limit of the whole notebook it went over (``memory``, ``processes`` or ``wall``), else None.
      peak: the most memory (bytes) and tasks one of its sandboxes held at once (None where not measured).
    """

    fate: dict[int, str]
    errors: dict[int, str]
    answers: dict[int, list[list[dict]]]
    limit: str | None = None
    peak: dict = dataclasses.field(default_factory=lambda: {"memory": None, "processes": None})


class _Restart(Exception):
    pass


def _run_cell(worker, code: str, deadline: float) -> tuple[str, str | None]:
    """Runs one cell; its fate and, when it raised, an excerpt of what it raised (the submission's words)."""
    from jtk.course.sandbox import WorkerError
    from jtk.course.untrusted import excerpt

    try:
        reply = worker.request({"op": "run", "code": code}, deadline)
    except WorkerError as err:
        return ("timeout" if err.kind == "timeout" else "died"), (None if err.kind != "invalid" else str(err))
    error = reply.get("error")
    return ("error" if error else "ok"), (excerpt(str(error)) if error else None)


_TIMED_OUT = {"raised": "timeout", "text": ""}


def _run_check(worker, plan: Sequence[Call], deadline: float, answers: list) -> tuple[str, str | None]:
    """Makes each call of ``plan`` in the worker; appends one list of answer records per call to ``answers``."""
    from jtk.course import _wire
    from jtk.course.sandbox import WorkerError
    from jtk.course.untrusted import excerpt

    late = False  # after a case runs out of CPU time, the cell's remaining cases are not tried
    for call in plan:
        got = []
        answers.append(got)
        try:
            reply = worker.request({"op": "begin", "function": call.function, "seconds": call.seconds,
                                    "compile_seconds": call.compile_seconds, "forbidden": list(call.forbidden),
                                    "seeds": call.seeds}, deadline)
            if reply.get("error"):
                answers.pop()
                worker.request({"op": "end"}, deadline)
                return "error", excerpt(str(reply["error"]))
            for args in call.cases:
                if late:
                    got.append(_TIMED_OUT)
                    continue
                record = worker.request({"op": "case", "args": _wire.pack(args)}, deadline, ANSWER_BYTES).get("answer")
                got.append(record if isinstance(record, dict) else {"opaque": "invalid", "repr": "no answer"})
                late = got[-1].get("raised") == "timeout"
            worker.request({"op": "end"}, deadline)
        except WorkerError as err:
            return ("timeout" if err.kind == "timeout" else "died"), (None if err.kind != "invalid" else str(err))
    return "ok", None


def _start(options: dict):
    """A worker that has imported jtk, or GraderFault."""
    from jtk.course import sandbox as sb

    worker = sb.Worker([sys.executable, *WORKER], mode=options["sandbox"], memory=options["memory"],
                       workdir=options["workdir"], package=options.get("package"), uid=options.get("uid"))
    try:
        ready = worker.recv(time.monotonic() + STARTUP_SECONDS)
    except sb.WorkerError as err:
        said = [line for line in worker.stderr_tail().splitlines() if "rror" in line or "failed" in line]
        worker.close()
        raise GraderFault(f"the grading worker {'died' if err.kind == 'died' else 'did not answer'} before any "
                          f"student code ran, while starting Python, JAX and jtk under a memory limit of "
                          f"{options['memory'] / 2 ** 30:.2g} GiB ({said[-1].strip()[:200] if said else 'no message'}): "
                          f"give the grader more memory (--memory) or mend its installation") from None
    if not ready.get("ready"):
        worker.close()
        raise GraderFault(f"the grading worker could not import jtk: {ready.get('fault')}")
    if options.get("package") and ready.get("jtk") != sb.package_dir():  # fail closed: never grade with the originals
        worker.close()
        raise GraderFault(f"the grading worker imported jtk from {str(ready.get('jtk'))[:200]}, not from the stubbed "
                          f"copy mounted at {sb.package_dir()}")
    return worker


def execute(nb, run: Sequence[int], *, workdir: str | None = None, timeout: float = DEFAULT_TIMEOUT * WALL_FACTOR,
            memory: int = DEFAULT_MEMORY, sandbox: str = "none", uid: int | None = None, package: str | None = None,
            plans: dict[int, Sequence[Call]] | None = None, notebook_timeout: float | None = None) -> Execution:
    """Runs the cells ``run`` of ``nb`` in a contained worker, making the check calls of ``plans`` at their cells.

    A cell's fate is ``ok``, ``error`` (it raised), ``timeout`` (past ``timeout`` seconds of wall-clock time),
    ``died`` (the worker died in it, or broke the protocol) or ``not_run``. A check cell (a key of ``plans``) runs
    no code of its own: the grader calls the student's function on each case over the worker's pipes. After a
    timeout or a dead worker a new one re-runs the earlier non-check cells and execution goes on with the next
    cell. A re-run cell that ran cleanly the first time must run cleanly again: if it does not, a fresh worker
    tries once more (``REPLAY_TRIES``), and if that fails too the next cell's error is a ``KernelError`` note
    saying which cell could not be brought back and why.

    Limits of the whole notebook end it: ``notebook_timeout`` wall-clock seconds of its cells running, re-runs
    included (a worker's start-up is the grader's time, not counted; default: no cap but the cells' own), and its
    sandbox's memory and tasks, all processes together (:class:`jtk.course.sandbox.Worker`). The first one it goes
    over is :attr:`Execution.limit`, and no cell runs after it.

    Raises:
      GraderFault: a worker could not start (before any student code ran).
    """
    from jtk import _checks

    timeout = _checks.positive("timeout", timeout)
    left = _checks.positive("notebook_timeout", notebook_timeout) if notebook_timeout is not None else float("inf")
    limit, peak = None, {"memory": None, "processes": None}
    plans = plans or {}
    options = dict(sandbox=sandbox, memory=memory, workdir=workdir, package=package, uid=uid)
    fate = {i: "not_run" for i in run}
    errors: dict[int, str] = {}
    answers: dict[int, list] = {}
    pending, done = list(run), []
    replay_tries = 0
    for _attempt in range(len(run) + REPLAY_TRIES):
        if not pending or limit:
            break
        worker = _start(options)
        try:
            lost = None  # (cell index, how its re-run ended, its error) of the first cell not brought back
            for j in done:  # bring a new worker to where the last one was
                if j in plans:
                    continue
                started = time.monotonic()
                how, error = _run_cell(worker, nb.cells[j].source, started + min(left, timeout))
                left -= time.monotonic() - started
                if fate[j] == "ok" and how != "ok" and lost is None:
                    lost = (j, how, error)
            if lost is not None:
                replay_tries += 1
                if replay_tries < REPLAY_TRIES:
                    raise _Restart
            while pending:
                i = pending[0]
                if left <= 0:
                    limit = "wall"
                    raise _Restart
                started = time.monotonic()
                deadline = started + min(left, timeout)
                if i in plans:
                    answers[i] = []
                    fate[i], error = _run_check(worker, plans[i], deadline, answers[i])
                else:
                    fate[i], error = _run_cell(worker, nb.cells[i].source, deadline)
                left -= time.monotonic() - started
                pending.pop(0)
                if lost is not None:
                    j, how, lost_error = lost
                    error = (f"KernelError: the kernel was restarted and re-running notebook cell {j + 1}, which had "
                             f"run cleanly, {'raised ' + lost_error if lost_error else 'ended: ' + how}; this cell "
                             f"ran without what that cell defines")
                    lost = None
                if error:
                    errors[i] = error
                if fate[i] in ("ok", "error"):
                    done.append(i)
                else:
                    if fate[i] == "timeout" and left <= 0:
                        limit = "wall"
                    raise _Restart
        except _Restart:
            pass
        finally:
            worker.close()
            limit = worker.limit_hit or limit  # a limit of the sandbox also explains the cell it stopped
            for key, value in worker.peak.items():
                if value is not None:
                    peak[key] = max(peak[key] or 0, value)
    return Execution(fate, errors, answers, limit, peak)


# ------------------------------------------------------------------ scoring
HIDDEN_WORDS = {
    "generic.not_implemented": "not implemented yet.",
    "generic.timeout": "your function ran out of its CPU time on a hidden case.",
    "generic.exception": "your function raised an exception on a hidden case.",
    "uses_reference": "your function called jtk's own answer to this exercise on a hidden case.",
    "generic.no_result": "no answer was recorded for a hidden case.",
}
"""What a hidden case's failure says, by code: the grader's words only, never the case's inputs or anything the
submission wrote (any other code: "a hidden case got a wrong answer", and the code)."""


def _shown_records(records, hidden: bool) -> list:
    """Answer records with the submission's own words (an exception's text, an object's repr) cut to what a person
    may read: an excerpt for a visible case (:func:`jtk.course.untrusted.excerpt`), nothing for a hidden one."""
    from jtk.course.untrusted import excerpt

    out = []
    for record in records:
        if isinstance(record, dict):
            record = {k: (("" if hidden else excerpt(v)) if k in ("text", "repr") and isinstance(v, str) else v)
                      for k, v in record.items()}
        out.append(record)
    return out


def score_check(check: SourceCheck, plan: Sequence[Call], answers: Sequence[list] | None, fate: str,
                tampered: bool, error: str | None = None) -> dict:
    """One check's row: points in proportion to the cases passed over every call of the cell, judged here.

    Args:
      plan: the cell's calls (:func:`check_plan`), with the grader's cases.
      answers: one list of answer records per call (:attr:`Execution.answers`); missing calls or cases count as
        unanswered.
      fate: the cell's fate (:func:`execute`); error: what the cell raised, if anything.
    """
    from jtk import _checks
    from jtk.course import _judge

    _checks.instance("check", check, SourceCheck, "a SourceCheck (a check cell of load_source's Source)")
    plan = _checks.nonempty("plan", plan, "Call") if plan else []
    for i, c in enumerate(plan):
        _checks.instance(f"plan[{i}]", c, Call, "a Call (check_plan's)")
    _checks.one_of("fate", fate, ("ok", "error", "timeout", "died", "not_run"))

    answers = list(answers or [])
    results = []
    for k, call in enumerate(plan):
        got = list(answers[k]) if k < len(answers) else []
        if got or fate in ("timeout", "died"):  # a cell stopped part-way: its unanswered cases count as lost
            filler = _TIMED_OUT if fate == "timeout" else {"raised": "exception", "text": "the worker died before "
                                                           "answering (os._exit, a crash, or out of memory)"}
            got += [filler] * (len(call.cases) - len(got))
        results.append(_judge.judge(call.name, list(call.cases), _shown_records(got, call.hidden), call.hidden))
    total = sum(r.total for r in results)
    passed = sum(r.passed for r in results)
    failures = [(r, f) for r in results for f in r.failures]
    # the cases written in jtk's source are gates: all must pass, and the points come from the drawn cases alone
    fixed = [min(_judge.check_by_name(call.name).fixed[call.hidden], len(call.cases)) for call in plan]
    gates_passed = not any(f.case < n for r, n in zip(results, fixed) for f in r.failures)
    drawn = [(r.hidden, r.total - n, r.total - n - sum(f.case >= n for f in r.failures)) for r, n in zip(results, fixed)]
    drawn_total, drawn_passed = sum(t for _, t, _ in drawn), sum(p for _, _, p in drawn)
    if not drawn_total:  # a check with no drawn case: every case counts
        drawn_total, drawn_passed = total, passed
    points = round(check.points * drawn_passed / drawn_total, 4) if total and gates_passed else 0.0
    recorded = any(answers)
    if fate == "timeout":
        status, message = "timeout", "the cell ran past its wall-clock limit (code that waits or loops forever?)"
    elif fate == "died":
        status, message = "error", error or "the kernel died in this cell (os._exit, a crash, or out of memory)"
    elif fate == "not_run":
        status, message = "not_run", "the cell did not run"
    elif not recorded:
        status, message = "error", error or "the check recorded no answers"
    elif not failures:
        status, message = "passed", ""
    elif any(f.code == "generic.timeout" for _, f in failures):
        status = "timeout"
    else:
        status = "failed"
    if failures and status in ("failed", "timeout") and fate not in ("timeout", "died", "not_run"):
        r, f = failures[0]
        said = (HIDDEN_WORDS.get(f.code, f"a hidden case got a wrong answer ({f.code}).") if r.hidden else f.message)
        message = f"{r.title}{' (hidden cases)' if r.hidden else ''}: {passed} of {total} cases passed. {said}"
        if not gates_passed:
            message += (" A fixed edge case failed: the check's fixed edge cases must all pass before its drawn "
                        "cases earn points.")
    judged = failures and fate in ("ok", "error") and recorded
    misconception = failures[0][1].code if judged else None
    codes = sorted({f.code for _, f in failures}) if judged else []
    # cases lost to a limit: out of CPU time in the check, or every unanswered case of a cell stopped by the clock
    timed_out = sum(f.code == "generic.timeout" for _, f in failures) if fate != "timeout" else total - passed
    hidden_total, hidden_passed = sum(r.total for r in results if r.hidden), sum(r.passed for r in results if r.hidden)
    return {"id": check.grade_id, "points": points, "max_points": check.points, "status": status,
            "tampered": bool(tampered), "misconception": misconception, "message": message,
            "cases_passed": passed, "cases_total": total, "cases_timed_out": int(timed_out),
            "hidden_cases_passed": hidden_passed, "hidden_cases_total": hidden_total,
            "drawn_cases_passed": drawn_passed, "drawn_cases_total": drawn_total,
            "hidden_drawn_cases_passed": sum(p for h, _, p in drawn if h),
            "hidden_drawn_cases_total": sum(t for h, t, _ in drawn if h), "gates_passed": gates_passed, "codes": codes}


# ------------------------------------------------------------------ reading submissions
MAX_NOTEBOOK_BYTES = 32 * 2 ** 20
"""The largest submission read: a larger file is rejected unread."""

READ_SECONDS = 30
"""Wall-clock seconds reading one submission may take."""


class Rejected(ValueError):
    """A submission that is not graded, and why.

    Attributes:
      status: the row's status: ``rejected`` (a symbolic link, FIFO, device; too large; not read in time) or
        ``unreadable`` (a file that is not a notebook with cells).
    """

    def __init__(self, message: str, status: str = "rejected"):
        super().__init__(message)
        self.status = status


def _kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (``os.lstat``'s mode: a link is named as a link)."""
    for test, kind in ((stat.S_ISREG, "regular file"), (stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "directory"),
                       (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return "special file"


def read_bytes(path, max_bytes: int = MAX_NOTEBOOK_BYTES, seconds: float = READ_SECONDS) -> bytes:
    """A submitted file's bytes, read as data: a regular file only (never followed as a link), at most
    ``max_bytes``, within ``seconds``. The one reader of untrusted files, for grading and the challenge.

    ``os.lstat`` first (a link, FIFO, directory or device is never opened), then ``open`` with ``O_NOFOLLOW |
    O_NONBLOCK`` and an ``fstat`` of the descriptor actually read (a file swapped for a link or a FIFO in between is
    refused too, and a FIFO never blocks).

    Raises:
      Rejected: a symbolic link, FIFO, device, socket or directory; a file larger than ``max_bytes``; a read that
        does not finish in time.
    """
    from jtk import _checks

    max_bytes = _checks.integer("max_bytes", max_bytes, minimum=1)
    seconds = _checks.positive("seconds", seconds)
    path = pathlib.Path(path)
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise Rejected(f"{path.name} is a {_kind(mode)}, not a regular file: hand in the file itself")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise Rejected(f"{path.name} could not be opened: {err.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between lstat and open
            raise Rejected(f"{path.name} is a {_kind(info.st_mode)}, not a regular file: hand in the file itself")
        if info.st_size > max_bytes:
            hint = ": clear its outputs and hand it in again" if path.suffix == ".ipynb" else ""
            raise Rejected(f"{path.name} has {info.st_size / 2 ** 20:.2f} MB, more than the {max_bytes / 2 ** 20:.2f} "
                           f"MB a hand-in may have{hint}")
        chunks, size, deadline = [], 0, time.monotonic() + seconds
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise Rejected(f"{path.name} grew past {max_bytes / 2 ** 20:.2f} MB while it was read")
            if time.monotonic() > deadline:
                raise Rejected(f"{path.name} could not be read within {seconds:g} s")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as err:
        raise Rejected(f"{path.name} could not be read: {err.strerror}") from None
    finally:
        os.close(fd)


def read_notebook(path):
    """A submitted notebook (:func:`read_bytes`, then nbformat); no error message quotes the file's content.

    Raises:
      Rejected: what :func:`read_bytes` rejects, or a file that is not a notebook with cells.
    """
    return parse_notebook(read_bytes(path))


def parse_notebook(data: bytes):
    """A notebook from a submitted file's bytes (:func:`read_notebook` without the reading).

    Raises:
      Rejected: bytes that are not a notebook with cells (status ``unreadable``); no message quotes them.
      TypeError: ``data`` is not bytes (a str is the grader's mistake, not the student's).
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be the file's bytes, got {type(data).__name__}")
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise Rejected("not a readable notebook: not UTF-8 text", "unreadable") from None
    except json.JSONDecodeError as err:
        raise Rejected(f"not a readable notebook: not valid JSON (line {err.lineno}, column {err.colno})",
                       "unreadable") from None
    except RecursionError:  # e.g. 100,000 '[': deeper than the parser's stack, and than any notebook
        raise Rejected("not a readable notebook: JSON nested deeper than a notebook is", "unreadable") from None
    try:
        nb = nbformat.reads(json.dumps(obj), as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # noqa: BLE001 - nbformat's messages may quote the file: name the kind only
        raise Rejected(f"not a readable notebook: not in the notebook format ({type(err).__name__})",
                       "unreadable") from None
    if not nb.cells:
        raise Rejected("not a readable notebook: the notebook has no cells", "unreadable")
    return nb


# ------------------------------------------------------------------ one notebook
@dataclasses.dataclass(frozen=True)
class Submission:
    """One file handed in.

    Attributes:
      student: who handed it in; notebook: the source notebook's name it is graded against (the file's name when
        none matches); path: where it is.
      rejected: why it is not graded (a symbolic link, a FIFO, too large, ...), or None.
      skipped: other files of the same student and notebook that were not graded (:func:`collect`'s rule).
    """

    student: str
    notebook: str
    path: pathlib.Path
    rejected: str | None = None
    skipped: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("student", "notebook"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
        if not isinstance(self.path, (str, os.PathLike)):
            raise TypeError(f"path must be a path (str or pathlib.Path), got {type(self.path).__name__} {self.path!r}")
        if self.rejected is not None and not isinstance(self.rejected, str):
            raise TypeError(f"rejected must be a reason (str) or None, got {type(self.rejected).__name__}")


def _empty_row(sub: Submission, source: Source | None, status: str, message: str) -> dict:
    checks = [] if source is None else [
        {"id": c.grade_id, "points": 0.0, "max_points": c.points, "status": "not_run", "tampered": False,
         "misconception": None, "message": message, "cases_passed": 0, "cases_total": 0, "cases_timed_out": 0,
         "hidden_cases_passed": 0, "hidden_cases_total": 0, "drawn_cases_passed": 0, "drawn_cases_total": 0,
         "hidden_drawn_cases_passed": 0, "hidden_drawn_cases_total": 0, "gates_passed": False, "codes": []}
        for c in source.checks]
    return {"student": sub.student, "notebook": sub.notebook, "score": 0.0,
            "max_score": source.max_score if source else 0.0, "status": status, "message": message,
            "wall_timeouts": 0, "retried": False, "checks": checks}


def _skipped_note(sub: Submission) -> str:
    if not sub.skipped:
        return ""
    return (f"not graded, one notebook per exercise ({SAME_EXERCISE_RULE}): {', '.join(sub.skipped[:10])}"
            + (f" and {len(sub.skipped) - 10} more" if len(sub.skipped) > 10 else ""))


def grade_notebook(sub: Submission, sources: dict[str, Source], *, timeout: int = DEFAULT_TIMEOUT,
                   memory: int = DEFAULT_MEMORY, sandbox: str = "none", uid: int | None = None,
                   seed: int | None = None, salt: str = "", package: str | None = None,
                   tmp_root: str | None = None, wall_factor: float = WALL_FACTOR,
                   notebook_timeout: float | None = None) -> dict:
    """Grades one submission; never raises for anything in the submission.

    Args:
      timeout: CPU seconds per check cell for the student's function (shared by the cell's check calls).
      memory: bytes the notebook's sandbox may hold, all its processes together.
      package: what the bwrap sandbox mounts over jtk (:func:`jtk.course.sandbox.stubbed_package`).
      wall_factor: every cell's wall-clock backstop is ``wall_factor × timeout`` seconds.
      notebook_timeout: wall-clock seconds for the whole notebook (default ``NOTEBOOK_FACTOR × timeout``).

    A notebook over its memory or tasks (all its processes together) scores nothing; one past its wall-clock cap
    keeps what its cells earned before it, and the cells it did not reach are not run. Either way its row's message
    names the limit, and it is not graded again.

    Returns:
      ``{"student", "notebook", "score", "max_score", "status", "message", "wall_timeouts", "retried",
      "checks": [...]}``, status ``graded``, ``rejected`` (not a regular file, too large), ``unreadable`` (not a
      notebook),
      ``unmatched`` (no source notebook fits) or ``error`` (a grader fault: the message says what, and the
      notebook must be graded again once it is mended); ``wall_timeouts`` counts the cells stopped by the
      wall-clock backstop.
    """
    from jtk import _checks

    if not isinstance(sub, Submission):
        raise TypeError(f"sub: expected a jtk.course.exercises.Submission (from collect), got {type(sub).__name__}")
    timeout = _checks.positive("timeout", timeout)
    wall_factor = _checks.positive("wall_factor", wall_factor)
    notebook_timeout = _checks.positive("notebook_timeout", notebook_timeout if notebook_timeout is not None
                                        else NOTEBOOK_FACTOR * timeout)
    source = sources.get(sub.notebook)
    if sandbox == "bwrap" and package is None and source is not None:
        package = _stubs(allowed_modules(source))
    if sub.rejected:
        return _empty_row(sub, source, "rejected", f"not graded: {sub.rejected}")
    try:
        data = read_bytes(sub.path)
        nb = parse_notebook(data)
    except Rejected as err:
        return _empty_row(sub, source, err.status, f"not graded: {err}")
    if source is None:
        return _empty_row(sub, None, "unmatched", f"no source notebook matches {sub.path.name}")
    handin = handin_id(data)
    try:
        prepared = prepare(nb, source, lambda gid: check_seed(sub.student, gid, salt, seed), timeout)
    except Exception as err:  # noqa: BLE001 - a notebook whose cells break the overlay is the student's file
        return _empty_row(sub, source, "unreadable", f"not graded: not a readable notebook: its cells or their "
                                                     f"metadata are malformed ({type(err).__name__})")
    plans = {prepared.check_cell[c.grade_id]: check_plan(
        c, prepared.seeds[c.grade_id], timeout, hidden_seed=check_seed(sub.student, c.grade_id, salt, seed,
                                                                       handin=handin))
        for c in source.checks}
    workdir = None
    try:
        if sandbox != "bwrap":  # bwrap's worker writes only into its own tmpfs
            workdir = tempfile.mkdtemp(prefix="jtk-grade-", dir=tmp_root)
            if uid is not None:
                os.chown(workdir, uid, uid)
            os.chmod(workdir, 0o700)
        done = execute(prepared.nb, prepared.run, workdir=workdir, timeout=timeout * wall_factor, memory=memory,
                       sandbox=sandbox, uid=uid, package=package, plans=plans, notebook_timeout=notebook_timeout)
    except (GraderFault, OSError) as err:
        return _empty_row(sub, source, "error", f"grader fault, not the student's: {err}"[:500])
    finally:
        if workdir is not None:
            from jtk.course import sandbox as sb

            sb.remove_tree(workdir)
    if done.limit in ("memory", "processes"):
        return _empty_row(sub, source, "graded", _over_limit(done.limit, memory, notebook_timeout))
    checks = []
    for check in source.checks:
        index = prepared.check_cell[check.grade_id]
        try:
            checks.append(score_check(check, plans[index], done.answers.get(index), done.fate.get(index, "not_run"),
                                      prepared.tampered[check.grade_id], done.errors.get(index)))
        except Exception as err:  # noqa: BLE001 - answers the judge cannot read are the student's: that check's 0
            row = _empty_row(sub, source, "graded", "")["checks"][source.checks.index(check)]
            checks.append({**row, "status": "error", "tampered": bool(prepared.tampered[check.grade_id]),
                           "message": f"the answers sent for this check could not be judged ({type(err).__name__})"})
    message = "; ".join(filter(None, [_over_limit(done.limit, memory, notebook_timeout) if done.limit else "",
                                      _skipped_note(sub)]))
    return {"student": sub.student, "notebook": sub.notebook, "score": round(sum(c["points"] for c in checks), 4),
            "max_score": source.max_score, "status": "graded", "message": message,
            "wall_timeouts": 0 if done.limit else sum(f == "timeout" for f in done.fate.values()), "retried": False,
            "handin": handin, "checks": checks}


def _over_limit(limit: str, memory: int, notebook_timeout: float) -> str:
    """The row's message for a notebook over a limit of the whole notebook: which limit, and what it was."""
    from jtk.course import sandbox as sb

    what = {"memory": f"its memory limit of {memory / 2 ** 30:.3g} GiB, all its processes together",
            "processes": f"its limit of {sb.DEFAULT_PROCESSES} processes and threads, all together",
            "wall": f"its wall-clock limit of {notebook_timeout:g} s for the whole notebook, all cells together"}
    then = ("the cells after it did not run" if limit == "wall" else "it scores nothing")
    return f"the notebook went over {what[limit]}; {then} (limit: {limit})"


@functools.lru_cache(maxsize=None)
def _stubs(allowed: frozenset[str] | None = None) -> str:
    """This process's stubbed copy of jtk holding the modules ``allowed`` (:func:`jtk.course.sandbox.stubbed_package`),
    made once per allowlist, removed at exit."""
    import atexit

    from jtk.course import sandbox as sb

    root = tempfile.mkdtemp(prefix="jtk-stubs-")
    atexit.register(sb.remove_tree, root)
    return str(sb.stubbed_package(root, allowed=allowed))


# ------------------------------------------------------------------ a class
SAME_EXERCISE_RULE = "the file named like the exercise, else the first by path"
"""Which of a student's files for one exercise is graded; the others are named in its row, and not graded."""


def _match(path: pathlib.Path, sources: dict[str, Source]) -> str:
    if path.name in sources:
        return path.name
    try:
        ids = {g for c in read_notebook(path).cells if isinstance(g := _nbgrader(c).get("grade_id"), str)}
    except Exception:  # noqa: BLE001 - a file that cannot be read matches nothing; its row says why
        return path.name
    overlap = {name: len(ids & ({c.grade_id for c in s.checks} | s.answer_ids)) for name, s in sources.items()}
    best = max(overlap, key=overlap.get)
    return best if overlap[best] > 0 else path.name


def _files(directory: pathlib.Path, top: bool):
    """(path, why rejected or None) of every ``*.ipynb`` entry below ``directory``; links are never followed."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = pathlib.Path(entry.path)
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            if not top and not entry.name.startswith(".") and entry.name != ".ipynb_checkpoints":
                yield from _files(path, False)
            continue
        if entry.name.endswith(".ipynb"):
            yield path, None if stat.S_ISREG(mode) else f"{entry.name} is a {_kind(mode)}, not a regular file: " \
                                                        f"hand in the notebook file itself"


def collect(paths: Iterable, sources: dict[str, Source]) -> list[Submission]:
    """Submissions from files and directories, one per student and notebook.

    A directory may hold nbgrader's layout ``DIR/<student>/[...]/<notebook>.ipynb`` (student = the first folder
    below DIR) and loose ``DIR/<student>.ipynb`` files; a file given directly counts as a loose file (student =
    its stem). A file is matched to the source notebook of the same name, else to the one whose grade_ids it
    carries. Only regular files are graded: a symbolic link, FIFO, device or socket is a submission with
    ``rejected`` set, never opened. When a student hands in several files for one notebook, one is graded
    (:data:`SAME_EXERCISE_RULE`; a rejected one only when nothing else is there) and the others are named in its
    ``skipped``.

    Raises:
      ValueError: a path that does not exist or is neither an .ipynb file nor a directory.
    """
    found = []
    for raw in paths:
        path = pathlib.Path(raw)
        if not os.path.lexists(path):
            raise ValueError(f"submission path does not exist: {str(path)!r}")
        mode = os.lstat(path).st_mode
        if stat.S_ISDIR(os.stat(path).st_mode):  # a directory given on the command line may be a link to one
            for child, why in _files(path, True):  # loose DIR/<student>.ipynb
                found.append((child.stem, child, why))
            for entry in sorted(os.scandir(path), key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    for child, why in _files(pathlib.Path(entry.path), False):
                        found.append((entry.name, child, why))
        elif path.suffix == ".ipynb":
            found.append((path.stem, path, None if stat.S_ISREG(mode) else
                          f"{path.name} is a {_kind(mode)}, not a regular file: hand in the notebook file itself"))
        else:
            raise ValueError(f"submission must be an .ipynb file or a directory, got {str(path)!r}")
    groups: dict[tuple[str, str], list] = {}
    for student, path, why in found:
        notebook = _match(path, sources) if why is None else path.name
        groups.setdefault((student, notebook), []).append((why is not None, path.name != notebook, str(path), path,
                                                           why))
    subs = []
    for (student, notebook), files in groups.items():
        files.sort(key=lambda f: f[:3])
        _, _, _, path, why = files[0]
        skipped = tuple(f[2] for f in files[1:])
        subs.append(Submission(student, notebook, path, why, skipped))
    order = {id(s): k for k, s in enumerate(subs)}
    return sorted(subs, key=lambda s: (s.student, s.notebook, order[id(s)]))


_WORKER: dict = {}


def _init_worker(slots, sources, options, grader: int | None = None) -> None:
    from jtk.course import sandbox as sb

    sb.die_with_parent(grader)
    _WORKER.update(slot=slots.get(), sources=sources, options=options)


def _grade_in_worker(sub: Submission, wall_factor: float = WALL_FACTOR) -> dict:
    options = dict(_WORKER["options"], wall_factor=wall_factor)
    options["package"] = options.pop("packages").get(sub.notebook)
    if options.pop("use_uid"):
        from jtk.course import sandbox as sb

        options["uid"] = sb.UID_BASE + _WORKER["slot"]
    return grade_notebook(sub, _WORKER["sources"], **options)


def _redact(value, secret: str):
    if isinstance(value, str):
        return value.replace(secret, "[salt]")
    if isinstance(value, dict):
        return {k: _redact(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, secret) for v in value]
    return value


def grade_class(submissions: Sequence[Submission], sources: dict[str, Source], *, workers: int | None = None,
                timeout: int = DEFAULT_TIMEOUT, memory: int = DEFAULT_MEMORY, sandbox: str = "auto",
                seed: int | None = None, salt: str = "", hide: Sequence[str] = (), progress: bool = True) -> list[dict]:
    """Grades every submission in parallel worker processes; rows in the order of ``submissions``.

    Args:
      workers: worker processes (default: the number of cores).
      sandbox: ``auto``, ``none``, ``user`` or ``bwrap`` (:mod:`jtk.course.sandbox`).
      hide: accepted and ignored: the bwrap sandbox mounts only what it names, so nothing needs hiding.

    A grader fault (a worker that could not start jtk, a full disk) is a row with status ``error`` whose message
    says so; :func:`fault_summary` names them for the instructor. A salt of 8 characters or more never appears in
    a row.
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an int >= 1 or None, got {workers!r}")
    import concurrent.futures
    import multiprocessing

    from tqdm.auto import tqdm

    from jtk.course import sandbox as sb

    del hide
    mode = sb.resolve(sandbox)
    if not isinstance(memory, int) or memory < MIN_MEMORY:
        raise ValueError(f"memory must be at least {MIN_MEMORY} bytes (2G): the grading worker needs that for Python, "
                         f"JAX, jtk and a student's answer; got {memory!r}")
    workers = max(1, min(workers or os.cpu_count() or 1, len(submissions) or 1))
    tmp_root = tempfile.mkdtemp(prefix="jtk-grader-")
    os.chmod(tmp_root, 0o711 if mode == "user" else 0o700)
    rows: list[dict | None] = [None] * len(submissions)
    try:
        # deny by default: each exercise's sandbox holds the jtk its own cells need, and nothing else
        packages = {} if mode != "bwrap" else {
            name: str(sb.stubbed_package(os.path.join(tmp_root, f"jtk-{k}"), allowed=allowed_modules(src)))
            for k, (name, src) in enumerate(sorted(sources.items()))
            if any(s.notebook == name for s in submissions)}
        options = dict(timeout=timeout, memory=memory, sandbox=mode, seed=seed, salt=salt, packages=packages,
                       tmp_root=tmp_root, use_uid=mode == "user")
        ctx = multiprocessing.get_context("spawn")
        slots = ctx.Queue()
        for k in range(workers):
            slots.put(k)

        def collect(pool, indices, desc: str, wall_factor: float) -> None:
            futures = {pool.submit(_grade_in_worker, submissions[i], wall_factor): i for i in indices}
            bar = tqdm(total=len(futures), desc=desc, unit="notebook", disable=not progress)
            for future in concurrent.futures.as_completed(futures):
                i = futures[future]
                try:
                    rows[i] = future.result()
                except Exception as err:  # noqa: BLE001 - a grader fault is a row too
                    rows[i] = _empty_row(submissions[i], sources.get(submissions[i].notebook), "error",
                                         f"grader fault, not the student's: {type(err).__name__}: {err}"[:300])
                bar.update(1)
            bar.close()

        def pool_of(size: int):
            return concurrent.futures.ProcessPoolExecutor(size, mp_context=ctx, initializer=_init_worker,
                                                          initargs=(slots, sources, options, os.getpid()))

        with pool_of(workers) as pool:
            collect(pool, range(len(submissions)), "grading", WALL_FACTOR)
        # A cell stopped by the wall clock may be a victim of the load: grade that notebook again, alone (one
        # worker, nothing else of the class running) with twice the backstop; the second grade counts.
        again = [i for i, row in enumerate(rows) if row and row.get("wall_timeouts")]
        if again:
            while not slots.empty():  # the first pool's workers took their slots; the retry worker takes slot 0
                slots.get()
            slots.put(0)
            with pool_of(1) as pool:
                collect(pool, again, "grading again, alone", 2 * WALL_FACTOR)
            for i in again:
                rows[i]["retried"] = True
    finally:
        sb.remove_tree(tmp_root)
    if len(salt) >= 8:
        rows = [_redact(row, salt) for row in rows]
    return rows  # type: ignore[return-value]


def _check_rows(name: str, rows) -> None:
    if isinstance(rows, (str, bytes, dict)) or not hasattr(rows, "__iter__") or (
            isinstance(rows, (list, tuple)) and not all(isinstance(r, dict) for r in rows)):
        raise TypeError(f"{name} must be a list of result dicts (from grade_class), got {type(rows).__name__}")


def fault_summary(rows: Sequence[dict]) -> str | None:
    """One line for the instructor when notebooks could not be graded because of the grader (None when none)."""
    _check_rows("rows", rows)
    hit = [row for row in rows if row["status"] == "error"]
    if not hit:
        return None
    names = ", ".join(f"{row['student']}/{row['notebook']}" for row in hit[:5]) + (
        f", and {len(hit) - 5} more" if len(hit) > 5 else "")
    students = ",".join(sorted({row["student"] for row in hit}))
    return (f"{len(hit)} notebook(s) could not be graded because of the grader, not the students ({names}): "
            f"{hit[0]['message']}. Mend that, then regrade with --only {students}")


def timeout_summary(rows: Sequence[dict]) -> str | None:
    """One line for the instructor when cases were lost to a time limit (None when none was).

    E.g. ``3 cases timed out in 2 notebooks (alice/01_coin_joint.ipynb, ...): regrade with --only alice,bob``.
    """
    _check_rows("rows", rows)
    hit = [(row, sum(c.get("cases_timed_out", 0) for c in row["checks"])) for row in rows]
    hit = [(row, n) for row, n in hit if n or any(c["status"] == "timeout" for c in row["checks"])]
    if not hit:
        return None
    cases = sum(n for _, n in hit)
    names = [f"{row['student']}/{row['notebook']}" for row, _ in hit]
    shown = ", ".join(names[:5]) + (f", and {len(names) - 5} more" if len(names) > 5 else "")
    students = ",".join(sorted({row["student"] for row, _ in hit}))
    return (f"{cases} case{'s' if cases != 1 else ''} timed out in {len(hit)} notebook{'s' if len(hit) != 1 else ''} "
            f"({shown}): regrade with --only {students}")


# ------------------------------------------------------------------ reports
def grades_frame(rows: Sequence[dict]):
    """One row per (student, notebook): student, notebook, score, max_score, status, timed_out (the grade_ids of the
    checks that ran out of time, ``;``-separated, empty when none did), then one column per grade_id."""
    _check_rows("rows", rows)
    import pandas as pd

    records = []
    for row in rows:
        rec = {k: row[k] for k in ("student", "notebook", "score", "max_score", "status")}
        rec["timed_out"] = ";".join(c["id"] for c in row["checks"] if c["status"] == "timeout")
        rec.update({c["id"]: c["points"] for c in row["checks"]})
        records.append(rec)
    frame = pd.DataFrame(records, columns=None)
    base = ["student", "notebook", "score", "max_score", "status", "timed_out"]
    return frame[base + sorted(c for c in frame.columns if c not in base)] if len(frame) else frame


def misconception_summary(rows: Sequence[dict]):
    """How many students hit each misconception code, per check: columns check, code, students.

    A check whose cell timed out or died before any answer was judged counts as ``status.timeout`` /
    ``status.error``.
    """
    _check_rows("rows", rows)
    import pandas as pd

    hits: dict[tuple[str, str], set] = {}
    for row in rows:
        for c in row["checks"]:
            codes = c.get("codes") or ([c["misconception"]] if c.get("misconception") else [])
            if not codes and c["status"] in ("timeout", "error"):  # no answer was judged: the cell's fate counts
                codes = [f"status.{c['status']}"]
            for code in codes:
                hits.setdefault((c["id"], code), set()).add(row["student"])
    frame = pd.DataFrame([(gid, code, len(s)) for (gid, code), s in hits.items()],
                         columns=["check", "code", "students"])
    return frame.sort_values(["check", "students", "code"], ascending=[True, False, True]).reset_index(drop=True)


def _atomic_write(path: pathlib.Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_csv(rows: Sequence[dict], path) -> pathlib.Path:
    """Writes the grades CSV atomically, and the misconception summary beside it (``NAME.misconceptions.csv``
    and a seaborn figure ``NAME.misconceptions.png``); returns the CSV's path. Text cells go through
    :func:`jtk.course.untrusted.csv_cell` (no cell starts a formula); read them back with
    :func:`jtk.course.untrusted.read_csv` (``jtk_written=True``)."""
    _check_rows("rows", rows)
    from jtk.course import untrusted

    path = pathlib.Path(path)
    _atomic_write(path, untrusted.csv_frame(grades_frame(rows)).to_csv(index=False).encode())
    summary = misconception_summary(rows)
    stem = path.with_suffix("")
    _atomic_write(stem.with_name(stem.name + ".misconceptions.csv"),
                  untrusted.csv_frame(summary).to_csv(index=False).encode())
    from jtk.plots.grading import misconception_figure

    fig = misconception_figure(summary, num_students=len({r["student"] for r in rows}))
    png = stem.with_name(stem.name + ".misconceptions.png")
    fig.savefig(png.with_name(f".{png.name}.tmp.png"), dpi=100, bbox_inches="tight")
    os.replace(png.with_name(f".{png.name}.tmp.png"), png)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


_STATUS_MARK = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "◔", "not_run": "–"}  # text symbols, no emoji fonts needed


def feedback_html(row: dict) -> str:
    """A student's feedback page for one notebook: each check's result, hint and misconception code, and the jtk
    version that graded it."""
    if not isinstance(row, dict):
        raise TypeError(f"row must be one result dict of grade_class, got {type(row).__name__}")
    from jtk.course.untrusted import html as esc

    lines = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(row['student'])} — "
             f"{esc(row['notebook'])}</title><style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}"
             "td,th{padding:.4em;border-bottom:1px solid #ddd;vertical-align:top;text-align:left}"
             "code{background:#f4f4f4}</style></head><body>",
             f"<h1>{esc(row['notebook'])}</h1><p>Student: <b>{esc(row['student'])}</b> · score "
             f"<b>{row['score']:g} / {row['max_score']:g}</b> · {esc(row['status'])}</p>"]
    if row.get("message"):
        lines.append(f"<p>{esc(row['message'])}</p>")
    if row.get("retried"):
        lines.append("<p>A cell hit the wall-clock limit, so this notebook was graded a second time, alone; this is "
                     "that second grade.</p>")
    lines.append("<table><tr><th>check</th><th>result</th><th>points</th><th>feedback</th><th>code</th></tr>")
    for c in row["checks"]:
        note = " (this cell was edited; it was graded as distributed)" if c["tampered"] else ""
        if c.get("cases_timed_out"):
            note += (f" {c['cases_timed_out']} case(s) ran out of time: they earn no points, and your instructor "
                     f"sees them as timeouts, not as wrong answers.")
        lines.append(f"<tr><td>{esc(c['id'])}</td><td>{_STATUS_MARK.get(c['status'], '')} {esc(c['status'])}</td>"
                     f"<td>{c['points']:g} / {c['max_points']:g}</td><td>{esc(c['message'] or '')}{esc(note)}</td>"
                     f"<td><code>{esc(c['misconception'] or '')}</code></td></tr>")
    from jtk import __version__

    lines.append(f"</table><footer><p>Graded by jtk {esc(__version__)}</p></footer></body></html>")
    return "\n".join(lines)


def write_feedback(rows: Sequence[dict], directory) -> list[pathlib.Path]:
    """Writes ``DIRECTORY/<student>/<notebook>.html`` for every row, the names mapped by
    :func:`jtk.course.untrusted.file_name` (a plain name as it is, any other a slug and a hash: two students never
    share a page); each page names its student as handed in. Returns the paths, in the order of ``rows``."""
    from jtk.course.untrusted import file_name

    _check_rows("rows", rows)
    out = []
    root = pathlib.Path(directory)
    for row in rows:
        folder = root / file_name(row["student"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (file_name(pathlib.Path(row["notebook"]).stem) + ".html")
        _atomic_write(path, feedback_html(row).encode())
        out.append(path)
    return out

