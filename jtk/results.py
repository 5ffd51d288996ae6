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
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from jtk import _info

#: Float tolerance of ``jtk verify`` when it compares recorded and recomputed d_KL values on a machine with the same
#: numerics key as the one that wrote them (see :func:`verify`).
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
def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (tuples become lists, numpy scalars Python numbers, anything else its repr)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return jsonable(item())
    return repr(value)


def _canonical(value: Any) -> str:
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"))


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
    return write_atomic(path, (json.dumps(jsonable(obj), indent=2, sort_keys=True) + "\n").encode())


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
git_commit = _info.git_commit  # one owner: jtk._info (also behind `jtk info`)
provenance = _info.provenance


def _config_fields(agent) -> dict:
    """A dataclass agent's configuration: its constructor fields (``init=False`` fields are derived state)."""
    return {f.name: getattr(agent, f.name) for f in dataclasses.fields(agent) if f.init}


def agent_config(agent: Any, name: str | None = None, hyperparameters: Mapping[str, Any] | None = None) -> dict:
    """A JSON description of an agent from which :func:`make_agent` can rebuild it.

    Args:
      agent: an agent object, a registered agent name, or a dict already made by this function.
      name: the registered name ``agent`` was made from (found by search among
        registered agents of the same class when not given).
      hyperparameters: the keyword arguments given to ``jtk.agents.make``
        (found as the fields that differ from the registered defaults when not given).

    Returns:
      ``{"name", "registered", "hyperparameters", "class", "fields"}`` for a
      registered agent; ``{"name", "registered": False, "class", "repr"}`` otherwise.
    """
    from jtk.agents import base as agents_base

    if hyperparameters is not None and not isinstance(hyperparameters, Mapping):
        raise TypeError(f"hyperparameters must be a dict of keyword arguments or None, got {hyperparameters!r}")
    if isinstance(agent, Mapping) and "registered" in agent:
        return dict(agent)
    if isinstance(agent, str):
        if agent not in agents_base.names():
            return {"name": agent, "registered": False, "class": None, "repr": agent}
        name, agent = agent, agents_base.make(agent, **dict(hyperparameters or {}))
    cls = f"{type(agent).__module__}.{type(agent).__qualname__}"
    fields = _config_fields(agent) if dataclasses.is_dataclass(agent) else None
    candidates = [name] if name is not None else [n for n in agents_base.names()]
    for n in candidates:
        if n not in agents_base.names() or fields is None:
            continue
        try:
            default = agents_base.make(n)
            if type(default) is not type(agent):
                continue
            hp = dict(hyperparameters) if hyperparameters is not None and n == name else {
                k: v for k, v in fields.items() if getattr(default, k) != v}
            if agents_base.make(n, **hp) != agent:
                continue
        except Exception:  # noqa: BLE001 - an agent whose equality or factory fails is recorded by repr
            continue
        return {"name": n, "registered": True, "hyperparameters": jsonable(hp), "class": cls,
                "fields": jsonable(fields)}
    return {"name": name or getattr(agent, "name", type(agent).__name__), "registered": False, "class": cls,
            "repr": repr(agent)}


def make_agent(config: Mapping[str, Any]):
    """Rebuilds a registered agent from :func:`agent_config`'s record.

    Raises:
      ValueError: the record is not of a registered agent, or the rebuilt agent's
        fields differ from the recorded ones (jtk's defaults changed since).
    """
    from jtk.agents import base as agents_base

    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict from agent_config, got {type(config).__name__}")
    if not config.get("registered"):
        what = config.get("class") or config.get("name") if isinstance(config, Mapping) else config
        raise ValueError(f"agent must be a registered jtk agent to be rebuilt, got {what!r} (class path and repr "
                         "are recorded, but jtk cannot construct a user's agent)")
    hp = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(config.get("hyperparameters") or {}).items()}
    recorded = config.get("fields")
    proto = agents_base._default_agent(agents_base._REGISTRY[config["name"]]) \
        if config.get("name") in agents_base.names() else None
    if proto is not None:  # a record written before a keyword was renamed (e.g. length_scale → l2_scale)
        hp = agents_base.translate_renamed(type(proto), hp, f"jtk.agents.{config['name']}", warn=False)
        if recorded is not None:
            recorded = jsonable(agents_base.translate_renamed(type(proto), dict(recorded), "fields", warn=False))
    agent = agents_base.make(config["name"], **hp)
    now = jsonable(_config_fields(agent))
    if recorded is not None and now != recorded:
        diff = {k: (recorded.get(k), now.get(k)) for k in set(now) | set(recorded) if recorded.get(k) != now.get(k)}
        raise ValueError(f"agent {config['name']!r} rebuilt with {hp} differs from the recorded configuration "
                         f"(field: (recorded, now)) {diff}")
    return agent


def problems_record(problems: Iterable[Any]) -> list[dict]:
    """Testbed problems as a list of plain dicts (every field of :class:`jtk.testbed.Problem`)."""
    problems = list(problems)
    for i, p in enumerate(problems):
        if not dataclasses.is_dataclass(p) or isinstance(p, type):
            raise TypeError(f"problems[{i}] must be a jtk.testbed.Problem, got {type(p).__name__}")
    return [jsonable(dataclasses.asdict(p)) for p in problems]


def problems_from_record(record: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The inverse of :func:`problems_record`."""
    from jtk import testbed

    if isinstance(record, (str, bytes, Mapping)) or not all(isinstance(r, Mapping) for r in record):
        raise TypeError(f"record must be a list of dicts (from problems_record), got {type(record).__name__}")

    return [testbed.Problem(**{k: tuple(v) if isinstance(v, list) else v for k, v in r.items()}) for r in record]


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
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _now(), "argv": sys.argv}
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
            write_json_atomic(path, {"manifest_version": MANIFEST_VERSION, "created": _now(),
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
                                                        "written": _now(), **dict(extra or {})})

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
      agent: the agent of every row: an agent object, a registered name, or an
        :func:`agent_config` dict.
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
    configs = {str(k): agent_config(v) for k, v in (agents or {}).items()}
    if agent is not None:
        one = agent_config(agent)
        configs.setdefault(str(df[agent_column].iloc[0]) if agent_column in df and len(df) else one["name"], one)
    data = csv_bytes(df)
    manifest = {
        "manifest_version": MANIFEST_VERSION, "csv": path.name, "rows": len(df), "sha256": sha256_bytes(data),
        "columns": list(map(str, df.columns)), "started": started or _now(), "ended": _now(),
        "provenance": provenance(), "agent": next(iter(configs.values())) if len(configs) == 1 else None,
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


# ------------------------------------------------------------------ verification
_KEY_COLUMNS = ("temperature", "num_train", "tau", "seed", "input_dim", "test_inputs")


def _key(row: Mapping[str, Any], columns: Sequence[str]) -> tuple:
    return tuple(float(row[c]) if c == "temperature" else str(row[c]) if c == "test_inputs" else int(row[c])
                 for c in columns)


def verify(path, sample: int = 10, seed: int = 0, *, progress: bool = False) -> pd.DataFrame:
    """Re-runs a random sample of a results file's problems and compares d_KL with the recorded values.

    Where the manifest's numerics key (machine and the vector ISA XLA compiled for, :func:`jtk._info.numerics`)
    is this machine's, values agree if ``|recorded − recomputed| ≤ VERIFY_ATOL + VERIFY_RTOL · |recomputed|``
    (rtol 1e-4, atol 1e-5: a sample is evaluated as its own chunks, whose float sums may differ in the last
    digits). Across keys, floating-point rounding differs from the first training step on and a trained agent's
    d_KL moves by up to about 1 % (docs/reference.md, "Reproducibility across machines"), so values agree within
    CROSS_MACHINE_RTOL / CROSS_MACHINE_ATOL (rtol 2e-2, atol 5e-3), still far below a seed mean's standard error.
    The table's ``attrs["tolerance"]`` says which applied.

    Args:
      path: a results CSV with its manifest (:func:`load_results` checks them first).
      sample: how many rows to recompute (all rows if it is at least their number).
      seed: picks the sample.
      progress: show the testbed's progress bar.

    Returns:
      One row per sampled problem: its key columns, agent, ``recorded``,
      ``recomputed``, ``abs_diff`` and ``ok``.

    Raises:
      ValueError: the file does not match its manifest, the manifest lacks the
        problems or a rebuildable (registered) agent configuration.
    """
    import numpy as np

    from jtk import testbed

    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be a positive integer, got {sample!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    df = load_results(path)
    manifest = df.attrs["manifest"]
    if isinstance(manifest.get("challenge"), dict):
        raise ValueError(f"path: {str(path)!r} belongs to a jtk class challenge board, whose problems come from "
                         f"its salt, not from public seeds: verify the board instead (jtk verify "
                         f"BOARD/leaderboard.csv [--config challenge.toml --submissions DIR]; "
                         f"jtk.challenge.verify_board)")
    if not manifest.get("problems"):
        raise ValueError(f"path: the manifest of {str(path)!r} records no problems; only testbed results can be "
                         "verified")
    column = manifest.get("agent_column") or "agent"
    configs = manifest.get("agents") or {}
    if column not in df or "kl" not in df:
        raise ValueError(f"path: expected columns {column!r} and 'kl' in {str(path)!r}, got {list(df.columns)}")
    missing = sorted(set(map(str, df[column].unique())) - set(configs))
    if missing:
        raise ValueError(f"path: the manifest records no agent configuration for {missing}")
    agents = {name: make_agent(cfg) for name, cfg in configs.items() if name in set(map(str, df[column]))}
    key_cols = [c for c in _KEY_COLUMNS if c in df.columns]
    by_key = {}
    for p in problems_from_record(manifest["problems"]):
        by_key[_key(dataclasses.asdict(p), key_cols)] = p
    recorded_key = ((manifest.get("provenance") or {}).get("numerics") or {}).get("numerics_key")
    same_key = recorded_key is not None and recorded_key == _info.numerics()["numerics_key"]
    rtol, atol = (VERIFY_RTOL, VERIFY_ATOL) if same_key else (CROSS_MACHINE_RTOL, CROSS_MACHINE_ATOL)
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(df), size=min(sample, len(df)), replace=False))
    rows = df.iloc[picked]
    out = []
    for name, sub in rows.groupby(column, sort=True):
        problems, unknown = [], []
        for _, r in sub.iterrows():
            k = _key(r, key_cols)
            (problems.append(by_key[k]) if k in by_key else unknown.append(k))
        if unknown:
            raise ValueError(f"path: rows {unknown[:3]} of {str(path)!r} are not among the manifest's problems")
        requested = (manifest.get("estimator") or {}).get("requested")
        new = testbed.evaluate(agents[str(name)], problems, name=str(name), progress=progress,
                               likelihood=requested or "auto")
        new_by_key = {_key(r, key_cols): r for _, r in new.iterrows()}
        for _, r in sub.iterrows():
            n = new_by_key[_key(r, key_cols)]
            rec, now = float(r["kl"]), float(n["kl"])
            same = bool(np.isclose(rec, now, rtol=rtol, atol=atol, equal_nan=True))
            if "likelihood" in r and "likelihood" in n:
                same = same and str(r["likelihood"]) == str(n["likelihood"])
            out.append({column: name, **{c: r[c] for c in key_cols}, "recorded": rec, "recomputed": now,
                        "abs_diff": abs(rec - now), "ok": same})
    table = pd.DataFrame(out)
    where = "the same numerics key" if same_key else f"numerics key {recorded_key} recorded, {_info.numerics()['numerics_key']} here"
    table.attrs["tolerance"] = f"rtol {rtol:g}, atol {atol:g} ({where})"
    return table


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


def _identity_hash(identity: Mapping[str, Any]) -> str:
    return sha256_bytes(_canonical(identity).encode())


def _distinct(items: Iterable[Any]) -> list:
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


def evaluate_to_file(agent, problems: Sequence[Any], out, *, name: str | None = None,
                     hyperparameters: Mapping[str, Any] | None = None, executor=None, resume: bool = False,
                     force: bool = False, progress: bool = True, estimator: str | None = None,
                     config: Mapping[str, Any] | None = None,
                     interrupt: DeferredInterrupt | None = None) -> pd.DataFrame:
    """:func:`jtk.testbed.evaluate` that saves each finished chunk, resumes, and writes ``out`` with a manifest.

    Finished chunks go to ``out``'s sibling ``<out>.parts/`` (see :class:`ChunkStore`)
    as they finish; when all are done, ``out`` and ``<out-stem>.manifest.json`` are
    written atomically and the parts directory is removed. A chunk is identified
    by a hash of its problems and the agent configuration, so a resumed run
    recomputes exactly the chunks that are missing or damaged.

    Args:
      agent: a registered agent name or agent object.
      problems: the :class:`jtk.testbed.Problem` list.
      out: the CSV to write (checked before any computation).
      name: value of the ``agent`` column (default: the registered name).
      hyperparameters: the keyword arguments the agent was made with (recorded in the manifest).
      executor: optional ``submit``-style executor (:mod:`jtk.executors`).
      resume: continue from ``<out>.parts/`` (or return a complete ``out`` of
        the same configuration without recomputing).
      force: discard an existing ``out`` and parts directory and start over.
      progress: show a progress bar.
      estimator: the requested likelihood estimator, passed to the testbed where it takes one.
      config: more run settings for the manifest (grid name, seeds).
      interrupt: a :class:`DeferredInterrupt` checked between chunks (the CLI installs one).

    Returns:
      The rows, ordered as :func:`jtk.testbed.evaluate` orders them.

    Raises:
      OutputError: ``out`` cannot be written, exists, or has parts of an
        unfinished run, without ``force`` / ``resume``.
      LockedError: another process is writing ``out``.
      ConfigMismatch: ``resume`` with results of a different configuration.
      Interrupted: Ctrl-C; finished chunks are saved.
    """
    from tqdm.auto import tqdm

    from jtk import executors, testbed
    from jtk.agents import base as agents_base

    if resume and force:
        raise ValueError("resume and force are exclusive: resume continues a run, force discards it; got both")
    executors.check_executor(executor)
    out = check_output(out, option="--out", force=force, resume=resume)
    parts = parts_dir(out)
    if parts.exists() and not (resume or force):
        raise OutputError(f"--out: expected no unfinished run, but {str(parts)!r} holds the finished chunks of one; "
                          "pass --resume to continue it, --force to discard it, or choose another name")
    if isinstance(agent, str):
        name = name or agent
        agent_cfg = agent_config(agent, name=agent, hyperparameters=hyperparameters or {})
        agent = agents_base.make(agent, **dict(hyperparameters or {}))
    else:
        agent_cfg = agent_config(agent, hyperparameters=hyperparameters)
    name = testbed._agent_name(agent, name)
    problems = list(problems)
    if not problems:
        raise ValueError("problems must hold at least one Problem, got an empty list")
    identity = {"kind": "testbed", "name": name, "agent": agent_cfg, "problems": problems_record(problems),
                "estimator": estimator}
    started = _now()
    with Lock(out):
        if resume and out.exists() and not parts.exists():
            try:
                done = load_results(out)
            except ManifestMismatch as err:
                raise ConfigMismatch(f"--out: {str(out)!r} exists but cannot be resumed: {err}; pass --force to "
                                     "overwrite it or choose another name") from None
            if done.attrs["manifest"].get("identity") != _identity_hash(identity):
                raise ConfigMismatch(f"--out: {str(out)!r} holds the complete results of a different configuration; "
                                     "jtk does not mix them: choose another name, or pass --force to overwrite it")
            return done
        if force and parts.exists():
            shutil.rmtree(parts)
        store = ChunkStore(parts, identity, label="--out")
        chunks = testbed._chunks(problems, agent)
        ids = [chunk_id(c, identity) for c in chunks]
        sizes = [sum(len(g) for g in c) for c in chunks]
        todo = [i for i, cid in enumerate(ids) if not store.finished(cid)]
        kept = sum(sizes) - sum(sizes[i] for i in todo)
        bar = tqdm(total=len(problems), initial=kept, desc=f"testbed {name}", unit="problem", disable=not progress)
        prov = provenance()

        def save(i, frame):
            nonlocal kept
            store.write(ids[i], frame, {"provenance": prov, "problems": sizes[i]})
            kept += sizes[i]
            bar.update(sizes[i])

        def stop():
            bar.close()
            return Interrupted(f"interrupted: {kept} of {len(problems)} problems are saved in {str(parts)!r}",
                               kept, len(problems), parts)

        testbed.run_grid(todo, lambda i: (agent, chunks[i], name, estimator or "auto"), save, executor=executor,
                         interrupt=interrupt, stop=stop, bar=bar)
        bar.close()
        if interrupt is not None and interrupt.requested and kept < len(problems):  # pragma: no cover
            raise stop()
        frames = [store.read(cid) for cid in ids]
        chunk_prov = _distinct(store.sidecar(cid).get("provenance") for cid in ids)
        df = testbed.sort_rows(pd.concat(frames, ignore_index=True))
        save_results(df, out, agent=agent_cfg, problems=problems, estimator=estimator, started=started, force=True,
                     config=config, extra={"identity": _identity_hash(identity), "chunks": len(ids),
                                           "chunk_provenance": chunk_prov})
        shutil.rmtree(parts, ignore_errors=True)
        return load_results(out)
