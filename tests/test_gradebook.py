"""jtk gradebook: grades.csv → Canvas / Moodle gradebook imports, roster matching and the late policy."""

from __future__ import annotations

import datetime as dt
import math
import re

import pandas as pd
import pytest

from jtk import cli
from jtk.course import gradebook

# A class of five on the roster (dee never submitted, cy skipped 02_jll) and zed, who is not on it.
GRADES_CSV = """\
student,notebook,score,max_score,status,timed_out,coin_1a,jll_2a
ana,01_coin,8.0,10.0,graded,,8.0,
ana,02_jll,4.0,5.0,graded,,,4.0
ana,notes,0.0,0.0,unmatched,,,
bo,01_coin,10.0,10.0,graded,,10.0,
bo,02_jll,3.0,5.0,graded,,,3.0
cy,01_coin,1.0,10.0,graded,,1.0,
eve,01_coin,7.5,10.0,graded,,7.5,
eve,02_jll,5.0,5.0,graded,jll_2a,,5.0
"""
ZED = "zed,01_coin,6.0,10.0,graded,,6.0,\n"
ROSTER_CSV = """\
student,name,id,sis_user_id,sis_login_id,section,idnumber,email,extension_days
ana,"Alvarez, Ana",101,S1,ana,A,1001,ana@uni.edu,
bo,"Bauer, Bo",102,S2,bo,A,1002,bo@uni.edu,0
cy,"Chen, Cy",103,S3,cy,B,1003,cy@uni.edu,
dee,"Diaz, Dee",104,S4,dee,B,1004,dee@uni.edu,
eve,"Engel, Eve",105,S5,eve,B,1005,eve@uni.edu,2
"""
DEADLINE = "2025-03-01T23:59:00+01:00"
# bo: 01_coin 1 day and 1 minute late (2 started days); cy: 1 hour late with 1 point → floored at 0;
# eve (2 days' extension): 01_coin 1.5 days after the deadline (on time), 02_jll 2.5 days after (1 day late).
SUBMITTED_CSV = """\
student,notebook,submitted
ana,01_coin,2025-03-01T20:00:00+01:00
ana,02_jll,2025-03-01T23:59:00+01:00
bo,01_coin,2025-03-03T00:00:00+01:00
bo,02_jll,2025-02-28T10:00:00+01:00
cy,01_coin,2025-03-02T00:59:00+01:00
eve,01_coin,2025-03-03T11:59:00+01:00
eve,02_jll,2025-03-03T23:59:00Z
"""


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in {"grades": GRADES_CSV, "roster": ROSTER_CSV, "submitted": SUBMITTED_CSV}.items():
        paths[name] = tmp_path / f"{name}.csv"
        paths[name].write_text(text)
    return paths


def _grades(tmp_path, text=GRADES_CSV):
    path = tmp_path / "g.csv"
    path.write_text(text)
    return gradebook.read_grades(path)


def _roster(tmp_path, text=ROSTER_CSV, key=None):
    path = tmp_path / "r.csv"
    path.write_text(text)
    return gradebook.read_roster(path, key=key)


def _cells(frame, column):
    return [None if isinstance(v, float) and math.isnan(v) else v for v in frame[column]]


# ------------------------------------------------------------------ library
def test_canvas_table_cell_by_cell(tmp_path):
    table = gradebook.to_canvas(_grades(tmp_path), _roster(tmp_path))
    assert list(table.columns) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_coin", "02_jll"]
    assert table.iloc[0].tolist() == ["Points Possible", "", "", "", "", 10.0, 5.0]
    assert table["Student"].tolist()[1:] == ["Alvarez, Ana", "Bauer, Bo", "Chen, Cy", "Diaz, Dee", "Engel, Eve"]
    assert table["ID"].tolist()[1:] == ["101", "102", "103", "104", "105"]
    assert table["SIS User ID"].tolist()[1:] == ["S1", "S2", "S3", "S4", "S5"]
    assert table["SIS Login ID"].tolist()[1:] == ["ana", "bo", "cy", "dee", "eve"]
    assert table["Section"].tolist()[1:] == ["A", "A", "B", "B", "B"]
    assert _cells(table, "01_coin")[1:] == [8.0, 10.0, 1.0, None, 7.5]
    assert _cells(table, "02_jll")[1:] == [4.0, 3.0, None, None, 5.0]  # no submission → empty, not 0


def test_moodle_table_by_id_number_and_by_email(tmp_path):
    grades, roster = _grades(tmp_path), _roster(tmp_path)
    table = gradebook.to_moodle(grades, roster)
    assert list(table.columns) == ["ID number", "01_coin", "02_jll"]
    assert table["ID number"].tolist() == ["1001", "1002", "1003", "1004", "1005"]
    assert _cells(table, "01_coin") == [8.0, 10.0, 1.0, None, 7.5]
    assert _cells(table, "02_jll") == [4.0, 3.0, None, None, 5.0]
    by_email = gradebook.to_moodle(grades, roster, key="email")
    assert list(by_email.columns) == ["Email address", "01_coin", "02_jll"]
    assert by_email["Email address"].tolist()[0] == "ana@uni.edu"
    assert _cells(by_email, "02_jll") == _cells(table, "02_jll")


def test_a_submission_not_in_the_roster_is_refused_with_its_name(tmp_path):
    grades, roster = _grades(tmp_path, GRADES_CSV + ZED), _roster(tmp_path)
    assert gradebook.unmatched(grades, roster) == ["zed"]
    for convert in (gradebook.to_canvas, gradebook.to_moodle):
        with pytest.raises(gradebook.UnmatchedStudents, match="zed") as err:
            convert(grades, roster)
        assert err.value.students == ["zed"]
    table = gradebook.to_canvas(grades, roster, allow_unmatched=True)
    assert len(table) == 1 + 5 and "zed" not in set(table["SIS Login ID"])


def test_late_policy_with_extension_and_floor(tmp_path):
    grades, roster = _grades(tmp_path), _roster(tmp_path)
    path = tmp_path / "s.csv"
    path.write_text(SUBMITTED_CSV)
    late = gradebook.apply_late_policy(grades, gradebook.read_submitted(path), DEADLINE, penalty_per_day=0.1,
                                       roster=roster)
    assert list(late.columns) == list(gradebook.LATE_COLUMNS)
    by = late.set_index(["student", "notebook"])
    expect = {  # (days_late, penalty, final_score)
        ("ana", "01_coin"): (0, 0.0, 8.0), ("ana", "02_jll"): (0, 0.0, 4.0),  # exactly at the deadline: on time
        ("bo", "01_coin"): (2, 2.0, 8.0), ("bo", "02_jll"): (0, 0.0, 3.0),
        ("cy", "01_coin"): (1, 1.0, 0.0),  # 1 point − 10 % of 10 → floored at 0
        ("eve", "01_coin"): (0, 0.0, 7.5),  # inside the 2-day extension
        ("eve", "02_jll"): (1, 0.5, 4.5),  # 23:59Z = 00:59+01:00 on 4 March: 1 h past the extended deadline
    }
    assert set(by.index) == set(expect)  # the unmatched-status row is no exercise
    for pair, (days, penalty, final) in expect.items():
        assert (by.loc[pair, "days_late"], by.loc[pair, "penalty"], by.loc[pair, "final_score"]) == \
            (days, pytest.approx(penalty), pytest.approx(final)), pair
    assert by.loc[("eve", "02_jll"), "deadline"] == "2025-03-03T23:59:00+01:00"
    assert by.loc[("eve", "02_jll"), "extension_days"] == 2.0 and by.loc[("eve", "02_jll"), "score"] == 5.0
    table = gradebook.to_canvas(grades, roster, late=late)
    assert _cells(table, "01_coin")[1:] == [8.0, 8.0, 0.0, None, 7.5]
    assert _cells(table, "02_jll")[1:] == [4.0, 3.0, None, None, 4.5]


def test_days_late_counts_started_days():
    d = dt.datetime(2025, 3, 1, 12)
    assert [gradebook.days_late(d + dt.timedelta(hours=h), d) for h in (-30, 0, 0.001, 24, 24.001, 72)] == \
        [0, 0, 1, 1, 2, 3]


def test_titles_rename_columns(tmp_path):
    table = gradebook.to_canvas(_grades(tmp_path), _roster(tmp_path), titles={"01_coin": "Lab 1 (4321)"})
    assert list(table.columns)[5:] == ["Lab 1 (4321)", "02_jll"]
    with pytest.raises(ValueError, match="titles: expected notebooks of the grades"):
        gradebook.to_canvas(_grades(tmp_path), _roster(tmp_path), titles={"03_nope": "x"})


def test_a_canvas_gradebook_export_is_a_roster(tmp_path):
    export = ('Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (4321),Current Score\n'
              '    Points Possible,,,,,10.00,(read only)\n'
              '"Alvarez, Ana",101,S1,ana,A,,\n'
              '"Student, Test",999,,,A,,\n'
              '"Bauer, Bo",102,S2,bo,A,7,\n')
    roster = _roster(tmp_path, export)
    assert roster.student.tolist() == ["ana", "bo"] and roster["name"].tolist() == ["Alvarez, Ana", "Bauer, Bo"]
    assert roster["id"].tolist() == ["101", "102"] and roster.extension_days.tolist() == [0.0, 0.0]


def test_roster_key_rule(tmp_path):
    text = "login,Student,ID number\n007,Bond,7\n"
    roster = _roster(tmp_path, text)
    assert roster.student.tolist() == ["007"] and roster["name"].tolist() == ["Bond"]  # text kept as written
    assert roster.idnumber.tolist() == ["7"]
    assert _roster(tmp_path, "who,ID number\nana,1\n", key="who").student.tolist() == ["ana"]
    with pytest.raises(ValueError, match="one of student, login, sis_login_id, SIS Login ID.*Student, ID number"):
        _roster(tmp_path, "Student,ID number\nBond,7\n")  # Canvas's display name is never the key
    with pytest.raises(ValueError, match="key column 'who'"):
        _roster(tmp_path, "student\nana\n", key="who")


@pytest.mark.parametrize("text, message", [
    ("student,extension_days\nana,-1\n", "extension_days to be a number of days ≥ 0.*ana: '-1'"),
    ("student,extension_days\nana,two\n", "extension_days.*'two'"),
    ("student\nana\nana\n", "each student once.*ana"),
    ("student,name\n,Ana\n", "key column 'student' in every row.*line"),
])
def test_bad_rosters(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        _roster(tmp_path, text)


@pytest.mark.parametrize("text, message", [
    ("student,notebook,points\nana,01_coin,3\n", "jtk grades file.*score, max_score, status are missing"),
    (GRADES_CSV.replace("8.0,10.0", "eight,10.0"), "score to be a finite number ≥ 0.*ana/01_coin: 'eight'"),
    (GRADES_CSV.replace("bo,01_coin,10.0,10.0", "bo,01_coin,10.0,12.0"), "one max_score per notebook.*01_coin"),
    (GRADES_CSV + "ana,01_coin,8.0,10.0,graded,,8.0,\n", "one row per \\(student, notebook\\).*ana/01_coin"),
    (GRADES_CSV.replace("cy,01_coin,1.0,10.0,graded", "cy,01_coin,1.0,10.0,done"), "expected status.*done"),
    ("student,notebook,score,max_score,status\n", "at least one"),
])
def test_bad_grades_files(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        _grades(tmp_path, text)


def test_moodle_refuses_a_student_without_the_key(tmp_path):
    roster = _roster(tmp_path, ROSTER_CSV.replace(",1004,dee@uni.edu", ",,dee@uni.edu"))
    with pytest.raises(ValueError, match="idnumber \\(ID number\\) for every student.*dee"):
        gradebook.to_moodle(_grades(tmp_path), roster)
    assert len(gradebook.to_moodle(_grades(tmp_path), roster, key="email")) == 5
    with pytest.raises(ValueError, match="key: expected one of idnumber, email, got 'username'"):
        gradebook.to_moodle(_grades(tmp_path), roster, key="username")


def test_late_policy_bad_inputs(tmp_path):
    grades = _grades(tmp_path)
    path = tmp_path / "s.csv"
    path.write_text(SUBMITTED_CSV)
    submitted = gradebook.read_submitted(path)
    with pytest.raises(ValueError, match="penalty_per_day: expected a fraction.*-0.1"):
        gradebook.apply_late_policy(grades, submitted, DEADLINE, penalty_per_day=-0.1)
    with pytest.raises(ValueError, match="deadline: expected an ISO 8601 time.*'next friday'"):
        gradebook.apply_late_policy(grades, submitted, "next friday")
    with pytest.raises(ValueError, match="deadline: expected a UTC offset like the submission times"):
        gradebook.apply_late_policy(grades, submitted, "2025-03-01T23:59:00")
    with pytest.raises(ValueError, match="submission time for every graded notebook.*bo/02_jll"):
        gradebook.apply_late_policy(grades, submitted[submitted.notebook != "02_jll"], DEADLINE)
    path.write_text(SUBMITTED_CSV.replace("2025-02-28T10:00:00+01:00", "yesterday"))
    with pytest.raises(ValueError, match="bo/02_jll: expected an ISO 8601 time.*'yesterday'"):
        gradebook.read_submitted(path)


# ------------------------------------------------------------------ the command
def test_cli_canvas_end_to_end_with_late_policy(files, tmp_path, capsys):
    out = tmp_path / "canvas.csv"
    code = cli.main(["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "canvas",
                     "--out", str(out), "--deadline", DEADLINE, "--submitted", str(files["submitted"]),
                     "--penalty-per-day", "0.1"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "5 students x 2 exercises" in printed.out and "3 late submission(s), 3.5 points taken off" in printed.out
    assert "notes" in printed.err  # the unmatched-status row is named, not silently dropped
    back = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(back.columns) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_coin", "02_jll"]
    assert back.iloc[0].tolist() == ["Points Possible", "", "", "", "", "10", "5"]
    assert back.iloc[1].tolist() == ["Alvarez, Ana", "101", "S1", "ana", "A", "8", "4"]
    assert back.iloc[2].tolist() == ["Bauer, Bo", "102", "S2", "bo", "A", "8", "3"]  # 10 − 2 days × 10 %
    assert back.iloc[3].tolist() == ["Chen, Cy", "103", "S3", "cy", "B", "0", ""]  # floored; no submission
    assert back.iloc[4].tolist() == ["Diaz, Dee", "104", "S4", "dee", "B", "", ""]
    assert back.iloc[5].tolist() == ["Engel, Eve", "105", "S5", "eve", "B", "7.5", "4.5"]
    assert out.read_text().splitlines()[5] == '"Diaz, Dee",104,S4,dee,B,,'  # empty cells, not 0 or NaN
    late = pd.read_csv(tmp_path / "canvas.late.csv")
    assert list(late.columns) == list(gradebook.LATE_COLUMNS)
    row = late[(late.student == "eve") & (late.notebook == "02_jll")].iloc[0]
    assert (row.score, row.days_late, row.penalty, row.final_score, row.extension_days) == (5.0, 1, 0.5, 4.5, 2.0)


def test_cli_moodle_end_to_end(files, tmp_path, capsys):
    out = tmp_path / "moodle.csv"
    assert cli.main(["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "moodle",
                     "--out", str(out)]) == 0
    assert out.read_text().splitlines() == ["ID number,01_coin,02_jll", "1001,8,4", "1002,10,3", "1003,1,",
                                            "1004,,", "1005,7.5,5"]
    assert not (tmp_path / "moodle.late.csv").exists()
    out2 = tmp_path / "moodle_email.csv"
    assert cli.main(["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "moodle",
                     "--moodle-key", "email", "--title", "02_jll=Lab 2", "--out", str(out2)]) == 0
    assert out2.read_text().splitlines()[:2] == ["Email address,01_coin,Lab 2", "ana@uni.edu,8,4"]


def test_cli_refuses_unmatched_students_and_writes_nothing(files, tmp_path, capsys):
    files["grades"].write_text(GRADES_CSV + ZED)
    out = tmp_path / "canvas.csv"
    args = ["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "canvas",
            "--out", str(out)]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "zed (01_coin)" in err and "Nothing was written" in err and "--allow-unmatched" in err
    assert not out.exists()
    assert cli.main([*args, "--allow-unmatched"]) == 0
    assert "left out 1 student(s) not in the roster: zed (01_coin)" in capsys.readouterr().err
    assert "zed" not in out.read_text()


def test_cli_refuses_an_existing_out_unless_forced(files, tmp_path, capsys):
    out = tmp_path / "canvas.csv"
    out.write_text("keep me\n")
    args = ["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "canvas",
            "--out", str(out)]
    assert cli.main(args) == 2
    assert "exists; pass --force" in capsys.readouterr().err and out.read_text() == "keep me\n"
    assert cli.main([*args, "--force"]) == 0 and out.read_text().startswith("Student,ID,")
    assert cli.main(["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "canvas",
                     "--out", str(files["grades"]), "--force"]) == 2
    assert "other than the inputs" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--deadline", "soon", "--submitted", "{submitted}"], "--deadline: expected an ISO 8601 time.*'soon'"),
    (["--deadline", DEADLINE, "--submitted", "{submitted}", "--penalty-per-day", "-0.1"],
     "--penalty-per-day: expected a fraction.*'-0.1'"),
    (["--deadline", DEADLINE, "--submitted", "{submitted}", "--penalty-per-day", "ten"], "--penalty-per-day.*'ten'"),
    (["--penalty-per-day", "0.1"], "--penalty-per-day: expected with --deadline"),
    (["--submitted", "{submitted}"], "--submitted: expected with --deadline"),
    (["--deadline", DEADLINE], "--deadline: expected --submitted"),
    (["--moodle-key", "email"], "--moodle-key: expected only with --format moodle"),
    (["--title", "01_coin"], "--title: expected NOTEBOOK=TITLE, got '01_coin'"),
    (["--roster-key", "login"], "key column 'login'"),
])
def test_cli_bad_options(files, tmp_path, capsys, extra, message):
    out = tmp_path / "canvas.csv"
    extra = [e.format(submitted=files["submitted"]) for e in extra]
    assert cli.main(["gradebook", str(files["grades"]), "--roster", str(files["roster"]), "--format", "canvas",
                     "--out", str(out), *extra]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists()


def test_cli_bad_files(files, tmp_path, capsys):
    out = tmp_path / "canvas.csv"

    def run(grades, roster, fmt="canvas"):
        return cli.main(["gradebook", str(grades), "--roster", str(roster), "--format", fmt, "--out", str(out)])

    assert run(tmp_path / "nope.csv", files["roster"]) == 2
    err = capsys.readouterr().err
    assert "grades: expected a CSV file, but" in err and "nope.csv' does not exist" in err
    assert run(files["grades"], tmp_path / "missing_roster.csv") == 2
    assert "roster: expected a CSV file" in capsys.readouterr().err
    files["roster"].write_text("Student,email\nAna,ana@uni.edu\n")
    assert run(files["grades"], files["roster"]) == 2
    assert "expected a column with jtk's student names" in capsys.readouterr().err
    files["grades"].write_text("agent,kl\nmlp,0.1\n")  # a results file, not grades
    assert run(files["grades"], files["roster"]) == 2
    assert "expected a jtk grades file (jtk grade --csv)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(files["grades"], files["roster"], fmt="blackboard")
    assert "invalid choice: 'blackboard'" in capsys.readouterr().err
    assert not out.exists()
