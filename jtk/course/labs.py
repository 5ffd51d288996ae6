"""The labs for people without a checkout: ``jtk labs --out DIR`` writes the lab notebooks, the exercises and the
data files the labs read into ``DIR``, laid out as in the repository, so the start page's links and the labs'
relative paths (``../benchmarks/results/...``) work there as they do in a checkout.

Where the files come from (one source of truth: the repository's ``notebooks/``, ``exercises/`` and the few
``benchmarks/results/`` CSVs the labs read, listed in :data:`LAB_FILES`):

* an installed wheel carries them as package data in ``jtk/_labs/`` (the repository layout below it). The repository
  keeps them where they are; the build copies them: ``setup.py`` subclasses setuptools' ``build_py`` and copies
  :func:`lab_files` of the checkout into ``build_lib/jtk/_labs/`` (and names them as its source files, so an sdist
  carries them too). ``[tool.setuptools.package-data]`` cannot do this alone (it only takes files inside a package
  directory), ``data-files`` are not importable, and a symlink in ``jtk/`` would break on Windows and in sdists;
  ``setup.py`` reads this file with ``runpy`` (it imports only the standard library), so the list has one owner.
* an editable install (``pip install -e .``) or a plain checkout has no ``jtk/_labs/`` (the build skips the copy in
  editable mode, as setuptools asks of build steps): the files are read from the checkout beside ``jtk/``.

``solutions/`` is never among them: it holds the instructor's answers and hidden checks.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

PACKAGE_DIR = "_labs"  # jtk/_labs/ in an installed wheel
START_PAGE = "notebooks/00_start_here.ipynb"
EXERCISES = ("exercises/[0-9][0-9]_*.ipynb",)
# Relative to the repository root (and to jtk/_labs/ in a wheel). The CSVs are the committed results the labs read
# through ../benchmarks/results/ (notebooks 04, 05 and 06); the lab runs without the rest of benchmarks/.
LAB_FILES = (
    "notebooks/[0-9][0-9]_*.ipynb",  # the lab files are numbered: an Untitled.ipynb left in a checkout stays out
    *EXERCISES,
    "benchmarks/results/bandit_lab_points.csv",
    "benchmarks/results/bandit_paper_correlation.csv",
    "benchmarks/results/bandit_paper_points.csv",
    "benchmarks/results/coverage_e1_lab_summary.csv",
    "benchmarks/results/coverage_e1_lab_scale8_summary.csv",
    "benchmarks/results/coverage_e3_lab_per_input.csv",
    "benchmarks/results/tal_per_model.csv",
)


def lab_files(root, exercises_only: bool = False) -> list[str]:
    """The lab files under ``root`` (a checkout, or an installed ``jtk/_labs``), as sorted relative POSIX paths.

    Raises:
      FileNotFoundError: a pattern of :data:`LAB_FILES` matches nothing under ``root`` (a wheel without its labs
        would be worse than a failed build).
    """
    root = pathlib.Path(root)
    found = set()
    for pattern in EXERCISES if exercises_only else LAB_FILES:
        matches = [p for p in root.glob(pattern) if p.is_file()]
        if not matches:
            raise FileNotFoundError(f"no lab file matches {pattern!r} under {str(root)!r}")
        found.update(p.relative_to(root).as_posix() for p in matches)
    return sorted(found)


def labs_root() -> pathlib.Path:
    """Where this jtk's labs are: ``jtk/_labs`` of an installed wheel, else the checkout jtk runs from.

    Raises:
      FileNotFoundError: neither exists (jtk installed from a wheel built without them).
    """
    here = pathlib.Path(__file__).resolve().parents[1]  # jtk/ (this file: jtk/course/labs.py)
    packaged = here / PACKAGE_DIR
    if (packaged / START_PAGE).is_file():
        return packaged
    checkout = here.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / START_PAGE).is_file():
        return checkout
    raise FileNotFoundError(f"this jtk ({str(here)!r}) carries no labs: neither {str(packaged)!r} nor a checkout "
                            f"beside it; install jtk from its repository (pip install .) or clone the repository")


def write_labs(out, exercises_only: bool = False, force: bool = False) -> list[pathlib.Path]:
    """Writes the labs (the lab notebooks with the start page, the exercises and the CSVs the labs read) into ``out``.

    The layout is the repository's: ``out/notebooks/00_start_here.ipynb`` (open it first), ``out/notebooks/0N_*.ipynb``,
    ``out/exercises/0N_*.ipynb``, ``out/benchmarks/results/*.csv``. Nothing outside these files is touched: existing
    files of other names stay, and no file is written through a symbolic link.

    Args:
      out: the directory to write; it may be missing (its parent must exist) or empty.
      exercises_only: write only ``out/exercises/`` (what students solve).
      force: write into a non-empty ``out``, replacing files of the same names.

    Returns:
      The paths written, sorted.

    Raises:
      ValueError: ``out`` is not a path, is a file, its parent is missing, or it is not empty and ``force`` is false;
        or a destination is a symbolic link, or a link leads it outside ``out``.
      FileNotFoundError: this jtk carries no labs (see :func:`labs_root`).
    """
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise ValueError(f"out: expected a directory path, got {out!r}")
    if not isinstance(exercises_only, bool) or not isinstance(force, bool):
        raise TypeError(f"exercises_only and force: expected booleans, got {exercises_only!r} and {force!r}")
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out: expected a directory, but {str(out)!r} is a file")
    if not out.absolute().parent.is_dir():
        raise ValueError(f"out: expected an existing parent directory for {str(out)!r}, but "
                         f"{str(out.absolute().parent)!r} does not exist")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"out: expected a new or empty directory, but {str(out)!r} is not empty; pass force=True "
                         "(--force) to write the labs into it (files of the same names are replaced, others kept) "
                         "or choose another directory")
    root = labs_root()
    names = lab_files(root, exercises_only=exercises_only)
    out.mkdir(exist_ok=True)
    top = out.resolve()
    for name in names:  # every check before the first write
        dest = out / name
        if dest.is_symlink():
            raise ValueError(f"out: {str(dest)!r} is a symbolic link; remove it or choose another directory")
        if dest.exists() and not dest.is_file():
            raise ValueError(f"out: {str(dest)!r} exists and is not a file; remove it or choose another directory")
        parent = dest.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.resolve().is_relative_to(top):
            raise ValueError(f"out: {str(parent)!r} leads outside {str(out)!r} (a symbolic link); remove it or choose "
                             "another directory")
    written = []
    for name in names:
        dest = out / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(dest, (root / name).read_bytes())
        written.append(dest)
    return written


def _write_atomic(path: pathlib.Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
