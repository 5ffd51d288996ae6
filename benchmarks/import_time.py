"""How long `import jtk` takes in a fresh process, against `import jax, jax.numpy, numpy` alone.

    JAX_PLATFORMS=cpu python benchmarks/import_time.py [--repeats 7]

Prints the median and the range over fresh interpreters (the first run also warms the OS file cache and is
dropped), and the five slowest modules of one `python -X importtime -c "import jtk"`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def timed(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for label, code in (("python -c pass", "pass"), ("import jax, jax.numpy, numpy", "import jax, jax.numpy, numpy"),
                        ("import jtk", "import jtk"), ("import jtk; from jtk import checks", "import jtk; from jtk import checks"),
                        ("import jtk; jtk.testbed", "import jtk; jtk.testbed")):
        timed(code)
        runs = [timed(code) for _ in range(args.repeats)]
        print(f"{label:40s} median {statistics.median(runs):.2f} s (range {min(runs):.2f}-{max(runs):.2f} s)")
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import jtk"], capture_output=True, text=True).stderr
    rows = [line.split("|") for line in out.splitlines() if line.startswith("import time:") and "|" in line]
    rows = [(int(r[1]), r[2].strip()) for r in rows[1:] if r[1].strip().isdigit()]
    print("slowest imports under `import jtk` (cumulative µs):", sorted(rows, reverse=True)[:5])


if __name__ == "__main__":
    main()
