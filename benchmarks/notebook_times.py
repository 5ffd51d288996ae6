"""Headless run time of each lab notebook, with an empty (cold) or a filled (warm) compilation cache.

    JAX_PLATFORMS=cpu python benchmarks/notebook_times.py [NOTEBOOK ...] [--warm] [--repeats 1] [--csv FILE] [--cells]

Each notebook runs top to bottom in a fresh kernel (nbclient, as ``jupyter nbconvert --execute`` does), from
``notebooks/`` as its working directory, with ``JTK_CACHE_DIR`` pointing at a new empty directory: every XLA
program compiles, as on a student's first run. ``--warm`` runs each notebook once to fill that directory and times
a second run. The time includes starting the kernel and ``import jtk``. Target: every lab ≤ 15 s cold on a 2-core
laptop CPU (issue #31; it was 30 s in issue #15). ``--cells`` prints the cells that took 0.3 s or more.

``--readme`` (cold runs of all six labs only) writes the medians into the README's labs table, the "headless run"
column, and the date, number of runs and load average into the line under it: the README's figures come from this
script, never by hand.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import re
import statistics
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
LABS = sorted(p.name for p in (ROOT / "notebooks").glob("0[1-9]_*.ipynb"))


def run_once(path: pathlib.Path, cache_dir: str, timeout: int = 600, cells: bool = False) -> float:
    """Executes one notebook in a fresh kernel; returns its wall time in seconds.

    With ``cells``, also prints each code cell that took 0.3 s or more (the kernel's own timestamps).
    """
    nb = nbformat.read(path, as_version=4)
    env = {**os.environ, "JTK_CACHE_DIR": cache_dir, "JTK_COMPILATION_CACHE": "1",
           "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=cells,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with _environ(env):
        client.execute()
    seconds = time.perf_counter() - start
    if cells:
        for i, cell in enumerate(nb.cells):
            stamps = cell.metadata.get("execution", {})
            if cell.cell_type == "code" and "shell.execute_reply" in stamps:
                took = (datetime.datetime.fromisoformat(stamps["shell.execute_reply"].replace("Z", "+00:00"))
                        - datetime.datetime.fromisoformat(stamps["iopub.execute_input"].replace("Z", "+00:00")))
                if took.total_seconds() >= 0.3:
                    first = next((line for line in cell.source.splitlines() if line.strip()), "")
                    print(f"    cell {i:2d} {took.total_seconds():5.1f} s  {first[:70]}", flush=True)
    return seconds


README_START = "<!-- labs-table: start"
README_END = "<!-- labs-table: end -->"
README_MEASURED = re.compile(r"^Measured on \d{4}-\d{2}-\d{2}: .*?\(`benchmarks/notebook_times\.py --readme`\)\.$", re.M)


def write_readme(rows: list[dict], readme: pathlib.Path = ROOT / "README.md", today: datetime.date | None = None
                 ) -> None:
    """Writes cold medians into the README's labs table (last column) and what was measured into its "Measured on" line.

    Args:
      rows: this script's rows (notebook, cache, median_s, runs, load_1min), one per lab, all cold.
      readme: the README to rewrite in place.
      today: the measurement date (default: today).

    Raises:
      ValueError: warm rows, a lab of the table without a row, or a README without the table's markers, before
        anything is written.
    """
    if any(r["cache"] != "cold" for r in rows):
        raise ValueError("--readme needs cold runs (the table gives cold-cache times); drop --warm")
    medians = {r["notebook"]: r["median_s"] for r in rows}
    text = readme.read_text()
    if README_START not in text or README_END not in text or not README_MEASURED.search(text):
        raise ValueError(f"{readme} has no labs table between {README_START!r} and {README_END!r} with a "
                         f"'Measured on YYYY-MM-DD: ... (`benchmarks/notebook_times.py --readme`).' line")
    head, rest = text.split(README_START, 1)
    table, tail = rest.split(README_END, 1)
    lines = table.split("\n")
    seen = set()
    for i, line in enumerate(lines):
        match = re.match(r"^\| \d+ \| `(\d\d_[^`]+\.ipynb)`", line)
        if match:
            name = match.group(1)
            if name not in medians:
                raise ValueError(f"--readme needs every lab of the table; {name} was not run")
            cells = line.rstrip().rstrip("|").rsplit("|", 1)
            lines[i] = f"{cells[0]}| {medians[name]:.1f} s |"
            seen.add(name)
    if not seen:
        raise ValueError(f"{readme}'s labs table has no lab rows")
    runs = min(r["runs"] for r in rows)
    load = max(r["load_1min"] for r in rows)
    measured = (f"Measured on {(today or datetime.date.today()).isoformat()}: the median of {runs} cold run(s) per lab, "
                f"load average at most {load:.1f} (`benchmarks/notebook_times.py --readme`).")
    table = README_MEASURED.sub(lambda _: measured, "\n".join(lines))
    readme.write_text(head + README_START + table + README_END + tail)


class _environ:
    """Temporarily replaces os.environ (the kernel inherits it)."""

    def __init__(self, env):
        self.env, self.saved = env, None

    def __enter__(self):
        self.saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)

    def __exit__(self, *exc):
        os.environ.clear()
        os.environ.update(self.saved)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=LABS, help="notebook file names in notebooks/ (default: 01–06)")
    parser.add_argument("--warm", action="store_true", help="time a second run with the cache the first one filled")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per notebook (each with a new cold cache)")
    parser.add_argument("--csv", default=None, help="also write the rows to this CSV file")
    parser.add_argument("--cells", action="store_true", help="also print each cell that took 0.3 s or more")
    parser.add_argument("--readme", action="store_true",
                        help="write the cold medians into README.md's labs table (all six labs, no --warm)")
    args = parser.parse_args(argv)
    if args.readme and (args.warm or sorted(args.notebooks) != LABS):
        print("notebook_times: --readme needs cold runs of all six labs (no --warm, no notebook names)",
              file=sys.stderr)
        return 2
    rows = []
    for name in args.notebooks:
        path = ROOT / "notebooks" / name
        if not path.is_file():
            print(f"notebook_times: no notebook {path}", file=sys.stderr)
            return 2
        times = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix="jtk-xla-") as cache:
                if args.warm:
                    run_once(path, cache)
                times.append(run_once(path, cache, cells=args.cells))
        row = {"notebook": name, "cache": "warm" if args.warm else "cold", "median_s": statistics.median(times),
               "max_s": max(times), "runs": len(times), "load_1min": os.getloadavg()[0]}
        rows.append(row)
        print(f"{name:40s} {row['cache']}  median {row['median_s']:6.1f} s  max {row['max_s']:6.1f} s  "
              f"(load {row['load_1min']:.1f})", flush=True)
    if args.csv:
        import pandas as pd
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    if args.readme:
        write_readme(rows)
        print(f"notebook_times: wrote the medians into {ROOT / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
