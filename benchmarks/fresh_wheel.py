"""The package as a student without a checkout gets it: build, check, install in a fresh venv, write and run a lab.

    python benchmarks/fresh_wheel.py [--lab 01_coins] [--out benchmarks/results/fresh_wheel.csv]

Builds the sdist and the wheel with ``python -m build`` and checks them with ``twine check`` (both installed into
a throwaway venv from the package registry: they are tools of the release, not jtk's dependencies), installs the
wheel into a second fresh venv with the pinned versions (``pip install -c constraints.txt jtk-*.whl``), and then,
from a folder outside the checkout, runs ``jtk labs --out labs`` and executes one lab headless (``jupyter execute``,
nbclient) in that venv (a cold compilation cache). Prints and writes the wheel's size, its lab files, the install, write and
execution times.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(command: list[str], cwd=None, timeout: float = 1800) -> float:
    """Runs ``command``; returns its wall time in seconds, stops the benchmark with its output if it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(pathlib.Path.home()),
                               "JAX_PLATFORMS": "cpu"})
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lab", default="01_coins", help="the lab notebook to execute (name without .ipynb)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fresh_wheel.csv"))
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jtk-wheel-"))
    try:
        tools, env = tmp / "tools", tmp / "venv"
        run([sys.executable, "-m", "venv", str(tools)])
        run([str(tools / "bin" / "pip"), "install", "-q", "build", "twine"])
        build_s = run([str(tools / "bin" / "python"), "-m", "build", "--outdir", str(tmp / "dist"), str(ROOT)])
        wheel = next((tmp / "dist").glob("jtk-*.whl"))
        sdist = next((tmp / "dist").glob("jtk-*.tar.gz"))
        run([str(tools / "bin" / "twine"), "check", "--strict", str(wheel), str(sdist)])
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
        labs = [n for n in names if n.startswith("jtk/_labs/")]
        assert not [n for n in names if "solutions/" in n], "the wheel must never carry solutions/"

        run([sys.executable, "-m", "venv", str(env)])
        install_s = run([str(env / "bin" / "pip"), "install", "-q", "-c", str(ROOT / "constraints.txt"), str(wheel)])
        student = tmp / "student"  # no checkout anywhere near: the labs come from the installed package
        student.mkdir()
        labs_s = run([str(env / "bin" / "jtk"), "labs", "--out", "labs"], cwd=student)
        notebook = student / "labs" / "notebooks" / f"{args.lab}.ipynb"
        cache = tmp / "jax-cache"  # cold: nothing compiled before
        execute_s = run(["env", f"JAX_COMPILATION_CACHE_DIR={cache}", str(env / "bin" / "jupyter"), "execute",
                         str(notebook)], cwd=student)  # nbclient's runner: fails if a cell raises
        row = {"wheel": wheel.name, "wheel_mb": round(wheel.stat().st_size / 1e6, 2),
               "sdist_mb": round(sdist.stat().st_size / 1e6, 2), "lab_files": len(labs), "build_s": round(build_s, 1),
               "twine_check": "PASSED", "install_s": round(install_s, 1), "jtk_labs_s": round(labs_s, 1),
               "lab": args.lab, "lab_execute_s": round(execute_s, 1), "python": sys.version.split()[0]}
        pd.DataFrame([row]).to_csv(args.out, index=False)
        for key, value in row.items():
            print(f"{key:14s} {value}")
        print(f"written to {args.out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
