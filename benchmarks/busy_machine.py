"""Grades and golden scores on a busy machine: the same as on a quiet one, or the script says where not.

    python benchmarks/busy_machine.py [--students 10] [--busy N] [--agents mlp deep_kernel ...] [--no-docs]
    python benchmarks/busy_machine.py --docs-only    # rewrite the docs section from the last run's CSV

1. Grades a generated class (examples/grading_class.py: correct, wrong, tampered, looping and crashing
   notebooks of all six exercises) with `jtk grade --workers 2 --timeout 30`, first on the quiet machine, then
   with N busy processes beside it (default 2 × the cores; each spins on one core until the script ends).
2. With the busy processes still running, recomputes the quick-grid golden scores of some agents
   (tests/data/golden/, the file of this machine's numerics key) with one testbed thread and with two, and compares them with the file.

It prints one table (and writes it into docs/grading.md, section ``busy-machine``, and
benchmarks/results/busy_machine.csv): per run the busy processes, the wall time, the load average, the share of
the points the correct notebooks got, whether every grade equals the quiet run's, how many cases timed out and
how many notebooks were graded again; per golden run whether every score is bit-identical. Golden scores are
compared under the flag the test suite uses (``XLA_FLAGS=--xla_cpu_max_isa=AVX2``, set here if unset).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "tests" / "data")]

from jtk._docs import DOCS, md_table, write_section  # noqa: E402
from grading_class import KINDS, SOLUTIONS, make_class  # noqa: E402

from jtk._info import PORTABLE_XLA_FLAG  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "busy_machine.csv"
SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"
GOLDEN = """
import json, sys
import pandas as pd
import make_quick_grid_golden as golden
from jtk import _info
want = pd.read_csv(golden.path_for(_info.numerics()["numerics_key"]))
same = {}
for name in sys.argv[1:]:
    got = golden.scores(name).reset_index(drop=True)
    got = pd.read_csv(pd.io.common.StringIO(got.to_csv(index=False, float_format="%.17g")))
    expected = want[want.agent == name].reset_index(drop=True)
    same[name] = bool(got[expected.columns].equals(expected))
print(json.dumps({"same": same, "numerics_key": _info.numerics()["numerics_key"]}))
"""


class Busy:
    """N processes that each keep one core busy (bounded: each stops by itself after ``seconds``)."""

    def __init__(self, n: int, seconds: float = 7200):
        self.n, self.seconds, self.procs = n, seconds, []

    def __enter__(self):
        code = SPIN.format(seconds=self.seconds)
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(self.n)]
        time.sleep(2)  # let the load build up
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        return False


def grade(root: pathlib.Path, csv: pathlib.Path, workers: int, timeout: int) -> dict:
    command = [sys.executable, "-m", "jtk.cli", "grade", str(root), "--csv", str(csv), "--force", "--json",
               "--workers", str(workers), "--timeout", str(timeout), "--salt", "benchmark", "--source",
               str(SOLUTIONS), "--no-progress"]
    start, load0 = time.perf_counter(), os.getloadavg()[0]
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"jtk grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout)
    return {"wall_s": round(wall, 1), "load": round(max(load0, os.getloadavg()[0]), 1), "rows": rows}


def correct_share(rows: list[dict], students: int) -> float:
    names = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
    correct = [r for r in rows if KINDS[(int(r["student"][-2:]) + names.index(r["notebook"])) % len(KINDS)]
               == "correct"]
    return sum(r["score"] for r in correct) / sum(r["max_score"] for r in correct)


def golden(agents: list[str], threads: int) -> dict:
    env = {**os.environ, "JTK_THREADS": str(threads), "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "data"), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", GOLDEN, *agents], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"golden check failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": round(time.perf_counter() - start, 1), **out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=10, help="class size (each hands in all six exercises)")
    parser.add_argument("--busy", type=int, default=2 * (os.cpu_count() or 1), help="busy processes (2 x cores)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=30)
    parser.add_argument("--agents", nargs="+", default=["mlp", "ensemble+", "deep_kernel", "bayes_optimal", "knn"])
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/grading.md")
    parser.add_argument("--docs-only", action="store_true", help="rewrite docs/grading.md from the last run's CSV")
    args = parser.parse_args()
    if args.docs_only:
        return write_docs(pd.read_csv(OUT), json.loads(OUT.with_suffix(".json").read_text()))
    if "--xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {PORTABLE_XLA_FLAG}".strip()
    work = pathlib.Path(tempfile.mkdtemp(prefix="jtk-busy-"))
    make_class(work / "class", args.students)
    table = []

    def grading_row(label: str, busy: int, run: dict, quiet: dict | None) -> dict:
        rows = run["rows"]
        same = None if quiet is None else all(a == b for a, b in zip(
            sorted(quiet["rows"], key=lambda r: (r["student"], r["notebook"])),
            sorted(rows, key=lambda r: (r["student"], r["notebook"]))))
        return {"run": label, "busy_processes": busy, "wall_s": run["wall_s"], "load": run["load"],
                "notebooks": len(rows), "correct_share": round(correct_share(rows, args.students), 4),
                "same_as_quiet": "—" if same is None else ("yes" if same else "NO"),
                "cases_timed_out": sum(c.get("cases_timed_out", 0) for r in rows for c in r["checks"]),
                "graded_again": sum(bool(r.get("retried")) for r in rows)}

    quiet = grade(work / "class", work / "quiet.csv", args.workers, args.timeout)
    table.append(grading_row("grade the class, quiet", 0, quiet, None))
    print(table[-1], flush=True)
    with Busy(args.busy):
        busy = grade(work / "class", work / "busy.csv", args.workers, args.timeout)
        table.append(grading_row("grade the class, busy", args.busy, busy, quiet))
        print(table[-1], flush=True)
        for threads in (1, 2):
            g = golden(args.agents, threads)
            same = all(g["same"].values())
            table.append({"run": f"golden scores of {len(args.agents)} agents, {threads} thread(s)",
                          "busy_processes": args.busy, "wall_s": g["wall_s"], "load": round(os.getloadavg()[0], 1),
                          "same_as_quiet": ("yes" if same else "NO: " + ", ".join(k for k, v in g["same"].items()
                                                                                  if not v)) + " (bit-identical)"})
            print(table[-1], flush=True)
    frame = pd.DataFrame(table)
    frame.to_csv(OUT, index=False)
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    setup = {"cores": os.cpu_count(), "cpu": cpu, "date": time.strftime("%Y-%m-%d"), "students": args.students,
             "notebooks": len(quiet["rows"]), "workers": args.workers, "timeout": args.timeout, "agents": args.agents}
    OUT.with_suffix(".json").write_text(json.dumps(setup, indent=1) + "\n")
    print(frame.to_string(index=False))
    if not args.no_docs:
        write_docs(frame, setup)


def write_docs(frame: pd.DataFrame, setup: dict) -> None:
    text = (f"`python benchmarks/busy_machine.py` on {setup['cores']} cores ({setup['cpu']}), {setup['date']}: a class "
            f"of {setup['students']} students × 6 exercises ({setup['notebooks']} notebooks), `jtk grade --workers "
            f"{setup['workers']} --timeout {setup['timeout']}`; golden quick-grid scores of {', '.join(setup['agents'])}."
            f" The load column is the 1-minute load average; `cases_timed_out` are the cases of the looping notebooks "
            f"(stopped by their CPU-time budget), the same in both runs.\n\n" + md_table(frame, "{:g}", index=False))
    write_section("busy-machine", text, DOCS / "grading.md")


if __name__ == "__main__":
    main()
