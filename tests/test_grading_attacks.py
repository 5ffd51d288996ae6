"""`jtk grade` against a class that attacks it.

One class directory is graded once (module fixture, through the `jtk grade` command in a subprocess, so a
student who kills "the grader" kills that process, not pytest): the teacher hands in the solutions (100 %),
a blank student the untouched exercises (0 %), and every attacker hands in exercise 1 with 1b answered
honestly and 1a attacked. Each attack must score exactly what the honest blank submission scores on 1a,
and 1b must be unaffected.

The attacks of issue 45 are written as a student who has read jtk's installed source would write them: rewrite the
check records, forge records after each cell, get past the reference guard (five ways), read the solutions from a git
history, fill the disk, flood the grader with records. Submissions are data, not paths: symlinks, FIFOs, devices,
huge files and copies of one notebook each get their own small class, graded by the same command.
"""

import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys

import nbformat
import pandas as pd
import pytest

from jtk.course import exercises, sandbox

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

CONSTANT_1A = 'def coin_joint(biases, prior, flips):\n    return np.full((2, 2), 0.25)'

CORRECT_1A = ("def coin_joint(biases, prior, flips):\n"
              "    out = np.zeros((2,) * flips)\n"
              "    for idx in np.ndindex(*out.shape):\n"
              "        h = sum(idx)\n"
              "        out[idx] = sum(q * b ** h * (1 - b) ** (flips - h) for b, q in zip(biases, prior))\n"
              "    return out")

# Set-up code that rewrites every check record the kernel displays (IPython.display.display, its home module
# IPython.core.display_functions, and the display publisher under both): the answers become jtk's reference answers
# for the cases the grader will judge, drawn from the seed in jtk.checks' grading context. Everything is in
# try/except, so the code never errors where those names are gone.
REWRITE_RECORDS = '''\
import sys as _sys
import numpy as _np

def _reference_answers(record):
    c = _sys.modules["jtk.checks"]
    name, hidden = record["check"], bool(record.get("hidden"))
    cases = c._CHECKS[name].cases(c._rng(name, c.case_seed(c._CONTEXT["seed"]), hidden), hidden)

    def answer(args):
        if name == "coin_joint":
            return c._coin_joint(*args)
        if name == "try_then_commit":
            return c.try_then_commit_value(*args)
        if name == "joint_log_likelihood":
            return c._reference_joint_ll(*args)
        if name == "prior_member":
            params, prior, x, scale = args
            return c._mlp(params, x) + scale * c._mlp(prior, x)
        if name == "blr_posterior":
            phi, y, sigma = args
            gram = phi.T @ phi
            return _np.linalg.solve(gram, phi.T @ y), sigma ** 2 * _np.linalg.inv(gram)
        if name == "batch_mig_step":
            from jtk.ppc import active
            cov, chosen, pool, test, noise_var = args
            return int(_np.asarray(active.batch_mig(cov, pool, test, noise_var, len(chosen) + 1))[len(chosen)])
        if name == "thompson_action":
            best = (args[0][..., 1] - args[0][..., 0]).argmax(1)  # each member's best action
            return [int(best[s % len(best)]) for s in range(getattr(c, "_THOMPSON_SEEDS", 400))]
        raise KeyError(name)

    return [c.encode(answer(args)) for args in cases]

def _rewrite(data):
    try:
        key = "application/vnd.jtk.check+json"
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            return {**data, key: {**data[key], "answers": _reference_answers(data[key])}}
    except Exception:
        pass
    return data

def _rewriting(show):
    if getattr(show, "_rewrites", False):
        return show
    def wrapped(*objs, **kwargs):
        if "data" in kwargs:
            kwargs["data"] = _rewrite(kwargs["data"])
        return show(*[_rewrite(o) for o in objs], **kwargs)
    wrapped._rewrites = True
    return wrapped

try:
    import IPython.display as _ipd
    import IPython.core.display_functions as _ipdf
    _ipd.display = _rewriting(_ipd.display)
    _ipdf.display = _rewriting(_ipdf.display)
    get_ipython().display_pub.publish = _rewriting(get_ipython().display_pub.publish)
except Exception:
    pass
'''

# After every cell, display records that claim jtk's reference answers for coin_joint (visible and hidden cases).
FORGE_AFTER_EVERY_CELL = '''\
import sys
from IPython.display import display

def _forge(result=None):
    try:
        c = sys.modules["jtk.checks"]
        seed = c.case_seed(c._CONTEXT["seed"])
        for hidden in (False, True):
            cases = c._coin_joint_cases(c._rng("coin_joint", seed, hidden), hidden)
            display({c.MIME: {"check": "coin_joint", "hidden": hidden,
                              "answers": [c.encode(c._coin_joint(*args)) for args in cases]}}, raw=True)
    except Exception:
        pass

get_ipython().events.register("post_run_cell", _forge)
'''

# After each cell, 50 records of 1 MB each, 200 in all (issue 45: 600 brought the grader process to 913 MB).
FLOOD_RECORDS = '''\
from IPython.display import display

def _flood(result=None):
    for _ in range(50 if getattr(_flood, "sent", 0) < 200 else 0):
        _flood.sent = getattr(_flood, "sent", 0) + 1
        display({"application/vnd.jtk.check+json": {"check": "coin_joint", "hidden": False,
                                                   "answers": [{"npy": "A" * 2 ** 20}]}}, raw=True)

get_ipython().events.register("post_run_cell", _flood)
'''

# Writes 64 MB files into every place it may write (its HOME, TMPDIR and working directory, /tmp, /dev/shm) until
# each says no: at most 2 GB and 20 s in all.
FILL_DISK = '''\
import os, time
_places = list(dict.fromkeys(os.path.realpath(p) for p in (os.environ.get("HOME") or ".", os.environ.get("TMPDIR") or ".",
                                                            os.getcwd(), "/tmp", "/dev/shm")))
_chunk, _written, _start, _full, _i = b"\\0" * 64 * 2 ** 20, 0, time.monotonic(), set(), 0
while len(_full) < len(_places) and _written < 2 * 2 ** 30 and time.monotonic() - _start < 20:
    for _place in _places:
        if _place in _full or _written >= 2 * 2 ** 30:
            continue
        try:
            with open(os.path.join(_place, f"fill-{_i}.bin"), "wb") as _f:
                _f.write(_chunk)
            _written += len(_chunk)
        except OSError:
            _full.add(_place)
    _i += 1
'''

# (d) of the reference guard: a helper process computes jtk's reference; the guard lives in the kernel only.
SUBPROCESS_REFERENCE = '''\
import json, subprocess, sys
_SERVE = ("import json, sys, jtk.envs\\n"
          "for line in sys.stdin:\\n"
          "    b, p, f = json.loads(line)\\n"
          "    try:\\n"
          "        out = jtk.envs.Coin(tuple(b), tuple(p)).joint(f).tolist()\\n"
          "    except Exception as err:\\n"
          "        out = repr(err)\\n"
          "    print(json.dumps(out), flush=True)\\n")
_helper = None

def coin_joint(b, p, f):
    global _helper
    if _helper is None:
        _helper = subprocess.Popen([sys.executable, "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
    _helper.stdin.write(json.dumps([list(b), list(p), int(f)]) + "\\n")
    _helper.stdin.flush()
    return np.array(json.loads(_helper.stdout.readline()))
'''

# The teacher's solution from `git show HEAD:solutions/...` in this checkout, or in any folder above jtk's package.
GIT_HISTORY = f'''\
import json, pathlib, subprocess

def coin_joint(biases, prior, flips):
    raise NotImplementedError("Exercise")

def _solution_from_git():
    for root in [pathlib.Path({str(ROOT)!r}), *pathlib.Path(jtk.__file__).resolve().parents]:
        try:
            done = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(root), "show",
                                   "HEAD:solutions/01_coin_joint.ipynb"], capture_output=True, text=True, timeout=30)
            for cell in json.loads(done.stdout)["cells"]:
                if cell["metadata"].get("nbgrader", {{}}).get("grade_id") == "ex1a-answer":
                    return "".join(cell["source"])
        except Exception:
            pass
    return None

_code = _solution_from_git()
if _code:
    exec(_code, globals())
'''


# A thread that writes frames claiming a right answer (the fair coin's joint, right for some visible cases) into
# every pipe the worker holds, over and over while the checks run.
FORGE_FRAMES = """import base64, io, json, os, struct, threading, time
def _frame(obj):
    payload = json.dumps(obj).encode()
    return struct.pack('>QB', len(payload), ord('J')) + payload
def _npy(a):
    buf = io.BytesIO(); np.save(buf, a); return base64.b64encode(buf.getvalue()).decode()
def _forge():
    for _ in range(200):
        for fd in map(int, os.listdir('/proc/self/fd')):
            try:
                if fd > 2 and 'pipe' in os.readlink(f'/proc/self/fd/{fd}'):
                    os.write(fd, _frame({'answer': {'npy': _npy(np.full((2, 2), 0.25))}, 'ok': True, 'error': None}))
            except OSError:
                pass
        time.sleep(0.05)
threading.Thread(target=_forge, daemon=True).start()
"""

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
        # the forged frames' answer (a 2 × 2 array of 0.25), handed in honestly as the function's return value
        "constant_quarter": _attack(CONSTANT_1A),
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
        # --- issue 45: a student who has read jtk's source
        # the check's record is rewritten on its way out: its answers become the reference's, for the grader's cases
        "display_rewrites_records": _attack(REWRITE_RECORDS + BLANK_1A),
        # a post_run_cell hook displays a forged record (the reference's answers) after every cell, after the check's own
        "post_run_cell_forged_record": _attack(FORGE_AFTER_EVERY_CELL + BLANK_1A),
        # the reference guard, five ways: (a) its profile hook switched off around the call and switched back on
        "reference_profile_toggled": _attack("import sys\ndef coin_joint(b, p, f):\n    old = sys.getprofile()\n"
                                             "    sys.setprofile(None)\n    try:\n"
                                             "        return jtk.envs.Coin(b, p).joint(f)\n"
                                             "    finally:\n        sys.setprofile(old)"),
        # (b) its table of forbidden functions emptied through the stack frames
        "reference_guard_emptied": _attack("import sys\ndef coin_joint(b, p, f):\n    frame = sys._getframe()\n"
                                           "    while frame is not None:\n"
                                           "        for value in list(frame.f_locals.values()):\n"
                                           "            try:\n"
                                           "                if isinstance(getattr(value, 'codes', None), dict):\n"
                                           "                    value.codes.clear()\n"
                                           "            except Exception:\n                pass\n"
                                           "        frame = frame.f_back\n"
                                           "    return jtk.envs.Coin(b, p).joint(f)"),
        # (c) a thread started when the answer cell runs, before any check, computes the reference on request
        "reference_in_early_thread": _attack("import queue, threading\n_work, _done = queue.Queue(), queue.Queue()\n"
                                             "def _serve():\n    while True:\n        b, p, f = _work.get()\n"
                                             "        try:\n            _done.put(jtk.envs.Coin(b, p).joint(f))\n"
                                             "        except BaseException as err:\n            _done.put(err)\n"
                                             "_helper = threading.Thread(target=_serve, daemon=True)\n"
                                             "_helper.start()\n"
                                             "def coin_joint(b, p, f):\n"
                                             "    if not _helper.is_alive():\n"
                                             "        raise RuntimeError('no helper thread here')\n"
                                             "    _work.put((b, p, f))\n"
                                             "    out = _done.get(timeout=5)\n"
                                             "    if isinstance(out, BaseException):\n        raise out\n"
                                             "    return out"),
        # (d) a subprocess computes it (one helper process, started at the first call, serves every case: a process
        # per case would cost ~1 s of start-up each)
        "reference_in_subprocess": _attack(SUBPROCESS_REFERENCE),
        # (e) a copy of the reference's code object under another file name
        "reference_code_copy": _attack("import types, jtk.envs.coin\n"
                                       "try:\n    _joint = jtk.envs.coin.Coin.joint\n"
                                       "    _copy = types.FunctionType(_joint.__code__.replace(co_filename='x.py'), "
                                       "_joint.__globals__, _joint.__name__, _joint.__defaults__, _joint.__closure__)\n"
                                       "except Exception:\n    _copy = None\n"
                                       "def coin_joint(b, p, f):\n    return _copy(jtk.envs.Coin(b, p), f)"),
        # the teacher's solution from the git history of a checkout the kernel can see (only --source is emptied)
        "git_history": _attack(GIT_HISTORY),
        # an answer that raises KeyboardInterrupt (a BaseException): reported as such, in words
        "keyboard_interrupt": _attack("def coin_joint(b, p, f):\n    raise KeyboardInterrupt"),
        # fills every disk and tmpfs it can write to, then leaves 1a blank: the students graded beside it must not care
        "fill_disk": _attack(FILL_DISK + BLANK_1A),
        # floods the grader with 200 records of 1 MB each
        "many_records": _attack(FLOOD_RECORDS + BLANK_1A),
        # the new design's own channel: forged answer frames written into every pipe of the worker, from a thread
        # started before the check (the grader reads them as answers, and judges them)
        "forged_protocol_frames": _attack(FORGE_FRAMES + BLANK_1A),
    }


def rewrites_all() -> dict:
    """The six exercises handed in blank, each answer cell prefixed by the record rewrite: file name -> notebook."""
    out = {}
    for path in sorted(EXERCISES.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = REWRITE_RECORDS + cell.source
        out[path.name] = nb
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grading")
    cls = tmp / "class"
    for name, nb in attacks(tmp).items():
        if name == "fill_disk" and MODE == "none":  # unconfined, it would fill this machine's /tmp and /dev/shm
            continue
        (cls / name).mkdir(parents=True)
        nbformat.write(nb, cls / name / NB1)
    (cls / "victim").mkdir()
    nbformat.write(_attack(CORRECT_1A), cls / "victim" / NB1)
    (cls / "rewrites_all").mkdir()
    for name, nb in rewrites_all().items():
        nbformat.write(nb, cls / "rewrites_all" / name)
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
           "segfault",
           # issue 45
           "display_rewrites_records", "post_run_cell_forged_record", "reference_profile_toggled",
           "reference_guard_emptied", "reference_in_early_thread", "reference_in_subprocess", "reference_code_copy",
           "keyboard_interrupt", "many_records"]
# attacks on the worker's pipes may take the honest 1b down with them (a desynchronised or dead worker): what
# matters is that 1a gains nothing and the grader goes on
PIPES = ["forged_protocol_frames"]  # stealing the grader's requests: tests/test_sandbox.py (it costs the clock)
CONTAINED = ["kill_grader", "delete_other_submission", "rewrite_grade_file", "fill_disk"]
HIDDEN_FILES = ["read_solutions", "git_history"]


@pytest.mark.parametrize("attack", ATTACKS + [pytest.param(a, marks=needs_containment) for a in CONTAINED]
                         + [pytest.param(a, marks=needs_bwrap) for a in HIDDEN_FILES])
def test_an_attack_scores_what_a_blank_answer_scores(graded, attack):
    blank, attacked = _checks(graded, "honest_blank"), _checks(graded, attack)
    row = graded[1][(attack, NB1)]
    assert row["max_score"] == 2.0 and row["status"] == "graded", row
    assert attacked["ex1a-check"]["points"] == blank["ex1a-check"]["points"] == 0.0, attacked
    assert attacked["ex1b-check"]["points"] == 1.0 and attacked["ex1b-check"]["status"] == "passed", attacked


@pytest.mark.parametrize("attack", PIPES)
def test_attacks_on_the_workers_pipes_gain_nothing(graded, attack):
    """A frame forged into the worker's pipes is, at most, an answer: the worker runs the student's code, so whatever
    it sends is the student's answer to the request it got, which a function could have returned. The attack must
    gain no more than its forged answer handed in as the function's own return value (under load a forged frame can
    be read as the answer to a case that the constant happens to answer right; a helper saw 0.0625 points once)."""
    row = graded[1][(attack, NB1)]
    assert row["status"] == "graded" and row["max_score"] == 2.0, row
    honest = _checks(graded, "constant_quarter")["ex1a-check"]["points"]
    assert _checks(graded, attack)["ex1a-check"]["points"] <= honest, (row, honest)
    assert row["score"] <= 1.0 + honest, row


@pytest.mark.parametrize("attack, status, code, tampered", [
    ("edit_check_cell", "failed", "generic.not_implemented", True),
    ("delete_check_cell", "failed", "generic.not_implemented", True),
    ("metadata_points", "failed", "generic.not_implemented", True),
    ("calls_reference", "failed", "uses_reference", False),
    # jtk.grading is jtk.checks, which holds no reference any more: the attribute does not exist
    ("calls_reference_through_old_name", "error", None, False),  # jtk.grading is not in exercise 1's sandbox
    ("saved_reference", "failed", "uses_reference", False),
    ("swapped_reference", "failed", "uses_reference", False),
    ("guard_switched_off", "failed", "uses_reference", False),
    ("reference_profile_toggled", "failed", "uses_reference", False),
    ("reference_guard_emptied", "failed", "uses_reference", False),
    ("reference_code_copy", "failed", "uses_reference", False),
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
    assert not any(r["retried"] for (s, _), r in rows.items() if s not in ("loop_ignoring_interrupts", *PIPES))
    grades = pd.read_csv(tmp / "grades.csv", keep_default_na=False).set_index("student")
    assert grades.loc["infinite_loop", "timed_out"] == "ex1a-check"
    assert grades.loc["victim", "timed_out"] == ""
    summary = next(line for line in done.stderr.splitlines() if "timed out in" in line)
    late = sorted({s for (s, _), r in rows.items() if any(c["status"] == "timeout" for c in r["checks"])})
    assert {"infinite_loop", "loop_ignoring_interrupts"} <= set(late), late
    assert f"{len(late)} notebooks" in summary and f"--only {','.join(late)}" in summary, summary
    page = (tmp / "feedback" / "infinite_loop" / "01_coin_joint.html").read_text()
    assert "ran out of time" in page


def test_reference_calls_name_the_forbidden_function(graded):
    assert "Coin.joint" in _checks(graded, "calls_reference")["ex1a-check"]["message"]


def test_a_keyboard_interrupt_in_an_answer_is_named_in_words(graded):
    message = _checks(graded, "keyboard_interrupt")["ex1a-check"]["message"]
    assert "KeyboardInterrupt" in message and len(message) > 25, message  # more than "KeyboardInterrupt: "


def test_rewriting_the_records_of_all_six_exercises_scores_nothing(graded):
    """Issue 45's "full marks, nothing solved": six blank exercises whose check records are rewritten with the
    reference's answers on their way out of the kernel."""
    rows = graded[1]
    for name in sorted(p.name for p in SOLUTIONS.glob("*.ipynb")):
        row = rows[("rewrites_all", name)]
        assert row["status"] == "graded" and row["max_score"] == rows[("teacher", name)]["max_score"], row
        assert row["score"] == 0 and all(c["points"] == 0 for c in row["checks"]), row


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


def test_bwrap_keeps_an_environment_under_tmp_visible_and_nothing_else(monkeypatch, tmp_path):
    # CI may clone the project (and its .venv) under /tmp, which the sandbox replaces by a private tmpfs: the
    # environment is mounted after it. Nothing else of the machine is mounted: the root is an empty tmpfs.
    monkeypatch.setattr(sandbox, "runtime_paths", lambda: [str(tmp_path / ".venv"), "/usr"])
    monkeypatch.setattr(sandbox, "package_dir", lambda: str(tmp_path / "jtk"))
    args = sandbox.bwrap_args(package=str(tmp_path / "stubs"))
    pairs = list(zip(args, args[1:]))
    assert pairs.index(("--tmpfs", "/")) < pairs.index(("--tmpfs", "/tmp")) < pairs.index(
        ("--ro-bind", str(tmp_path / ".venv"))) < pairs.index(("--ro-bind", str(tmp_path / "stubs")))
    assert ("--ro-bind", "/") not in pairs and "--unshare-all" in args and "--cap-drop" in args
    mounted = {b for a, b in pairs if a == "--ro-bind"}
    assert mounted <= {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", str(tmp_path / ".venv"),
                       str(tmp_path / "stubs"), *sandbox.ETC_FILES}, mounted


# ------------------------------------------------------------------ submissions are data, not paths
def _grade_cli(folder, *options, timeout=300, address_space=None, env=None):
    """`jtk grade FOLDER --json` against the solutions with short limits; returns (CompletedProcess, rows).

    The command runs in its own session: if it has not finished after ``timeout`` seconds, its process group is
    killed and the test fails. ``address_space`` caps the command's (soft) RLIMIT_AS, so a grader that reads an
    endless file stops there rather than at this machine's memory.
    """
    command = [sys.executable, "-m", "jtk.cli", "grade", str(folder), "--source", str(SOLUTIONS), "--json",
               "--no-progress", "--timeout", str(TIMEOUT), "--workers", "2", *options]

    def limit():
        if address_space:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, resource.getrlimit(resource.RLIMIT_AS)[1]))

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=limit, env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"jtk grade did not finish in {timeout} s; stderr: {err[-2000:]}")
    rows = json.loads(out) if out.strip() else []
    return subprocess.CompletedProcess(command, proc.returncode, out, err), rows


def _named(done, rows, student, words) -> bool:
    """Whether a rejected row of ``student``, or a line on stderr naming ``student``, says one of ``words``."""
    said = [r["message"] for r in rows if r["student"] == student and r["status"] == "rejected"]
    said += [line for line in done.stderr.splitlines() if student in line]
    return any(word in text.lower() for text in said for word in words)


def _rejected(done, rows, student, words):
    """Every row of ``student`` is rejected with 0 points, and the file is named as what it is (row or stderr)."""
    mine = [r for r in rows if r["student"] == student]
    assert all(r["status"] == "rejected" and r["score"] == 0 for r in mine), mine
    assert _named(done, rows, student, words), (mine, done.stderr[-3000:])


SYMLINK = ("symbolic link", "symlink")
FIFO = ("fifo", "named pipe", "not a regular file")


def test_a_symlink_to_the_teachers_solution_is_rejected_not_graded(tmp_path):
    (tmp_path / "class" / "linker").mkdir(parents=True)
    (tmp_path / "class" / "linker" / NB1).symlink_to(SOLUTIONS / NB1)  # solutions/ is where the docs put it
    done, rows = _grade_cli(tmp_path / "class")
    assert not any(r["score"] > 0 for r in rows), rows
    _rejected(done, rows, "linker", SYMLINK)


def test_a_symlink_to_the_salt_never_shows_the_salt(tmp_path):
    salt = "salt-SECRET-1234"
    secret = tmp_path / "secret" / "salt.txt"
    secret.parent.mkdir()
    secret.write_text(salt + "\n")
    (tmp_path / "class" / "salty").mkdir(parents=True)
    (tmp_path / "class" / "salty" / NB1).symlink_to(secret)
    out = tmp_path / "out"
    out.mkdir()
    # the student alone, so that --gradescope writes its results.json too
    done, rows = _grade_cli(tmp_path / "class", "--salt", salt, "--csv", str(out / "grades.csv"),
                            "--feedback", str(out / "feedback"), "--gradescope", str(out / "results.json"))
    written = {str(path): path.read_bytes().decode(errors="replace") for path in out.rglob("*") if path.is_file()}
    for where, text in {"stdout": done.stdout, "stderr": done.stderr, **written}.items():
        assert "SECRET" not in text, where
    assert not any(r["score"] > 0 for r in rows), rows
    _rejected(done, rows, "salty", SYMLINK)


def test_one_notebook_handed_in_three_times_is_graded_once(tmp_path):
    """One solved notebook under three names: one row for the exercise (the file named like it), a CSV that a
    gradebook accepts, and a results.json within the assignment's points."""
    from jtk import cli

    copier = tmp_path / "class" / "copier"
    copier.mkdir(parents=True)
    for name in (NB1, "copy1.ipynb", "copy2.ipynb"):
        shutil.copyfile(SOLUTIONS / NB1, copier / name)
    grades, results = tmp_path / "grades.csv", tmp_path / "results.json"
    done, rows = _grade_cli(tmp_path / "class", "--csv", str(grades), "--gradescope", str(results))
    assert done.returncode == 0, done.stderr[-3000:]
    ones = [r for r in rows if (r["student"], r["notebook"]) == ("copier", NB1)]
    assert len(ones) == 1 and ones[0]["score"] == ones[0]["max_score"] == 2.0, rows
    assert sum(r["score"] for r in rows) <= 2.0, rows
    assert json.loads(results.read_text())["score"] <= 2.0
    roster = tmp_path / "roster.csv"
    roster.write_text('student,name,id,sis_user_id,sis_login_id,section\ncopier,"Copier, Cy",101,S1,copier,A\n')
    canvas = tmp_path / "canvas.csv"
    assert cli.main(["gradebook", str(grades), "--roster", str(roster), "--format", "canvas", "--out", str(canvas)]) == 0
    table = pd.read_csv(canvas)
    assert pd.to_numeric(table.iloc[1, 5:], errors="coerce").sum() <= 2.0, table


def test_the_file_named_like_the_exercise_wins_else_the_first_by_path(tmp_path):
    exact, first = tmp_path / "class" / "exact", tmp_path / "class" / "first"
    for folder, solved, blank in ((exact, "a_solved.ipynb", NB1), (first, "b_solved.ipynb", "c_blank.ipynb")):
        folder.mkdir(parents=True)
        shutil.copyfile(SOLUTIONS / NB1, folder / solved)
        shutil.copyfile(EXERCISES / NB1, folder / blank)
    done, rows = _grade_cli(tmp_path / "class")
    assert done.returncode == 0, done.stderr[-3000:]
    for student, score in (("exact", 0.0), ("first", 2.0)):
        ones = [r for r in rows if (r["student"], r["notebook"]) == (student, NB1)]
        assert len(ones) == 1 and ones[0]["score"] == score, rows
        assert sum(r["score"] for r in rows if r["student"] == student) == score, rows


def test_a_fifo_named_like_an_exercise_does_not_hang_the_grader(tmp_path):
    cls = tmp_path / "class"
    for student in ("piped", "piped_and_real", "other"):
        (cls / student).mkdir(parents=True)
    os.mkfifo(cls / "piped" / NB1)
    os.mkfifo(cls / "piped_and_real" / NB1)
    shutil.copyfile(SOLUTIONS / NB1, cls / "piped_and_real" / "answers.ipynb")
    shutil.copyfile(SOLUTIONS / NB1, cls / "other" / NB1)
    done, rows = _grade_cli(cls, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    by = {(r["student"], r["notebook"]): r for r in rows}
    assert by[("other", NB1)]["score"] == 2.0, by
    _rejected(done, rows, "piped", FIFO)
    # beside a valid notebook of the same exercise, that notebook is graded and the FIFO is named
    assert [r["score"] for r in rows if r["student"] == "piped_and_real" and r["status"] != "rejected"] == [2.0], rows
    assert _named(done, rows, "piped_and_real", FIFO), done.stderr[-3000:]


def test_a_symlink_to_dev_zero_is_rejected_without_reading_it(tmp_path):
    (tmp_path / "class" / "zero").mkdir(parents=True)
    (tmp_path / "class" / "zero" / NB1).symlink_to("/dev/zero")
    done, rows = _grade_cli(tmp_path / "class", timeout=300, address_space=6 * 2 ** 30)
    _rejected(done, rows, "zero", SYMLINK + ("device", "not a regular file"))


def test_a_notebook_over_the_size_cap_is_rejected_with_its_size(tmp_path):
    nb = _attack(CORRECT_1A)
    nb.cells.append(nbformat.v4.new_markdown_cell("padding " * (60 * 2 ** 20 // 8)))
    (tmp_path / "class" / "big").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "big" / NB1)
    assert (tmp_path / "class" / "big" / NB1).stat().st_size > 60 * 2 ** 20
    done, rows = _grade_cli(tmp_path / "class", timeout=300)
    row = next(r for r in rows if (r["student"], r["notebook"]) == ("big", NB1))
    assert row["status"] == "rejected" and row["score"] == 0, row
    assert "MB" in row["message"] or "bytes" in row["message"], row


# ------------------------------------------------------------------ the grader's faults are not the student's 0
@needs_containment
def test_a_student_who_fills_the_disk_costs_the_next_student_nothing(tmp_path):
    """The attacker first, then a correct notebook, one at a time (issue 45: the next student's correct solution scored 0,
    "NameError: name 'np' is not defined"); the attacker's files do not outlive its grading."""
    cls, scratch = tmp_path / "class", tmp_path / "scratch"
    for student, answer in (("a_fill", FILL_DISK + BLANK_1A), ("b_correct", CORRECT_1A)):
        (cls / student).mkdir(parents=True)
        nbformat.write(_attack(answer), cls / student / NB1)
    scratch.mkdir()
    done, rows = _grade_cli(cls, "--workers", "1", env={"TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr[-3000:]
    by = {(r["student"], r["notebook"]): r for r in rows}
    assert by[("b_correct", NB1)]["score"] == 2.0, by[("b_correct", NB1)]
    assert by[("a_fill", NB1)]["score"] == 1.0, by[("a_fill", NB1)]  # 1b answered, 1a blank
    left = [path for path in scratch.rglob("*") if path.is_file()]
    assert not [path for path in left if path.name.startswith("fill-")], left  # the attacker's files are gone
    assert sum(path.stat().st_size for path in left) < 64 * 2 ** 20, left


def test_a_memory_limit_too_small_for_jtk_is_the_graders_fault(tmp_path):
    """The teacher's solution under --memory 600M, where a kernel cannot import jtk (issue 45: 0 points, exit status
    0, no warning). Never a student's 0: either the limit is refused before anything is graded (exit status 2,
    naming --memory), or the row is an error that says it is the grader's, named on stderr, and exit status 3."""
    (tmp_path / "class" / "teacher").mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / NB1, tmp_path / "class" / "teacher" / NB1)
    done, rows = _grade_cli(tmp_path / "class", "--memory", "600M", "--workers", "1")
    if done.returncode == 2:  # refused up front
        assert not rows and "--memory" in done.stderr, done.stderr[-3000:]
        return
    assert done.returncode == 3, (done.returncode, done.stderr[-3000:])
    (row,) = rows
    assert row["status"] == "error", row
    assert "grader" in row["message"].lower() and "memory" in row["message"].lower(), row
    assert any("teacher" in line and "memory" in line.lower() for line in done.stderr.splitlines()), done.stderr[-3000:]
