"""Peak memory and process count of a whole `jtk grade` run with one hostile notebook.

    python benchmarks/containment.py [--children 12] [--mib 300] [--bomb 300] [--memory 2G]

Grades a class of two with `jtk grade --workers 1 --timeout 10`: the teacher's exercise 1 and a hostile copy of
it whose first answer cell forks ``--children`` processes that each write ``--mib`` MiB and sleep, and
``--bomb`` more that only sleep (a fork bomb kept small), then leaves 1a blank. While the command runs, every
0.25 s it sums over the command's whole process tree the memory (proportional set size: a page that forked
processes share counts once) and the tasks (processes and threads), and prints the peaks, the wall time, the exit status and the
two rows. ``JTK_SANDBOX_CGROUPS=0`` in the environment turns the control groups off (the supervisor measures and
ends the sandbox instead).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import nbformat
import psutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
NB1 = "01_coin_joint.ipynb"

HOSTILE = """
import os, time
for i in range({children} + {bomb}):
    if os.fork() == 0:
        if i < {children}:
            block = bytearray(b"x") * ({mib} * 2 ** 20)
        time.sleep(30)
        os._exit(0)
time.sleep(5)
"""


def sample(root: psutil.Process) -> tuple[int, int]:
    """(memory, tasks) of ``root``'s whole tree now."""
    memory = tasks = 0
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    for proc in procs:
        try:
            memory += proc.memory_full_info().pss  # a page shared by n processes (forks) counts 1/n in each
            tasks += proc.num_threads()
        except psutil.Error:
            pass
    return memory, tasks


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--children", type=int, default=12)
    ap.add_argument("--mib", type=int, default=300)
    ap.add_argument("--bomb", type=int, default=300)
    ap.add_argument("--memory", default="2G")
    args = ap.parse_args(argv)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jtk-containment-"))
    try:
        cls = tmp / "class"
        (cls / "teacher").mkdir(parents=True)
        (cls / "hostile").mkdir()
        shutil.copyfile(ROOT / "solutions" / NB1, cls / "teacher" / NB1)
        nb = nbformat.read(ROOT / "exercises" / NB1, as_version=4)
        first = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution"))
        nb.cells.insert(first, nbformat.v4.new_code_cell(HOSTILE.format(children=args.children, mib=args.mib,
                                                                          bomb=args.bomb)))
        nbformat.write(nb, cls / "hostile" / NB1)
        command = [sys.executable, "-m", "jtk.cli", "grade", str(cls), "--source", str(ROOT / "solutions"), "--json",
                   "--no-progress", "--workers", "1", "--timeout", "10", "--memory", args.memory]
        start = time.monotonic()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "JAX_PLATFORMS": "cpu"})
        root = psutil.Process(proc.pid)
        peak_memory = peak_tasks = 0
        while proc.poll() is None:
            memory, tasks = sample(root)
            peak_memory, peak_tasks = max(peak_memory, memory), max(peak_tasks, tasks)
            time.sleep(0.25)
        out, err = proc.communicate()
        seconds = time.monotonic() - start
        rows = json.loads(out) if out.strip() else []
        print(f"cgroups: {os.environ.get('JTK_SANDBOX_CGROUPS', '1') != '0'}  exit {proc.returncode}  "
              f"{seconds:.1f} s  peak memory {peak_memory / 2 ** 30:.2f} GiB  peak tasks {peak_tasks}  "
              f"load {os.getloadavg()[0]:.1f}")
        for row in rows:
            print(f"  {row['student']}: {row['score']} / {row['max_score']}  {row['message'][:150]}")
        if not rows:
            print(err[-2000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
