"""jtk's grade rows as Gradescope's results.json: fields, points, visibility of hidden cases, broken files."""

import json

import pytest

from jtk.course import gradescope

TEST_FIELDS = {"name", "number", "score", "max_score", "status", "output", "visibility"}


def _check(gid, points, passed, total, hidden_passed=0, hidden_total=0, status="passed", message="", code=None,
           tampered=False, timed_out=0):
    return {"id": gid, "points": round(points * passed / total, 4) if total else 0.0, "max_points": points,
            "status": status, "tampered": tampered, "misconception": code, "message": message,
            "cases_passed": passed, "cases_total": total, "cases_timed_out": timed_out,
            "hidden_cases_passed": hidden_passed, "hidden_cases_total": hidden_total, "codes": [code] if code else []}


def _row(checks, notebook="01_coin_joint.ipynb", status="graded", message=""):
    return {"student": "alice", "notebook": notebook, "score": round(sum(c["points"] for c in checks), 4),
            "max_score": sum(c["max_points"] for c in checks), "status": status, "message": message,
            "wall_timeouts": 0, "retried": False, "checks": checks}


def test_points_split_into_visible_and_hidden_tests_that_add_up_to_jtk_grade():
    row = _row([_check("ex1a-check", 1, 13, 16, hidden_passed=3, hidden_total=6, status="failed",
                       message="Case 2: wrong", code="coin.product_of_marginals"),
                _check("ex1b-check", 1, 8, 8, hidden_passed=3, hidden_total=3)])
    out = gradescope.results_json([row], execution_time=12.4)
    assert out["score"] == pytest.approx(row["score"]) and out["execution_time"] == 12
    assert all(TEST_FIELDS <= set(t) for t in out["tests"])
    names = [t["name"] for t in out["tests"]]
    assert names == ["01_coin_joint.ipynb: ex1a-check (visible cases)", "01_coin_joint.ipynb: ex1a-check (hidden cases)",
                     "01_coin_joint.ipynb: ex1b-check (visible cases)", "01_coin_joint.ipynb: ex1b-check (hidden cases)"]
    assert [t["number"] for t in out["tests"]] == ["1", "2", "3", "4"]
    visible, hidden = out["tests"][:2]
    assert (visible["score"], visible["max_score"], visible["status"]) == (10 / 16, 10 / 16, "passed")
    assert (hidden["score"], hidden["max_score"], hidden["status"]) == (0.1875, 0.375, "failed")
    assert hidden["visibility"] == "after_published" and visible["visibility"] == "visible"
    assert "coin.product_of_marginals" in hidden["output"] and "3 of 6 cases passed" in hidden["output"]
    assert sum(t["max_score"] for t in out["tests"]) == pytest.approx(row["max_score"])
    assert gradescope.results_json([row], hidden_visibility="hidden")["tests"][1]["visibility"] == "hidden"


def test_a_cell_that_did_not_run_and_a_file_that_is_not_a_notebook_say_so():
    row = _row([_check("ex2-check", 2, 0, 0, status="timeout", message="the cell ran past its wall-clock limit")],
               notebook="02_joint_log_likelihood.ipynb")
    broken = _row([_check("ex3-check", 1, 0, 0, status="not_run", message="not a readable notebook")],
                  notebook="notes.ipynb", status="unreadable", message="not a readable notebook: JSONDecodeError")
    out = gradescope.results_json([row, broken])
    assert out["score"] == 0 and [t["max_score"] for t in out["tests"]] == [2, 1]
    assert out["tests"][0]["status"] == "failed" and "wall-clock" in out["tests"][0]["output"]
    assert "notes.ipynb: not a readable notebook" in out["output"]
    assert "no notebook was found" in gradescope.results_json([])["output"]


def test_timeouts_are_named_in_the_output():
    row = _row([_check("ex1a-check", 1, 5, 16, status="timeout", code="generic.timeout", timed_out=11)])
    assert "11 case(s) ran out of time" in gradescope.results_json([row])["output"]


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="hidden_visibility must be one of"):
        gradescope.results_json([], hidden_visibility="later")
    other = dict(_row([]), student="bob")
    with pytest.raises(ValueError, match="one student's submission"):
        gradescope.results_json([_row([]), other])
    path = gradescope.write_results([_row([_check("ex1a-check", 1, 1, 1)])], tmp_path / "results.json")
    assert json.loads(path.read_text())["score"] == 1.0


def test_jtk_grade_writes_results_json_for_one_students_submission(tmp_path):
    """End to end: a solved notebook, a blank one whose check cell was edited to print a pass line, and a file that
    is not a notebook; results.json's total equals jtk grade's, the edit earns nothing and the broken file is named."""
    import os
    import pathlib
    import subprocess
    import sys

    import nbformat

    root = pathlib.Path(__file__).resolve().parents[1]
    alice = tmp_path / "class" / "alice"
    alice.mkdir(parents=True)
    (alice / "01_coin_joint.ipynb").write_text((root / "solutions" / "01_coin_joint.ipynb").read_text())
    blank = nbformat.read(root / "exercises" / "02_joint_log_likelihood.ipynb", as_version=4)
    for cell in blank.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = 'print("✅ passed")'
    nbformat.write(blank, alice / "02_joint_log_likelihood.ipynb")
    (alice / "notes.ipynb").write_text("{ not json")
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "jtk.cli", "grade", str(tmp_path / "class"), "--json",
                           "--gradescope", str(out), "--no-progress", "--timeout", "10", "--salt", "t"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    result = json.loads(out.read_text())
    assert result["score"] == pytest.approx(sum(r["score"] for r in rows)) == pytest.approx(2.0)
    assert isinstance(result["execution_time"], int) and all(TEST_FIELDS <= set(t) for t in result["tests"])
    edited = [t for t in result["tests"] if t["name"].startswith("02_joint_log_likelihood.ipynb")]
    assert edited and all(t["score"] == 0 and t["status"] == "failed" for t in edited)
    assert any("edited" in t["output"] for t in edited)
    assert "notes.ipynb" in result["output"]
    assert {t["visibility"] for t in result["tests"]} == {"visible", "after_published"}


def test_jtk_grade_refuses_results_json_for_several_students(tmp_path, capsys):
    import pathlib

    from jtk import cli

    exercise = (pathlib.Path(__file__).resolve().parents[1] / "exercises" / "01_coin_joint.ipynb").read_text()
    for student in ("alice", "bob"):
        (tmp_path / student).mkdir()
        (tmp_path / student / "01_coin_joint.ipynb").write_text(exercise)
    assert cli.main(["grade", str(tmp_path), "--gradescope", str(tmp_path / "r.json"), "--no-progress"]) == 2
    assert "one student's submission" in capsys.readouterr().err and not (tmp_path / "r.json").exists()


def test_the_autograder_bundle_grades_a_submission_laid_out_as_gradescope_does(tmp_path):
    """The zip as Gradescope asks (setup.sh, run_autograder, the sources, salt, constraints, a wheel), unpacked into
    a root laid out as Gradescope's; run_autograder's entry point grades a student's upload: the solution of 01 full
    marks, an edited check cell nothing, a stray file named; the score equals jtk grade's with the same salt."""
    import os
    import pathlib
    import stat
    import subprocess
    import sys
    import zipfile

    import nbformat

    repo = pathlib.Path(__file__).resolve().parents[1]
    from jtk import cli

    bundle = tmp_path / "autograder.zip"  # as an instructor builds it: jtk exercises autograder
    assert cli.main(["exercises", "autograder", "--out", str(bundle), "--salt", "s3cret",
                     "--solutions", str(repo / "solutions")]) == 0
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        assert {"setup.sh", "run_autograder", "salt.txt", "constraints.txt"} <= names
        assert gradescope.INSECURE_SETTING not in names  # grading without the sandbox is never the default
        assert {f"solutions/{p.name}" for p in (repo / "solutions").glob("*.ipynb")} <= names
        assert any(n.startswith("jtk-") and n.endswith(".whl") for n in names)
        assert stat.S_IMODE(z.getinfo("run_autograder").external_attr >> 16) & 0o111
        assert "/autograder/venv/bin/python -m jtk.course.gradescope /autograder" in z.read("run_autograder").decode()
        z.extractall(tmp_path / "autograder" / "source")
    with pytest.raises(ValueError, match="exists"):
        gradescope.build_autograder(bundle, repo / "solutions", salt="s3cret")
    with pytest.raises(ValueError, match="salt"):
        gradescope.build_autograder(tmp_path / "other.zip", repo / "solutions", salt=" ")

    root = tmp_path / "autograder"
    (root / "submission").mkdir()
    (root / "submission" / "01_coin_joint.ipynb").write_text((repo / "solutions" / "01_coin_joint.ipynb").read_text())
    edited = nbformat.read(repo / "exercises" / "02_joint_log_likelihood.ipynb", as_version=4)
    for cell in edited.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = 'print("✅ passed")'
    nbformat.write(edited, root / "submission" / "02_joint_log_likelihood.ipynb")
    (root / "submission" / "answers.py").write_text("print('hi')\n")
    (root / "submission_metadata.json").write_text(json.dumps({"id": 7, "users": [{"email": "ana@uni.edu"}]}))
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-m", "jtk.course.gradescope", str(root)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((root / "results" / "results.json").read_text())
    assert result["score"] == pytest.approx(2.0), result["output"]
    assert "answers.py" in result["output"] and all(TEST_FIELDS <= set(t) for t in result["tests"])
    assert all(t["score"] == 0 for t in result["tests"] if t["name"].startswith("02_"))
    # the same cases as jtk grade with the bundle's salt, for the student Gradescope names
    (tmp_path / "class" / "ana@uni.edu").mkdir(parents=True)
    (tmp_path / "class" / "ana@uni.edu" / "01_coin_joint.ipynb").write_text(
        (root / "submission" / "01_coin_joint.ipynb").read_text())
    graded = subprocess.run([sys.executable, "-m", "jtk.cli", "grade", str(tmp_path / "class"), "--json", "--salt",
                             "s3cret", "--no-progress"], capture_output=True, text=True, timeout=600, env=env)
    row = json.loads(graded.stdout)[0]
    # each check's visible and hidden parts: shares of its drawn cases, adding up to jtk grade's points for it
    scores = [t["score"] for t in result["tests"] if t["name"].startswith("01_")]
    assert len(scores) == 2 * len(row["checks"])
    for c, (visible, hidden) in zip(row["checks"], zip(scores[::2], scores[1::2])):
        assert visible + hidden == pytest.approx(c["points"], abs=2e-4), (c, visible, hidden)
        assert hidden == pytest.approx(c["max_points"] * c["hidden_drawn_cases_passed"] / c["drawn_cases_total"],
                                       abs=1e-4), c


def test_the_autograder_always_writes_a_result(tmp_path):
    result = gradescope.run_autograder(tmp_path)  # no source, no submission: a result saying so, not a crash
    assert result["score"] == 0 and "The autograder failed" in result["output"]
    assert json.loads((tmp_path / "results" / "results.json").read_text()) == result


def test_the_autograder_command_names_what_is_missing(tmp_path, capsys):
    from jtk import cli

    assert cli.main(["exercises", "autograder", "--out", str(tmp_path / "a.zip")]) == 2
    assert "--salt" in capsys.readouterr().err and not (tmp_path / "a.zip").exists()
    (tmp_path / "a.zip").write_text("mine")
    assert cli.main(["exercises", "autograder", "--out", str(tmp_path / "a.zip"), "--salt", "s"]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--force" in err and (tmp_path / "a.zip").read_text() == "mine"


# ------------------------------------------------------------------ attacks through the Gradescope route (issue 45)
SALT = "salt-SECRET-1234"


def _gradescope_root(tmp_path):
    """A throwaway root laid out as Gradescope's: the bundle in source/, the upload in submission/."""
    import pathlib
    import shutil

    repo = pathlib.Path(__file__).resolve().parents[1]
    root = tmp_path / "autograder"
    (root / "source" / "solutions").mkdir(parents=True)
    for path in (repo / "solutions").glob("*.ipynb"):
        shutil.copyfile(path, root / "source" / "solutions" / path.name)
    (root / "source" / "salt.txt").write_text(SALT + "\n")
    (root / "submission").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"id": 7, "users": [{"email": "ana@uni.edu"}]}))
    return root, repo


def _points(result, prefix):
    return sum(t["score"] for t in result["tests"] if t["name"].startswith(prefix))


def test_the_autograder_never_shows_the_salt_to_a_symlink(tmp_path):
    root, _ = _gradescope_root(tmp_path)
    (root / "submission" / "01_coin_joint.ipynb").symlink_to(root / "source" / "salt.txt")
    result = gradescope.run_autograder(root)
    assert result["score"] == 0 and "01_coin_joint.ipynb" in result["output"], result["output"]
    assert "SECRET" not in (root / "results" / "results.json").read_text()


def test_the_autograder_grades_one_notebook_handed_in_three_times_once(tmp_path):
    root, repo = _gradescope_root(tmp_path)
    for name in ("01_coin_joint.ipynb", "copy1.ipynb", "copy2.ipynb"):
        (root / "submission" / name).write_text((repo / "solutions" / "01_coin_joint.ipynb").read_text())
    result = gradescope.run_autograder(root)
    assert 0 < result["score"] <= 2.0, result["output"]  # exercise 1 is worth 2 points
    assert json.loads((root / "results" / "results.json").read_text())["score"] <= 2.0


def test_the_autograder_finishes_on_a_fifo_and_names_it(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    root, _ = _gradescope_root(tmp_path)
    os.mkfifo(root / "submission" / "01_coin_joint.ipynb")
    # run_autograder, as run_autograder's script calls it, in a process of its own that is killed if it hangs
    proc = subprocess.Popen([sys.executable, "-m", "jtk.course.gradescope", str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        _, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        pytest.fail("the autograder did not finish in 300 s on a FIFO named like an exercise")
    assert proc.returncode == 0, err[-2000:]
    result = json.loads((root / "results" / "results.json").read_text())
    assert result["score"] == 0 and "01_coin_joint.ipynb" in result["output"], result["output"]


def test_the_autograder_scores_a_record_rewrite_as_a_blank_answer(tmp_path):
    import nbformat
    import test_grading_attacks as grading_attacks

    root, _ = _gradescope_root(tmp_path)
    nbformat.write(grading_attacks.attacks(tmp_path)["display_rewrites_records"], root / "submission" / "01_coin_joint.ipynb")
    result = gradescope.run_autograder(root)
    assert _points(result, "01_coin_joint.ipynb: ex1a-check") == 0, result
    assert _points(result, "01_coin_joint.ipynb: ex1b-check") == pytest.approx(1.0), result


# ------------------------------------------------------------------ no sandbox, no marks
def _no_bwrap(monkeypatch):
    """This machine as a Docker image without user namespaces: bubblewrap cannot start its sandbox."""
    from jtk.course import sandbox

    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)


def test_the_autograder_refuses_to_grade_without_its_sandbox_and_names_the_fix(tmp_path, monkeypatch):
    root, repo = _gradescope_root(tmp_path)
    (root / "submission" / "01_coin_joint.ipynb").write_text((repo / "solutions" / "01_coin_joint.ipynb").read_text())
    _no_bwrap(monkeypatch)
    result = gradescope.run_autograder(root)
    assert result["score"] == 0 and result["tests"] == []
    out = result["output"]
    assert "bubblewrap" in out and "sandbox" in out, out
    assert gradescope.INSECURE_SETTING in out and "not secure" in out, out  # names the opt-in and what it costs
    assert json.loads((root / "results" / "results.json").read_text()) == result


def test_the_autograder_grades_without_its_sandbox_only_when_told_that_marks_are_not_secure(tmp_path, monkeypatch):
    root, repo = _gradescope_root(tmp_path)
    (root / "submission" / "01_coin_joint.ipynb").write_text((repo / "solutions" / "01_coin_joint.ipynb").read_text())
    (root / "source" / gradescope.INSECURE_SETTING).write_text("yes\n")
    _no_bwrap(monkeypatch)
    result = gradescope.run_autograder(root)
    assert result["score"] == 2.0, result["output"]
    assert "not secure" in result["output"] and "bubblewrap" in result["output"]


def test_the_bundle_carries_the_insecure_setting_only_when_asked(tmp_path):
    import zipfile

    from jtk import cli

    bundle = tmp_path / "a.zip"  # without the flag: test_the_autograder_bundle_grades_a_submission_laid_out_...
    assert cli.main(["exercises", "autograder", "--out", str(bundle), "--salt", "s3cret",
                     "--insecure-marks-without-sandbox"]) == 0
    with zipfile.ZipFile(bundle) as z:
        assert gradescope.INSECURE_SETTING in z.namelist()
