"""Exercise notebooks from solution notebooks, and grading a class's submissions against them.

``solutions/`` is the source. In code cells, everything between a line
``### BEGIN SOLUTION`` and a line ``### END SOLUTION`` (nbgrader's markers) is the
answer, and everything between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN
TESTS`` is a hidden check. :func:`build` replaces each answer with ``raise
NotImplementedError(...)`` at the same indentation, removes the hidden checks,
clears outputs and writes ``exercises/``. Cells carry nbgrader metadata
(``solution`` / ``grade`` / ``grade_id`` / ``points``), so a source notebook is also an
nbgrader source notebook (:mod:`jtk.nbgrader`, docs/nbgrader.md).

Grading (:func:`grade_notebook`, :func:`grade_class`, ``jtk grade``) trusts the
source, never the submission:

* The check cells (``grade: true``), their code (hidden checks included) and
  their points come from the source notebook, matched by ``grade_id``. Every
  check cell of a submission is replaced by the source's before execution; a
  deleted check is put back after its answer cell; a check whose cell was edited
  is graded from the source and reported with ``tampered: true``; student
  metadata (points, locked, tags) is ignored.
* The grader runs the submission's set-up cells (those before the first answer),
  its answer cells, every cell the student added or changed, and the checks.
  The lab's own demonstration cells after the first answer are not run: they
  score nothing and would only cost time.
* Each check records the student's answers in its output; the grader judges them
  in its own process (:func:`jtk.checks.evaluate`) on cases drawn from a seed
  that is a stable hash of (student, grade_id, salt), or ``seed`` for everybody.
* Each notebook runs in a fresh kernel in a fresh temporary directory holding
  only a copy of it, with time limits and a memory limit, contained as
  :mod:`jtk.sandbox` describes. A timeout or a dead kernel costs the cell it hit:
  the grader starts a new kernel, re-runs the cells before it and goes on.

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
import hashlib
import html
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import Any, Callable, Iterable, Sequence

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
PLACEHOLDER = 'raise NotImplementedError("Exercise: replace this line with your answer")'
HIDDEN_NOTE = "# More cases are checked when your notebook is graded."
CHECK_STATUSES = ("passed", "failed", "error", "timeout", "not_run")
DEFAULT_TIMEOUT = 30
DEFAULT_MEMORY = 4 * 2 ** 30
WALL_FACTOR = 4
"""A cell's wall-clock backstop is WALL_FACTOR × its CPU budget: a correct cell finishes under it with three other
busy processes per core (docs/grading.md, "Time limits under load")."""


# ------------------------------------------------------------------ building exercises/
def _strip_region(source: str, begin: str, end: str, replacement: str | None) -> str:
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
    """

    grade_id: str
    points: float
    code: str
    student_code: str
    calls: tuple[tuple[str, bool], ...]
    after: str | None


@dataclasses.dataclass(frozen=True)
class Source:
    """A source notebook: its checks, its answer cells and the demonstration cells grading skips."""

    name: str
    checks: tuple[SourceCheck, ...]
    answer_ids: frozenset[str]
    demo_cells: dict  # cell id -> the student's copy of the cell's code

    @property
    def max_score(self) -> float:
        return float(sum(c.points for c in self.checks))


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def check_calls(code: str, where: str = "a check cell") -> tuple[tuple[str, bool], ...]:
    """The checks a check cell calls: every ``checks.check_NAME(fn, ..., hidden=...)`` call, in order.

    Raises:
      ValueError: the cell does not parse, calls no known check, or passes ``hidden`` as a non-literal.
    """
    from jtk import checks

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
        if not fname.startswith("check_") or fname[len("check_"):] not in checks.CHECKS:
            continue
        hidden = False
        for kw in node.keywords:
            if kw.arg == "hidden":
                if not isinstance(kw.value, ast.Constant):
                    raise ValueError(f"{where}: hidden= must be a literal True or False")
                hidden = bool(kw.value.value)
        calls.append((node.lineno, node.col_offset, fname[len("check_"):], hidden))
    if not calls:
        raise ValueError(f"{where} calls no check of jtk.checks ({', '.join(sorted(checks.CHECKS))})")
    return tuple((name, hidden) for _, _, name, hidden in sorted(calls))


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
    for i, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        gid = meta.get("grade_id")
        if gid is not None:
            if gid in seen:
                raise ValueError(f"{path.name}: grade_id {gid!r} appears twice")
            seen.add(gid)
        if cell.cell_type != "code":
            continue
        if meta.get("grade"):
            if gid is None:
                raise ValueError(f"{path.name}: check cell {i} has no nbgrader grade_id")
            checks.append(SourceCheck(gid, float(meta.get("points", 1)), cell.source, _student_source(cell.source),
                                      check_calls(cell.source, f"{path.name} cell {gid!r}"), last_id))
        elif meta.get("solution"):
            answers.add(gid)
            first_answer = True
        elif first_answer and cell.get("id"):
            demo[cell["id"]] = _student_source(cell.source)
        if gid is not None:
            last_id = gid
    if not checks:
        raise ValueError(f"{path.name} has no check cells (code cells with nbgrader metadata grade: true)")
    return Source(path.name, tuple(checks), frozenset(answers), demo)


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
def check_seed(student: str, grade_id: str, salt: str = "", seed: int | None = None) -> int:
    """The seed of a check's cases: ``seed`` if given, else a stable hash of (student, grade_id, salt)."""
    if seed is not None:
        return int(seed)
    digest = hashlib.sha256("\x1f".join((student, grade_id, salt)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# ------------------------------------------------------------------ preparing a submission
def _harness(check: SourceCheck, seed: int, timeout: int) -> str:
    # CPU seconds per call of the student's function (it may run for checks.RUN_SHARE of them; up to ``timeout``
    # seconds of JAX compilation per call are not counted); the cell's wall-clock backstop is WALL_FACTOR × timeout
    call_seconds = max(1.0, round(timeout / (len(check.calls) + 1), 1))
    # A fresh copy of jtk.checks: whatever the student's cells did to the module is undone for this check. Both
    # names a source's check cell may use (``checks``, and the deprecated ``grading``) are bound to that fresh copy,
    # so a student's own ``grading`` / ``checks`` variable or patched alias never reaches the check.
    return (f"import importlib as _importlib, jtk.checks as _jtk_checks\n"
            f"checks = grading = _importlib.reload(_jtk_checks)\n"
            f"checks._grading_context({seed}, {call_seconds}, {float(timeout)})\n{check.code}")


@dataclasses.dataclass
class Prepared:
    """The notebook the grader runs, and what it learned from the submission on the way."""

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
      timeout: the per-cell CPU-time budget; each check call gets a share of it for the student's function.
    """
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
            cell.source = _harness(check, seeds[gid], timeout)
            cell.metadata = nbformat.from_dict({"nbgrader": {"grade": True, "grade_id": gid}, "jtk_role": "check"})
            placed[gid] = cell
        elif meta.get("grade"):  # a check cell the source does not know: the student's own code now
            cell.metadata.pop("nbgrader", None)
        cells.append(cell)
    for check in source.checks:  # put deleted checks back after their answer cell
        if check.grade_id in placed:
            continue
        tampered[check.grade_id] = True
        new = nbformat.v4.new_code_cell(_harness(check, seeds[check.grade_id], timeout))
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


# ------------------------------------------------------------------ running a notebook in a kernel
def _client_class():
    from nbclient import NotebookClient

    from jtk.checks import MIME

    class _Client(NotebookClient):
        """Caps each cell's output (a flood of prints must not fill the grader's memory); check records always pass.

        The characters kept in each cell's output list are counted as messages arrive, so a message costs the size
        of its own content, not a re-serialisation of everything the cell printed before it.
        """

        max_output_chars = 200_000

        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            if msg["msg_type"] in ("stream", "display_data", "execute_result") and MIME not in content.get("data", {}):
                sizes = self.__dict__.setdefault("_jtk_output_chars", {})  # id(outs) -> characters kept so far
                if sizes.get(id(outs), 0) > self.max_output_chars:
                    return None
                sizes[id(outs)] = sizes.get(id(outs), 0) + len(json.dumps(content.get("data", content.get("text", ""))))
            return super().output(outs, msg, display_id, cell_index)

    return _Client


class _Restart(Exception):
    pass


def _ran(client, cell, index) -> str:
    """Executes one cell; its fate: ``ok``, ``error``, ``timeout`` or ``died``."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    try:
        client.execute_cell(cell, index)
    except CellTimeoutError:
        return "timeout"
    except DeadKernelError:
        return "died"
    return "error" if any(o.get("output_type") == "error" for o in cell.outputs) else "ok"


REPLAY_TRIES = 2
"""Kernels a restart may take to bring back the cells that ran: a re-run that fails once (a busy machine, a flaky
import) is tried once more in a fresh kernel before the notebook goes on without them."""


def execute(nb, run: Sequence[int], *, workdir: str, timeout: float = DEFAULT_TIMEOUT * WALL_FACTOR,
            memory: int = DEFAULT_MEMORY, sandbox: str = "none", uid: int | None = None, hidden: Sequence[str] = (),
            startup_timeout: int = 120) -> dict[int, str]:
    """Executes the cells ``run`` of ``nb`` in place in a contained kernel; returns each cell's fate.

    A cell's fate is ``ok``, ``error`` (it raised), ``timeout`` (past ``timeout`` seconds of wall-clock time),
    ``died`` (the kernel died in it) or ``not_run``. After a timeout or a dead kernel a new kernel re-runs the
    earlier non-check cells and execution goes on with the next cell. A re-run cell that ran cleanly the first time
    must run cleanly again: if it does not, a fresh kernel tries once more (``REPLAY_TRIES``), and if that fails
    too the next cell is run anyway with a ``KernelError`` output in front of its own saying which cell could not be
    brought back and why, so a later ``NameError`` is not the only trace of it.
    """
    from jupyter_core.utils import run_sync

    from jtk import sandbox as sb

    client_class = _client_class()
    fate = {i: "not_run" for i in run}
    pending, done = list(run), []
    replay_tries = 0
    for _attempt in range(len(run) + REPLAY_TRIES):
        if not pending:
            break
        km = sb.SandboxKernelManager(kernel_name="python3")
        km.configure(mode=sandbox, workdir=workdir, memory=memory, uid=uid, hidden=hidden)
        client = client_class(nb, km=km, timeout=timeout, allow_errors=True, interrupt_on_timeout=False,
                              startup_timeout=startup_timeout, record_timing=False, kernel_name="python3")
        try:
            with client.setup_kernel(env=sb.kernel_env(workdir), cwd=workdir, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL):
                lost = None  # (cell index, how its re-run ended, its error) of the first cell not brought back
                for j in done:  # bring a new kernel to where the last one was
                    if nb.cells[j].metadata.get("jtk_role") == "check":
                        continue
                    again = copy.deepcopy(nb.cells[j])
                    how = _ran(client, again, j)
                    if fate[j] == "ok" and how != "ok" and lost is None:
                        lost = (j, how, _error_text(again))
                if lost is not None:
                    replay_tries += 1
                    if replay_tries < REPLAY_TRIES:
                        raise _Restart
                while pending:
                    i = pending[0]
                    fate[i] = _ran(client, nb.cells[i], i)
                    pending.pop(0)
                    if lost is not None:
                        j, how, error = lost
                        note = (f"the kernel was restarted and re-running notebook cell {j + 1}, which had run "
                                f"cleanly, {'raised ' + error if error else 'ended: ' + how}; this cell ran "
                                f"without what that cell defines")
                        nb.cells[i].outputs.insert(0, nbformat.v4.new_output(
                            "error", ename="KernelError", evalue=note, traceback=[f"KernelError: {note}"]))
                        lost = None
                    if fate[i] in ("ok", "error"):
                        done.append(i)
                    else:
                        raise _Restart
        except _Restart:
            pass
        except Exception as err:  # noqa: BLE001 - a kernel that cannot start: the rest is not run
            if not pending:
                break
            note = f"the kernel could not run: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            nb.cells[pending[0]].outputs.append(nbformat.v4.new_output("error", ename="KernelError", evalue=note,
                                                                       traceback=[]))
            fate[pending.pop(0)] = "died"
        finally:
            try:
                if km.has_kernel:
                    run_sync(km.shutdown_kernel)(now=True)
            except Exception:  # noqa: BLE001 - it is gone either way
                pass
            if uid is not None:
                sb.kill_user_processes(uid)
    return fate


# ------------------------------------------------------------------ scoring
def _records(cell) -> list[dict]:
    from jtk.checks import MIME

    out = []
    for o in cell.get("outputs", []):
        data = o.get("data", {}) if o.get("output_type") in ("display_data", "execute_result") else {}
        record = data.get(MIME)
        if isinstance(record, str):
            try:
                record = json.loads(record)
            except ValueError:
                record = None
        if isinstance(record, dict):
            out.append(record)
    return out


def _error_text(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {out.get('evalue')}"[:500]
    return None


def score_check(check: SourceCheck, cell, fate: str, seed: int, tampered: bool) -> dict:
    """One check's row: points in proportion to the cases passed over every call of the cell."""
    from jtk import checks

    records = _records(cell) if cell is not None else []
    results = []
    for name, hidden in check.calls:
        found = [r for r in records if r.get("check") == name and bool(r.get("hidden")) == hidden]
        answers = found[-1].get("answers") if found else []
        results.append(checks.evaluate(name, answers if isinstance(answers, list) else [], seed, hidden))
    total = sum(r.total for r in results)
    passed = sum(r.passed for r in results)
    failures = [(r, f) for r in results for f in r.failures]
    points = round(check.points * passed / total, 4) if total else 0.0
    if fate == "timeout":
        status, message = "timeout", "the cell ran past its wall-clock limit (code that waits or loops forever?)"
    elif fate == "died":
        status, message = "error", "the kernel died in this cell (os._exit, a crash, or out of memory)"
    elif fate == "not_run":
        status, message = "not_run", "the cell did not run"
    elif not records:
        status, message = "error", _error_text(cell) or "the check recorded no answers"
    elif not failures:
        status, message = "passed", ""
    elif any(f.code == "generic.timeout" for _, f in failures):
        status = "timeout"
    else:
        status = "failed"
    if failures and status in ("failed", "timeout") and fate not in ("timeout", "died", "not_run"):
        r, f = failures[0]
        message = f"{r.title}{' (hidden cases)' if r.hidden else ''}: {passed} of {total} cases passed. {f.message}"
    judged = failures and fate in ("ok", "error") and records
    misconception = failures[0][1].code if judged else None
    codes = sorted({f.code for _, f in failures}) if judged else []
    # cases lost to a limit: out of CPU time in the check, or every unanswered case of a cell stopped by the clock
    timed_out = total - passed if fate == "timeout" else sum(f.code == "generic.timeout" for _, f in failures)
    hidden_total, hidden_passed = sum(r.total for r in results if r.hidden), sum(r.passed for r in results if r.hidden)
    return {"id": check.grade_id, "points": points, "max_points": check.points, "status": status,
            "tampered": bool(tampered), "misconception": misconception, "message": message,
            "cases_passed": passed, "cases_total": total, "cases_timed_out": int(timed_out),
            "hidden_cases_passed": hidden_passed, "hidden_cases_total": hidden_total, "codes": codes}


# ------------------------------------------------------------------ one notebook
@dataclasses.dataclass(frozen=True)
class Submission:
    student: str
    notebook: str  # the source notebook's name, or the file's name when none matches
    path: pathlib.Path


def _empty_row(sub: Submission, source: Source | None, status: str, message: str) -> dict:
    checks = [] if source is None else [
        {"id": c.grade_id, "points": 0.0, "max_points": c.points, "status": "not_run", "tampered": False,
         "misconception": None, "message": message, "cases_passed": 0, "cases_total": 0, "cases_timed_out": 0,
         "hidden_cases_passed": 0, "hidden_cases_total": 0, "codes": []} for c in source.checks]
    return {"student": sub.student, "notebook": sub.notebook, "score": 0.0,
            "max_score": source.max_score if source else 0.0, "status": status, "message": message,
            "wall_timeouts": 0, "retried": False, "checks": checks}


def _read(path: pathlib.Path):
    nb = nbformat.read(path, as_version=4)
    if not nb.cells:
        raise ValueError("the notebook has no cells")
    return nb


def grade_notebook(sub: Submission, sources: dict[str, Source], *, timeout: int = DEFAULT_TIMEOUT,
                   memory: int = DEFAULT_MEMORY, sandbox: str = "none", uid: int | None = None,
                   seed: int | None = None, salt: str = "", hidden: Sequence[str] = (),
                   tmp_root: str | None = None, wall_factor: float = WALL_FACTOR) -> dict:
    """Grades one submission; never raises for anything in the submission.

    Args:
      timeout: CPU seconds per check cell for the student's function (shared by the cell's check calls).
      wall_factor: every cell's wall-clock backstop is ``wall_factor × timeout`` seconds.

    Returns:
      ``{"student", "notebook", "score", "max_score", "status", "message", "wall_timeouts", "retried",
      "checks": [...]}``, status ``graded``, ``unreadable`` (not a notebook, or empty) or ``unmatched`` (no
      source notebook fits); ``wall_timeouts`` counts the cells stopped by the wall-clock backstop.
    """
    source = sources.get(sub.notebook)
    try:
        nb = _read(sub.path)
    except Exception as err:  # noqa: BLE001 - any broken file is a row, not a crash
        return _empty_row(sub, source, "unreadable", f"not a readable notebook: {type(err).__name__}: {err}"[:300])
    if source is None:
        return _empty_row(sub, None, "unmatched", f"no source notebook matches {sub.path.name}")
    prepared = prepare(nb, source, lambda gid: check_seed(sub.student, gid, salt, seed), timeout)
    workdir = tempfile.mkdtemp(prefix="jtk-grade-", dir=tmp_root)
    try:
        shutil.copyfile(sub.path, os.path.join(workdir, sub.path.name))
        if uid is not None:
            for path in (workdir, os.path.join(workdir, sub.path.name)):
                os.chown(path, uid, uid)
        os.chmod(workdir, 0o700)
        fate = execute(prepared.nb, prepared.run, workdir=workdir, timeout=timeout * wall_factor, memory=memory,
                       sandbox=sandbox, uid=uid, hidden=hidden)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    checks = []
    for check in source.checks:
        index = prepared.check_cell[check.grade_id]
        checks.append(score_check(check, prepared.nb.cells[index], fate.get(index, "not_run"),
                                  prepared.seeds[check.grade_id], prepared.tampered[check.grade_id]))
    return {"student": sub.student, "notebook": sub.notebook, "score": round(sum(c["points"] for c in checks), 4),
            "max_score": source.max_score, "status": "graded", "message": "",
            "wall_timeouts": sum(f == "timeout" for f in fate.values()), "retried": False, "checks": checks}


# ------------------------------------------------------------------ a class
def _match(path: pathlib.Path, sources: dict[str, Source]) -> str:
    if path.name in sources:
        return path.name
    try:
        ids = {_nbgrader(c).get("grade_id") for c in nbformat.read(path, as_version=4).cells}
    except Exception:  # noqa: BLE001
        return path.name
    overlap = {name: len(ids & ({c.grade_id for c in s.checks} | s.answer_ids)) for name, s in sources.items()}
    best = max(overlap, key=overlap.get)
    return best if overlap[best] > 0 else path.name


def collect(paths: Iterable, sources: dict[str, Source]) -> list[Submission]:
    """Submissions from files and directories.

    A directory may hold nbgrader's layout ``DIR/<student>/[...]/<notebook>.ipynb`` (student = the
    first folder below DIR) and loose ``DIR/<student>.ipynb`` files; a file given directly counts as a
    loose file (student = its stem). A file is matched to the source notebook of the same name, else
    to the one whose grade_ids it carries.

    Raises:
      ValueError: a path that does not exist or is neither an .ipynb file nor a directory.
    """
    subs = []
    for raw in paths:
        path = pathlib.Path(raw)
        if path.is_file():
            if path.suffix != ".ipynb":
                raise ValueError(f"submission must be an .ipynb file or a directory, got {str(path)!r}")
            subs.append(Submission(path.stem, _match(path, sources), path))
        elif path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_file() and child.suffix == ".ipynb":
                    subs.append(Submission(child.stem, _match(child, sources), child))
                elif child.is_dir() and not child.name.startswith("."):
                    for nb in sorted(child.rglob("*.ipynb")):
                        if ".ipynb_checkpoints" not in nb.parts:
                            subs.append(Submission(child.name, _match(nb, sources), nb))
        else:
            raise ValueError(f"submission path does not exist: {str(path)!r}")
    return subs


_WORKER: dict = {}


def _init_worker(slots, sources, options) -> None:
    _WORKER.update(slot=slots.get(), sources=sources, options=options)


def _grade_in_worker(sub: Submission, wall_factor: float = WALL_FACTOR) -> dict:
    options = dict(_WORKER["options"], wall_factor=wall_factor)
    if options.pop("use_uid"):
        from jtk import sandbox as sb

        options["uid"] = sb.UID_BASE + _WORKER["slot"]
    return grade_notebook(sub, _WORKER["sources"], **options)


def grade_class(submissions: Sequence[Submission], sources: dict[str, Source], *, workers: int | None = None,
                timeout: int = DEFAULT_TIMEOUT, memory: int = DEFAULT_MEMORY, sandbox: str = "auto",
                seed: int | None = None, salt: str = "", hide: Sequence[str] = (), progress: bool = True) -> list[dict]:
    """Grades every submission in parallel worker processes; rows in the order of ``submissions``.

    Args:
      workers: worker processes (default: the number of cores).
      sandbox: ``auto``, ``none``, ``user`` or ``bwrap`` (:mod:`jtk.sandbox`).
      hide: paths kernels must not see (bwrap mode): the source directory, the submissions, outputs.
    """
    import concurrent.futures
    import multiprocessing

    from tqdm.auto import tqdm

    from jtk import sandbox as sb

    mode = sb.resolve(sandbox)
    workers = max(1, min(workers or os.cpu_count() or 1, len(submissions) or 1))
    tmp_root = tempfile.mkdtemp(prefix="jtk-grader-")
    os.chmod(tmp_root, 0o711 if mode == "user" else 0o700)
    options = dict(timeout=timeout, memory=memory, sandbox=mode, seed=seed, salt=salt,
                   hidden=tuple(hide) + (tmp_root,), tmp_root=tmp_root, use_uid=mode == "user")
    ctx = multiprocessing.get_context("spawn")
    slots = ctx.Queue()
    for k in range(workers):
        slots.put(k)
    rows: list[dict | None] = [None] * len(submissions)

    def collect(pool, indices, desc: str, wall_factor: float) -> None:
        futures = {pool.submit(_grade_in_worker, submissions[i], wall_factor): i for i in indices}
        bar = tqdm(total=len(futures), desc=desc, unit="notebook", disable=not progress)
        for future in concurrent.futures.as_completed(futures):
            i = futures[future]
            try:
                rows[i] = future.result()
            except Exception as err:  # noqa: BLE001 - a grader fault is a row too
                rows[i] = _empty_row(submissions[i], sources.get(submissions[i].notebook), "error",
                                     f"the grader failed: {type(err).__name__}: {err}"[:300])
            bar.update(1)
        bar.close()

    def pool_of(size: int):
        return concurrent.futures.ProcessPoolExecutor(size, mp_context=ctx, initializer=_init_worker,
                                                      initargs=(slots, sources, options))

    try:
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
        shutil.rmtree(tmp_root, ignore_errors=True)
    return rows  # type: ignore[return-value]


def timeout_summary(rows: Sequence[dict]) -> str | None:
    """One line for the instructor when cases were lost to a time limit (None when none was).

    E.g. ``3 cases timed out in 2 notebooks (alice/01_coin_joint.ipynb, ...): regrade with --only alice,bob``.
    """
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
    and a seaborn figure ``NAME.misconceptions.png``); returns the CSV's path."""
    path = pathlib.Path(path)
    _atomic_write(path, grades_frame(rows).to_csv(index=False).encode())
    summary = misconception_summary(rows)
    stem = path.with_suffix("")
    _atomic_write(stem.with_name(stem.name + ".misconceptions.csv"), summary.to_csv(index=False).encode())
    from jtk.plots.grading import misconception_figure

    fig = misconception_figure(summary, num_students=len({r["student"] for r in rows}))
    png = stem.with_name(stem.name + ".misconceptions.png")
    fig.savefig(png.with_name(f".{png.name}.tmp.png"), dpi=100, bbox_inches="tight")
    os.replace(png.with_name(f".{png.name}.tmp.png"), png)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


_STATUS_MARK = {"passed": "✅", "failed": "❌", "error": "⚠️", "timeout": "⏱️", "not_run": "–"}


def feedback_html(row: dict) -> str:
    """A student's feedback page for one notebook: each check's result, hint and misconception code, and the jtk
    version that graded it."""
    esc = html.escape
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
    """Writes ``DIRECTORY/<student>/<notebook>.html`` for every row; returns the paths."""
    out = []
    root = pathlib.Path(directory)
    for row in rows:
        folder = root / _safe_name(row["student"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (_safe_name(pathlib.Path(row["notebook"]).stem) + ".html")
        _atomic_write(path, feedback_html(row).encode())
        out.append(path)
    return out


def _safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).lstrip(".") or "_"

