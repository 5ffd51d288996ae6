"""Where the paper studies (``jtk reproduce``) read and write: one owner for the results and docs folders.

In a checkout of jtk (the package's parent folder holds ``benchmarks/results/`` and ``docs/``) the studies read the
stored CSVs from ``<root>/benchmarks/results`` and write their page sections into ``<root>/docs``, as the committed
results were made. Installed from a wheel there is no such folder: everything goes to ``./jtk-results`` (the folder
is resolved when a study module is imported), or to the ``--out-dir`` a study or ``jtk reproduce`` is given.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_OUT_DIR = Path("jtk-results")  # a pip install's results and pages, relative to the working directory


def checkout_root() -> Path | None:
    """The checkout jtk runs from (the folder above the package) if it has ``benchmarks/results`` and ``docs``."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "benchmarks" / "results").is_dir() and (root / "docs").is_dir() else None


def _locations() -> tuple[Path, Path, Path]:
    root = checkout_root()
    if root is None:
        out = DEFAULT_OUT_DIR.resolve()
        return out, out, out
    return root, root / "benchmarks" / "results", root / "docs"


# ROOT: the checkout (a pip install: the output folder); RESULTS: the studies' CSVs; DOCS: the pages they write into.
ROOT, RESULTS, DOCS = _locations()
