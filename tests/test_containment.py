"""A submission is contained as a whole: its limits cover all its processes together, in grading and the challenge.

Each attack is small (small limits, a few processes, short times) and aims at one property of the design:

* memory: children forked by one submission, each under the per-process address-space limit, must not hold more
  than the submission's memory limit together;
* processes: a fork bomb stops at the submission's process limit;
* wall clock: cells that each stay under the per-cell backstop must not take a notebook past its own cap;
* CPU share: an entry that forks busy processes must not starve the entry scored beside it;
* clean-up: nothing the submission started outlives it;
* deny by default: the grading sandbox's jtk holds only what the exercise's cells import.

The grader is never the process that a limit kills: every test here ends with the grader answering.
"""

import os
import pathlib
import sys
import textwrap
import time

import nbformat
import pandas as pd
import psutil
import pytest

from jtk.course import challenge, exercises, sandbox

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
NB1 = "01_coin_joint.ipynb"
MODE = sandbox.resolve("auto")
needs_containment = pytest.mark.skipif(MODE == "none", reason="no sandbox here (needs bwrap, or root for user mode)")
needs_bwrap = pytest.mark.skipif(MODE != "bwrap", reason="needs bubblewrap (apt-get install bubblewrap)")

MiB = 2 ** 20


def _worker(script: str, tmp_path, **limits) -> sandbox.Worker:
    """A sandbox worker that runs ``script`` (plain Python, no jtk) under ``limits``."""
    workdir = tmp_path / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    return sandbox.Worker([sys.executable, "-I", "-c", textwrap.dedent(script)], mode=MODE, workdir=str(workdir),
                          **limits)


def _wait_for(worker, word: str, count: int, seconds: float) -> int:
    """How many times ``word`` is in the worker's stderr once it reached ``count`` or ``seconds`` passed."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        seen = worker.stderr_tail().count(word)
        if seen >= count or worker.proc.poll() is not None:
            time.sleep(0.5)  # what is still on its way
            break
        time.sleep(0.2)
    return worker.stderr_tail().count(word)


FORK_MEMORY = """
import os, sys, time
for i in range({children}):
    if os.fork() == 0:
        block = bytearray(b"x") * ({mib} * 2 ** 20)  # every page written: resident, not just reserved
        sys.stderr.write("held\\n"); sys.stderr.flush()
        time.sleep(60)
        os._exit(0)
time.sleep(60)
"""


def test_forked_children_share_one_memory_limit(tmp_path):
    """Six children of 200 MiB each, every one under the per-process address-space limit, in a 640 MiB sandbox:
    with limits per process all six hold their memory (1.2 GiB); with one limit for the sandbox at most three do,
    and the worker says the memory limit was hit."""
    worker = _worker(FORK_MEMORY.format(children=6, mib=200), tmp_path, memory=640 * MiB)
    try:
        held = _wait_for(worker, "held", 6, 10)
    finally:
        worker.close()
    assert held <= 3, f"{held} children of 200 MiB each held their memory in a 640 MiB sandbox"
    assert worker.limit_hit == "memory", worker.limit_hit


FORK_BOMB = """
import os, sys, time
made = 0
for i in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    made += 1
sys.stderr.write(f"forked {made}\\n"); sys.stderr.flush()
time.sleep(60)
"""


def test_a_fork_bomb_stops_at_the_process_limit(tmp_path):
    """200 forks under a limit of 40 tasks: a control group refuses the 40th; the supervisor (no control group)
    ends the sandbox. Either way the worker says the process limit was hit."""
    worker = _worker(FORK_BOMB, tmp_path, memory=1024 * MiB, processes=40)
    try:
        _wait_for(worker, "forked", 1, 30)
        tail = worker.stderr_tail()
        end = time.monotonic() + 10
        while worker.group.dirs == {} and worker.proc.poll() is None and time.monotonic() < end:
            time.sleep(0.1)  # no control group: the supervisor ends the sandbox once it sees it over the limit
        ended = worker.proc.poll() is not None
    finally:
        worker.close()
    made = int(tail.split("forked ")[-1].split()[0])
    assert made < 40 or ended, made
    assert worker.limit_hit == "processes", worker.limit_hit


def test_nothing_a_worker_started_outlives_it(tmp_path):
    """Children that leave the worker's session (setsid, double fork) are ended with it."""
    script = """
    import os, sys, time
    for i in range(5):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(120)
            os._exit(0)
    sys.stderr.write("spawned\\n"); sys.stderr.flush()
    time.sleep(120)
    """
    worker = _worker(script, tmp_path, memory=1024 * MiB)
    _wait_for(worker, "spawned", 1, 20)
    time.sleep(0.5)
    inside = sandbox.processes_of(worker)
    worker.close()
    assert len(inside) >= 6, inside
    time.sleep(0.5)
    alive = [p for p in inside if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, alive


BUSY_LOOP = """
import os, sys, time
for i in range({children}):
    if os.fork() == 0:
        os.setsid()  # a session of its own: the scheduler's autogroups would give it a share of its own
        break
sys.stderr.write("busy\\n"); sys.stderr.flush()
end = time.monotonic() + 60
while time.monotonic() < end:
    pass
"""


def _cpu_seconds(worker) -> float:
    total = 0.0
    for pid in sandbox.processes_of(worker):
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


@pytest.mark.skipif(not sandbox.cgroups().get("cpu"), reason="a CPU share needs a cpu control group")
def test_a_sandbox_gets_one_cpu_share_however_many_processes_it_starts(tmp_path):
    """Two sandboxes side by side, one busy process against twenty, each in a session of its own: each sandbox gets
    about the same CPU time (one share each), not one twenty-first of it (the scheduler's autogroups give each
    session a share). A ratio of CPU times, so other load on the machine does not change it."""
    one = _worker(BUSY_LOOP.format(children=0), tmp_path / "one", memory=1024 * MiB)
    many = _worker(BUSY_LOOP.format(children=19), tmp_path / "many", memory=1024 * MiB)
    try:
        _wait_for(one, "busy", 1, 20), _wait_for(many, "busy", 20, 20)
        before = _cpu_seconds(one), _cpu_seconds(many)
        time.sleep(6)
        after = _cpu_seconds(one), _cpu_seconds(many)
    finally:
        one.close(), many.close()
    got_one, got_many = after[0] - before[0], after[1] - before[1]
    assert got_one > 0.4 * got_many, (got_one, got_many)


# ------------------------------------------------------------------ through grading
def _exercise_with(code_cells, answer_1a=None):
    """Exercise 1 with the honest answer to 1b, ``answer_1a`` (default: left blank) and ``code_cells`` added before
    the first answer cell (a student may add cells)."""
    nb, solved = (nbformat.read(folder / NB1, as_version=4) for folder in (EXERCISES, SOLUTIONS))
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    by_id["ex1b-answer"].source = next(c.source for c in solved.cells
                                       if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1b-answer")
    if answer_1a is not None:
        by_id["ex1a-answer"].source = answer_1a
    at = nb.cells.index(by_id["ex1a-answer"])
    nb.cells[at:at] = [nbformat.v4.new_code_cell(textwrap.dedent(code)) for code in code_cells]
    return nb


def _grade(tmp_path, student, nb, **options):
    path = tmp_path / "class" / student / NB1
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    sources = {NB1: exercises.load_source(SOLUTIONS / NB1)}
    (sub,) = exercises.collect([tmp_path / "class"], sources)
    start = time.monotonic()
    row = exercises.grade_notebook(sub, sources, sandbox=MODE, **options)
    return row, time.monotonic() - start


FORK_CELL = """
import os, time
for i in range(8):
    if os.fork() == 0:  # the cell ends; its children hold their memory behind it
        block = bytearray(b"x") * (400 * 2 ** 20)
        time.sleep(20)
        os._exit(0)
time.sleep(3)
"""


@needs_containment
def test_a_notebook_whose_children_exceed_its_memory_loses_its_row_and_says_so(tmp_path):
    """Eight children of 400 MiB under --memory 2G: the notebook scores nothing (1b's honest answer included), and
    its row names the memory limit; the grader answers."""
    row, _ = _grade(tmp_path, "forker", _exercise_with([FORK_CELL]), memory=2 * 2 ** 30, timeout=10)
    assert row["status"] == "graded" and row["score"] == 0, row
    assert "memory" in row["message"].lower() and "limit" in row["message"].lower(), row["message"]
    assert all(c["points"] == 0 for c in row["checks"]), row["checks"]


@needs_containment
def test_cells_under_the_cell_backstop_still_meet_the_notebook_cap(tmp_path):
    """Three cells of 7 s each, under the 8 s backstop of a 2 s check budget: with a per-cell cap only, the notebook
    takes 21 s and more and nothing is reported; with a cap of 16 s for the notebook it stops there, the cells after
    it (both answers) do not run, and the row says which limit."""
    row, seconds = _grade(tmp_path, "sleeper", _exercise_with(["import time; time.sleep(7)"] * 3), timeout=2,
                          notebook_timeout=16)
    assert row["score"] == 0 and "notebook" in row["message"] and "wall-clock" in row["message"], row
    assert all(c["status"] == "not_run" for c in row["checks"]), row["checks"]
    assert seconds < 16 + exercises.STARTUP_SECONDS, seconds  # a worker's start-up is not the notebook's time
    assert not row.get("wall_timeouts"), row  # not graded again: the cap is the notebook's own


# ------------------------------------------------------------------ deny by default
@needs_bwrap
def test_only_what_the_exercise_imports_is_importable_in_its_sandbox(tmp_path):
    """Exercise 2 (the joint log-likelihood) uses jtk.envs: an agent, the testbed or the plots are not importable
    in its grading sandbox, whatever stubs there are; what its cells import is."""
    source = exercises.load_source(SOLUTIONS / "02_joint_log_likelihood.ipynb")
    allowed = exercises.allowed_modules(source)
    assert "jtk.envs" in allowed and "jtk.course._grading_worker" in allowed
    everything = sorted(sandbox.package_modules())
    outside = [m for m in everything if m not in allowed]
    assert any(m.startswith("jtk.agents") for m in outside) and any(m.startswith("jtk.testbed") for m in outside)
    package = sandbox.stubbed_package(tmp_path / "pkg", allowed=allowed)
    worker = sandbox.Worker([sys.executable, *exercises.WORKER], mode="bwrap", memory=3 * 2 ** 30,
                            package=str(package))
    try:
        assert worker.recv(time.monotonic() + 120).get("ready")
        probe = textwrap.dedent(f"""
        import importlib
        reached = []
        for name in {outside!r}:
            try:
                importlib.import_module(name)
                reached.append(name)
            except BaseException:
                pass
        for name in ("jtk.envs", "jtk.checks"):
            importlib.import_module(name)
        assert not reached, reached
        """)
        reply = worker.request({"op": "run", "code": probe}, time.monotonic() + 120)
    finally:
        worker.close()
    assert reply.get("error") is None, reply


# ------------------------------------------------------------------ through the challenge
HONEST = """
import jtk

def make_agent():
    return jtk.agents.make("mlp", num_steps=50)
"""

BUSY = """
import os, sys, time
import numpy as np

MARK = "{mark}"
for i in range(100):
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", "import time\\nend = time.time() + {sleep}\\n"
                                  "while time.time() < end: pass", MARK])

class Uniform:
    slept = False

    def fit(self, x, y, seed=0, prior=None):
        if not Uniform.slept:  # keeps its busy children running beside the honest entry for a while
            time.sleep(float("{sleep}"))
            Uniform.slept = True
        self.k = prior.num_classes
        return self

    def sample_logits(self, x, num_samples, seed=0):
        return np.zeros((num_samples, len(x), self.k), np.float32)

def make_agent():
    return Uniform()
"""


def test_a_busy_entry_does_not_starve_the_one_beside_it(tmp_path):
    """With --workers 2, an entry that forks 100 busy processes and then waits is scored beside an honest one: the
    honest entry finishes in time, and none of the busy processes outlives the board. (How the CPU is shared between
    the two is measured in test_a_sandbox_gets_one_cpu_share_however_many_processes_it_starts, which other load on
    this machine does not change.)"""
    mark = f"jtk-busy-{os.getpid()}-{time.time_ns()}"
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "honest.py").write_text(textwrap.dedent(HONEST))
    (subs / "busy.py").write_text(textwrap.dedent(BUSY.format(mark=mark, sleep=15)))
    cfg = tmp_path / "challenge.toml"
    cfg.write_text('grid = "quick"\nseeds = 1\nbaselines = []\ntime_limit_s = 90.0\nmemory_limit_mb = 3072\n'
                   'practice_seeds = 1\nnum_train = [10]\ntemperatures = [0.5]\nnum_test = 50\nnum_samples = 50\n'
                   f'salt = "{"ab" * 16}"\n')
    challenge.score(subs, cfg, tmp_path / "board", workers=2, progress=False)
    board = pd.read_csv(tmp_path / "board" / "leaderboard.csv").set_index("name")
    print(board[["status", "seconds"]])
    assert board.loc["honest", "status"] == "ok", board.loc["honest"].to_dict()
    time.sleep(1)
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if mark in (p.info["cmdline"] or [])]
    assert not left, left
