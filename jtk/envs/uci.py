"""The eight UCI regression data sets of Wang, Sun & Grosse (2021), §5.1 and Table 1, shipped with jtk.

Boston, Concrete, Energy, Wine (red), Yacht, Kin8nm, Naval and Power Plant, in the whitespace-separated form that
Hernández-Lobato & Adams (2015) and Gal & Ghahramani (2016) distribute (provenance and licences:
``jtk/envs/uci_data/README.md``). The files are package data; :func:`load_uci` checks every file it reads against
the SHA-256 sum recorded here before it parses a byte, so a truncated, edited or substituted copy is refused with
:class:`UCIChecksumError` instead of silently changing a study's numbers.

Two conventions pick the target (``columns``):

* ``"authors"`` (default): the last column is the target and every other column an input. Wang et al.'s loader
  (``data/data.py`` of their code) reads each table this way. For seven of the eight sets this is also what the
  index files say; for Naval it makes the turbine decay coefficient (column 17) the target and keeps the
  compressor decay coefficient (column 16) as an input.
* ``"index"``: the columns ``index_features.txt`` and ``index_target.txt`` name (Gal & Ghahramani's): for Naval
  the compressor decay coefficient is the target and column 17 is dropped.

Example:
  >>> df = load_uci("yacht")
  >>> df.shape, df.columns[-1]
  ((308, 7), 'target')
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from jtk import _checks

__all__ = ["UCI_DATASETS", "UCIChecksumError", "UCIInfo", "load_uci", "uci_path", "verify_uci"]

DATA_DIR = Path(__file__).with_name("uci_data")
FILES = ("data.txt", "index_features.txt", "index_target.txt")


class UCIInfo(NamedTuple):
    """What a shipped copy must be: its files' SHA-256 sums and the table's shape."""

    sha256: dict  # file name → hex SHA-256
    rows: int  # examples
    columns: int  # columns of data.txt
    index_target: int  # the 0-based target column of index_target.txt
    description: str


def _sums(data: str, features: str, target: str) -> dict:
    return {"data.txt": data, "index_features.txt": features, "index_target.txt": target}


# The sums of data.txt are those of the copies' provenance note; the index files' were taken from the same copies.
UCI_DATASETS: dict[str, UCIInfo] = {
    "boston": UCIInfo(_sums("baadf72995725d76efe787b664e1f083388c79ba21ef9a7990d87f774184735a",
                            "b762e997c89e06c8e2f54d015ae208226f3099cac114245641578f183da0450a",
                            "1a252402972f6057fa53cc172b52b9ffca698e18311facd0f3b06ecaaef79e17"),
                          506, 14, 13, "Boston Housing: median house value (MEDV) from 13 attributes of the suburb"),
    "concrete": UCIInfo(_sums("43d290fd2c2a399ad7e62c45cab5337ba94ece69ebdcf5875aa668cb886243de",
                              "d59784813bbf8e9a47929bbd4195498a43979c690f9e799cfe2e14522217c48d",
                              "aa67a169b0bba217aa0aa88a65346920c84c42447c36ba5f7ea65f422c1fe5d8"),
                            1030, 9, 8, "Concrete Compressive Strength (Yeh 1998): strength from 8 mix ingredients and age"),
    "energy": UCIInfo(_sums("7f8bf024cea437267d56be99b7af7bb3faebec8a7bccfbb20d06d52d9372a950",
                            "d59784813bbf8e9a47929bbd4195498a43979c690f9e799cfe2e14522217c48d",
                            "aa67a169b0bba217aa0aa88a65346920c84c42447c36ba5f7ea65f422c1fe5d8"),
                          768, 9, 8, "Energy Efficiency (Tsanas & Xifara 2012): a building's heating load from 8 shape attributes"),
    "wine": UCIInfo(_sums("3ba41eaf4ab562088cf47b5c9dca2b4de2a330c3ee38a7920b4527a09574d5c1",
                          "d3dcb66facaeee49137e7ce2c7b05a4a190876ba4bd1c6dcf48ef39fdb78e549",
                          "25d4f2a86deb5e2574bb3210b67bb24fcc4afb19f93a7b65a057daa874a9d18e"),
                        1599, 12, 11, "Wine Quality, red (Cortez et al. 2009): quality score from 11 physicochemical tests"),
    "yacht": UCIInfo(_sums("00dfecc0fc01ddd4c90b558a3ac11b246df8ebcfea130724223475a9a67f0ea1",
                           "9d6093db34ed3db1834973eb10698ddb099971d39ac0e4707485d5f5aa5b0595",
                           "06e9d52c1720fca412803e3b07c4b228ff113e303f4c7ab94665319d832bbfb7"),
                         308, 7, 6, "Yacht Hydrodynamics (Gerritsma et al.): residuary resistance from 6 hull attributes"),
    "kin8nm": UCIInfo(_sums("a694ce0c7a21390f2bd2a205c36f2482cd974637a207038696716e22f3bbe810",
                            "d59784813bbf8e9a47929bbd4195498a43979c690f9e799cfe2e14522217c48d",
                            "aa67a169b0bba217aa0aa88a65346920c84c42447c36ba5f7ea65f422c1fe5d8"),
                          8192, 9, 8, "Kin8nm (Delve): forward kinematics of an 8-link robot arm, non-linear, medium noise"),
    "naval": UCIInfo(_sums("de0ea69da1efaab8b9655ffed828547d10dd68c1fb8c6e0163e6a988def393a6",
                           "19db51381e85a36e256e116b63fa48901a4277fd8e681840ed0ff6d1cdd5c0e3",
                           "e6c21e8d260fe71882debdb339d2402a2ca7648529bc2303f48649bce0380017"),
                         11934, 18, 16, "Naval Propulsion Plants (Coraddu et al. 2016): decay state coefficients of a "
                                        "gas turbine from 16 measurements"),
    "power_plant": UCIInfo(_sums("daebd20c408dfc5c4979604f240e891be162c3a5d00d662380aa669044a1fb31",
                                 "e169bdf59fac30d230f7d21be511d04dc8cc61e5edb1d8255758bc220ba3d4c7",
                                 "7de1555df0c2700329e815b93b32c571c3ea54dc967b89e81ab73b9972b72d1d"),
                               9568, 5, 4, "Combined Cycle Power Plant (Tüfekci 2014): net electrical output from 4 "
                                               "ambient variables"),
}


class UCIChecksumError(ValueError):
    """A shipped UCI file is missing or its bytes are not the recorded ones (a corrupted or substituted copy)."""


def uci_path(name: str, root: str | Path | None = None) -> Path:
    """The folder of data set ``name`` (under ``root``, default: the copies shipped in jtk/envs/uci_data)."""
    _checks.one_of("name", name, tuple(UCI_DATASETS))
    base = DATA_DIR if root is None else Path(_checks.path("root", root))
    return base / name


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_uci(name: str, root: str | Path | None = None) -> Path:
    """Checks every file of data set ``name`` against its recorded SHA-256 → its folder.

    Raises:
      UCIChecksumError: a file is missing or its sum differs (the message names the file, both sums and what to do).
    """
    folder = uci_path(name, root)
    for file, expected in UCI_DATASETS[name].sha256.items():
        path = folder / file
        if not path.is_file():
            raise UCIChecksumError(f"UCI data set {name!r}: {path} is missing; jtk ships it in jtk/envs/uci_data "
                                   "(reinstall jtk, or pass root= a folder holding a verified copy)")
        got = _sha256(path)
        if got != expected:
            raise UCIChecksumError(f"UCI data set {name!r}: {path} has SHA-256 {got}, expected {expected}: the copy "
                                   "is corrupted or not the published file; restore it from jtk/envs/uci_data "
                                   "(provenance in its README.md) rather than using it")
    return folder


def _index(path: Path) -> list[int]:
    return [int(tok) for tok in path.read_text().split()]


def load_uci(name: str, columns: str = "authors", root: str | Path | None = None) -> pd.DataFrame:
    """Data set ``name``, verified (``verify_uci``) → DataFrame: inputs ``x0 … x{k-1}`` (the file's columns, in
    order) and ``target``, float64, one row per example.

    Args:
      name: one of :data:`UCI_DATASETS`.
      columns: ``"authors"`` (the last column is the target, the rest inputs: Wang et al.'s loader) or ``"index"``
        (the columns of the index files); they differ for Naval only (module docstring).
      root: a folder holding ``<name>/data.txt`` and the two index files (default: the shipped copies).
    """
    _checks.one_of("columns", columns, ("authors", "index"))
    folder = verify_uci(name, root)  # checks name (one of UCI_DATASETS) and root first
    info = UCI_DATASETS[name]
    table = np.loadtxt(folder / "data.txt", dtype=np.float64, ndmin=2)
    if table.shape != (info.rows, info.columns):  # the sum matched, so this is a wrong entry in UCI_DATASETS
        raise AssertionError(f"{name}: expected {info.rows} × {info.columns}, read {table.shape}")
    if columns == "authors":
        features, target = list(range(info.columns - 1)), info.columns - 1
    else:
        features, (target,) = _index(folder / "index_features.txt"), _index(folder / "index_target.txt")
    out = pd.DataFrame(table[:, features], columns=[f"x{j}" for j in features])
    out["target"] = table[:, target]
    return out
