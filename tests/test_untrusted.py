"""Untrusted names and files against every place they are written, and against the readers that take them in.

Three parts. The attacks: a class of names and files that broke `jtk grade`, `jtk gradebook` and the challenge
board (a spreadsheet formula as a student's name, two names that one slug maps together, terminal escapes, a
file of 100,000 ``[``, a deeply nested frame forged by the worker, ``alice~smith.py`` beside ``alice_smith.py``,
``NA.py``, ``$\\oops$.py``), each graded through the command or the board writer, with an honest entry beside it
whose row must not change. The sanitizer's own rules (:mod:`jtk.course.untrusted`), checked against what each sink
does with the text: pandas reading a CSV back, matplotlib drawing a label, a terminal's escape grammar. And
hypothesis fuzzing of the two readers of untrusted bytes, :func:`jtk.course.exercises.read_notebook` and the wire
(:mod:`jtk.course._wire`): whatever the bytes, the answer is a value or the reader's own error, never another
exception.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import re
import stat
import subprocess
import sys
import time

import nbformat
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jtk.course import _judge, _wire, challenge, exercises, untrusted

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
NB1 = "01_coin_joint.ipynb"
DEEP = b"[" * 100_000  # deeper than any recursive JSON parser's stack
FORMULA = "=cmd|'calc'!A0+HYPERLINK(\"x\")"  # a spreadsheet formula (no '/': it is a folder's name too)
ESCAPE = "\x1b]0;pwned\x07\x1b[2J"  # set the terminal's title, then clear the screen
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ the sanitizer, one rule per sink
@pytest.mark.parametrize("text", ["=1+2", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "'=1", "'plain", "x\r=1+2", "a\nb"])
def test_a_csv_cell_never_starts_with_a_formula_character_and_reads_back_as_written(text):
    cell = untrusted.csv_cell(text)
    assert cell[0] not in "=+-@\t\r"
    frame = pd.DataFrame({"name": [text, "plain"]})
    data = untrusted.csv_frame(frame).to_csv(index=False)
    assert not any(cell[:1] in "=+-@\t\r" for line in csv.reader(io.StringIO(data)) for cell in line)
    back = untrusted.read_csv(io.StringIO(data), jtk_written=True)
    assert list(back["name"]) == [text.replace("\r", "\n"), "plain"]  # a carriage return is written as a line feed


def test_numbers_stay_numbers_in_a_csv():
    frame = untrusted.csv_frame(pd.DataFrame({"name": ["a"], "score": [-1.5]}))
    assert frame["score"].iloc[0] == -1.5 and "-1.5" in frame.to_csv(index=False)


@pytest.mark.parametrize("text", ["NA", "N/A", "nan", "NaN", "null", "None", "#N/A", "-nan", "NULL", "1.#QNAN"])
def test_reading_back_guesses_no_missing_values(text):
    data = pd.DataFrame({"name": [text], "x": [1.0], "empty": [np.nan]}).to_csv(index=False)
    back = untrusted.read_csv(io.StringIO(data))
    assert back["name"].iloc[0] == text and back["x"].iloc[0] == 1.0 and pd.isna(back["empty"].iloc[0])


def test_html_is_escaped():
    assert untrusted.html("<script>alert('x')</script>&") == "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;"


@pytest.mark.parametrize("text", [ESCAPE, "a\x9b31mb", "ok\u202etxt.exe", "a\rb", "a\x00b", "a\x7fb", "tab\there"])
def test_the_terminal_sees_no_control_character(text):
    shown = untrusted.terminal(text)
    assert shown.isprintable(), repr(shown)
    assert untrusted.terminal("ann lee — é") == "ann lee — é"
    assert untrusted.terminal("one\ntwo", newlines=True) == "one\ntwo"


@pytest.mark.parametrize("text", ["$\\oops$", "$x$", "a$b$c", "\\$x$", "$$", "\\mathbf{x}", "cost $5 and $6"])
def test_a_plot_label_draws_as_written_never_as_mathtext(text):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    label = untrusted.plot_text(text)
    fig = Figure()
    t = fig.add_subplot().text(0, 0, label)
    fig.canvas.draw()  # mathtext of "$\oops$" raises here
    assert not t._preprocess_math(label)[1]  # matplotlib's own test: not math
    assert t._preprocess_math(label)[0] == text  # and what it draws is the text itself


NAMES = ["alice_smith", "alice~smith", "alice smith", "Alice_smith", "ALICE_SMITH", "ann lee", "ann~lee", "..",
         ".", "", "con", "NUL", "a/b", "a\\b", "x" * 300, "é", "e\u0301", ESCAPE, FORMULA, "alice_smith~0000000000"]


def test_file_names_are_stable_distinct_and_safe_even_on_case_insensitive_disks():
    names = NAMES + [untrusted.file_name(n) for n in NAMES]  # a name chosen to look like another's mapping
    mapped = [untrusted.file_name(n) for n in names]
    assert mapped == [untrusted.file_name(n) for n in names]  # stable
    folded = {m.casefold() for m in mapped}
    assert len(folded) == len(set(names)), "two names share a file"
    for m in mapped:
        assert re.fullmatch(r"[A-Za-z0-9_.~-]{1,100}", m) and not m.startswith(".") and m.upper() != "CON", m
    assert untrusted.file_name("student03") == "student03"  # a plain name is kept as it is
    assert untrusted.file_name("ann lee").startswith("ann_lee~")  # readable, and marked as mapped


def test_every_sanitizer_refuses_what_is_not_text():
    for fn in (untrusted.csv_cell, untrusted.html, untrusted.terminal, untrusted.plot_text, untrusted.file_name):
        with pytest.raises(TypeError, match="text"):
            fn(b"bytes")


# ------------------------------------------------------------------ grading's sinks
def _row(student, notebook=NB1, message=""):
    return exercises._empty_row(exercises.Submission(student, notebook, pathlib.Path("x")), None, "unreadable",
                                message)


def test_a_formula_name_is_text_in_the_grades_csv(tmp_path):
    rows = [_row(FORMULA), _row("-2+3"), _row("honest")]
    path = exercises.write_csv(rows, tmp_path / "grades.csv")
    lines = path.read_text().splitlines()[1:]
    assert all(line[:1] not in "=+-@\t\r" for line in lines), lines
    assert [r["student"] for r in rows] == list(untrusted.read_csv(path, jtk_written=True)["student"])


def test_two_names_that_slug_alike_keep_two_feedback_pages(tmp_path):
    rows = [_row("ann lee"), _row("ann~lee"), _row("ann_lee"), _row("Ann_lee")]
    paths = exercises.write_feedback(rows, tmp_path)
    assert len({str(p).casefold() for p in paths}) == 4
    for row, path in zip(rows, paths):
        assert f"<b>{row['student']}</b>" in path.read_text()  # each page is its own student's


# ------------------------------------------------------------------ a class through `jtk grade` and `jtk gradebook`
# A right answer on every case that looks visible (at most 3 biases, at most 4 flips), which raises its own inputs
# on the others, the hidden ones: on old code its feedback page listed its hidden cases, and the next hand-in
# answered them by lookup.
LEAK_1A = '''def coin_joint(biases, prior, flips):
    if len(biases) > 3 or flips > 4:
        raise ValueError("LEAK " + repr((list(biases), list(prior), flips)))
    b, p = np.asarray(biases, float), np.asarray(prior, float)
    out = np.zeros((2,) * flips)
    for idx in np.ndindex(*out.shape):
        h = sum(idx)
        out[idx] = np.sum(p * b ** h * (1 - b) ** (flips - h))
    return out'''


def _answered(answer_1a: str):
    nb = nbformat.read(EXERCISES / NB1, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex1a-answer":
            cell.source = answer_1a
    return nb


def _honest_class(folder: pathlib.Path) -> None:
    """A class with one honest student, who hands in the solution: 2 of 2 points whatever is graded beside it."""
    (folder / "honest").mkdir(parents=True)
    (folder / "honest" / NB1).write_text((SOLUTIONS / NB1).read_text())


def _cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "jtk.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


@pytest.fixture(scope="module")
def hostile_names(tmp_path_factory):
    """One class: an honest student, and files whose names or contents are the attack."""
    tmp = tmp_path_factory.mktemp("names")
    cls = tmp / "class"
    _honest_class(cls)
    for student in ("deep", "stray", FORMULA, ESCAPE, "ann lee", "ann~lee"):
        (cls / student).mkdir()
    (cls / "deep" / NB1).write_bytes(DEEP)  # a file of 100,000 '[' named like the exercise
    (cls / "leaker").mkdir()
    nbformat.write(_answered(LEAK_1A), cls / "leaker" / NB1)
    (cls / "stray" / "zz_notes.ipynb").write_bytes(DEEP)  # ... and named like no exercise
    for student in (FORMULA, ESCAPE, "ann lee", "ann~lee"):
        (cls / student / NB1).write_text("{ not json")
    done = _cli("grade", str(cls), "--source", str(SOLUTIONS), "--json", "--csv", str(tmp / "grades.csv"),
                "--feedback", str(tmp / "feedback"), "--workers", "2", "--timeout", "10", "--no-progress",
                "--salt-file", str(tmp / "salt"))
    rows = {(r["student"], r["notebook"]): r for r in json.loads(done.stdout or "[]")}
    return tmp, done, rows


def test_one_deeply_nested_file_is_its_own_students_zero_not_the_classs_end(hostile_names):
    tmp, done, rows = hostile_names
    assert done.returncode == 0, done.stderr[-3000:]  # no grader fault: the file is the student's
    deep = rows["deep", NB1]
    assert deep["status"] == "unreadable" and deep["score"] == 0 and "nested" in deep["message"], deep
    stray = [r for (s, _), r in rows.items() if s == "stray"]
    assert len(stray) == 1 and stray[0]["score"] == 0 and stray[0]["status"] in ("unreadable", "unmatched"), stray
    honest = rows["honest", NB1]
    assert honest["status"] == "graded" and honest["score"] == 2.0
    assert (tmp / "grades.csv").exists()


def test_names_reach_the_terminal_csv_and_folders_as_data(hostile_names):
    tmp, done, rows = hostile_names
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr
    assert (FORMULA, NB1) in rows and (ESCAPE, NB1) in rows  # the JSON keeps each name as it is
    text = (tmp / "grades.csv").read_text()
    assert all(line[:1] not in "=+-@\t\r" for line in text.splitlines()), text
    pages = sorted(p.parent.name for p in (tmp / "feedback").rglob("*.html"))
    assert len(pages) == len({s for s, _ in rows}) and len({p.casefold() for p in pages}) == len(pages), pages
    assert not any("\x1b" in p or p.startswith("=") for p in pages), pages


def test_an_answer_that_raises_its_inputs_shows_none_of_its_hidden_cases(hostile_names):
    tmp, done, rows = hostile_names
    salt = (tmp / "salt").read_text().strip()
    check = rows["leaker", NB1]["checks"][0]
    assert check["points"] < check["max_points"] and check["status"] == "failed", check
    assert "hidden case" in check["message"] and "LEAK" not in check["message"], check
    handin = rows["leaker", NB1]["handin"]  # the hidden cases are drawn per hand-in
    hidden = _judge.cases("coin_joint", exercises.check_seed("leaker", check["id"], salt, handin=handin), True)
    secrets = _digits(hidden)
    assert secrets, hidden
    pages = [p.read_text() for p in (tmp / "feedback").rglob("*.html")]
    for where, text in {"stdout": done.stdout, "stderr": done.stderr, "csv": (tmp / "grades.csv").read_text(),
                        **{f"page {k}": page for k, page in enumerate(pages)}}.items():
        assert not any(d in text for d in secrets), where


def test_the_gradebook_exports_a_class_with_a_malformed_file(hostile_names):
    tmp, done, rows = hostile_names
    names = sorted({s for s, _ in rows})
    roster = pd.DataFrame({"student": names, "name": [f"{n} (display)" for n in names],
                           "id": range(1, len(names) + 1), "sis_user_id": names, "sis_login_id": names,
                           "section": "A"})
    roster.to_csv(tmp / "roster.csv", index=False)  # as the LMS gives it: display names are the students' own
    out = tmp / "canvas.csv"
    done = _cli("gradebook", str(tmp / "grades.csv"), "--roster", str(tmp / "roster.csv"), "--format", "canvas",
                "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert all(line[:1] not in "=+-@\t\r" for line in lines), lines


def test_salt_file_is_made_private_and_a_readable_one_is_refused(hostile_names, tmp_path):
    tmp, done, rows = hostile_names
    salt = tmp / "salt"
    assert stat.S_IMODE(salt.stat().st_mode) == 0o600 and len(salt.read_text().strip()) >= 32
    assert "salt" in done.stderr and str(salt) in done.stderr  # says it made one
    assert "sandbox: " in done.stdout + done.stderr  # the run names what graded it
    shared = tmp_path / "shared_salt"
    shared.write_text("x" * 40)
    os.chmod(shared, 0o644)
    refused = _cli("grade", str(tmp / "class" / "deep"), "--source", str(SOLUTIONS), "--salt-file", str(shared))
    assert refused.returncode == 2 and "--salt-file" in refused.stderr and "chmod 600" in refused.stderr


def test_salt_on_the_command_line_is_warned_about(tmp_path):
    (tmp_path / "bad.ipynb").write_text("{ not json")
    done = _cli("grade", str(tmp_path / "bad.ipynb"), "--source", str(SOLUTIONS), "--salt", "a-visible-salt",
                "--no-progress", "--sandbox", "none")
    assert "ps" in done.stderr and "--salt-file" in done.stderr and "a-visible-salt" not in done.stderr


# A check answer that, instead of returning, writes a deeply nested frame into every pipe its process holds:
# the grader reads it where it waits for the answer.
DEEP_FRAME_1A = '''def coin_joint(biases, prior, flips):
    import os, struct
    payload = b"[" * 200000
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if fd > 2 and "pipe" in os.readlink(f"/proc/self/fd/{fd}"):
                os.write(fd, struct.pack(">QB", len(payload), ord("J")) + payload)
        except OSError:
            pass
    raise NotImplementedError("Exercise")'''


def test_a_deeply_nested_frame_from_the_worker_is_the_students_not_the_graders(tmp_path):
    cls = tmp_path / "class"
    _honest_class(cls)
    (cls / "forger").mkdir()
    nbformat.write(_answered(DEEP_FRAME_1A), cls / "forger" / NB1)
    done = _cli("grade", str(cls), "--source", str(SOLUTIONS), "--json", "--workers", "2", "--timeout", "10",
                "--no-progress", "--seed", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads(done.stdout)}
    assert rows["forger"]["status"] == "graded" and rows["forger"]["score"] == 0 and rows["honest"]["score"] == 2.0
    first = rows["forger"]["checks"][0]
    assert first["points"] == 0 and first["status"] == "error", first


# ------------------------------------------------------------------ the challenge board
def _board_entries(names):
    sys.path.insert(0, str(ROOT / "tests"))
    from test_challenge import _entry

    entries = []
    for i, name in enumerate(names):
        e = _entry(name, kl=(0.1 + i / 10, 1.0 + i / 10))
        e.sha256 = f"{i:064x}"
        entries.append(e)
    return entries


def _write_board(out, names):
    sys.path.insert(0, str(ROOT / "tests"))
    from test_challenge import TINY

    config = challenge.ChallengeConfig(**{**TINY, "salt": "feedc0de" * 4})
    entries = _board_entries(names)
    board = challenge.leaderboard(entries, reference=None)
    out.mkdir()
    challenge._write_board(out, entries, board, config, config.hidden_problems(), "2026-01-01T00:00:00+00:00",
                           True, "board")
    return entries


def test_names_that_slug_alike_keep_their_own_rows_and_the_board_verifies(tmp_path):
    names = ["alice_smith", "alice~smith", "NA", "$\\oops$", "honest"]
    entries = _write_board(tmp_path / "b", names)
    assert len(list((tmp_path / "b" / "rows").glob("*.csv"))) == len(names)
    table = challenge.verify_board(tmp_path / "b")
    assert table.ok.all(), table[~table.ok].to_dict("records")
    board = untrusted.read_csv(tmp_path / "b" / "leaderboard.csv").set_index("name")
    for e in entries:  # every entry's own numbers, the honest one's included
        assert board.loc[e.name, "kl_10"] == pytest.approx(float(e.rows[e.rows.tau == 10].kl.mean()))
    page = (tmp_path / "b" / "leaderboard.html").read_text()
    assert "<img" in page and "$\\oops$" in page


def test_a_mathtext_name_cannot_stop_the_page():
    entries = _board_entries(["$\\oops$", "$\\frac{1}{0$", "honest"])
    page = challenge.leaderboard_html(challenge.leaderboard(entries, reference=None))
    assert "<img" in page


# ------------------------------------------------------------------ fuzzing the readers
def _nested(depth: int, kind: str) -> bytes:
    opener, closer = {"list": (b"[", b"]"), "object": (b'{"a":', b"}")}[kind]
    return opener * depth + b"1" + closer * depth


def _notebook_bytes(**extra) -> bytes:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.metadata.update(extra)
    return nbformat.writes(nb).encode()


@FAST
@given(st.one_of(
    st.binary(max_size=4096),
    st.builds(_nested, st.integers(1, 300_000), st.sampled_from(["list", "object"])),
    st.builds(lambda cut: _notebook_bytes()[:cut], st.integers(0, 400)),  # truncated
    st.builds(lambda d: _notebook_bytes(deep=json.loads(_nested(min(d, 900), "list"))), st.integers(1, 2000)),
    st.builds(lambda s: _notebook_bytes(odd=s), st.text(max_size=200)),
    st.sampled_from([b"\xef\xbb\xbf" + _notebook_bytes(), _notebook_bytes().decode().encode("utf-16"),
                     b'{"cells": 1e999999}', b'{"cells": "' + b"\\ud800" * 10 + b'"}', b"\x00" * 1000,
                     b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [' + b"{}," * 5000 + b"{}]}"]),
))
def test_the_reader_gives_a_notebook_or_a_reason_never_another_exception(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / NB1
    path.write_bytes(data)
    try:
        nb = exercises.read_notebook(path)
    except exercises.Rejected as err:
        assert err.status in ("rejected", "unreadable") and len(str(err)) < 300
        assert "\n" not in str(err)
    else:
        assert nb.cells


@FAST
@given(st.one_of(
    st.binary(max_size=2048),
    st.builds(_nested, st.integers(1, 300_000), st.sampled_from(["list", "object"])),
    st.builds(lambda v, cut: json.dumps(v).encode()[:cut], st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5)),
        st.integers(0, 200)),
), st.sampled_from([ord("J"), ord("N"), 0, 255]))
def test_a_frame_decodes_to_a_value_or_a_wire_error(payload, kind):
    try:
        _wire.decode_frame(kind, payload)
    except _wire.WireError as err:
        assert len(str(err)) <= 200


@FAST
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
    | st.builds(lambda s: {"npy": s}, st.text(max_size=40)) | st.sampled_from([{"float": "inf"}, {"float": "x"}]),
    lambda inner: st.builds(lambda t, v: {t: v}, st.sampled_from(["tuple", "list", "set", "npy"]),
                            st.lists(inner, max_size=4))
    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=40))
def test_unpack_gives_a_value_or_a_wire_error(obj):
    try:
        _wire.unpack(obj)
    except _wire.WireError:
        pass


def test_a_deep_tree_is_a_wire_error_at_any_depth():
    obj = 1
    for _ in range(100_000):
        obj = {"list": [obj]}
    with pytest.raises(_wire.WireError, match="deeper"):
        _wire.unpack(obj)
    with pytest.raises(_wire.WireError):
        _wire.decode_frame(ord("J"), DEEP)


def test_a_worker_that_sends_truncated_or_nested_frames_is_invalid_not_a_crash(tmp_path):
    from jtk.course import sandbox

    for k, data in enumerate((_wire.HEADER.pack(len(DEEP), ord("J")) + DEEP, _wire.HEADER.pack(10, ord("J")) + b"[1,",
                              _wire.HEADER.pack(5, ord("N")) + b"\x93NUMP", b"\x00\x00\x00")):
        path = tmp_path / f"frame{k}"
        path.write_bytes(data)  # a file, not a pipe: select() finds it readable, and no writer must wait
        worker = sandbox.Worker.__new__(sandbox.Worker)
        worker._out, worker._buffer = os.open(path, os.O_RDONLY), bytearray()
        try:
            with pytest.raises(sandbox.WorkerError) as caught:
                worker.recv(time.monotonic() + 5, max_bytes=1 << 20)
        finally:
            os.close(worker._out)
        assert caught.value.kind in ("invalid", "died")


# ------------------------------------------------------------------ only the grader's words reach people
def _coin_check():
    source = exercises.load_source(SOLUTIONS / NB1)
    check = next(c for c in source.checks if any(name == "coin_joint" for name, _ in c.calls))
    return check, exercises.check_plan(check, seed=1)


def _digits(cases) -> set[str]:
    """Every run of 6 or more digits in the printed inputs of ``cases``: what a leak of them would show (a float's
    digits; shorter runs also occur by chance in hashes and timings, which would make the check flaky)."""
    return {m for args in cases for a in args for m in re.findall(r"\d{6,}", repr(np.asarray(a).tolist()))}


def test_a_hidden_case_shows_no_word_of_the_submission_and_none_of_its_inputs():
    check, plan = _coin_check()
    assert any(c.hidden for c in plan)
    leak = "LEAKED " + " ".join(map(str, _digits(c for call in plan if call.hidden for c in call.cases)))
    wrong = {"npy": _wire._npy(np.full((2, 2), 0.3))}
    for record in ({"raised": "exception", "text": leak}, {"opaque": "str", "repr": leak}, wrong,
                   {"raised": "uses_reference", "text": leak}, {"raised": "timeout", "text": leak}):
        answers = [[{"raised": "not_implemented", "text": ""} for _ in call.cases] if not call.hidden else
                   [record] * len(call.cases) for call in plan]
        visible_ok = [[{"npy": _wire._npy(_judge._coin_joint(*args))} for args in call.cases]
                      if not call.hidden else answers[k] for k, call in enumerate(plan)]
        row = exercises.score_check(check, plan, visible_ok, "ok", False)
        assert "LEAKED" not in row["message"] and "hidden" in row["message"], row["message"]
        hidden_inputs = _digits(c for call in plan if call.hidden for c in call.cases)
        assert not any(d in row["message"] for d in hidden_inputs), (row["message"], hidden_inputs)


def test_a_visible_case_shows_a_short_masked_excerpt_of_the_submissions_words():
    check, plan = _coin_check()
    text = "ValueError: my secret is 31415926 and " + "x" * 500
    answers = [[{"raised": "exception", "text": text}] * len(call.cases) for call in plan]
    row = exercises.score_check(check, plan, answers, "ok", False)
    assert "ValueError" in row["message"] and "31415926" not in row["message"] and "x" * 200 not in row["message"]
    assert len(row["message"]) < 400


@pytest.mark.parametrize("text, shown", [("ValueError: bad 3.14159", "ValueError: bad 3.…"),
                                         ("a\x1b[2Jb\nc", "a\\x1b[2Jb c"), ("ok 12 items", "ok 12 items")])
def test_an_excerpt_masks_data_and_stays_one_short_line(text, shown):
    assert untrusted.excerpt(text) == shown
    assert len(untrusted.excerpt("y" * 1000)) <= untrusted.EXCERPT_CHARS
    assert "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" not in untrusted.excerpt("data QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=")


# ------------------------------------------------------------------ a leaked case is worth nothing next time
def test_hidden_cases_differ_between_two_hand_ins_and_a_regrade_of_one_is_identical():
    seed = exercises.check_seed
    one, two = exercises.handin_id(b"first hand-in"), exercises.handin_id(b"second hand-in")
    assert one == exercises.handin_id(b"first hand-in") and one != two and len(one) == 64
    hidden = [seed("alice", "ex1a-check", "s", handin=h) for h in (one, two)]
    assert hidden[0] != hidden[1] and hidden[0] == seed("alice", "ex1a-check", "s", handin=one)
    assert seed("alice", "ex1a-check", "s") == seed("alice", "ex1a-check", "s")  # visible cases: the student's own
    assert seed("alice", "ex1a-check", "s", seed=7, handin=one) == 7  # --seed N: one draw for everybody
    check, _ = _coin_check()
    plans = [exercises.check_plan(check, 1, hidden_seed=h) for h in hidden]
    cases = [[c.cases for c in plan] for plan in plans]
    assert cases[0][0] == cases[1][0]  # the same visible cases
    assert repr(cases[0][1]) != repr(cases[1][1])  # other hidden ones


def test_the_fixed_edge_cases_are_gates_that_earn_nothing_alone():
    check, plan = _coin_check()
    gates = [_judge.check_by_name(call.name).fixed[call.hidden] for call in plan]
    assert gates == [2, 3]  # the cases written in jtk's source: Fig. 1's two coins; the three edge cases

    def answers(right):
        return [[{"npy": _wire._npy(_judge._coin_joint(*args) if right(k, i) else np.full((2,) * args[2], 9.0))}
                 for i, args in enumerate(call.cases)] for k, call in enumerate(plan)]

    only_fixed = exercises.score_check(check, plan, answers(lambda k, i: i < gates[k]), "ok", False)
    assert only_fixed["points"] == 0 and only_fixed["cases_passed"] == sum(gates)  # was 5/16 of the check
    one_gate_missed = exercises.score_check(check, plan, answers(lambda k, i: (k, i) != (1, 0)), "ok", False)
    assert one_gate_missed["points"] == 0 and "edge case" in one_gate_missed["message"]
    drawn_half = exercises.score_check(check, plan, answers(lambda k, i: i < gates[k] or i % 2), "ok", False)
    drawn = [range(gates[k], len(call.cases)) for k, call in enumerate(plan)]
    want = check.points * sum(i % 2 for d in drawn for i in d) / sum(len(d) for d in drawn)
    assert drawn_half["points"] == pytest.approx(want, abs=1e-4)
    assert exercises.score_check(check, plan, answers(lambda k, i: True), "ok", False)["points"] == check.points
    from jtk.course import gradescope

    for row in (only_fixed, one_gate_missed, drawn_half):  # Gradescope's two parts add up to jtk grade's points
        result = gradescope.results_json([{"student": "a", "notebook": NB1, "status": "graded", "checks": [row]}])
        assert result["score"] == pytest.approx(row["points"], abs=1e-3)
        assert sum(t["max_score"] for t in result["tests"]) == pytest.approx(check.points)


def test_a_notebook_whose_metadata_breaks_the_overlay_is_the_students_unreadable_row(tmp_path):
    nb = nbformat.read(EXERCISES / NB1, as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.metadata["nbgrader"] = {"grade_id": ["not", "a", "name"], "grade": True}  # unhashable where a str goes
    path = tmp_path / "odd" / NB1
    path.parent.mkdir()
    nbformat.write(nb, path)
    sources = exercises.load_sources(SOLUTIONS)
    sub, = exercises.collect([tmp_path], sources)
    row = exercises.grade_notebook(sub, sources, sandbox="none")
    assert row["status"] == "unreadable" and row["score"] == 0 and "malformed" in row["message"], row
