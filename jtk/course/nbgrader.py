"""jtk's exercises in an nbgrader course: each solution notebook is an nbgrader source notebook as it is.

One owner, no translation. ``solutions/NAME.ipynb`` carries nbgrader's own cell metadata (schema 3), and ``jtk
grade`` reads its checks and points from that same metadata, so :func:`write_course` copies the sources byte for
byte into an nbgrader course (``COURSE/source/ASSIGNMENT/NAME.ipynb``) and writes an ``nbgrader_config.py`` beside
them. Nothing is generated from the sources, so nothing can drift from them. The roles (:func:`roles`):

* an **answer** cell is nbgrader's "Autograded answer": ``solution: true, grade: false, locked: false``, the answer
  between ``### BEGIN SOLUTION`` and ``### END SOLUTION``;
* a **check** cell is nbgrader's "Autograder tests": ``grade: true, solution: false, locked: true`` and ``points``
  equal to jtk's points, the hidden cases between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``;
* every **other** cell (set-up, prose, demonstrations) has no nbgrader metadata: not graded, not locked.

The configuration written with them makes nbgrader's release and grading agree with jtk's (:func:`config_text`):

* ``ClearSolutions.code_stub`` is jtk's placeholder line, so nbgrader's released answer cells are exactly the
  answer cells of ``exercises/`` (nbgrader drops a hidden-tests region where jtk leaves a one-line note).
* ``Execute.timeout`` is ``jtk grade``'s wall-clock backstop per cell (``WALL_FACTOR × DEFAULT_TIMEOUT`` seconds).
* ``IgnorePattern`` drops warnings from standard error before grading: nbgrader gives 0 points to a test cell
  with any output on standard error, ``jtk grade`` judges only the answers.

What nbgrader does not do as ``jtk grade`` does is listed in docs/nbgrader.md ("Differences"): one set of fresh
cases per run instead of per-student cases from a seed, all or nothing per check cell instead of points per case,
and no sandbox or CPU-time budget.
"""

from __future__ import annotations

import pathlib

import nbformat

from jtk import _checks
from jtk.course import exercises

CONFIG_NAME = "nbgrader_config.py"
WARNING_PATTERN = r"Warning|WARNING"
"""stderr outputs matching this are removed before nbgrader grades (Python's and JAX's warnings)."""


def _cells(path: pathlib.Path):
    try:
        return nbformat.read(path, as_version=4).cells
    except Exception as err:  # noqa: BLE001
        raise ValueError(f"source notebook {path} is not readable: {err}") from None


def roles(path) -> dict[str, str]:
    """The nbgrader role of every cell of a jtk source notebook that has one, checked against jtk's mapping.

    Args:
      path: a solution (source) notebook.

    Returns:
      ``{grade_id: "answer" | "check"}`` in cell order.

    Raises:
      ValueError: naming the notebook and cell, for metadata nbgrader would refuse or jtk would grade differently:
        a schema other than 3, a missing or repeated grade_id, a check cell that is not a locked code cell with
        the points ``jtk grade`` reads, an answer cell without its BEGIN/END SOLUTION markers, or markers or hidden
        tests in a cell of another role.
    """
    path = _checks.path("path", path)
    source = exercises.load_source(path)  # jtk's own reading: the checks and their points
    points = {c.grade_id: c.points for c in source.checks}
    found: dict[str, str] = {}
    for i, cell in enumerate(_cells(path)):
        meta = cell.get("metadata", {}).get("nbgrader")
        where = f"{path.name} cell {i}"
        text = cell.get("source", "")
        if meta is None:
            if exercises.BEGIN in text or exercises.BEGIN_HIDDEN in text:
                raise ValueError(f"{where} has BEGIN SOLUTION / BEGIN HIDDEN TESTS markers but no nbgrader metadata "
                                 f"(expected solution: true for an answer, grade: true for a check)")
            continue
        gid = meta.get("grade_id")
        if meta.get("schema_version") != 3:
            raise ValueError(f"{where}: expected nbgrader schema_version 3, got {meta.get('schema_version')!r}")
        if not gid or gid in found:
            raise ValueError(f"{where}: expected a unique non-empty grade_id, got {gid!r}")
        if meta.get("grade") and not meta.get("solution"):
            want = (cell.cell_type == "code", meta.get("locked") is True, meta.get("points") == points.get(gid))
            if not all(want):
                raise ValueError(f"{where} ({gid!r}): a check must be a locked code cell with points "
                                 f"{points.get(gid)!r}; got {cell.cell_type} cell, locked {meta.get('locked')!r}, "
                                 f"points {meta.get('points')!r}")
            found[gid] = "check"
        elif meta.get("solution") and not meta.get("grade"):
            if cell.cell_type != "code" or exercises.BEGIN not in text or exercises.END not in text:
                raise ValueError(f"{where} ({gid!r}): an answer must be a code cell with {exercises.BEGIN!r} and "
                                 f"{exercises.END!r}; got a {cell.cell_type} cell without them")
            found[gid] = "answer"
        else:
            raise ValueError(f"{where} ({gid!r}): expected an answer (solution: true, grade: false) or a check "
                             f"(grade: true, solution: false), got solution {meta.get('solution')!r}, grade "
                             f"{meta.get('grade')!r}")
        if exercises.BEGIN_HIDDEN in text and found[gid] != "check":
            raise ValueError(f"{where} ({gid!r}): hidden tests belong in a check cell")
    return found


def config_text(course_id: str = "jtk") -> str:
    """The ``nbgrader_config.py`` :func:`write_course` writes (see the module's docstring)."""
    import jtk

    if not isinstance(course_id, str) or not course_id.strip():
        raise ValueError(f"course_id must be a non-empty str (nbgrader's CourseDirectory.course_id), got {course_id!r}")

    wall = exercises.DEFAULT_TIMEOUT * exercises.WALL_FACTOR
    return f'''# nbgrader's configuration for jtk's exercises, written by `jtk exercises nbgrader` (jtk {jtk.__version__}).
# The notebooks in source/ are jtk's solution notebooks, copied unchanged; see jtk's docs/nbgrader.md.
c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = {course_id!r}
# Released answer cells read as jtk's exercises/: the answer region becomes jtk's placeholder line.
c.ClearSolutions.code_stub = {{"python": {exercises.PLACEHOLDER!r}}}
# Wall-clock seconds per cell, as `jtk grade`'s backstop (WALL_FACTOR x the default budget of {exercises.DEFAULT_TIMEOUT} s).
c.Execute.timeout = {wall}
# A warning on stderr must not cost a check that passes (nbgrader gives 0 to a test cell with stderr output).
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = {WARNING_PATTERN!r}
'''


def write_course(course, solutions_dir="solutions", *, assignment: str | None = None, course_id: str = "jtk",
                 force: bool = False) -> list[pathlib.Path]:
    """Writes an nbgrader course's source folder and configuration from jtk's solution notebooks.

    Args:
      course: the course directory (created if missing); nbgrader commands run there.
      solutions_dir: jtk's source notebooks (``solutions/``).
      assignment: put every notebook into this one assignment; default: one assignment per notebook, named as the
        notebook without ``.ipynb`` (``source/01_coin_joint/01_coin_joint.ipynb``).
      course_id: nbgrader's ``CourseDirectory.course_id``.
      force: overwrite files that exist with other contents (the configuration, source notebooks).

    Returns:
      The paths written (the configuration first), each source notebook byte-identical to its solution.

    Raises:
      ValueError: ``solutions_dir`` holds no source notebooks, a notebook's metadata does not map onto nbgrader
        (:func:`roles`), an invalid assignment name, or a file that differs exists and ``force`` is False.
    """
    _checks.path("course", course), _checks.path("solutions_dir", solutions_dir)
    config_text(course_id)  # checks course_id before anything is read or written
    if assignment is not None and not isinstance(assignment, str):
        raise TypeError(f"assignment must be a folder name (str) or None, got {type(assignment).__name__}")
    sources = sorted(exercises.load_sources(solutions_dir))  # validates: a directory of readable sources
    if assignment is not None and (not assignment or assignment.strip(".") == "" or "/" in assignment):
        raise ValueError(f"assignment must be a folder name (no '/'), got {assignment!r}")
    src = pathlib.Path(solutions_dir)
    for name in sources:
        roles(src / name)
    course = pathlib.Path(course)
    plan = [(course / CONFIG_NAME, config_text(course_id).encode())]
    for name in sources:
        folder = assignment or pathlib.Path(name).stem
        plan.append((course / "source" / folder / name, (src / name).read_bytes()))
    clash = [str(path) for path, data in plan if path.exists() and path.read_bytes() != data]
    if clash and not force:
        raise ValueError(f"files exist with other contents: {', '.join(clash)}; pass force=True (--force) to "
                         f"overwrite them")
    for path, data in plan:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return [path for path, _ in plan]
