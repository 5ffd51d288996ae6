"""Bad inputs to jtk.course (checks, exercises, grading, export, gradebook, challenge)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import pathlib

import pandas as pd
import pytest

import jtk
import jtk.checks as CHECKS
import jtk.course.challenge as CH
import jtk.course.export as EXPORT
import jtk.course.gradescope as GS
import jtk.course.labs as LABS
import jtk.course.nbgrader as NBG
import jtk.course.sandbox as SB
import jtk.course.untrusted as UT
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (call, case, cases, good_problem, refused_clearly, TE, VE)

# grading files and times
G = jtk.course.gradebook
GRADES_ROW = dict(student="a", notebook="n", score=1.0, max_score=2.0, status="graded")
case(jtk.course.gradebook.check_grades, "score-above-max", lambda: G.check_grades(pd.DataFrame([{**GRADES_ROW, "score": 5.0}])),
     VE, "score max_score a/n")
case(jtk.course.gradebook.to_canvas, "roster-empty-frame",
     lambda: G.to_canvas(G.check_grades(pd.DataFrame([GRADES_ROW])), pd.DataFrame()), VE, "roster normalize_roster")
case(jtk.course.gradebook.to_moodle, "roster-no-rows",
     lambda: G.to_moodle(G.check_grades(pd.DataFrame([GRADES_ROW])),
                         G.normalize_roster(pd.DataFrame({"student": ["a"]})).iloc[:0]), VE, "roster student")
case(jtk.course.gradebook.to_canvas, "roster-list", lambda: G.to_canvas(G.check_grades(pd.DataFrame([GRADES_ROW])), ["a"]), TE,
     "roster DataFrame")
case(jtk.course.gradebook.days_late, "text", lambda: G.days_late("2025-03-02T01:00", "2025-03-01"), None, "")
case(jtk.course.gradebook.days_late, "not-a-time", lambda: G.days_late("tomorrow", "2025-03-01"), VE, "submitted ISO")
case(jtk.course.gradebook.days_late, "aware-and-naive", lambda: G.days_late("2025-03-02T01:00Z", "2025-03-01"), VE,
     "submitted deadline zone")
case(jtk.course.exercises.read_bytes, "seconds-text", lambda: jtk.course.exercises.read_bytes("README.md", seconds="3"), TE, "seconds")
case(jtk.course.exercises.read_bytes, "max_bytes-0", lambda: jtk.course.exercises.read_bytes("README.md", max_bytes=0), VE,
     "max_bytes")
case(jtk.course.exercises.grade_notebook, "timeout-text",
     lambda: jtk.course.exercises.grade_notebook(jtk.course.exercises.Submission("s", "n.ipynb", pathlib.Path("x")), {},
                                          timeout="30"), TE, "timeout")
case(jtk.course.exercises.grade_notebook, "not-a-submission", lambda: jtk.course.exercises.grade_notebook("s/n.ipynb", {}), TE,
     "sub Submission")
case(jtk.course.exercises.execute, "timeout-negative", lambda: jtk.course.exercises.execute(None, [], timeout=-1), VE, "timeout")

# course tools with a few arguments
case(LABS.lab_files, "root-missing", call(LABS.lab_files, "/nonexistent/jtk-labs"), FileNotFoundError,
     "/nonexistent/jtk-labs")
case(LABS.write_labs, "out-is-a-file", call(LABS.write_labs, __file__), VE, "out")

# gradebook
G = jtk.course.gradebook
case(G.parse_time, "not-a-time", call(G.parse_time, "soon"), VE, "time ISO")
case(G.parse_time, "int", call(G.parse_time, 3), VE, "time ISO")
case(G.normalize_roster, "not-a-frame", call(G.normalize_roster, ["a"]), TE, "roster")
case(G.normalize_roster, "key-missing", call(G.normalize_roster, pd.DataFrame({"student": ["a"]}), key="email"), VE,
     "email")
case(G.check_submitted, "not-a-frame", call(G.check_submitted, ["a"]), TE, "submitted")
case(G.exercise_rows, "not-a-frame", call(G.exercise_rows, ["a"]), TE, "grades")
case(G.unmatched, "roster-list", lambda: G.unmatched(G.check_grades(pd.DataFrame([GRADES_ROW])), ["a"]), TE, "roster")
case(G.csv_bytes, "not-a-frame", call(G.csv_bytes, [1]), TE, "frame")
case(G.write, "not-a-frame", call(G.write, [1], "/nonexistent/x.csv"), TE, "frame")
case(G.late_path, "out-int", call(G.late_path, 3), TE, "out")
for fn, what in ((G.read_grades, "grades"), (G.read_roster, "roster"), (G.read_submitted, "submitted")):
    case(fn, "missing", call(fn, "/nonexistent/grades.csv"), VE, f"{what} /nonexistent/grades.csv")
case(G.apply_late_policy, "penalty-neg",
     lambda: G.apply_late_policy(G.check_grades(pd.DataFrame([GRADES_ROW])), pd.DataFrame(), "2025-03-01",
                                 penalty_per_day=-1.0), VE, "penalty_per_day")


# the students' checks (jtk.checks): a wrong answer object is named, not crashed on
for fn in (CHECKS.check_coin_joint, CHECKS.check_try_then_commit, CHECKS.check_joint_log_likelihood,
           CHECKS.check_prior_member, CHECKS.check_blr_posterior, CHECKS.check_batch_mig_step,
           CHECKS.check_thompson_action):
    # the student's feedback: CheckFailed (the check cell's failure), saying what to pass instead
    case(fn, "fn-not-callable", call(fn, 3), CHECKS.CheckFailed, "expected a function, got int")
    case(fn, "seed-str", call(fn, lambda *a, **k: None, seed="0"), TE, "seed")
case(CHECKS.run_check, "name-unknown", call(CHECKS.run_check, "nope", lambda: None), VE, "name")
case(CHECKS.case_seed, "str", call(CHECKS.case_seed, "0"), TE, "seed")
case(CHECKS.case_seed, "neg", call(CHECKS.case_seed, -1), VE, "seed")

# exercises: sources, plans, summaries
E = jtk.course.exercises
case(E.strip_solutions, "not-str", call(E.strip_solutions, 3), TE, "source")
case(E.strip_hidden_tests, "not-str", call(E.strip_hidden_tests, 3), TE, "source")
case(E.exercise_notebook, "not-a-notebook", call(E.exercise_notebook, "nb"), TE, "solution")
case(E.check_calls, "code-int", call(E.check_calls, 3), TE, "code")
case(E.check_calls, "syntax-error", call(E.check_calls, "check_x(("), VE, "a check cell")
case(E.check_seed, "student-int", call(E.check_seed, 3, "g"), TE, "student")
case(E.check_seed, "seed-neg", call(E.check_seed, "s", "g", seed=-1), VE, "seed")
case(E.load_source, "missing", call(E.load_source, "/nonexistent/src.ipynb"), VE, "/nonexistent/src.ipynb")
case(E.load_sources, "missing", call(E.load_sources, "/nonexistent/src"), VE, "source /nonexistent/src")
case(E.read_notebook, "missing", call(E.read_notebook, "/nonexistent/nb.ipynb"), VE, "nb.ipynb could not be opened")
case(E.build, "solutions-missing", call(E.build, "/nonexistent/solutions", "/nonexistent/exercises"), VE,
     "solutions_dir")
case(E.stale, "solutions-missing", call(E.stale, "/nonexistent/solutions", "/nonexistent/exercises"), VE,
     "solutions_dir")
case(E.collect, "path-missing", call(E.collect, ["/nonexistent/a.ipynb"], {}), VE, "/nonexistent/a.ipynb")
for fn in (E.fault_summary, E.timeout_summary, E.grades_frame, E.misconception_summary):
    case(fn, "rows-str", call(fn, "abc"), TE, "rows")
case(E.feedback_html, "row-list", call(E.feedback_html, [1]), TE, "row")
case(E.write_csv, "rows-str", call(E.write_csv, "abc", "/nonexistent/out.csv"), TE, "rows")
case(E.write_feedback, "rows-str", call(E.write_feedback, "abc", "/nonexistent/fb"), TE, "rows")
case(E.grade_class, "workers-0", call(E.grade_class, [], {}, workers=0), VE, "workers")
case(E.check_plan, "check-wrong", call(E.check_plan, "check", 0), TE, "check")
case(E.prepare, "source-wrong", call(E.prepare, None, "source", lambda s: 0), TE, "source")

# the class challenge
case(CH.config_from_dict, "not-a-dict", call(CH.config_from_dict, [1]), TE, "config")
case(CH.config_from_dict, "grid-unknown", call(CH.config_from_dict, {"grid": "huge", "salt": "x"}), VE, "grid")
case(CH.ChallengeConfig, "seeds-0", call(CH.ChallengeConfig, seeds=0), VE, "seeds")
case(CH.ChallengeConfig, "grid-unknown", call(CH.ChallengeConfig, grid="huge"), VE, "grid")
case(CH.load_config, "missing", call(CH.load_config, "/nonexistent/challenge.toml"), VE, "/nonexistent/challenge")
case(CH.new_config, "seeds-0", call(CH.new_config, "/nonexistent/c.toml", seeds=0), VE, "seeds")
case(CH.resolve_sandbox, "unknown", call(CH.resolve_sandbox, "docker"), VE, "sandbox")
case(CH.hidden_key, "purpose-unknown", lambda: CH.hidden_key("s", good_problem(), "fit"), VE, "purpose")
case(CH.hidden_agent_seed, "purpose-str", lambda: CH.hidden_agent_seed("s", good_problem(), "fit"), TE, "purpose")
case(CH.format_board, "not-a-frame", call(CH.format_board, [1]), TE, "board")
case(CH.leaderboard_html, "not-a-frame", call(CH.leaderboard_html, [1]), TE, "board")
case(CH.leaderboard, "entries-str", call(CH.leaderboard, "abc", None), TE, "entries")
case(CH.is_board, "int", call(CH.is_board, 3), None, "")  # a predicate: False for anything that is not a board
case(CH.verify_board, "sample-0", call(CH.verify_board, "/nonexistent/board", sample=0), VE, "sample")
case(CH.score, "workers-0", call(CH.score, [], None, "/nonexistent/out", workers=0), VE, "workers")
case(CH.practice, "submission-missing", call(CH.practice, "/nonexistent/agent.py", progress=False), VE,
     "/nonexistent/agent.py")

for fn, arg, nargs, exc in [
        (EXPORT.capture_app, "app", 1, TE), (EXPORT.control_values, "widget", 1, TE),
        (EXPORT.export_notebook, "notebook", 2, VE), (EXPORT.export_site, "notebooks", 2, VE),
        (EXPORT.write_index, "out_dir", 1, VE)]:
    case(fn, f"{arg}-text", call(fn, "bad-text", *[None] * (nargs - 1)), exc, arg)
case(SB.resolve, "mode-unknown", call(SB.resolve, "docker"), VE, "sandbox")
case(SB.tmp_bytes, "memory-str", call(SB.tmp_bytes, "4G"), TE, "memory")
case(SB.address_space, "mode-auto", call(SB.address_space, 2 ** 32, "auto"), VE, "mode")
case(SB.address_space, "memory-float", call(SB.address_space, 4e9, "none"), TE, "memory")
case(SB.worker_env, "extra-list", call(SB.worker_env, "/tmp", ["A=1"]), TE, "extra")
case(SB.worker_env, "home-none", call(SB.worker_env, None), TE, "home")
case(SB.bwrap_args, "memory-0", lambda: SB.bwrap_args(memory=0), VE, "memory")
case(SB.bwrap_args, "binds-str", lambda: SB.bwrap_args(binds=["/a"]), TE, "binds[0]")
case(SB.stubbed_package, "dest-int", call(SB.stubbed_package, 3), TE, "dest")
case(SB.stubbed_package, "stubbed-str", call(SB.stubbed_package, "/nonexistent/stubs", "jtk.envs.coin:Coin"), TE,
     "stubbed")
case(SB.Worker, "cmd-str", lambda: SB.Worker("python", mode="none", memory=2 ** 31, workdir="/tmp"), TE, "cmd")
case(SB.Worker, "mode-auto", lambda: SB.Worker(["python"], mode="auto", memory=2 ** 31, workdir="/tmp"), VE, "mode")
case(SB.kill_user_processes, "uid-root", call(SB.kill_user_processes, 0), VE, "uid")
case(SB.remove_tree, "path-int", call(SB.remove_tree, 3), TE, "path")
case(GS.results_json, "rows-dict", call(GS.results_json, {"student": "a"}), TE, "rows")
case(GS.results_json, "row-missing-keys", call(GS.results_json, [{"student": "a"}]), VE, "rows[0] status")
case(GS.write_results, "path-int", call(GS.write_results, [], 3), TE, "path")
case(GS.build_autograder, "out-int", lambda: GS.build_autograder(3, salt="s"), TE, "out")
case(GS.build_autograder, "salt-int", lambda: GS.build_autograder("/nonexistent/ag.zip", salt=3), TE, "salt")
case(GS.run_autograder, "root-int", call(GS.run_autograder, 3), TE, "root")
case(NBG.roles, "path-int", call(NBG.roles, 3), TE, "path")
case(NBG.config_text, "course_id-empty", call(NBG.config_text, ""), VE, "course_id")
case(NBG.write_course, "course-int", call(NBG.write_course, 3), TE, "course")
case(NBG.write_course, "course_id-none", lambda: NBG.write_course("/nonexistent/course", "/nonexistent/sol",
                                                                   course_id=None), VE, "course_id")
case(EXPORT.app_controls, "app-str", call(EXPORT.app_controls, "app"), TE, "app")
case(EXPORT.app_html, "spec-empty", call(EXPORT.app_html, {}, "jtk-app-1"), VE, "spec title")
case(EXPORT.plan_grid, "values-list", call(EXPORT.plan_grid, [1], {}, 10), TE, "values")
case(EXPORT.plan_grid, "size-int", lambda: EXPORT.plan_grid({"a": [1]}, {"a": 1}, 10, size=3), TE, "size")
case(EXPORT.lab_notebooks, "folder-int", call(EXPORT.lab_notebooks, 3), TE, "folder")
case(E.Submission, "path-none", call(E.Submission, "ann", "01_coin_joint.ipynb", None), TE, "path")
case(E.Submission, "student-int", call(E.Submission, 3, "01_coin_joint.ipynb", "a.ipynb"), TE, "student")
case(E.score_check, "check-none", call(E.score_check, None, [], None, "ok", False), TE, "check")
case(E.score_check, "fate-unknown",
     lambda: E.score_check(E.SourceCheck("c1", 1.0, "", "", (), None), [], None, "crashed", False), VE, "fate")
case(E.allowed_modules, "source-str", call(E.allowed_modules, "01_coin_joint.ipynb"), TE, "source Source")
case(E.handin_id, "data-str", call(E.handin_id, "{}"), TE, "data bytes")
case(E.parse_notebook, "data-str", call(E.parse_notebook, "{}"), TE, "data bytes")
case(E.parse_notebook, "not-utf8", call(E.parse_notebook, b"\xff\xfe"), E.Rejected, "UTF-8")
case(E.parse_notebook, "no-cells", call(E.parse_notebook, b'{"cells": [], "metadata": {}, "nbformat": 4, '
                                                          b'"nbformat_minor": 5}'), E.Rejected, "cells")
case(E.salt_file, "path-int", call(E.salt_file, 3), TE, "path")  # not file descriptor 3
case(E.salt_file, "path-dir", call(E.salt_file, "/"), VE, "regular")
case(SB.Group, "memory-0", lambda: SB.Group(memory=0), VE, "memory")
case(SB.Group, "cpu_weight-huge", lambda: SB.Group(memory=2 ** 30, cpu_weight=10 ** 6), VE, "cpu_weight")
case(SB.Group, "processes-float", lambda: SB.Group(memory=2 ** 30, processes=2.5), TE, "processes")
case(SB.die_with_parent, "parent-str", call(SB.die_with_parent, "1"), TE, "parent")
case(SB.die_with_parent, "parent-0", call(SB.die_with_parent, 0), VE, "parent")
case(SB.import_closure, "roots-str", call(SB.import_closure, "jtk.envs"), TE, "roots")
case(SB.import_closure, "modules-list", call(SB.import_closure, ["jtk.envs"], ["jtk.envs"]), TE, "modules")
case(SB.package_modules, "root-int", call(SB.package_modules, 3), TE, "root")
case(SB.package_modules, "root-missing", call(SB.package_modules, "/nonexistent/jtk"), VE, "root /nonexistent/jtk")
case(SB.processes_of, "worker-pid", call(SB.processes_of, 1), TE, "worker Worker")
# untrusted text: anything that is not a str is refused by name (bytes would print as b'...')
for fn, arg in ((UT.html, "text"), (UT.terminal, "text"), (UT.plot_text, "text"), (UT.excerpt, "text"),
                (UT.file_name, "name"), (UT.csv_cell, "value")):
    case(fn, f"{arg}-bytes", call(fn, b"=1+1"), TE, arg)
for fn in (UT.html, UT.terminal, UT.excerpt, UT.file_name):
    case(fn, "none", call(fn, None), TE, "str")
case(UT.csv_cell, "number", call(UT.csv_cell, 3), None, "")  # a number is a valid cell, kept as it is
case(UT.csv_frame, "frame-list", call(UT.csv_frame, [["=1+1"]]), TE, "frame DataFrame")
case(UT.read_csv, "source-int", call(UT.read_csv, 3), TE, "source")
case(UT.read_csv, "jtk_written-str", lambda: UT.read_csv("README.md", jtk_written="yes"), TE, "jtk_written")


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
