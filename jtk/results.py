"""Results files that never lose work and cannot lie.

Every results CSV jtk writes (``jtk testbed --out``, ``jtk sweep``, ``jtk
bandit --out``, :func:`save_results`) has a *provenance manifest* beside it:
``rows.csv`` → ``rows.manifest.json`` with the jtk version and git commit, the
JAX / jaxlib versions and backend, Python and platform, the agent's full
configuration (registered name and hyperparameters, or class path and repr),
the problems, the estimator, start / end times, and the CSV's row count and
SHA-256. :func:`load_results` refuses a CSV whose manifest is missing or does
not match it, so an edited or truncated file cannot pass for a result.

Long runs write their work in *chunks* (:class:`ChunkStore`): each finished
chunk is one CSV plus a small JSON sidecar with its row count and SHA-256. A
resumed run reuses a chunk only if its sidecar matches; a truncated or edited
chunk is reported (:class:`ResultsWarning` naming the file) and recomputed.
The store's ``manifest.json`` records what the chunks are results *of* (agent
configuration, problems, estimator) and a run with a different configuration
is refused (:class:`ConfigMismatch`) rather than mixed in.

The pieces that make this safe:

* :func:`write_atomic`: a unique temporary file in the target's directory,
  ``fsync``, then ``os.replace``. A reader sees the old file or the new one,
  never half of one, and two writers never share a temporary name.
* :class:`Lock`: ``PATH.lock`` created with ``O_CREAT | O_EXCL`` holding the
  writer's pid and host. A second writer fails at once (:class:`LockedError`);
  a lock left by a dead process on this host is taken over with a message.
* :class:`DeferredInterrupt`: Ctrl-C sets a flag that the run checks between
  chunks, so an interrupt never lands inside XLA compilation or a file write; a
  second Ctrl-C raises ``KeyboardInterrupt`` at once.
* :func:`check_output`: an output path is checked (directory exists and is
  writable, existing file refused without ``force`` / ``resume``) before any
  computation starts.

Example:
  >>> import pandas as pd, tempfile, os
  >>> from jtk import results
  >>> d = tempfile.mkdtemp()
  >>> path = os.path.join(d, "rows.csv")
  >>> _ = results.save_results(pd.DataFrame({"kl": [0.1, 0.2]}), path, config={"note": "demo"})
  >>> results.load_results(path)["kl"].tolist()
  [0.1, 0.2]
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import io
import json
import os
import pathlib
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
import warnings
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from jtk import _info
from jtk._json import canonical as _canonical, jsonable  # noqa: F401  (jsonable: a re-export)

#: Float tolerance of ``jtk verify`` when it compares recorded and recomputed d_KL values on a machine with the same
#: numerics key as the one that wrote them (see :func:`jtk.testbed.runs.verify`).
VERIFY_RTOL, VERIFY_ATOL = 1e-4, 1e-5
#: The tolerance across numerics keys (another vector ISA or architecture, or a manifest that records none): a
#: trained agent's d_KL moves by up to 0.75 % between AVX-512 and AVX2 (docs/reference.md, "Reproducibility across
#: machines"), far inside a seed mean's standard error.
CROSS_MACHINE_RTOL, CROSS_MACHINE_ATOL = 2e-2, 5e-3

MANIFEST_VERSION = 1


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_read_umask()  # what open() would give; mkstemp's 0600 would hide results from the group


class ResultsWarning(UserWarning):
    """A results file was found damaged (truncated, edited, unreadable) and is being recomputed or skipped."""


class ManifestMismatch(ValueError):
    """A CSV does not match its manifest (row count or SHA-256), or its manifest is missing or unreadable."""


class ConfigMismatch(ValueError):
    """A results directory holds results of a different configuration than the one asked for."""


class OutputError(ValueError):
    """An output path cannot be used (missing directory, not writable, or an existing file)."""


class LockedError(RuntimeError):
    """Another live process holds the lock of an output."""


# ------------------------------------------------------------------ helpers
def timestamp() -> str:
    """Now, as the ISO time (seconds) manifests and locks record."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    return hashlib.sha256(data).hexdigest()


def sha256_file(path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def csv_bytes(df: pd.DataFrame) -> bytes:
    """The bytes jtk writes for a results frame (no index; floats round-trip exactly)."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    return df.to_csv(index=False).encode()


def write_atomic(path, data: bytes) -> pathlib.Path:
    """Writes ``data`` to ``path`` atomically: unique temporary file in the same directory, fsync, os.replace.

    Concurrent writers of one path each use their own temporary file, so the
    file at ``path`` is always one writer's complete bytes.

    Args:
      path: the destination; its directory must exist.
      data: the bytes.

    Returns:
      ``path`` as a :class:`pathlib.Path`.
    """
    path = pathlib.Path(path)
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(fd, _FILE_MODE)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return path


def write_json_atomic(path, obj: Any) -> pathlib.Path:
    """:func:`write_atomic` of ``obj`` as indented JSON."""
    _path_arg("path", path)
    return write_atomic(path, (json.dumps(jsonable(obj), indent=2, sort_keys=True) + "\n").encode())


_CHECKPOINT_KEYS = ("fingerprint", "payload")


def write_checkpoint(path, fingerprint: str, arrays: Mapping[str, Any] | None = None, payload: Any = None
                     ) -> pathlib.Path:
    """Saves one piece of a run in progress: ``arrays`` and a JSON ``payload`` in one ``.npz``, atomically.

    The file carries ``fingerprint`` (what the run is: its settings, data, seed), which :func:`read_checkpoint`
    compares before it hands anything back. The long studies keep their finished pieces this way (the bandit's
    chunks, the PPC study's groups) so that a stopped run continues where it stopped.

    Args:
      path: the ``.npz`` to write; its directory is created.
      fingerprint: a string naming what the run is, e.g. a SHA-256 of its settings.
      arrays: name → array (numpy or JAX); the names ``fingerprint`` and ``payload`` are the file's own.
      payload: anything JSON can hold (rows, timings), or None.

    Returns:
      ``path`` as a :class:`pathlib.Path`.
    """
    import numpy as np

    path = _path_arg("path", path)
    if not isinstance(fingerprint, str) or not fingerprint:
        raise TypeError(f"fingerprint must be a non-empty string, got {fingerprint!r}")
    arrays = dict(arrays or {})
    clash = sorted(set(arrays) & set(_CHECKPOINT_KEYS))
    if clash:
        raise ValueError(f"arrays must not use the names {list(_CHECKPOINT_KEYS)} (the file's own), got {clash}")
    buf = io.BytesIO()
    extra = {} if payload is None else {"payload": np.asarray(json.dumps(jsonable(payload)))}
    np.savez(buf, fingerprint=np.asarray(fingerprint), **extra, **{k: np.asarray(v) for k, v in arrays.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, buf.getvalue())


def read_checkpoint(path, fingerprint: str, *, mismatch: str = "delete it to start over"
                    ) -> tuple[Any, dict[str, Any]] | None:
    """The (payload, arrays) :func:`write_checkpoint` saved at ``path`` for the run ``fingerprint``.

    Returns None when there is no file, or when it cannot be read whole (torn, truncated, not an ``.npz``): the
    caller computes that piece again, and a message names the file. A file saved by another run (another
    fingerprint) is never used: ValueError naming the file and ``mismatch`` (what the user can do about it).

    Args:
      path: the ``.npz``.
      fingerprint: the reading run's fingerprint.
      mismatch: the end of the error message for another run's file, e.g. "run with --fresh to start over".

    Raises:
      ValueError: the file is another run's, or not a regular file (a link, folder or FIFO is never read).
    """
    import zipfile

    import numpy as np

    path = _path_arg("path", path)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(mode):  # a FIFO would block the read; a link or folder is not what write_checkpoint left
        raise ValueError(f"the checkpoint {str(path)!r} is not a regular file (a link, folder, FIFO or device): "
                         "remove it")
    try:
        with np.load(path, allow_pickle=False) as f:
            recorded = str(f["fingerprint"])
            payload = json.loads(str(f["payload"])) if "payload" in f.files else None
            arrays = {k: np.asarray(f[k]) for k in f.files if k not in _CHECKPOINT_KEYS}
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as e:
        print(f"checkpoint {path.name} unreadable ({type(e).__name__}); recomputing that piece", flush=True)
        return None
    if recorded != fingerprint:
        raise ValueError(f"the checkpoint {str(path)!r} belongs to another run (its settings, data or seed "
                         f"differ): {mismatch}")
    return payload, arrays


def _path_arg(name: str, value: Any) -> pathlib.Path:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), got {type(value).__name__} {value!r}")
    return pathlib.Path(value)


def manifest_path(path) -> pathlib.Path:
    """The manifest beside a results CSV: ``rows.csv`` → ``rows.manifest.json``."""
    path = _path_arg("path", path)
    stem = path.name[:-4] if path.name.lower().endswith(".csv") else path.name
    return path.with_name(stem + ".manifest.json")


# ------------------------------------------------------------------ provenance
# One owner: jtk._info (also behind `jtk info`); the names results once re-exported warn (module __getattr__ below).


def problems_record(problems: Iterable[Any]) -> list[dict]:
    """Testbed problems as a list of plain dicts (every field of :class:`jtk.testbed.Problem`)."""
    problems = list(problems)
    for i, p in enumerate(problems):
        if not dataclasses.is_dataclass(p) or isinstance(p, type):
            raise TypeError(f"problems[{i}] must be a jtk.testbed.Problem, got {type(p).__name__}")
    return [jsonable(dataclasses.asdict(p)) for p in problems]


# ------------------------------------------------------------------ output paths and locks
def check_output(path, *, option: str = "path", force: bool = False, resume: bool = False,
                 directory: bool = False) -> pathlib.Path:
    """Checks an output path before any computation.

    Args:
      path: the file (or, with ``directory=True``, the directory) to be written.
      option: the name reported in errors, e.g. ``"--out"``.
      force: an existing file may be overwritten.
      resume: an existing file / directory may be continued.
      directory: ``path`` is a results directory (it may exist; its parent must).

    Raises:
      OutputError: the parent directory is missing or not writable, the path is
        of the wrong kind, or a file exists without ``force`` / ``resume``.
    """
    if not isinstance(option, str):
        raise TypeError(f"option must be the option's name as shown to the user (str), got {option!r}")
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise OutputError(f"{option}: expected a file path, got {path!r}")
    path = pathlib.Path(path)
    parent = path.resolve().parent
    if not parent.is_dir():
        raise OutputError(f"{option}: expected an existing directory for {str(path)!r}, "
                          f"but {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{option}: expected a writable directory for {str(path)!r}, "
                          f"but {str(parent)!r} is not writable")
    if directory:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{option}: expected a directory, but {str(path)!r} is a file")
        if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"{option}: expected a writable directory, but {str(path)!r} is not writable")
        return path
    if path.is_dir():
        raise OutputError(f"{option}: expected a file name, but {str(path)!r} is a directory")
    if path.exists() and not (force or resume):
        raise OutputError(f"{option}: expected a new file, but {str(path)!r} exists; pass --force to overwrite it"
                          + (", --resume to continue that run," if option == "--out" else "")
                          + " or choose another name")
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lock:
    """An exclusive lock on an output: ``PATH.lock`` holding the owner's pid and host.

    Created with ``O_CREAT | O_EXCL``, so of two writers exactly one wins; the
    other raises :class:`LockedError` at once. A lock whose owner is a dead
    process on this host (a run killed with SIGKILL) is taken over, with a
    message on stderr. Use as a context manager; the file is removed on exit.

    Args:
      target: the output file or directory being protected.
      lock_path: where the lock lives (default ``<target>.lock``).
    """

    def __init__(self, target, lock_path=None):
        _path_arg("target", target)
        if lock_path is not None:
            _path_arg("lock_path", lock_path)
        self.target = pathlib.Path(target)
        self.path = pathlib.Path(lock_path) if lock_path is not None else self.target.with_name(
            self.target.name + ".lock")
        self.held = False

    def _owner(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None

    def acquire(self) -> "Lock":
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": timestamp(), "argv": sys.argv}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = self._owner()
                if (owner and owner.get("host") == me["host"] and isinstance(owner.get("pid"), int)
                        and not _pid_alive(owner["pid"])):
                    # Stale: move it aside under a unique name (only one taker succeeds), then retry.
                    aside = self.path.with_name(f"{self.path.name}.stale-{os.getpid()}")
                    try:
                        os.rename(self.path, aside)
                        os.unlink(aside)
                    except OSError:
                        continue
                    print(f"jtk: taking over the stale lock {str(self.path)!r} of process {owner['pid']}, "
                          "which is no longer running", file=sys.stderr)
                    continue
                who = (f"process {owner.get('pid')} on {owner.get('host')} since {owner.get('started')}"
                       if owner else "another process (lock file being written)")
                raise LockedError(f"{str(self.target)!r} is being written by {who}; wait for it to finish or "
                                  f"choose another output (if no such process is running, delete "
                                  f"{str(self.path)!r})") from None
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
                f.flush()
                os.fsync(f.fileno())
            self.held = True
            return self
        raise LockedError(f"{str(self.target)!r}: could not take the lock {str(self.path)!r}")

    def release(self) -> None:
        if self.held:
            owner = self._owner()
            if owner is None or owner.get("pid") == os.getpid():
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
            self.held = False

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class DeferredInterrupt:
    """Turns the first Ctrl-C (SIGINT) into a flag checked between chunks; a second one raises KeyboardInterrupt.

    Installed only from the main thread (elsewhere it is inert). Outside the
    context the previous handler is restored.

    Attributes:
      requested: True once SIGINT arrived.
    """

    def __init__(self, what: str = "the current chunk"):
        if not isinstance(what, str):
            raise TypeError(f"what must be a str (what a Ctrl-C waits for), got {type(what).__name__} {what!r}")
        self.requested = False
        self.what = what
        self._old = None

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        # os.write, not print: a handler may run while the main thread is inside a write to stderr (tqdm).
        os.write(2, f"\njtk: interrupt received; finishing {self.what} and saving it "
                    "(Ctrl-C again to stop at once)\n".encode())

    def __enter__(self) -> "DeferredInterrupt":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None


# ------------------------------------------------------------------ chunk stores
def _describe_difference(recorded: Mapping[str, Any], given: Mapping[str, Any]) -> str:
    parts = []
    for key in sorted(set(recorded) | set(given)):
        a, b = recorded.get(key), given.get(key)
        if _canonical(a) == _canonical(b):
            continue
        if isinstance(a, list) and isinstance(b, list) and key == "problems":
            parts.append(f"problems (recorded {len(a)}, given {len(b)}"
                         + (", same number but different problems)" if len(a) == len(b) else ")"))
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            sub = [k for k in sorted(set(a) | set(b)) if _canonical(a.get(k)) != _canonical(b.get(k))]
            parts.append(f"{key} ({', '.join(f'{k}: recorded {a.get(k)!r}, given {b.get(k)!r}' for k in sub[:4])})")
        else:
            parts.append(f"{key} (recorded {a!r}, given {b!r})")
    return "; ".join(parts)


class ChunkStore:
    """A directory of finished chunks of one configuration, each with a checksummed sidecar.

    Layout: ``manifest.json`` (the configuration the chunks belong to),
    ``chunk-<id>.csv`` and ``chunk-<id>.json`` (``rows``, ``sha256``,
    ``provenance``, ``written``). A chunk counts as finished only if its CSV
    matches its sidecar; anything else is reported (:class:`ResultsWarning`)
    and treated as missing, so the caller recomputes it.

    Args:
      directory: the store (created with its parents' existence required).
      identity: what the chunks are results of (JSON-able). An existing store
        with another identity raises :class:`ConfigMismatch`. None: open an
        existing store for reading without checking its manifest.
      label: the name in error messages (e.g. ``"--results"``).
    """

    def __init__(self, directory, identity: Mapping[str, Any] | None, label: str = "results directory"):
        _path_arg("directory", directory)
        if identity is not None and not isinstance(identity, Mapping):
            raise TypeError(f"identity must be a dict (what the chunks are results of) or None, got "
                            f"{type(identity).__name__} {identity!r}")
        self.directory = pathlib.Path(directory)
        self.identity = None if identity is None else jsonable(dict(identity))
        self.label = label
        if identity is None:
            return
        self.directory.mkdir(exist_ok=True)
        path = self.directory / "manifest.json"
        if path.exists():
            try:
                recorded = json.loads(path.read_text())["identity"]
            except (OSError, ValueError, KeyError, TypeError):
                raise ConfigMismatch(f"{label}: {str(path)!r} is unreadable; expected the manifest of a jtk "
                                     "results directory (choose another directory)") from None
            if _canonical(recorded) != _canonical(self.identity):
                raise ConfigMismatch(
                    f"{label}: {str(self.directory)!r} holds results of a different configuration: "
                    f"{_describe_difference(recorded, self.identity)}; jtk does not mix them, so choose another "
                    "directory (or remove this one)")
        else:
            write_json_atomic(path, {"manifest_version": MANIFEST_VERSION, "created": timestamp(),
                                     "identity": self.identity})

    def csv_path(self, chunk_id: str) -> pathlib.Path:
        return self.directory / f"chunk-{chunk_id}.csv"

    def sidecar_path(self, chunk_id: str) -> pathlib.Path:
        return self.directory / f"chunk-{chunk_id}.json"

    def _problem(self, chunk_id: str) -> str | None:
        csv, side = self.csv_path(chunk_id), self.sidecar_path(chunk_id)
        if not csv.exists():
            return "missing" if not side.exists() else "its CSV is missing"
        if not side.exists():
            return "it has no checksum sidecar (written by an older jtk, or killed between the two writes)"
        try:
            meta = json.loads(side.read_text())
            rows, digest = int(meta["rows"]), str(meta["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return f"its sidecar {side.name} is unreadable"
        data = csv.read_bytes()
        if sha256_bytes(data) != digest:
            try:
                got = len(pd.read_csv(io.BytesIO(data)))
                what = f"{got} rows, {rows} recorded" if got != rows else "edited: same row count"
            except Exception:  # noqa: BLE001 - an unparsable CSV is just as damaged
                what = "unparsable"
            return f"its SHA-256 does not match the sidecar ({what})"
        return None

    def finished(self, chunk_id: str, remove: bool = True) -> bool:
        """True if the chunk's CSV matches its sidecar; a damaged chunk is reported and False.

        Args:
          chunk_id: the chunk.
          remove: delete a damaged chunk's files (it is about to be recomputed).
        """
        problem = self._problem(chunk_id)
        if problem is None:
            return True
        if problem != "missing":
            warnings.warn(f"chunk file {str(self.csv_path(chunk_id))!r} is damaged ({problem}); "
                          + ("recomputing it" if remove else "skipping it (rerun the sweep to recompute it)"),
                          ResultsWarning, stacklevel=2)
            for p in (self.csv_path(chunk_id), self.sidecar_path(chunk_id)) if remove else ():
                try:
                    p.unlink()
                except OSError:
                    pass
        return False

    def write(self, chunk_id: str, df: pd.DataFrame, extra: Mapping[str, Any] | None = None) -> None:
        """Writes one finished chunk: the CSV atomically, then its sidecar atomically."""
        data = csv_bytes(df)
        write_atomic(self.csv_path(chunk_id), data)
        write_json_atomic(self.sidecar_path(chunk_id), {"rows": len(df), "sha256": sha256_bytes(data),
                                                        "written": timestamp(), **dict(extra or {})})

    def read(self, chunk_id: str) -> pd.DataFrame:
        """One finished chunk (raises :class:`ManifestMismatch` if it is damaged)."""
        problem = self._problem(chunk_id)
        if problem is not None:
            raise ManifestMismatch(f"chunk file {str(self.csv_path(chunk_id))!r}: {problem}")
        return pd.read_csv(self.csv_path(chunk_id))

    def sidecar(self, chunk_id: str) -> dict:
        return json.loads(self.sidecar_path(chunk_id).read_text())

    def chunk_ids(self) -> list[str]:
        """Ids of the chunk CSVs present (finished or not), sorted."""
        return sorted(p.name[len("chunk-"):-len(".csv")] for p in self.directory.glob("chunk-*.csv"))


def chunk_id(chunk: Sequence[Sequence[Any]], identity: Any = None) -> str:
    """A chunk's id: a hash of its problems (order-free) and, optionally, of the configuration it is run with."""
    if isinstance(chunk, (str, bytes)) or not hasattr(chunk, "__iter__"):
        raise TypeError(f"chunk must be a sequence of problem groups, got {type(chunk).__name__}")
    text = repr(sorted(repr(p) for group in chunk for p in group))
    if identity is not None:
        text += _canonical(identity)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ results CSV + manifest
def save_results(df: pd.DataFrame, path, *, agent: Any = None, agents: Mapping[str, Any] | None = None,
                 config: Mapping[str, Any] | None = None, problems: Sequence[Any] | None = None,
                 estimator: str | None = None, started: str | datetime.datetime | None = None,
                 force: bool = False, agent_column: str = "agent", extra: Mapping[str, Any] | None = None) -> dict:
    """Writes a results CSV and its provenance manifest ``<name>.manifest.json``, both atomically.

    Args:
      df: the rows (e.g. from :func:`jtk.testbed.evaluate`).
      path: the CSV path; its directory must exist.
      agent: the agent of every row: an agent object, a registered name, or a
        ``jtk.agents.records.agent_config`` dict.
      agents: several agents, as {value of ``agent_column``: agent} (a sweep).
      config: anything else that defines the run (grid name, seeds, sweep).
      problems: the :class:`jtk.testbed.Problem` list the rows score.
      estimator: the requested likelihood estimator ("exact", "mc", "auto"),
        if one was chosen; the ``likelihood`` column's values are recorded too.
      started: when the run started (datetime or ISO string; default now).
      force: overwrite an existing CSV.
      agent_column: the column that names each row's agent ("agent" or "config").
      extra: more JSON-able fields for the manifest.

    Returns:
      The manifest written.

    Raises:
      OutputError: the directory is missing or not writable, or the file exists without ``force``.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    path = check_output(path, option="path", force=force)
    if isinstance(started, datetime.datetime):
        started = started.isoformat(timespec="seconds")
    # Agent records belong to jtk.agents (its registry rebuilds them); results reads them only here, and late, so that
    # the platform imports no agent code unless a caller hands it an agent (the one import above the platform layer,
    # declared in pyproject.toml's import-linter contract).
    from jtk.agents.records import agent_config

    configs = {str(k): agent_config(v) for k, v in (agents or {}).items()}
    if agent is not None:
        one = agent_config(agent)
        configs.setdefault(str(df[agent_column].iloc[0]) if agent_column in df and len(df) else one["name"], one)
    data = csv_bytes(df)
    manifest = {
        "manifest_version": MANIFEST_VERSION, "csv": path.name, "rows": len(df), "sha256": sha256_bytes(data),
        "columns": list(map(str, df.columns)), "started": started or timestamp(), "ended": timestamp(),
        "provenance": _info.provenance(), "agent": next(iter(configs.values())) if len(configs) == 1 else None,
        "agents": configs, "agent_column": agent_column, "config": jsonable(dict(config or {})),
        "problems": problems_record(problems) if problems is not None else None,
        "estimator": {"requested": estimator,
                      "likelihood": sorted(map(str, df["likelihood"].dropna().unique())) if "likelihood" in df
                      else None},
        **jsonable(dict(extra or {})),
    }
    write_atomic(path, data)
    write_json_atomic(manifest_path(path), manifest)
    return manifest


def read_manifest(path) -> dict:
    """The manifest of a results CSV (raises :class:`ManifestMismatch` if it is missing or unreadable)."""
    mpath = manifest_path(path)
    if not mpath.exists():
        raise ManifestMismatch(f"path: {str(path)!r} has no manifest; expected {str(mpath)!r} beside it (results "
                               "written by jtk always have one; a CSV without it cannot be checked)")
    try:
        manifest = json.loads(mpath.read_text())
        int(manifest["rows"]), str(manifest["sha256"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ManifestMismatch(f"path: manifest {str(mpath)!r} is unreadable ({err})") from None
    return manifest


def load_results(path) -> pd.DataFrame:
    """Reads a results CSV after checking it against its manifest.

    Args:
      path: the CSV written by ``jtk testbed --out``, ``jtk sweep`` or :func:`save_results`.

    Returns:
      The rows; the manifest is in ``df.attrs["manifest"]``.

    Raises:
      ValueError: the file is missing (:class:`ValueError`), its manifest is missing
        or unreadable, or the CSV's row count or SHA-256 differs from the
        manifest's (:class:`ManifestMismatch`, a ValueError).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"path: expected a results CSV, but {str(path)!r} does not exist")
    manifest = read_manifest(path)
    data = path.read_bytes()
    df = pd.read_csv(io.BytesIO(data))
    if len(df) != int(manifest["rows"]):
        raise ManifestMismatch(f"path: {str(path)!r} has {len(df)} rows but its manifest records "
                               f"{manifest['rows']}: the CSV was truncated or edited")
    if sha256_bytes(data) != manifest["sha256"]:
        raise ManifestMismatch(f"path: {str(path)!r} does not match the SHA-256 in its manifest "
                               f"{str(manifest_path(path))!r}: the CSV was edited after it was written")
    df.attrs["manifest"] = manifest
    return df


# ------------------------------------------------------------------ resumable testbed runs
class Interrupted(Exception):
    """A run stopped on Ctrl-C after saving its finished chunks.

    Attributes:
      kept: problems whose results are saved.
      total: problems of the run.
      where: the directory holding the saved chunks.
    """

    def __init__(self, message: str, kept: int, total: int, where):
        super().__init__(message)
        self.kept, self.total, self.where = kept, total, where


def parts_dir(out) -> pathlib.Path:
    """Where ``jtk testbed --out F.csv`` keeps finished chunks until the run completes: ``F.csv.parts/``."""
    out = _path_arg("out", out)
    return out.with_name(out.name + ".parts")


def identity_hash(identity: Mapping[str, Any]) -> str:
    """A SHA-256 of a run's identity (agent record, problems, estimator) in canonical JSON."""
    if not isinstance(identity, Mapping):
        raise TypeError(f"identity must be a dict (agent record, problems, estimator), got "
                        f"{type(identity).__name__} {identity!r}")
    return sha256_bytes(_canonical(identity).encode())


def distinct_values(items: Iterable[Any]) -> list:
    """``items`` without repeats (compared as canonical JSON), in first-seen order."""
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise TypeError(f"items must be an iterable of JSON-able values, got {type(items).__name__} {items!r}")
    seen, out = set(), []
    for item in items:
        key = _canonical(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out



def run_chunks(tasks: Sequence[Any], job, save, *, executor=None, threads: int = 1,
               interrupt: "DeferredInterrupt | None" = None, stop) -> None:
    """Runs every task's job, in this process or on ``executor``, and saves each result as it arrives.

    Results are saved as they finish, in any order. Between tasks (and every
    :data:`POLL_SECONDS` while waiting) it checks ``interrupt``: once Ctrl-C was
    requested it keeps the results that are already finished (an executor's done
    futures are saved, the others cancelled) and raises ``stop()``. Tasks already
    running in local threads finish and are kept too, as the running task is
    when tasks run one after another (XLA cannot be stopped mid-program). A
    failure of a Dask task after Ctrl-C (the signal also reaches local workers)
    counts as the interruption.

    Args:
      tasks: the work items.
      job: ``job(task) -> (fn, args, kwargs)``, the call that computes one task.
      save: ``save(task, result)``, called once per finished task, in this thread.
      executor: optional ``submit(fn, *args, **kwargs) -> future`` object; None runs in this process.
      threads: without ``executor``, how many tasks run at once in this process
        (:func:`jtk.executors.local_threads`); 1 runs them one after another.
      interrupt: the run's :class:`DeferredInterrupt`, or None.
      stop: ``stop() -> Exception`` describing what was kept; raised on interruption.
    """
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__iter__"):
        raise TypeError(f"tasks must be a sequence of work items, got {type(tasks).__name__} {tasks!r}")
    for name, fn in (("job", job), ("save", save), ("stop", stop)):
        if not callable(fn):
            raise TypeError(f"{name} must be a callable, got {type(fn).__name__} {fn!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    if executor is not None and not hasattr(executor, "submit"):
        raise TypeError(f"executor must have submit(fn, *args, **kwargs) (a Dask client) or be None, got "
                        f"{type(executor).__name__}")
    requested = lambda: interrupt is not None and interrupt.requested  # noqa: E731
    pool = None
    try:
        if executor is None and threads <= 1:
            for task in tasks:
                if requested():
                    raise stop()
                fn, args, kwargs = job(task)
                save(task, fn(*args, **kwargs))
            return
        if executor is None:
            from concurrent.futures import ThreadPoolExecutor

            executor = pool = ThreadPoolExecutor(int(threads), thread_name_prefix="jtk-chunk")
        futures = {}
        for i, task in enumerate(tasks):
            fn, args, kwargs = job(task)
            futures[i] = (task, executor.submit(fn, *args, **kwargs))
        while futures:
            if requested():
                # Keep what is finished and, in local threads, what is running (XLA cannot stop mid-program, so it
                # finishes anyway); cancel the rest.
                kept = [(t, f) for t, f in futures.values() if f.done() or (pool is not None and not f.cancel())]
                for t, f in futures.values():
                    if not f.done():
                        f.cancel()
                for t, f in kept:
                    if not f.cancelled() and f.exception() is None:
                        save(t, f.result())
                raise stop()
            ready = [i for i, (_, f) in futures.items() if f.done()]
            if not ready:
                time.sleep(POLL_SECONDS)
                continue
            for i in ready:
                task, future = futures.pop(i)
                try:
                    result = future.result()
                except Exception:  # noqa: BLE001 - Ctrl-C also reaches local Dask workers, failing their task
                    if requested():
                        raise stop() from None
                    raise
                save(task, result)
    except KeyboardInterrupt:
        raise stop() from None
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


POLL_SECONDS = 0.05  # how often run_chunks looks for finished futures and for Ctrl-C
