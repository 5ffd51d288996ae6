"""jtk's grades in the import formats of the Canvas and Moodle gradebooks, with a late policy.

``jtk grade --csv grades.csv`` writes one row per (student, notebook). This module turns that file into the
CSV a learning management system imports: one row per student of the class roster, one column per exercise
(notebook). The pieces are pure functions on pandas DataFrames; ``jtk gradebook`` wires them to files.

* :func:`read_grades`, :func:`read_roster`, :func:`read_submitted`: read and validate the inputs.
* :func:`unmatched`: the submissions whose student is not in the roster (the command refuses them).
* :func:`apply_late_policy`: days late, penalty and final score per submission.
* :func:`to_canvas`, :func:`to_moodle`: the import files.

**Roster.** A CSV the instructor writes or exports from the LMS. Its *key* column holds jtk's ``student`` name
(the submission folder's name) and is, unless ``key=`` names another column, the first of ``student``,
``login``, ``sis_login_id`` and ``SIS Login ID`` that the roster has (names compared exactly, so Canvas's
``Student`` column, the display name, is never the key). The other columns are optional and read under these
names (first match wins):

===============  ============================================  ==========================================
column           also read from                                used for
===============  ============================================  ==========================================
name             ``Student``, ``Full name``                    Canvas ``Student`` (else the key)
id               ``ID``                                        Canvas ``ID`` (Canvas user id)
sis_user_id      ``SIS User ID``                               Canvas ``SIS User ID``
sis_login_id     ``SIS Login ID``                              Canvas ``SIS Login ID``
section          ``Section``                                   Canvas ``Section``
idnumber         ``ID number``                                 Moodle key (default)
email            ``Email``, ``Email address``                  Moodle key with ``key="email"``
extension_days   (none)                                        days added to the deadline for this student
===============  ============================================  ==========================================

so a Canvas gradebook export ("Export Entire Gradebook") is a roster as it is: its ``Points Possible`` row and
its test student (``Student, Test`` without a login) are skipped, and its ``SIS Login ID`` is the key when that
equals jtk's student names. Every value is read as text
(``007`` stays ``007``); an empty ``extension_days`` is 0.

**Matching.** A roster student without a submission for an exercise gets an *empty* cell, never 0: both LMSs read
an empty cell as "no grade" (below). A submission whose student is not in the roster is never dropped quietly:
:func:`unmatched` lists them and :func:`to_canvas` / :func:`to_moodle` raise :class:`UnmatchedStudents` unless
``allow_unmatched=True`` (then they are left out of the file; ``jtk gradebook`` still names them on stderr).
Rows of grades.csv with status ``unmatched`` (a file that is no notebook of the assignment, 0 points of 0) are
not exercises and get no column (:func:`exercise_rows`).

**Late policy** (:func:`apply_late_policy`). A student's deadline is ``deadline`` plus their ``extension_days``;
a submission ``d`` started days after it (any part of a day counts as a day) loses ``penalty_per_day × d ×
max_score`` points, and its score never goes below 0. Submission times come from a CSV with columns ``student,
notebook, submitted`` (ISO 8601, e.g. ``2025-03-01T23:59:00+01:00``); times and deadline must both carry a UTC
offset or both not.

**Canvas** (:func:`to_canvas`). What Canvas documents, in our words: its gradebook import reads a CSV whose
header starts with the student's name (``Student``), the Canvas user id (``ID``), optionally ``SIS User ID``
and ``SIS Login ID``, and ``Section`` as the last student column; every later column is one assignment
("How do I import grades in the Gradebook?", Instructure Community guide; the same list is quoted by Ohio State's
CarmenCanvas guide and ucfopen/Materia#1071). Canvas's importer (``GradebookImporter`` in instructure/canvas-lms,
``app/models/gradebook_importer.rb``) checks exactly that header (first cell matches ``Student``, second ``ID``,
the last student column ``Section``); takes a row whose first cell contains ``Points Possible`` as the
assignments' points possible; finds the student by Canvas id, else SIS User ID, else SIS Login ID, else by full or
sortable name; matches an assignment column by the id in ``Title (123)`` or by its exact title and otherwise
offers to create a new assignment; and treats an empty cell where Canvas has no grade as no change. So the file
has the columns ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column per notebook (its name, or
the title given in ``titles``), a ``Points Possible`` row with each notebook's ``max_score``, then one row per
roster student, in roster order.

**Moodle** (:func:`to_moodle`). What Moodle documents, in our words (MoodleDocs "Grade import"; Moodle's
``grade/import/csv/classes/load_data.php``): "Import grades from CSV" previews the file and asks which column
identifies the user ("Map from") and which user field it holds ("Map to"): the user id, the *ID number*, the
*email address* or the username; each other column is mapped to an existing grade item, a new grade item, or
ignored. An empty cell (or ``-``) is "no grade". A row whose user is not found stops the whole import, and a row
with an empty identifier is not looked up at all (it keeps the previous row's user), so :func:`to_moodle`
refuses a roster student without the key. Older MoodleDocs note that email addresses are compared
case-sensitively, and grades above the site's maximum grade (100 unless raised) stop the import. The file has
one key column, ``ID number`` (default) or ``Email address``, then one column per notebook; in Moodle map the key
column to "ID number" / "Email address" and each notebook column to its grade item.

Example:
  >>> import pandas as pd
  >>> grades = pd.DataFrame({"student": ["ana", "bo"], "notebook": ["01_coin"] * 2, "score": [8.0, 5.0],
  ...                        "max_score": [10.0] * 2, "status": ["graded"] * 2, "timed_out": [""] * 2})
  >>> roster = pd.DataFrame({"student": ["ana", "bo", "cy"], "idnumber": ["11", "12", "13"]})
  >>> to_moodle(grades, normalize_roster(roster))
    ID number  01_coin
  0        11      8.0
  1        12      5.0
  2        13      NaN
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import pathlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

# jtk grade --csv also writes timed_out and one column per check; files of jtk versions before timed_out are read too
GRADES_COLUMNS = ("student", "notebook", "score", "max_score", "status")
STATUSES = ("graded", "unreadable", "unmatched", "rejected", "error")
KEY_COLUMNS = ("student", "login", "sis_login_id", "SIS Login ID")
ROSTER_COLUMNS = {  # canonical name -> the headers read as it, in order of preference
    "name": ("name", "Student", "Full name"),
    "id": ("id", "ID"),
    "sis_user_id": ("sis_user_id", "SIS User ID"),
    "sis_login_id": ("sis_login_id", "SIS Login ID"),
    "section": ("section", "Section"),
    "idnumber": ("idnumber", "ID number"),
    "email": ("email", "Email", "Email address"),
    "extension_days": ("extension_days",),
}
CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "Points Possible"
CANVAS_TEST_STUDENT = ("Student, Test", "Test Student")
MOODLE_KEYS = {"idnumber": "ID number", "email": "Email address"}
LATE_COLUMNS = ("student", "notebook", "score", "max_score", "submitted", "deadline", "extension_days",
                "days_late", "penalty", "final_score")


class UnmatchedStudents(ValueError):
    """Submissions whose student is not in the roster; ``.students`` lists them (sorted)."""

    def __init__(self, students: Sequence[str]):
        self.students = sorted(students)
        super().__init__(f"grades: expected every submission's student in the roster, but {len(self.students)} "
                         f"{'is' if len(self.students) == 1 else 'are'} not: {', '.join(self.students)}")


def _shown(values, limit: int = 8) -> str:
    values = list(values)
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return ", ".join(str(v) for v in values[:limit]) + more


def _read_csv(path, what: str) -> pd.DataFrame:
    """A CSV as text cells, no missing-value guessing (:func:`jtk.course.untrusted.read_csv`); the grades CSV is
    jtk's own, so the ``'`` its writer put before a formula-like cell is taken off again."""
    from jtk.course import untrusted

    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"{what}: expected a CSV file, but {str(path)!r} does not exist"
                         + (" (it is a directory)" if path.is_dir() else ""))
    try:
        frame = untrusted.read_csv(path, dtype=str, skipinitialspace=False, jtk_written=what == "grades")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ValueError(f"{what}: expected a CSV file, could not read {str(path)!r}: "
                         f"{type(err).__name__}: {err}") from None
    frame.columns = [str(c).strip().lstrip("\ufeff") for c in frame.columns]
    return frame.apply(lambda col: col.str.strip())


# ------------------------------------------------------------------ inputs
def check_grades(grades: pd.DataFrame, what: str = "grades") -> pd.DataFrame:
    """Validates a grades table as ``jtk grade --csv`` writes it and returns it with numeric scores.

    Args:
      grades: columns ``student, notebook, score, max_score, status`` (then ``timed_out`` and one per check, not
        read here).
      what: the name of the input in messages.

    Returns:
      A copy with ``student`` and ``notebook`` as text and ``score`` and ``max_score`` as floats.

    Raises:
      ValueError: a column is missing, a score is not a finite number ≥ 0 or is above its max_score, a status is
        unknown, a (student, notebook) pair repeats, a notebook has two different max_scores, or there are no rows.
    """
    if not isinstance(grades, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(grades).__name__}")
    missing = [c for c in GRADES_COLUMNS if c not in grades.columns]
    if missing:
        raise ValueError(f"{what}: expected a jtk grades file (jtk grade --csv) with columns {', '.join(GRADES_COLUMNS)}, "
                         f"but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing "
                         f"(columns given: {_shown(grades.columns)})")
    if not len(grades):
        raise ValueError(f"{what}: expected at least one (student, notebook) row, got none")
    out = grades.copy()
    for col in ("student", "notebook", "status"):
        out[col] = out[col].fillna("").astype(str).str.strip()
    blank = out.index[(out.student == "") | (out.notebook == "")]
    if len(blank):
        raise ValueError(f"{what}: expected a student and a notebook in every row, but row(s) "
                         f"{_shown(i + 2 for i in blank)} (file lines) have an empty one")
    for col in ("score", "max_score"):
        raw = out[col]
        num = pd.to_numeric(raw, errors="coerce").astype(float)
        bad = out.index[~np.isfinite(num) | (num < 0)]
        if len(bad):
            raise ValueError(f"{what}: expected {col} to be a finite number ≥ 0, got "
                             + _shown(f"{out.student[i]}/{out.notebook[i]}: {raw[i]!r}" for i in bad))
        out[col] = num
    over = out.index[out.score > out.max_score]
    if len(over):
        raise ValueError(f"{what}: expected score ≤ max_score in every row, got "
                         + _shown(f"{out.student[i]}/{out.notebook[i]}: {out.score[i]:g} > {out.max_score[i]:g}"
                                  for i in over))
    unknown = sorted(set(out.status) - set(STATUSES))
    if unknown:
        raise ValueError(f"{what}: expected status {', '.join(STATUSES)} (a jtk grades file), got {_shown(unknown)}")
    dup = out[out.duplicated(["student", "notebook"], keep=False)]
    if len(dup):
        pairs = sorted({f"{s}/{n}" for s, n in zip(dup.student, dup.notebook)})
        raise ValueError(f"{what}: expected one row per (student, notebook), but these repeat: {_shown(pairs)}")
    faults = out[out.status == "error"]
    if len(faults):  # a grader fault is not a grade: it must not reach the LMS as a 0
        pairs = sorted({f"{s}/{n}" for s, n in zip(faults.student, faults.notebook)})
        raise ValueError(f"{what}: expected every notebook graded, but the grader failed on {_shown(pairs)} (status "
                         f"error): regrade them with jtk grade --only {','.join(sorted(set(faults.student)))}")
    ex = exercise_rows(out)
    maxes = ex.groupby("notebook")["max_score"].nunique()
    if (maxes > 1).any():
        raise ValueError(f"{what}: expected one max_score per notebook, but {_shown(maxes.index[maxes > 1])} "
                         f"{'has' if (maxes > 1).sum() == 1 else 'have'} several")
    return out


def read_grades(path) -> pd.DataFrame:
    """Reads and validates a grades CSV written by ``jtk grade --csv`` (see :func:`check_grades`)."""
    return check_grades(_read_csv(path, "grades"), what=f"grades {str(path)!r}")


def _frame(name: str, value) -> None:
    if not isinstance(value, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(value).__name__}")


def exercise_rows(grades: pd.DataFrame) -> pd.DataFrame:
    """The rows of a grades table that are exercises: all but status ``unmatched`` (no notebook of the
    assignment, 0 points of 0), which get no gradebook column."""
    _frame("grades", grades)
    return grades[grades.status != "unmatched"]


def normalize_roster(roster: pd.DataFrame, key: str | None = None, what: str = "roster") -> pd.DataFrame:
    """A roster with the canonical columns (see the module docstring), validated.

    Args:
      roster: the roster as read (any column names; values as text).
      key: the column holding jtk's student names; default the first of ``student``, ``login``,
        ``sis_login_id``, ``SIS Login ID``.
      what: the name of the input in messages.

    Returns:
      One row per student, in roster order, with columns ``student`` (the key), ``name``, ``id``, ``sis_user_id``,
      ``sis_login_id``, ``section``, ``idnumber``, ``email`` (text, ``""`` when absent) and ``extension_days``
      (float ≥ 0).

    Raises:
      ValueError: no key column, an empty or repeated key, or an ``extension_days`` that is not a number ≥ 0.
    """
    if not isinstance(roster, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(roster).__name__}")
    columns = [str(c).strip() for c in roster.columns]
    roster = roster.set_axis(columns, axis=1).fillna("").astype(str).apply(lambda col: col.str.strip())
    if key is not None:
        if key not in columns:
            raise ValueError(f"{what}: expected the key column {key!r} (--roster-key), but the roster's columns are "
                             f"{_shown(columns)}")
    else:
        key = next((c for c in KEY_COLUMNS if c in columns), None)
        if key is None:
            raise ValueError(f"{what}: expected a column with jtk's student names, one of {', '.join(KEY_COLUMNS)} "
                             f"(or name it with --roster-key), but the roster's columns are {_shown(columns)}")
    out = pd.DataFrame({"student": roster[key]})
    for canonical, names in ROSTER_COLUMNS.items():
        found = next((n for n in names if n in columns), None)
        out[canonical] = roster[found] if found is not None else ""
    # A Canvas gradebook export: its "Points Possible" row (and, in old exports, a "Muted" row) is no student, nor
    # is Canvas's "Test Student" (Student View) account, which has no SIS login.
    skip = ((out["name"] == CANVAS_POINTS_ROW)
            | ((out.student == "") & out["name"].isin(CANVAS_TEST_STUDENT))
            | roster.apply(lambda row: all(v in ("", "Muted") for v in row), axis=1))
    out = out[~skip].reset_index(drop=True)
    lines = [i + 2 for i in roster.index[~skip]]
    empty = [lines[i] for i in out.index[out.student == ""]]
    if empty:
        raise ValueError(f"{what}: expected a value in the key column {key!r} in every row, but line(s) "
                         f"{_shown(empty)} have none")
    dup = sorted(set(out.student[out.student.duplicated()]))
    if dup:
        raise ValueError(f"{what}: expected each student once in the key column {key!r}, but {_shown(dup)} repeat")
    if not len(out):
        raise ValueError(f"{what}: expected at least one student, got none")
    raw = out["extension_days"]
    days = pd.to_numeric(raw.replace("", "0"), errors="coerce").astype(float)
    bad = out.index[~np.isfinite(days) | (days < 0)]
    if len(bad):
        raise ValueError(f"{what}: expected extension_days to be a number of days ≥ 0 (or empty), got "
                         + _shown(f"{out.student[i]}: {raw[i]!r}" for i in bad))
    out["extension_days"] = days
    return out


def read_roster(path, key: str | None = None) -> pd.DataFrame:
    """Reads a roster CSV and validates it (see :func:`normalize_roster`)."""
    return normalize_roster(_read_csv(path, "roster"), key=key, what=f"roster {str(path)!r}")


def parse_time(text, what: str = "time") -> _dt.datetime:
    """An ISO 8601 date or time (``2025-03-01``, ``2025-03-01T23:59``, ``2025-03-01T23:59:00+01:00``, ``…Z``).

    >>> parse_time("2025-03-01T23:59:00Z")
    datetime.datetime(2025, 3, 1, 23, 59, tzinfo=datetime.timezone.utc)
    """
    if isinstance(text, _dt.datetime):
        return text
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{what}: expected an ISO 8601 time such as 2025-03-01T23:59:00+01:00, got {text!r}")
    try:
        return _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what}: expected an ISO 8601 time such as 2025-03-01T23:59:00+01:00, got {text!r}") from None


def check_submitted(submitted: pd.DataFrame, what: str = "submitted") -> pd.DataFrame:
    """Validates submission times: columns ``student, notebook, submitted`` (ISO 8601), one row per pair.

    Returns:
      A copy whose ``submitted`` column holds :class:`datetime.datetime` objects.
    """
    if not isinstance(submitted, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(submitted).__name__}")
    missing = [c for c in ("student", "notebook", "submitted") if c not in submitted.columns]
    if missing:
        raise ValueError(f"{what}: expected columns student, notebook, submitted, but {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing (columns given: {_shown(submitted.columns)})")
    out = submitted[["student", "notebook", "submitted"]].copy()
    out["student"] = out.student.astype(str).str.strip()
    out["notebook"] = out.notebook.astype(str).str.strip()
    out["submitted"] = [parse_time(t, f"{what}: {s}/{n}") for s, n, t in zip(out.student, out.notebook, out.submitted)]
    dup = out[out.duplicated(["student", "notebook"], keep=False)]
    if len(dup):
        pairs = sorted({f"{s}/{n}" for s, n in zip(dup.student, dup.notebook)})
        raise ValueError(f"{what}: expected one time per (student, notebook), but these repeat: {_shown(pairs)}")
    aware = {t.utcoffset() is not None for t in out.submitted}
    if len(aware) > 1:
        raise ValueError(f"{what}: expected every time with a UTC offset or none without, got a mix")
    return out


def read_submitted(path) -> pd.DataFrame:
    """Reads a CSV of submission times (see :func:`check_submitted`)."""
    return check_submitted(_read_csv(path, "submitted"), what=f"submitted {str(path)!r}")


# ------------------------------------------------------------------ matching and late policy
def unmatched(grades: pd.DataFrame, roster: pd.DataFrame) -> list[str]:
    """The students of ``grades`` who are not in the (normalized) roster, sorted."""
    _frame("grades", grades), _frame("roster", roster)
    return sorted(set(grades.student) - set(roster.student))


def days_late(submitted: _dt.datetime | str, deadline: _dt.datetime | str) -> int:
    """Days started after the deadline: 0 if on time, 1 for up to 24 h late, 2 for up to 48 h, …

    Both are datetimes or ISO 8601 text (:func:`parse_time`), both with a time zone or both without.

    >>> import datetime as dt
    >>> d = dt.datetime(2025, 3, 1, 12)
    >>> [days_late(d + dt.timedelta(hours=h), d) for h in (-1, 0, 0.01, 24, 24.5)]
    [0, 0, 1, 1, 2]
    """
    submitted, deadline = parse_time(submitted, "submitted"), parse_time(deadline, "deadline")
    if (submitted.tzinfo is None) != (deadline.tzinfo is None):
        raise ValueError(f"submitted, deadline: expected both with a time zone or both without, got {submitted} "
                         f"and {deadline}")
    seconds = (submitted - deadline).total_seconds()
    return max(0, math.ceil(seconds / 86400))


def apply_late_policy(grades: pd.DataFrame, submitted: pd.DataFrame, deadline, *, penalty_per_day: float = 0.0,
                      roster: pd.DataFrame | None = None) -> pd.DataFrame:
    """Days late, penalty and final score for every exercise row of ``grades``.

    Args:
      grades: a validated grades table (:func:`check_grades`).
      submitted: submission times (:func:`check_submitted`); every exercise row needs one.
      deadline: the deadline for everybody (ISO 8601 text or a datetime).
      penalty_per_day: the fraction of the exercise's max_score lost per started day late, in [0, 1]
        (0.1 = 10 % a day).
      roster: a normalized roster whose ``extension_days`` move a student's deadline; None for no extensions.
        Students not in it get none.

    Returns:
      One row per exercise row of ``grades`` with the columns ``student, notebook, score`` (raw), ``max_score,
      submitted, deadline`` (the student's, extension included), ``extension_days, days_late, penalty`` (points
      taken off) and ``final_score = max(0, score - penalty_per_day × days_late × max_score)``.

    Raises:
      ValueError: a bad deadline or penalty, a submission without a time, or times and deadline not all with (or
        all without) a UTC offset.
    """
    deadline = parse_time(deadline, "deadline")
    if isinstance(penalty_per_day, bool) or not isinstance(penalty_per_day, (int, float, np.floating)) \
            or not 0 <= float(penalty_per_day) <= 1:
        raise ValueError(f"penalty_per_day: expected a fraction of the max score in [0, 1] (0.1 = 10 % a day), "
                         f"got {penalty_per_day!r}")
    rows = exercise_rows(grades)
    times = {(s, n): t for s, n, t in zip(submitted.student, submitted.notebook, submitted.submitted)}
    absent = [f"{s}/{n}" for s, n in zip(rows.student, rows.notebook) if (s, n) not in times]
    if absent:
        raise ValueError(f"submitted: expected a submission time for every graded notebook, but "
                         f"{len(absent)} have none: {_shown(sorted(absent))}")
    if times and any((t.utcoffset() is None) != (deadline.utcoffset() is None) for t in times.values()):
        raise ValueError(f"deadline: expected {'a UTC offset' if deadline.utcoffset() is None else 'no UTC offset'} "
                         f"like the submission times (both with one, e.g. +01:00 or Z, or both without), got "
                         f"{deadline.isoformat()}")
    extension = {} if roster is None else dict(zip(roster.student, roster.extension_days))
    records = []
    for s, n, score, top in zip(rows.student, rows.notebook, rows.score, rows.max_score):
        ext = float(extension.get(s, 0.0))
        own = deadline + _dt.timedelta(days=ext)
        late = days_late(times[(s, n)], own)
        final = round(max(0.0, score - penalty_per_day * late * top), 10)
        records.append({"student": s, "notebook": n, "score": score, "max_score": top,
                        "submitted": times[(s, n)].isoformat(), "deadline": own.isoformat(), "extension_days": ext,
                        "days_late": late, "penalty": round(score - final, 10), "final_score": final})
    return pd.DataFrame(records, columns=list(LATE_COLUMNS))


# ------------------------------------------------------------------ outputs
def _check_normalized(roster) -> pd.DataFrame:
    """``roster`` as :func:`normalize_roster` returns it (its columns, at least one student), else a clear error."""
    if not isinstance(roster, pd.DataFrame):
        raise TypeError(f"roster: expected a pandas DataFrame from normalize_roster or read_roster, got "
                        f"{type(roster).__name__}")
    needed = ["student", *ROSTER_COLUMNS]
    missing = [c for c in needed if c not in roster.columns]
    if missing:
        raise ValueError(f"roster: expected a normalized roster (normalize_roster / read_roster) with columns "
                         f"{', '.join(needed)}, but {_shown(missing)} missing (columns given: {_shown(roster.columns)})")
    if not len(roster):
        raise ValueError("roster: expected at least one student, got none")
    return roster


def _table(grades, roster, late, titles, allow_unmatched) -> tuple[pd.DataFrame, pd.Series]:
    """Roster students × exercises (NaN where no submission) and each exercise's max_score; columns titled."""
    grades, roster = check_grades(grades), _check_normalized(roster)
    missing = unmatched(grades, roster)
    if missing and not allow_unmatched:
        raise UnmatchedStudents(missing)
    rows = exercise_rows(grades)
    if late is not None:
        final = {(s, n): f for s, n, f in zip(late.student, late.notebook, late.final_score)}
        absent = [f"{s}/{n}" for s, n in zip(rows.student, rows.notebook) if (s, n) not in final]
        if absent:
            raise ValueError(f"late: expected a row for every graded notebook, missing {_shown(absent)}")
        rows = rows.assign(score=[final[(s, n)] for s, n in zip(rows.student, rows.notebook)])
    notebooks = sorted(set(rows.notebook))
    titles = dict(titles or {})
    unknown = sorted(set(titles) - set(notebooks))
    if unknown:
        raise ValueError(f"titles: expected notebooks of the grades ({_shown(notebooks)}), got {_shown(unknown)}")
    named = [titles.get(n, n) for n in notebooks]
    if len(set(named)) != len(named):
        raise ValueError(f"titles: expected one column title per notebook, got repeated titles {_shown(named)}")
    scores = rows.pivot(index="student", columns="notebook", values="score").reindex(
        index=roster.student, columns=notebooks)
    top = rows.groupby("notebook")["max_score"].first().reindex(notebooks)
    scores.columns, top.index = named, named
    return scores.reset_index(drop=True).astype(float), top.astype(float)


def to_canvas(grades: pd.DataFrame, roster: pd.DataFrame, *, late: pd.DataFrame | None = None,
              titles: Mapping[str, str] | None = None, allow_unmatched: bool = False) -> pd.DataFrame:
    """The Canvas gradebook import (see the module docstring for what Canvas reads).

    Args:
      grades: a validated grades table (:func:`check_grades`).
      roster: a normalized roster (:func:`normalize_roster`); one output row per student, in its order.
      late: :func:`apply_late_policy`'s table; its ``final_score`` replaces the raw score.
      titles: column title per notebook, e.g. ``{"01_coin": "Lab 1 (4321)"}`` to hit an existing Canvas
        assignment by id; default the notebook's name.
      allow_unmatched: leave out submissions whose student is not in the roster instead of raising.

    Returns:
      Columns ``Student, ID, SIS User ID, SIS Login ID, Section`` and one per notebook; row 0 is ``Points
      Possible`` (each notebook's max_score), then one row per roster student, NaN where they have no submission.

    Raises:
      UnmatchedStudents: a submission's student is not in the roster (and ``allow_unmatched`` is False).
    """
    scores, top = _table(grades, roster, late, titles, allow_unmatched)
    info = pd.DataFrame({"Student": [n or s for n, s in zip(roster["name"], roster.student)],
                         "ID": list(roster["id"]), "SIS User ID": list(roster["sis_user_id"]),
                         "SIS Login ID": list(roster["sis_login_id"]), "Section": list(roster["section"])})
    points = pd.DataFrame([[CANVAS_POINTS_ROW, "", "", "", "", *top.tolist()]],
                          columns=[*CANVAS_STUDENT_COLUMNS, *top.index])
    body = pd.concat([info, scores], axis=1)
    out = pd.concat([points, body], ignore_index=True)
    out[list(top.index)] = out[list(top.index)].astype(float)
    return out


def to_moodle(grades: pd.DataFrame, roster: pd.DataFrame, *, key: str = "idnumber",
              late: pd.DataFrame | None = None, titles: Mapping[str, str] | None = None,
              allow_unmatched: bool = False) -> pd.DataFrame:
    """The Moodle "Import grades from CSV" file (see the module docstring for what Moodle reads).

    Args:
      grades: a validated grades table (:func:`check_grades`).
      roster: a normalized roster (:func:`normalize_roster`); one output row per student, in its order.
      key: ``"idnumber"`` (column ``ID number``, map it to "ID number") or ``"email"`` (column ``Email address``).
      late: :func:`apply_late_policy`'s table; its ``final_score`` replaces the raw score.
      titles: column title per notebook (default the notebook's name).
      allow_unmatched: leave out submissions whose student is not in the roster instead of raising.

    Returns:
      The key column, then one column per notebook; NaN where a student has no submission.

    Raises:
      ValueError: ``key`` unknown, or a roster student without that key (Moodle would give the row to the previous
        row's user), or a key that repeats.
      UnmatchedStudents: a submission's student is not in the roster (and ``allow_unmatched`` is False).
    """
    if key not in MOODLE_KEYS:
        raise ValueError(f"key: expected one of {', '.join(MOODLE_KEYS)}, got {key!r}")
    values = roster[key]
    blank = list(roster.student[values == ""])
    if blank:
        raise ValueError(f"roster: expected a {key} ({MOODLE_KEYS[key]}) for every student (Moodle matches rows by "
                         f"it), but {_shown(blank)} {'has' if len(blank) == 1 else 'have'} none")
    dup = sorted(set(values[values.duplicated()]))
    if dup:
        raise ValueError(f"roster: expected each {key} once (Moodle matches rows by it), but {_shown(dup)} repeat")
    scores, _ = _table(grades, roster, late, titles, allow_unmatched)
    return pd.concat([pd.DataFrame({MOODLE_KEYS[key]: list(values)}), scores], axis=1)


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The CSV text of an import table: empty cells for missing grades, numbers without float noise, and no text
    cell that a spreadsheet would run as a formula (:func:`jtk.course.untrusted.csv_frame`: names come from
    students)."""
    from jtk.course import untrusted

    _frame("frame", frame)
    return untrusted.csv_frame(frame).to_csv(index=False, na_rep="", float_format="%.10g").encode()


def late_path(out) -> pathlib.Path:
    """Where the late-policy report goes beside an output: ``grades_canvas.csv`` → ``grades_canvas.late.csv``."""
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (str or pathlib.Path), got {type(out).__name__} {out!r}")
    out = pathlib.Path(out)
    return out.with_name(out.with_suffix("").name + ".late.csv")


def write(frame: pd.DataFrame, path) -> pathlib.Path:
    """Writes an import table (or the late report) atomically: a temporary file, then a rename."""
    _frame("frame", frame)
    from jtk.results import write_atomic

    return write_atomic(os.fspath(path), csv_bytes(frame))
