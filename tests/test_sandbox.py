"""What a grading worker can reach, and what the grader reads from a submission.

The class-level attacks (through `jtk grade`) are in test_grading_attacks.py; these tests check the pieces the
guarantee rests on: the stubbed copy of jtk, the bwrap view, the worker's pipes, and reading submissions as data.
"""

import ast
import json
import os
import pathlib
import sys
import time

import nbformat
import pytest

from jtk.course import _judge, exercises, sandbox

ROOT = pathlib.Path(__file__).resolve().parents[1]
needs_bwrap = pytest.mark.skipif(not sandbox.bwrap_works(), reason="needs bubblewrap (apt-get install bubblewrap)")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return sandbox.stubbed_package(tmp_path_factory.mktemp("stubs"))


def _function(tree, qualname):
    node, scope = tree, qualname.split(".")
    for name in scope:
        node = next(n for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name)
    return node


def test_every_stubbed_function_only_raises_and_the_judge_is_gone(stubs):
    assert len(_judge.STUBBED) >= 20
    for path in _judge.STUBBED:
        module, qualname = path.split(":")
        file = stubs.joinpath(*module.split(".")[1:]).with_suffix(".py")
        body = ast.unparse(_function(ast.parse(file.read_text()), qualname).body)
        assert body == f"from jtk.course._answers import NotAvailable\nraise NotAvailable({path!r})", (path, body)
    judge = (stubs / "course" / "_judge.py").read_text()
    assert "raise ImportError" in judge and "def " not in judge
    assert not list(stubs.rglob("__pycache__")) and not list(stubs.rglob("*.pyc"))
    # the originals are intact, and the copy holds nothing of the judge's code
    assert "def _coin_joint_judge" in (ROOT / "jtk" / "course" / "_judge.py").read_text()
    assert not any("_coin_joint_judge" in p.read_text() for p in stubs.rglob("*.py"))


def test_a_name_that_is_not_in_jtk_cannot_be_stubbed_silently(tmp_path):
    with pytest.raises(ValueError, match="does not define"):
        sandbox.stubbed_package(tmp_path, ["jtk.envs.coin:Coin.no_such_method"])


def _worker(stubs, memory=3 * 2 ** 30):
    worker = sandbox.Worker([sys.executable, *exercises.WORKER], mode="bwrap", memory=memory, package=str(stubs))
    assert worker.recv(time.monotonic() + 120) == {"ready": True, "jtk": sandbox.package_dir()}
    return worker


def _run(worker, code):
    return worker.request({"op": "run", "code": code}, time.monotonic() + 60)


@needs_bwrap
def test_the_worker_sees_only_the_system_python_and_stubbed_jtk(stubs):
    probe = """
import os, sys, json, socket
def listing(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return str(e)
try:
    socket.create_connection(('127.0.0.1', 22), timeout=2)
    net = 'connected'
except OSError as e:
    net = type(e).__name__
raise RuntimeError(json.dumps({'root': listing('/'), 'etc': listing('/etc'), 'env': sorted(os.environ),
                               'uid': os.getuid(), 'net': net, 'pids': [p for p in os.listdir('/proc') if p.isdigit()],
                               'checkout': listing(%r), 'cap': open('/proc/self/status').read().split('CapEff:')[1].split()[0]}))
""" % str(ROOT)
    with _worker(stubs) as worker:
        error = _run(worker, probe)["error"]
    seen = json.loads(error.split("RuntimeError: ", 1)[1])
    assert set(seen["root"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr",
                                 *(p.strip("/").split("/")[0] for p in sandbox.runtime_paths() + [str(ROOT)])}
    assert set(seen["etc"]) <= {os.path.basename(p) for p in sandbox.ETC_FILES}
    assert set(seen["checkout"]) <= {"jtk", ".venv"}, seen["checkout"]  # no solutions/, .git, tests, docs
    assert seen["uid"] == sandbox.SANDBOX_UID and int(seen["cap"], 16) == 0
    assert seen["net"] != "connected" and len(seen["pids"]) <= 3
    assert not any(k.startswith(("JPY", "JUPYTER", "JTK_SALT", "CI")) for k in seen["env"])


@needs_bwrap
def test_the_reference_cannot_be_reached_from_the_worker(stubs):
    with _worker(stubs) as worker:
        assert _run(worker, "import jtk\nfrom jtk import checks")["error"] is None
        joint = _run(worker, "jtk.envs.Coin((0.5,), (1.0,)).joint(2)")["error"]
        assert joint.startswith("NotAvailable: jtk.envs.coin:Coin.joint"), joint
        assert "ImportError" in _run(worker, "import jtk.course._judge")["error"]
        assert "not available" in _run(worker, "checks.check_coin_joint(lambda *a: 0)")["error"]
        # the original source is nowhere in view: not at jtk's path, not in bytecode, not in a checkout
        assert _run(worker, "import glob\nassert not glob.glob(jtk.__path__[0] + '/**/*.pyc', recursive=True)\n"
                            "assert 'def _coin_joint_judge' not in open(jtk.__path__[0] + '/course/_judge.py').read()\n"
                            f"assert not __import__('os').path.exists({str(ROOT / 'solutions')!r})\n"
                            f"assert not __import__('os').path.exists({str(ROOT / '.git')!r})")["error"] is None


@needs_bwrap
def test_temporary_space_is_limited_and_counted_against_memory(stubs):
    memory = 2 * 2 ** 30
    assert sandbox.address_space(memory, "bwrap") == memory - sandbox.tmp_bytes(memory) - sandbox.SHM_BYTES
    fill = ("import os\nout = {}\nfor d in ('/tmp', '/dev/shm'):\n    n = 0\n    try:\n"
            "        with open(d + '/fill', 'wb') as f:\n            while n < 2 ** 31:\n"
            "                f.write(b'0' * 2 ** 24); f.flush(); n += 2 ** 24\n    except OSError:\n        pass\n"
            "    out[d] = n\nraise RuntimeError(repr(out))")
    with _worker(stubs, memory) as worker:
        written = ast.literal_eval(_run(worker, fill)["error"].split("RuntimeError: ", 1)[1])
    assert written["/tmp"] <= sandbox.tmp_bytes(memory) and written["/dev/shm"] <= sandbox.SHM_BYTES, written


@needs_bwrap
def test_a_stderr_flood_is_bounded_and_an_oversize_frame_is_refused(stubs):
    with _worker(stubs) as worker:
        assert _run(worker, "import sys\nsys.stderr.write('x' * 10 ** 7)")["error"] is None
        assert len(worker.stderr_tail()) <= sandbox.Worker.STDERR_TAIL  # the grader keeps a bounded tail
        with pytest.raises(sandbox.WorkerError) as info:
            worker.request({"op": "run", "code": "pass"}, time.monotonic() + 60, max_bytes=4)
        assert info.value.kind == "invalid"


# ------------------------------------------------------------------ submissions are data
def _notebook(path):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), path)
    return path


def test_only_regular_files_are_read(tmp_path):
    good = _notebook(tmp_path / "good.ipynb")
    assert exercises.read_notebook(good).cells[0].source == "x = 1"
    (tmp_path / "link.ipynb").symlink_to(good)
    os.mkfifo(tmp_path / "fifo.ipynb")
    (tmp_path / "zero.ipynb").symlink_to("/dev/zero")
    for name, kind in (("link.ipynb", "symbolic link"), ("fifo.ipynb", "FIFO"), ("zero.ipynb", "symbolic link")):
        start = time.monotonic()
        with pytest.raises(exercises.Rejected, match=kind):
            exercises.read_bytes(tmp_path / name)
        assert time.monotonic() - start < 5
    (tmp_path / "big.ipynb").write_bytes(b" " * 2048)
    with pytest.raises(exercises.Rejected, match="MB"):
        exercises.read_bytes(tmp_path / "big.ipynb", max_bytes=1024)


def test_messages_never_quote_the_file(tmp_path):
    secret = tmp_path / "secret.ipynb"
    secret.write_text("salt-SECRET-1234\n")
    with pytest.raises(exercises.Rejected) as info:
        exercises.read_notebook(secret)
    assert "SECRET" not in str(info.value) and info.value.status == "unreadable"


def test_one_notebook_per_student_and_exercise(tmp_path):
    sources = exercises.load_sources(ROOT / "solutions")
    alice = tmp_path / "alice"
    alice.mkdir()
    solution = (ROOT / "solutions" / "01_coin_joint.ipynb").read_text()
    for name in ("copy2.ipynb", "01_coin_joint.ipynb", "copy1.ipynb"):
        (alice / name).write_text(solution)
    (alice / "02_joint_log_likelihood.ipynb").symlink_to(ROOT / "solutions" / "02_joint_log_likelihood.ipynb")
    subs = {s.notebook: s for s in exercises.collect([tmp_path], sources)}
    assert sorted(subs) == ["01_coin_joint.ipynb", "02_joint_log_likelihood.ipynb"]
    first = subs["01_coin_joint.ipynb"]
    assert first.path.name == "01_coin_joint.ipynb" and not first.rejected
    assert [pathlib.Path(p).name for p in first.skipped] == ["copy1.ipynb", "copy2.ipynb"]
    assert "symbolic link" in subs["02_joint_log_likelihood.ipynb"].rejected
    row = exercises.grade_notebook(subs["02_joint_log_likelihood.ipynb"], sources)
    assert row["status"] == "rejected" and row["score"] == 0


@needs_bwrap
def test_a_worker_that_imports_another_jtk_than_the_stubbed_one_is_a_grader_fault(monkeypatch, tmp_path):
    """Fail closed: if the stubs are mounted where the worker's jtk is not (a grader started with ``python -m`` from
    a checkout beside an installed wheel did that), the notebook is not graded with the originals in reach."""
    monkeypatch.setattr(sandbox, "package_dir", lambda: str(tmp_path / "elsewhere" / "jtk"))
    sources = exercises.load_sources(ROOT / "solutions")
    sub = exercises.Submission("teacher", "01_coin_joint.ipynb", ROOT / "solutions" / "01_coin_joint.ipynb")
    row = exercises.grade_notebook(sub, sources, sandbox="bwrap", package=str(tmp_path), timeout=10)
    assert row["status"] == "error" and row["message"].startswith("grader fault") and row["score"] == 0, row


STEAL_REQUESTS = """import os, threading
def _steal():
    for fd in map(int, os.listdir('/proc/self/fd')):
        try:
            if fd > 2 and 'pipe' in os.readlink(f'/proc/self/fd/{fd}'):
                threading.Thread(target=lambda fd=fd: [os.read(fd, 1 << 16) for _ in range(10 ** 6)], daemon=True).start()
        except OSError:
            pass
_steal()
def f(b, p, n):
    return 0.5 * np.ones((2,) * n)
"""


def test_a_cell_that_steals_the_graders_requests_only_loses_its_own_cases(tmp_path):
    """An answer cell whose threads read the worker's input pipe takes the grader's requests (the cases' inputs)
    away from the worker: the worker then waits, the wall clock stops the cell, and its cases are unanswered.
    Nothing is judged right that the grader did not see answered."""
    source = exercises.SourceCheck("c", 1.0, "checks.check_coin_joint(f)", "", (("coin_joint", False),), None, ("f",))
    plan = {1: exercises.check_plan(source, 5)}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np\n" + STEAL_REQUESTS),
                                         nbformat.v4.new_code_cell("checks.check_coin_joint(f)")])
    done = exercises.execute(nb, [0, 1], workdir=str(tmp_path), timeout=4, plans=plan)
    assert done.fate[1] in ("timeout", "died"), done
    row = exercises.score_check(source, plan[1], done.answers.get(1), done.fate[1], False, done.errors.get(1))
    assert row["points"] < 1.0 and row["status"] in ("timeout", "error"), row
