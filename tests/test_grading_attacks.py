"""`jtk grade` against a class that attacks it.

One class directory is graded once (module fixture, through the `jtk grade` command in a subprocess, so a
student who kills "the grader" kills that process, not pytest): the teacher hands in the solutions (100 %),
a blank student the untouched exercises (0 %), and every attacker hands in exercise 1 with 1b answered
honestly and 1a attacked. Each attack must score exactly what the honest blank submission scores on 1a,
and 1b must be unaffected.
"""

import json
import os
import pathlib
import subprocess
import sys

import nbformat
import pandas as pd
import pytest

from jtk import exercises, sandbox

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
NB1 = "01_coin_joint.ipynb"
TIMEOUT = 10

MODE = sandbox.resolve("auto")
if os.environ.get("CI") and MODE != "bwrap":  # .ci/run installs bubblewrap: a CI run must test the sandbox
    raise RuntimeError(f"CI must grade in the bwrap sandbox, but only {MODE!r} works here")
needs_containment = pytest.mark.skipif(MODE == "none", reason="no sandbox here (needs bwrap, or root for user mode)")
needs_bwrap = pytest.mark.skipif(MODE != "bwrap", reason="hiding files needs bubblewrap (apt-get install bubblewrap)")

HONEST_1B = '''def try_then_commit_value(biases, prior, horizon):
    coin = jtk.envs.Coin(tuple(biases), tuple(prior))
    p = coin.marginal()
    value = p
    for outcome, q in ((1, p), (0, 1 - p)):
        if q > 0:
            value += q * (horizon - 1) * max(coin.posterior([outcome]).marginal(), 0.5)
    return value'''

BLANK_1A = 'def coin_joint(biases, prior, flips):\n    raise NotImplementedError("Exercise")'


def _exercise(name=NB1):
    return nbformat.read(EXERCISES / name, as_version=4)


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _attack(answer_1a=BLANK_1A, edit=None):
    nb = _exercise()
    _cell(nb, "ex1a-answer").source = answer_1a
    _cell(nb, "ex1b-answer").source = HONEST_1B
    if edit:
        edit(nb)
    return nb


def _delete_check(nb):
    nb.cells.remove(_cell(nb, "ex1a-check"))


def _points(nb):
    _cell(nb, "ex1a-check").metadata["nbgrader"]["points"] = 100
    _cell(nb, "ex1b-check").metadata["nbgrader"]["points"] = 100


def _edit_check(nb):
    _cell(nb, "ex1a-check").source = 'print("✅ Exercise 1a (coin joint): passed — 10 coins")'


def attacks(tmp: pathlib.Path) -> dict:
    """name -> notebook; paths of the victims are absolute so the attacks aim at the real files."""
    victim = tmp / "class" / "victim" / NB1
    grades = tmp / "grades.csv"
    read_solution = (f"def coin_joint(biases, prior, flips):\n"
                     f"    import json\n"
                     f"    cells = json.load(open({str(SOLUTIONS / NB1)!r}))['cells']\n"
                     f"    code = ''.join(next(c for c in cells if c['metadata'].get('nbgrader', {{}}).get('grade_id') "
                     f"== 'ex1a-answer')['source'])\n"
                     f"    ns = {{'np': __import__('numpy')}}\n"
                     f"    exec(code, ns)\n"
                     f"    return ns['coin_joint'](biases, prior, flips)")
    return {
        "honest_blank": _attack(),
        "edit_check_cell": _attack(edit=_edit_check),
        "delete_check_cell": _attack(edit=_delete_check),
        "metadata_points": _attack(edit=_points),
        "overwrite_check_function": _attack(
            "from jtk import checks\n"
            "checks.check_coin_joint = lambda *a, **k: print('✅ Exercise 1a (coin joint): passed')\n"
            "checks.run_check = lambda *a, **k: None\n" + BLANK_1A),
        # the deprecated alias jtk.grading is the same module: patching it, or a stand-in bound to the name the
        # source's check cell uses, changes nothing (kernel-side text: pytest's warning filter does not apply there)
        "overwrite_through_old_name": _attack(
            "import types, jtk.grading\n"
            "jtk.grading.run_check = lambda *a, **k: None\n"
            "jtk.grading._emit = lambda record: None\n"
            "checks = grading = types.SimpleNamespace(check_coin_joint=lambda *a, **k: print('✅ passed'))\n"
            + BLANK_1A),
        "calls_reference_through_old_name": _attack(
            "import jtk.grading\ndef coin_joint(b, p, f):\n    return jtk.grading._coin_joint(b, p, f)"),
        "forged_record": _attack(  # every record this kernel emits claims a pass with made-up answers
            "from IPython.display import display\nfrom jtk import checks\n"
            "checks._emit = lambda record: display({checks.MIME: {**record, 'answers': [{'npy': 'k05VTVBZ'}] * 16}},"
            " raw=True)\n" + BLANK_1A),
        "patched_numpy": _attack("np.allclose = lambda *a, **k: True\nnp.isclose = lambda *a, **k: True\n"
                                 "def coin_joint(biases, prior, flips):\n    return np.full((2,) * flips, 0.5)"),
        "calls_reference": _attack("def coin_joint(b, p, f):\n    return jtk.envs.Coin(b, p).joint(f)"),
        "saved_reference": _attack("_joint = jtk.envs.Coin.joint\n"
                                   "def coin_joint(b, p, f):\n    return _joint(jtk.envs.Coin(b, p), f)"),
        "swapped_reference": _attack("_joint = jtk.envs.Coin.joint\njtk.envs.Coin.joint = lambda self, f: None\n"
                                     "def coin_joint(b, p, f):\n    return _joint(jtk.envs.Coin(b, p), f)"),
        "guard_switched_off": _attack("import sys\ndef coin_joint(b, p, f):\n    sys.setprofile(None)\n"
                                      "    return jtk.envs.Coin(b, p).joint(f)"),
        "infinite_loop": _attack("def coin_joint(b, p, f):\n    while True:\n        pass"),
        # ignores the CPU-time signal of the check (SIGPROF) and every other: the cell's wall-clock backstop stops it
        "loop_ignoring_interrupts": _attack("import signal\ndef coin_joint(b, p, f):\n"
                                            "    for s in (signal.SIGPROF, signal.SIGALRM, signal.SIGINT):\n"
                                            "        signal.signal(s, signal.SIG_IGN)\n"
                                            "    while True:\n        pass"),
        "huge_allocation": _attack("def coin_joint(b, p, f):\n    return np.zeros(10**11)"),
        "huge_allocation_top_level": _attack("x = np.ones(10**11)\n" + BLANK_1A),
        "sys_exit": _attack("import sys\ndef coin_joint(b, p, f):\n    sys.exit(0)"),
        "os_exit": _attack("import os\ndef coin_joint(b, p, f):\n    os._exit(1)"),
        "segfault": _attack("import ctypes\ndef coin_joint(b, p, f):\n    return ctypes.string_at(0)"),
        "read_solutions": _attack(read_solution),
        "kill_grader": _attack("import os, signal\n"
                               "for pid in {os.getppid(), int(os.environ.get('JPY_PARENT_PID', '0') or 0)} - {0, 1}:\n"
                               "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
                               + BLANK_1A),
        "delete_other_submission": _attack(f"import os, shutil\n"
                                           f"try:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"
                                           f"shutil.rmtree({str(victim.parent)!r}, ignore_errors=True)\n" + BLANK_1A),
        "rewrite_grade_file": _attack(f"try:\n    open({str(grades)!r}, 'w').write('student,score\\nrewrite_grade_file,100\\n')\n"
                                      f"except OSError:\n    pass\n" + BLANK_1A),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grading")
    cls = tmp / "class"
    for name, nb in attacks(tmp).items():
        (cls / name).mkdir(parents=True)
        nbformat.write(nb, cls / name / NB1)
    victim = _attack("def coin_joint(biases, prior, flips):\n"
                     "    out = np.zeros((2,) * flips)\n"
                     "    for idx in np.ndindex(*out.shape):\n"
                     "        h = sum(idx)\n"
                     "        out[idx] = sum(q * b ** h * (1 - b) ** (flips - h) for b, q in zip(biases, prior))\n"
                     "    return out")
    (cls / "victim").mkdir()
    nbformat.write(victim, cls / "victim" / NB1)
    for student, folder in (("teacher", SOLUTIONS), ("blank", EXERCISES)):
        (cls / student).mkdir()
        for path in sorted(folder.glob("*.ipynb")):
            (cls / student / path.name).write_text(path.read_text())
    (cls / "unreadable.ipynb").write_text("{ this is not json")
    (cls / "empty.ipynb").write_text("")
    command = [sys.executable, "-m", "jtk.cli", "grade", str(cls), "--source", str(SOLUTIONS), "--json",
               "--csv", str(tmp / "grades.csv"), "--feedback", str(tmp / "feedback"), "--workers", "2",
               "--timeout", str(TIMEOUT), "--memory", "3G", "--no-progress", "--salt", "test"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)
    return tmp, {(r["student"], r["notebook"]): r for r in rows}, done


def _checks(graded, student, notebook=NB1):
    return {c["id"]: c for c in graded[1][(student, notebook)]["checks"]}


def test_solutions_score_full_and_untouched_exercises_zero(graded):
    rows = graded[1]
    for name in sorted(p.name for p in SOLUTIONS.glob("*.ipynb")):
        teacher, blank = rows[("teacher", name)], rows[("blank", name)]
        assert teacher["score"] == teacher["max_score"] > 0, teacher
        assert all(c["status"] == "passed" and not c["tampered"] for c in teacher["checks"]), teacher
        assert blank["score"] == 0 and blank["max_score"] == teacher["max_score"], blank
        assert all(c["misconception"] == "generic.not_implemented" for c in blank["checks"]), blank


ATTACKS = ["edit_check_cell", "delete_check_cell", "metadata_points", "overwrite_check_function",
           "overwrite_through_old_name", "calls_reference_through_old_name", "forged_record",
           "patched_numpy", "calls_reference", "saved_reference", "swapped_reference", "guard_switched_off", "infinite_loop",
           "loop_ignoring_interrupts", "huge_allocation", "huge_allocation_top_level", "sys_exit", "os_exit",
           "segfault"]
CONTAINED = ["kill_grader", "delete_other_submission", "rewrite_grade_file"]


@pytest.mark.parametrize("attack", ATTACKS + [pytest.param(a, marks=needs_containment) for a in CONTAINED]
                         + [pytest.param("read_solutions", marks=needs_bwrap)])
def test_an_attack_scores_what_a_blank_answer_scores(graded, attack):
    blank, attacked = _checks(graded, "honest_blank"), _checks(graded, attack)
    row = graded[1][(attack, NB1)]
    assert row["max_score"] == 2.0 and row["status"] == "graded", row
    assert attacked["ex1a-check"]["points"] == blank["ex1a-check"]["points"] == 0.0, attacked
    assert attacked["ex1b-check"]["points"] == 1.0 and attacked["ex1b-check"]["status"] == "passed", attacked


@pytest.mark.parametrize("attack, status, code, tampered", [
    ("edit_check_cell", "failed", "generic.not_implemented", True),
    ("delete_check_cell", "failed", "generic.not_implemented", True),
    ("metadata_points", "failed", "generic.not_implemented", True),
    ("calls_reference", "failed", "uses_reference", False),
    ("calls_reference_through_old_name", "failed", "uses_reference", False),
    ("saved_reference", "failed", "uses_reference", False),
    ("swapped_reference", "failed", "uses_reference", False),
    ("guard_switched_off", "failed", "uses_reference", False),
    ("infinite_loop", "timeout", "generic.timeout", False),
    ("loop_ignoring_interrupts", "timeout", None, False),
    ("huge_allocation", "failed", "generic.exception", False),
    ("sys_exit", "failed", "generic.exception", False),
    ("os_exit", "error", None, False),
    ("segfault", "error", None, False),
])
def test_each_attack_is_reported_as_what_it_is(graded, attack, status, code, tampered):
    check = _checks(graded, attack)["ex1a-check"]
    assert (check["status"], check["misconception"], check["tampered"]) == (status, code, tampered), check


def test_time_limits_are_reported_as_timeouts_and_only_the_wall_clock_one_is_graded_again(graded):
    """A loop that burns CPU is stopped by its CPU budget (load cannot cause that, so no second grade); a loop that
    dodges it reaches the wall-clock backstop, which load could cause: that notebook is graded again, alone."""
    tmp, rows, done = graded
    looping, dodging = rows[("infinite_loop", NB1)], rows[("loop_ignoring_interrupts", NB1)]
    assert looping["wall_timeouts"] == 0 and not looping["retried"], looping
    assert _checks(graded, "infinite_loop")["ex1a-check"]["cases_timed_out"] >= 1
    assert dodging["wall_timeouts"] >= 1 and dodging["retried"], dodging
    assert _checks(graded, "loop_ignoring_interrupts")["ex1a-check"]["cases_timed_out"] >= 1
    assert not any(r["retried"] for (s, _), r in rows.items() if s != "loop_ignoring_interrupts")
    grades = pd.read_csv(tmp / "grades.csv", keep_default_na=False).set_index("student")
    assert grades.loc["infinite_loop", "timed_out"] == "ex1a-check"
    assert grades.loc["victim", "timed_out"] == ""
    summary = next(line for line in done.stderr.splitlines() if "timed out in" in line)
    assert "2 notebooks" in summary and "--only infinite_loop,loop_ignoring_interrupts" in summary, summary
    page = (tmp / "feedback" / "infinite_loop" / "01_coin_joint.html").read_text()
    assert "ran out of time" in page


def test_reference_calls_name_the_forbidden_function(graded):
    assert "Coin.joint" in _checks(graded, "calls_reference")["ex1a-check"]["message"]


@needs_containment
def test_the_victim_and_the_grade_files_survive(graded):
    tmp, rows, _ = graded
    assert (tmp / "class" / "victim" / NB1).exists()
    assert rows[("victim", NB1)]["score"] == 2.0
    grades = pd.read_csv(tmp / "grades.csv")
    assert len(grades) == len(rows) and "rewrite_grade_file" in set(grades.student)
    assert grades.set_index("student").loc["rewrite_grade_file", "ex1a-check"] == 0


def test_unreadable_and_empty_notebooks_are_rows_not_dropped(graded):
    for student in ("unreadable", "empty"):
        row = next(r for (s, _), r in graded[1].items() if s == student)
        assert row["status"] == "unreadable" and row["score"] == 0, row


def test_csv_feedback_and_misconception_summary(graded):
    tmp, rows, done = graded
    grades = pd.read_csv(tmp / "grades.csv")
    assert list(grades.columns[:5]) == ["student", "notebook", "score", "max_score", "status"]
    assert {"ex1a-check", "ex1b-check", "ex6-check"} <= set(grades.columns)
    summary = pd.read_csv(tmp / "grades.misconceptions.csv")
    blanks = summary[(summary.check == "ex1a-check") & (summary.code == "generic.not_implemented")]
    assert blanks.students.item() >= 5
    assert (tmp / "grades.misconceptions.png").stat().st_size > 1000
    page = (tmp / "feedback" / "calls_reference" / "01_coin_joint.html").read_text()
    assert "uses_reference" in page and "Coin.joint" in page and "ex1b-check" in page
    assert "Misconceptions" in done.stderr


def test_a_regrade_is_identical_and_students_get_their_own_cases(graded, tmp_path):
    tmp, rows, _ = graded
    for student in ("victim", "calls_reference"):
        (tmp_path / student).mkdir()
        (tmp_path / student / NB1).write_text((tmp / "class" / student / NB1).read_text())
    done = subprocess.run([sys.executable, "-m", "jtk.cli", "grade", str(tmp_path), "--source", str(SOLUTIONS), "--json",
                           "--no-progress", "--salt", "test", "--timeout", str(TIMEOUT)],
                          capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-2000:]
    regraded = json.loads(done.stdout)
    assert len(regraded) == 2
    for row in regraded:
        assert row == rows[(row["student"], row["notebook"])]
    assert exercises.check_seed("alice", "ex1a-check", "s") == exercises.check_seed("alice", "ex1a-check", "s")
    assert exercises.check_seed("alice", "ex1a-check", "s") != exercises.check_seed("bob", "ex1a-check", "s")
    assert exercises.check_seed("alice", "ex1a-check", "s") != exercises.check_seed("alice", "ex1a-check", "t")
    assert exercises.check_seed("alice", "ex1a-check", "s", seed=7) == 7


def test_bwrap_keeps_an_environment_under_tmp_visible_and_the_source_hidden(monkeypatch, tmp_path):
    # CI may clone the project (and its .venv) under /tmp, which the sandbox replaces by a private tmpfs.
    source = tmp_path / "solutions"
    source.mkdir()
    monkeypatch.setattr(sandbox, "runtime_paths", lambda: [str(tmp_path / ".venv"), "/usr"])
    args = sandbox.bwrap_args(str(tmp_path / "work"), [str(source)])
    pairs = list(zip(args, args[1:]))
    private_tmp = pairs.index(("--tmpfs", "/tmp"))
    venv = pairs.index(("--ro-bind", str(tmp_path / ".venv")))
    hidden = pairs.index(("--tmpfs", str(source.resolve())))
    assert private_tmp < venv < hidden
    assert ("--ro-bind", "/usr") not in pairs  # outside /tmp it is visible anyway
