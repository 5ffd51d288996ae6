"""A class challenge: students submit agents, jtk scores them on hidden testbed problems.

The instructor writes a configuration (:func:`new_config`, ``jtk challenge new``) whose random
``salt`` defines the hidden seeds (:func:`hidden_seeds`); students practise on the public seeds
``0 .. practice_seeds - 1`` (:func:`practice`) and hand in a Python file defining ``make_agent()``;
:func:`score` scores every file and the baselines on the hidden problems and writes the board.

Security model: a student who learns the hidden seeds can rebuild the true environments from the
public prior and score d_KL = 0 (:class:`jtk.testbed.OracleAgent`). So a submission never runs in
the process that knows the salt. The trusted scorer (this module) generates each problem's data
and sends only the training arrays, the prior information any agent gets (input_dim, num_classes,
num_train, temperature, tau), an integer seed for the agent, and test inputs to an untrusted worker
(:mod:`jtk._challenge_worker`) over pipes (length-prefixed JSON and ``.npy`` frames; nothing is
unpickled). The worker runs with a minimal environment, in a fresh temporary directory, with
``RLIMIT_AS`` / ``RLIMIT_FSIZE`` / no core dumps, in its own session, and — when bubblewrap works
here (:mod:`jtk.sandbox`) — inside bwrap, where the configuration file, the submissions and the
output directory are hidden and the scorer's processes are invisible. Without bubblewrap
(``sandbox = "none"``) the worker runs as the instructor's user and could read the configuration
file or the scorer's memory: use that mode only for trusted practice runs.

The scorer validates every answer (shapes, NaN, mixture weights) and checks coherence itself on
duplicated test rows hidden among the scored ones; the worker also runs
:func:`jtk.testbed.check_agent` on a public problem. Statuses: ``ok``, ``error`` (raised, or no
``make_agent``), ``timeout`` (the wall-clock limit per submission), ``memory`` (the memory limit),
``incoherent`` (sample m is not one function of all inputs), ``invalid`` (malformed answers).

Outputs (``out``): ``leaderboard.csv`` and ``leaderboard.html`` are student-facing and hold no
seeds (messages are one line with long digit runs masked); ``rows/NAME.csv`` (+ manifest) and
``submissions/NAME.json`` are instructor-facing: rows carry the hidden seeds.
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import datetime
import difflib
import hashlib
import html
import io
import json
import math
import os
import pathlib
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from jtk import _challenge_worker as wire

STATUSES = ("ok", "error", "timeout", "memory", "incoherent", "invalid")
SANDBOXES = ("auto", "bwrap", "none")
LIKELIHOODS = ("auto", "mc")
WORKER_ENV_KEYS = frozenset({"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "JAX_PLATFORMS", "MPLBACKEND",
                             "MPLCONFIGDIR", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE", "JTK_COMPILATION_CACHE",
                             "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"})
COHERENCE_ROWS = 32  # duplicated test rows hidden in every logits request
COHERENCE_TOL = 1e-5  # relative |Δ| between a row and its duplicate within one sample
SALT_HEX_CHARS = 32
_MESSAGE_CHARS = 240


# ------------------------------------------------------------------ configuration
@dataclasses.dataclass(frozen=True)
class ChallengeConfig:
    """A challenge: the grid, the hidden seeds' salt, limits and baselines (one TOML file).

    Attributes:
      grid: named testbed grid ("quick", "paper", "classification"; ``jtk.testbed.GRIDS``).
      seeds: number of hidden seeds; every problem of the grid is drawn for each.
      salt: hex secret from which the hidden seeds derive (None in a practice configuration).
      baselines: registered jtk agents scored beside the submissions (``jtk.agents.names()``).
      reference: the baseline paired differences are taken to (default: "ensemble+" if a
        baseline, else the first baseline).
      time_limit_s: wall-clock seconds per submission, all its problems together.
      memory_limit_mb: address-space limit of a submission's worker (MiB).
      practice_seeds: public seeds 0 .. practice_seeds - 1 for practice; hidden seeds avoid them.
      num_train, temperatures, taus: optional subsets of the grid's values (a smaller challenge).
      num_test, num_samples: optional overrides of the problems' N test τ-samples and M samples.
      likelihood: "auto" (enumerate finite mixtures exactly, as ``evaluate``) or "mc".
      sandbox: "auto" (bubblewrap when it works, else none), "bwrap" or "none".
    """

    grid: str = "quick"
    seeds: int = 5
    salt: str | None = None
    baselines: tuple[str, ...] = ("mlp", "ensemble+")
    reference: str | None = None
    time_limit_s: float = 600.0
    memory_limit_mb: int = 4096
    practice_seeds: int = 2
    num_train: tuple[int, ...] | None = None
    temperatures: tuple[float, ...] | None = None
    taus: tuple[int, ...] | None = None
    num_test: int | None = None
    num_samples: int | None = None
    likelihood: str = "auto"
    sandbox: str = "auto"

    def __post_init__(self):
        from jtk import testbed
        from jtk.agents import base as agents_base

        _one_of("grid", self.grid, tuple(testbed.GRIDS))
        _int("seeds", self.seeds, 1)
        if self.salt is not None:
            if not isinstance(self.salt, str):
                raise TypeError(f"salt must be a hex string, got {type(self.salt).__name__}")
            if len(self.salt) < SALT_HEX_CHARS or not re.fullmatch(r"[0-9a-fA-F]+", self.salt):
                kind = "" if re.fullmatch(r"[0-9a-fA-F]*", self.salt) else " with non-hex ones"
                raise ValueError(f"salt must be at least {SALT_HEX_CHARS} hex digits (secrets.token_hex(16)), got "
                                 f"{len(self.salt)} characters{kind}")
        if isinstance(self.baselines, str) or not isinstance(self.baselines, (list, tuple)):
            raise TypeError(f"baselines must be a list of agent names, got {type(self.baselines).__name__}")
        for b in self.baselines:
            if b not in agents_base.names():
                close = difflib.get_close_matches(str(b), agents_base.names(), n=2)
                hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
                raise ValueError(f"baselines must be registered agents {agents_base.names()}, got {b!r}{hint}")
        object.__setattr__(self, "baselines", tuple(self.baselines))
        if len(set(self.baselines)) != len(self.baselines):
            raise ValueError(f"baselines must not repeat, got {list(self.baselines)}")
        if self.reference is not None and self.reference not in self.baselines:
            raise ValueError(f"reference must be one of the baselines {list(self.baselines)}, got {self.reference!r}")
        t = self.time_limit_s
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise TypeError(f"time_limit_s must be a number of seconds, got {type(t).__name__}")
        if not (math.isfinite(t) and t > 0):
            raise ValueError(f"time_limit_s must be > 0 and finite, got {t}")
        object.__setattr__(self, "time_limit_s", float(t))
        _int("memory_limit_mb", self.memory_limit_mb, 256)
        _int("practice_seeds", self.practice_seeds, 1)
        template = testbed.problems(self.grid, seeds=1)
        for key, field in (("num_train", "num_train"), ("temperatures", "temperature"), ("taus", "tau")):
            value = getattr(self, key)
            if value is None:
                continue
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
                raise TypeError(f"{key} must be a non-empty list, got {value!r}")
            allowed = sorted({getattr(p, field) for p in template})
            bad = [v for v in value if v not in allowed]
            if bad:
                raise ValueError(f"{key} must be values of the {self.grid!r} grid {allowed}, got {bad}")
            object.__setattr__(self, key, tuple(value))
        for key in ("num_test", "num_samples"):
            if getattr(self, key) is not None:
                _int(key, getattr(self, key), 1)
        _one_of("likelihood", self.likelihood, LIKELIHOODS)
        _one_of("sandbox", self.sandbox, SANDBOXES)
        if not self._template():
            raise ValueError("num_train, temperatures and taus leave no problem of the grid")

    @property
    def reference_baseline(self) -> str | None:
        """The baseline paired differences are taken to."""
        if self.reference is not None:
            return self.reference
        if "ensemble+" in self.baselines:
            return "ensemble+"
        return self.baselines[0] if self.baselines else None

    def hidden_seeds(self) -> list[int]:
        """The hidden seeds (needs the salt)."""
        if self.salt is None:
            raise ValueError("salt is missing: this is a practice configuration; hidden seeds need the "
                             "instructor's challenge.toml")
        return hidden_seeds(self.salt, self.seeds, self.practice_seeds)

    def _template(self):
        from jtk import testbed

        out = []
        for p in testbed.problems(self.grid, seeds=1):
            if ((self.num_train is None or p.num_train in self.num_train)
                    and (self.temperatures is None or p.temperature in self.temperatures)
                    and (self.taus is None or p.tau in self.taus)):
                out.append(p)
        return out

    def problems(self, seeds: Sequence[int]) -> list:
        """The configured problems for the given seeds."""
        extra = {k: getattr(self, k) for k in ("num_test", "num_samples") if getattr(self, k) is not None}
        return [dataclasses.replace(p, seed=int(s), **extra) for s in seeds for p in self._template()]

    def hidden_problems(self) -> list:
        """The problems the submissions are scored on."""
        return self.problems(self.hidden_seeds())

    def practice_problems(self) -> list:
        """The public practice problems (seeds 0 .. practice_seeds - 1)."""
        return self.problems(range(self.practice_seeds))

    def public(self) -> dict:
        """The configuration without the salt (what the board's manifests record)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "salt"}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items() if v is not None}


def _int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int ≥ {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int ≥ {minimum}, got {value}")
    return value


def _one_of(name: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        close = difflib.get_close_matches(str(value), options, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}{hint}")
    return value


_KEYS = tuple(f.name for f in dataclasses.fields(ChallengeConfig))


def config_from_dict(data: dict, *, need_salt: bool = True, source: str = "config") -> ChallengeConfig:
    """Validates a configuration dict (e.g. parsed TOML) key by key.

    Raises:
      ValueError: an unknown key (with "did you mean"), a missing salt when ``need_salt``,
        or a value out of range; TypeError: a value of the wrong type.
    """
    if not isinstance(data, dict):
        raise TypeError(f"{source} must be a table of keys, got {type(data).__name__}")
    for key in data:
        if key not in _KEYS:
            close = difflib.get_close_matches(key, _KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{source}: unknown key {key!r} (known: {', '.join(_KEYS)}){hint}")
    if need_salt and "salt" not in data:
        raise ValueError(f"{source}: salt is missing; scoring on hidden seeds needs the instructor's salt "
                         "(jtk challenge new writes one); practice needs none")
    return ChallengeConfig(**data)


def load_config(path, *, need_salt: bool = True) -> ChallengeConfig:
    """Reads and validates a challenge TOML file (see :class:`ChallengeConfig` for the keys)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"config must be an existing TOML file, got {str(path)!r}")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"config {str(path)!r} is not valid TOML: {err}") from None
    return config_from_dict(data, need_salt=need_salt, source=f"config {path.name}")


_TEMPLATE = '''# jtk class challenge (jtk challenge new). Keep this file private: the salt defines the hidden seeds.
grid = "{grid}"                 # testbed grid: "quick", "paper" or "classification"
seeds = {seeds}                      # number of hidden seeds (each draws every problem of the grid)
salt = "{salt}"   # secret; never hand it out
baselines = ["mlp", "ensemble+"]   # registered jtk agents scored beside the submissions
time_limit_s = 600.0             # wall-clock seconds per submission, all problems together
memory_limit_mb = 4096           # address-space limit of a submission's worker
practice_seeds = 2               # public seeds 0..practice_seeds-1 for practice
likelihood = "auto"              # "auto" (exact for finite mixtures) or "mc"
sandbox = "auto"                 # "auto" (bubblewrap when available), "bwrap" or "none"
# Optional: num_train = [10, 100], temperatures = [0.1], taus = [1, 10], num_test = 1000, num_samples = 1000
'''


def _practice_text(text: str) -> str:
    lines = [line for line in text.splitlines() if not re.match(r"\s*(salt|seeds)\s*=", line)]
    lines[0] = "# jtk class challenge: PRACTICE configuration (public seeds only; no salt)."
    return "\n".join(lines) + "\n"


def new_config(path, *, grid: str = "quick", seeds: int = 5, practice=None) -> tuple[pathlib.Path, pathlib.Path]:
    """Writes a challenge template with a fresh salt (mode 0600) and a public practice file beside it.

    Args:
      path: the challenge file to create (refused if it exists).
      grid: the testbed grid.
      seeds: number of hidden seeds.
      practice: the practice file (default ``practice.toml`` beside ``path``; refused if it exists).

    Returns:
      (challenge path, practice path).

    Raises:
      FileExistsError: either file exists. ValueError: a bad grid or seeds.
    """
    from jtk import testbed

    _one_of("grid", grid, tuple(testbed.GRIDS))
    _int("seeds", seeds, 1)
    path = pathlib.Path(path)
    practice = pathlib.Path(practice) if practice is not None else path.with_name("practice.toml")
    for p in (path, practice):
        if p.exists():
            raise FileExistsError(f"{str(p)!r} exists; refusing to overwrite it (its salt defines the hidden seeds)")
    if not path.parent.is_dir():
        raise ValueError(f"path must be in an existing directory, got {str(path)!r}")
    text = _TEMPLATE.format(grid=grid, seeds=seeds, salt=secrets.token_hex(SALT_HEX_CHARS // 2))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    fd = os.open(practice, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(_practice_text(text))
    return path, practice


def hidden_seeds(salt: str, num: int, practice_seeds: int) -> list[int]:
    """``num`` distinct seeds in [practice_seeds, 2**31) from SHA-256(salt, i), i = 0, 1, ….

    Without the salt they cannot be recovered: each is 31 bits of a SHA-256 digest of the secret.
    """
    if not isinstance(salt, str) or not salt:
        raise ValueError(f"salt must be a non-empty string, got {salt!r}")
    _int("num", num, 1)
    _int("practice_seeds", practice_seeds, 0)
    out, seen, i = [], set(), 0
    while len(out) < num:
        digest = hashlib.sha256(f"jtk-challenge:{salt}:{i}".encode()).digest()
        s = int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
        i += 1
        if s >= practice_seeds and s not in seen:
            seen.add(s)
            out.append(s)
    return out


# ------------------------------------------------------------------ one submission in its worker
class _Failure(Exception):
    def __init__(self, status: str, message: str, detail: str = ""):
        super().__init__(message)
        self.status, self.message, self.detail = status, message, detail or message


@dataclasses.dataclass
class Entry:
    """One line of the board: a submission or a baseline."""

    name: str
    kind: str  # "submission" or "baseline"
    status: str
    message: str = ""
    rows: pd.DataFrame | None = None
    seconds: float = 0.0
    detail: str = ""
    probes: list | None = None
    sha256: str | None = None


def _worker_env(workdir: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
           "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), "MPLBACKEND": "agg",
           "MPLCONFIGDIR": os.path.join(workdir, ".matplotlib"), "XDG_CACHE_HOME": os.path.join(workdir, ".cache"),
           "PYTHONDONTWRITEBYTECODE": "1", "JTK_COMPILATION_CACHE": "0"}
    assert set(env) <= WORKER_ENV_KEYS
    return env


def resolve_sandbox(mode: str) -> str:
    """The containment that will run: "bwrap" or "none" ("auto": bwrap when it works here)."""
    from jtk import sandbox

    _one_of("sandbox", mode, SANDBOXES)
    if mode == "none":
        return "none"
    if sandbox.bwrap_works():
        return "bwrap"
    if mode == "bwrap":
        raise ValueError("sandbox 'bwrap' needs a working bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)")
    return "none"


class _Worker:
    """A running worker: pipes with deadlines, the process group killed on exit."""

    def __init__(self, submission: pathlib.Path, *, mode: str, memory_bytes: int, hidden: Sequence[str],
                 deadline: float):
        from jtk import sandbox

        self.deadline = deadline
        self.workdir = tempfile.mkdtemp(prefix="jtk-challenge-")
        self.logdir = tempfile.mkdtemp(prefix="jtk-challenge-log-")
        shutil.copyfile(submission, os.path.join(self.workdir, "submission.py"))
        self.stderr_path = os.path.join(self.logdir, "stderr")
        self._stderr = open(self.stderr_path, "wb")
        cmd = [sys.executable, sandbox.LAUNCHER, "--memory", str(memory_bytes), "--workdir", self.workdir,
               "--uid", "-1", "--", sys.executable, "-I", "-B", "-m", "jtk._challenge_worker"]
        if mode == "bwrap":
            cmd = [*sandbox.bwrap_args(self.workdir, hidden), *cmd]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     cwd=self.workdir, env=_worker_env(self.workdir), start_new_session=True,
                                     close_fds=True)
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._in, False)

    def _wait_fd(self, fd: int, write: bool) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Failure("timeout", "")
        r, w, _ = select.select([] if write else [fd], [fd] if write else [], [], left)
        if not (r or w):
            raise _Failure("timeout", "")

    def send(self, obj) -> None:
        buf = io.BytesIO()
        wire.write_frame(buf, obj)
        data = memoryview(buf.getvalue())
        while data:
            self._wait_fd(self._in, write=True)
            try:
                n = os.write(self._in, data)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                raise _Failure("error", "the worker died") from None
            data = data[n:]

    def _read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            self._wait_fd(self._out, write=False)
            chunk = os.read(self._out, min(left, 1 << 20))
            if not chunk:
                raise _Failure("error", "the worker died")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def recv(self, max_bytes: int = 1 << 20):
        length, kind = wire.HEADER.unpack(self._read(wire.HEADER.size))
        if length > max_bytes:
            raise _Failure("invalid", f"the submission sent {length} bytes where at most {max_bytes} were expected")
        payload = self._read(length)
        try:
            if kind == ord("J"):
                obj = json.loads(payload.decode())
                if not isinstance(obj, dict):
                    raise ValueError("not an object")
                return obj
            if kind == ord("N"):
                return np.load(io.BytesIO(payload), allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - a malformed frame is the submission's fault
            raise _Failure("invalid", f"malformed answer from the worker ({type(err).__name__})") from None
        raise _Failure("invalid", f"malformed answer from the worker (frame kind {kind})")

    def call(self, msg: dict, *arrays, what: str) -> dict:
        self.send(msg)
        for a in arrays:
            self.send(np.asarray(a, np.float32) if a.dtype.kind == "f" else np.asarray(a, np.int32))
        reply = self.recv()
        if not reply.get("ok"):
            err = str(reply.get("error", "unknown error"))
            raise _Failure("memory" if reply.get("memory") else "error", f"{what} raised {err}", err)
        return reply

    def stderr_tail(self, chars: int = 3000) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.stderr_path) - chars))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send({"op": "quit"})
                except _Failure:
                    pass
                try:
                    self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout, self._stderr):
                try:
                    f.close()
                except OSError:
                    pass
            shutil.rmtree(self.workdir, ignore_errors=True)


def _public_message(text: str) -> str:
    """One line for the student-facing board: long digit runs masked (no hidden data leaks through it)."""
    line = " ".join(str(text).split())
    line = re.sub(r"\d{5,}", "…", line)
    return line if len(line) <= _MESSAGE_CHARS else line[:_MESSAGE_CHARS - 1] + "…"


def _check_logits(logits, *, n: int, k: int, first: int | None, what: str) -> np.ndarray:
    if not isinstance(logits, np.ndarray) or logits.dtype != np.float32:
        raise _Failure("invalid", f"{what}: expected a float32 array")
    want = f"[{first if first is not None else 'C'}, {n}, {k}]"
    if logits.ndim != 3 or logits.shape[1:] != (n, k) or (first is not None and logits.shape[0] != first):
        raise _Failure("invalid", f"{what} has shape {list(logits.shape)}; expected {want} "
                                  f"(n = {n} inputs, K = {k} classes)")
    if logits.shape[0] < 1:
        raise _Failure("invalid", f"{what} holds no samples")
    nan, pos_inf = int(np.isnan(logits).sum()), int(np.isposinf(logits).sum())
    if nan or pos_inf:  # either makes the predictive probabilities NaN (-inf, a probability of 0, is scored)
        raise _Failure("invalid", f"{what} holds {nan} NaN and {pos_inf} +inf logits: logits must not be NaN or +inf")
    return logits


def _coherence_gap(logits: np.ndarray, n: int, dup: np.ndarray) -> tuple[int, float]:
    """(samples whose duplicated rows differ, worst relative gap) between rows ``dup`` and rows n.."""
    a, b = logits[:, dup], logits[:, n:]
    with np.errstate(invalid="ignore"):
        gap = np.abs(a - b) / np.maximum(1.0, np.abs(a))
    gap = np.nan_to_num(gap, nan=0.0, posinf=np.inf).max(axis=(1, 2))  # [M]
    return int((gap > COHERENCE_TOL).sum()), float(gap.max())


def _score_in_worker(name: str, path: pathlib.Path, problems: Sequence, config: ChallengeConfig, *, mode: str,
                     hidden: Sequence[str]) -> Entry:
    """Runs one submission in its worker on every problem; never raises for the submission's faults."""
    from jtk import testbed

    t0 = time.monotonic()
    entry = Entry(name, "submission", "ok", sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    worker = None
    rows: list[dict] = []
    try:
        worker = _Worker(path, mode=mode, memory_bytes=config.memory_limit_mb * 2 ** 20, hidden=hidden,
                         deadline=t0 + config.time_limit_s)
        worker.call({"op": "load"}, what="make_agent()")
        first = problems[0]
        check = worker.call({"op": "check", "prior": dataclasses.asdict(first.prior())}, what="check_agent")
        probes = [[str(p[0]), bool(p[1]), str(p[2])] for p in check.get("probes", []) if len(p) == 3]
        entry.probes = probes
        for pname, ok, msg in probes:
            if not ok and pname == "fit":
                status = "memory" if "MemoryError" in msg or "RESOURCE_EXHAUSTED" in msg else "error"
                raise _Failure(status, f"fit {msg}", msg)
            if not ok and pname == "coherence":
                raise _Failure("incoherent", f"check_agent: {msg}", msg)
        groups: dict = {}
        for p in problems:
            groups.setdefault(p.training_problem, []).append(p)
        rng = np.random.default_rng(secrets.randbits(64))  # where the duplicated rows go: unknown to the worker
        for group in groups.values():
            head = group[0]
            _, data, _ = testbed.load_problem(head)
            x, y = np.asarray(data.x[:head.num_train]), np.asarray(data.y[:head.num_train])
            t_fit = time.monotonic()
            fit = worker.call({"op": "fit", "prior": dataclasses.asdict(head.prior()),
                               "seed": testbed.agent_seed(head, 0)}, x, y, what="fit")
            train_s = (time.monotonic() - t_fit) / len(group)
            c = fit.get("num_components")
            c = c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else None
            exact = c is not None and config.likelihood == "auto"
            for p in group:
                t_eval = time.monotonic()
                _, _, test = testbed.load_problem(p)
                tx = np.asarray(test.x)
                n = tx.shape[0]
                dup = rng.choice(n, size=min(COHERENCE_ROWS, n), replace=False)
                request = {"op": "logits", "mode": "components" if exact else "samples",
                           "num_samples": p.num_samples, "seed": testbed.agent_seed(p, p.tau)}
                order = rng.permutation(n + len(dup))  # row i of the request is row order[i] of [x; x[dup]]
                reply = worker.call(request, np.concatenate([tx, tx[dup]])[order], what="components" if exact
                                    else "sample_logits")
                # 4x the expected size: a wrong shape gets its own message below, a flood is refused here
                rows_out = 4 * max(c or 0, p.num_samples, 1) * (n + len(dup)) * p.num_classes * 4 + 2 ** 20
                logits = _check_logits(worker.recv(max_bytes=rows_out), n=n + len(dup), k=p.num_classes,
                                       first=c if exact else p.num_samples,
                                       what="components(x)" if exact else "sample_logits(x, M, seed)")
                logits = logits[:, np.argsort(order)]  # back to [x; x[dup]]
                log_w = None
                if reply.get("log_weights"):
                    log_w = worker.recv(max_bytes=8 * logits.shape[0] + 4096)
                    if not isinstance(log_w, np.ndarray) or log_w.shape != (logits.shape[0],) or np.isnan(
                            log_w).any() or np.isposinf(log_w).any():
                        raise _Failure("invalid", f"log_weights() must be [{logits.shape[0]}] without NaN/+inf")
                bad, worst = _coherence_gap(logits, n, dup)
                if bad:
                    raise _Failure("incoherent", f"duplicated test inputs got different logits within {bad} of "
                                                 f"{logits.shape[0]} samples (max relative |Δ| {worst:.3g}): sample "
                                                 f"m must be one function evaluated at every input")
                kl, probs = testbed._score_numpy(logits[:, :n], test, p.tau, log_w)
                kind = "exact" if exact else f"mc{p.num_samples}"
                rows += testbed._rows([p], [kl], [probs], [np.asarray(test.y)], kind, train_s,
                                      time.monotonic() - t_eval, name)
        entry.rows = pd.DataFrame(rows, columns=testbed.RESULT_COLUMNS)
        notes = [f"{pn}: {m}" for pn, ok, m in probes if not ok]
        entry.message = "check_agent: " + "; ".join(notes) if notes else ""
    except _Failure as f:
        entry.status, entry.message, entry.detail = f.status, f.message, f.detail
        if f.status == "timeout":
            entry.message = f"exceeded the time limit of {config.time_limit_s:g} s (wall clock, all problems)"
    except Exception as err:  # noqa: BLE001 - a scorer-side surprise must not stop the board
        entry.status, entry.message = "error", f"scorer: {type(err).__name__}: {err}"
    finally:
        if worker is not None:
            rc = worker.proc.poll()
            worker.close()
            tail = worker.stderr_tail()
            entry.detail = (entry.detail + "\n--- worker stderr (tail) ---\n" + tail).strip()
            if entry.status == "error" and entry.message == "the worker died":
                memory = any(s in tail for s in ("MemoryError", "bad_alloc", "RESOURCE_EXHAUSTED", "Cannot allocate"))
                entry.status = "memory" if memory else "error"
                sig = f" (signal {-rc})" if rc is not None and rc < 0 else f" (exit {rc})" if rc is not None else ""
                last = [line for line in tail.splitlines() if line.strip()]
                entry.message = "the worker died" + sig + (f": {last[-1]}" if last else "")
            shutil.rmtree(worker.logdir, ignore_errors=True)
        entry.seconds = time.monotonic() - t0
        if entry.status != "ok":
            entry.rows = None
        entry.message = _public_message(entry.message)
    return entry


def _score_baseline(name: str, problems: Sequence, config: ChallengeConfig) -> Entry:
    from jtk import testbed

    t0 = time.monotonic()
    try:
        rows = testbed.evaluate(name, problems, name=name, progress=False, likelihood=config.likelihood)
        return Entry(name, "baseline", "ok", rows=rows, seconds=time.monotonic() - t0)
    except Exception as err:  # noqa: BLE001 - a failing baseline gets its row too
        return Entry(name, "baseline", "error", message=_public_message(f"{type(err).__name__}: {err}"),
                     seconds=time.monotonic() - t0)


# ------------------------------------------------------------------ the leaderboard


def leaderboard(entries: Sequence[Entry], reference: str | None) -> pd.DataFrame:
    """One row per entry: status, mean d_KL^τ with seed standard errors, paired differences to ``reference``.

    Standard errors are the testbed's (std of per-seed means / sqrt(#seeds)); ``diff_τ`` is the mean over
    the same problems of (entry's d_KL^τ − reference's), with the same kind of standard error.
    Ranked by d_KL^10 (else the largest τ) among entries with status ok.
    """
    from jtk import testbed

    ref_rows = next((e.rows for e in entries if e.name == reference and e.status == "ok"), None)
    taus = sorted({int(t) for e in entries if e.rows is not None for t in e.rows["tau"].unique()}) or [1, 10]
    out = []
    for e in entries:
        row: dict[str, Any] = {"name": e.name, "kind": e.kind, "status": e.status}
        for tau in taus:
            row.update({f"kl_{tau}": np.nan, f"kl_{tau}_se": np.nan, f"diff_{tau}": np.nan, f"diff_{tau}_se": np.nan})
        if e.status == "ok" and e.rows is not None and len(e.rows):
            table = testbed.summarize(e.rows, allow_mixed=True)
            for tau in taus:
                if f"kl_{tau}" in table:
                    row[f"kl_{tau}"] = float(table[f"kl_{tau}"].iloc[0])
                    row[f"kl_{tau}_se"] = float(table[f"kl_{tau}_se"].iloc[0])
            if ref_rows is not None:
                for tau in taus:
                    row[f"diff_{tau}"], row[f"diff_{tau}_se"] = testbed.paired_difference(e.rows, ref_rows, tau)
        row["reference"] = reference
        row["seconds"] = round(e.seconds, 1)
        row["message"] = e.message
        out.append(row)
    df = pd.DataFrame(out)
    rank_by = "kl_10" if 10 in taus else f"kl_{taus[-1]}"
    ok = df["status"].eq("ok") & df[rank_by].notna()
    df["rank"] = pd.Series(pd.NA, index=df.index, dtype="Int64")
    df.loc[ok, "rank"] = df.loc[ok, rank_by].rank(method="min").astype(int)
    df = df.assign(_o=df["rank"].fillna(10 ** 9)).sort_values(["_o", "kind", "name"]).drop(columns="_o")
    cols = ["rank", "name", "kind", "status"] + [c for c in df.columns if c.startswith(("kl_", "diff_"))] + [
        "reference", "seconds", "message"]
    return df[cols].reset_index(drop=True)


def _figure_png(board: pd.DataFrame) -> bytes | None:
    from matplotlib.figure import Figure

    ok = board[board["status"] == "ok"]
    if ok.empty or "kl_1" not in ok or "kl_10" not in ok:
        return None
    fig = Figure(figsize=(6.4, 4.8), dpi=100)
    ax = fig.add_subplot()
    for kind, color, marker in (("submission", "tab:blue", "o"), ("baseline", "tab:red", "s")):
        sub = ok[ok["kind"] == kind]
        if sub.empty:
            continue
        ax.errorbar(sub["kl_1"], sub["kl_10"], xerr=sub["kl_1_se"].fillna(0), yerr=sub["kl_10_se"].fillna(0),
                    fmt=marker, color=color, label=kind + "s", capsize=3, ms=7 if kind == "baseline" else 5)
        for _, r in sub.iterrows():
            ax.annotate(str(r["name"]), (r["kl_1"], r["kl_10"]), textcoords="offset points", xytext=(4, 4),
                        fontsize=8, color=color, fontweight="bold" if kind == "baseline" else "normal")
    ax.set_xlabel(r"$d_{KL}^{1}$ (marginal)")
    ax.set_ylabel(r"$d_{KL}^{10}$ (joint)")
    ax.set_title("Class challenge: lower is better")
    ax.legend()
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def leaderboard_html(board: pd.DataFrame, title: str = "jtk class challenge") -> str:
    """A self-contained page: the table and a d_KL^1 vs d_KL^10 figure (embedded PNG)."""
    png = _figure_png(board)
    img = (f'<img alt="d_KL^1 vs d_KL^10" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
           if png else "<p>No submission was scored.</p>")
    table = board.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4f}", escape=True,
                          classes="board", border=0)
    style = ("body{font-family:sans-serif;margin:2em}table.board{border-collapse:collapse;font-size:90%}"
             "table.board td,table.board th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}"
             "table.board td:last-child{text-align:left}")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>Mean d<sub>KL</sub><sup>τ</sup> on hidden problems (lower is better), standard errors over seeds; "
            f"diff = paired difference to the reference baseline on the same problems. {stamp}.</p>"
            f"{img}{table}</body></html>")


# ------------------------------------------------------------------ the board
@dataclasses.dataclass
class Board:
    """What :func:`score` / :func:`practice` produced."""

    leaderboard: pd.DataFrame
    entries: list[Entry]
    out: pathlib.Path | None
    sandbox: str
    seconds: float


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name) or "_"


def _hidden_paths(paths: Sequence[pathlib.Path], submissions: Sequence[pathlib.Path]) -> list[str]:
    """What bwrap hides; a directory that holds Python or jtk is replaced by its submission files."""
    from jtk import sandbox

    runtime = [pathlib.Path(p) for p in sandbox.runtime_paths()]
    hidden = []
    for p in paths:
        real = pathlib.Path(os.path.realpath(p))
        if real.is_dir() and any(r == real or real in r.parents for r in runtime):
            hidden += [os.path.realpath(s) for s in submissions if real in pathlib.Path(os.path.realpath(s)).parents]
            hidden += [str(c) for c in real.glob("*.toml")]
        else:
            hidden.append(str(real))
    return hidden


def _check_out(out, force: bool) -> pathlib.Path:
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a directory, got the file {str(out)!r}")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"--out {str(out)!r} is not empty; pass --force (force=True) to write the board into it")
    if not out.resolve().parent.is_dir():
        raise ValueError(f"--out must be in an existing directory, got {str(out)!r}")
    return out


def _run(named: Sequence[tuple[str, pathlib.Path]], problems: Sequence, config: ChallengeConfig, *, workers: int,
         hidden: Sequence[str], log: Callable[[str], None]) -> tuple[list[Entry], str]:
    mode = resolve_sandbox(config.sandbox)
    if mode == "none":
        log("warning: no bubblewrap sandbox: submissions run as this user and could read the challenge file "
            "(use only for trusted or practice runs)")
    entries = []
    for b in config.baselines:
        log(f"baseline {b} …")
        entries.append(_score_baseline(b, problems, config))
        log(f"baseline {b}: {entries[-1].status} ({entries[-1].seconds:.0f} s)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_score_in_worker, n, p, problems, config, mode=mode, hidden=hidden) for n, p in named]
        for fut in futures:
            e = fut.result()
            log(f"{e.name}: {e.status} ({e.seconds:.0f} s){' — ' + e.message if e.message else ''}")
            entries.append(e)
    return entries, mode


def _write_board(out: pathlib.Path, entries: Sequence[Entry], board: pd.DataFrame, config: ChallengeConfig,
                 problems: Sequence, started: str, force: bool, title: str) -> None:
    from jtk import results

    (out / "rows").mkdir(parents=True, exist_ok=True)
    (out / "submissions").mkdir(exist_ok=True)
    public = {**config.public(), "board": "leaderboard"}
    results.save_results(board, out / "leaderboard.csv", config=public, started=started, force=True,
                         agent_column="name")
    (out / "leaderboard.html").write_text(leaderboard_html(board, title))
    for e in entries:
        fname = _safe(e.name)
        if e.rows is not None and len(e.rows):
            agent = e.name if e.kind == "baseline" else {"name": e.name, "registered": False, "class": None,
                                                         "repr": f"submission sha256 {e.sha256}"}
            results.save_results(e.rows, out / "rows" / f"{fname}.csv", agent=agent, config=config.public(),
                                 problems=problems, estimator=config.likelihood, started=started, force=True)
        record = {"name": e.name, "kind": e.kind, "status": e.status, "message": e.message, "detail": e.detail,
                  "check_agent": e.probes, "seconds": e.seconds, "sha256": e.sha256}
        (out / "submissions" / f"{fname}.json").write_text(json.dumps(record, indent=1, default=str))


def _submissions(directory) -> list[tuple[str, pathlib.Path]]:
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise ValueError(f"submissions must be a directory of .py files, got {str(directory)!r}")
    files = sorted(p for p in directory.glob("*.py") if p.is_file())
    if not files:
        raise ValueError(f"submissions directory {str(directory)!r} holds no .py files")
    return files


def _named(files: Sequence[pathlib.Path], taken: Sequence[str]) -> list[tuple[str, pathlib.Path]]:
    out, used = [], set(taken)
    for f in files:
        name = f.stem if f.stem not in used else f.name
        used.add(name)
        out.append((name, f))
    return out


def score(submissions, config, out, *, workers: int = 1, force: bool = False, progress: bool = True) -> Board:
    """Scores every ``*.py`` in ``submissions`` and the baselines on the hidden problems; writes the board.

    Args:
      submissions: a directory of student files, each defining ``make_agent()``.
      config: a challenge TOML path (with its salt) or a :class:`ChallengeConfig`.
      out: the board directory (created; must be empty unless ``force``).
      workers: submissions scored at once (one worker process each).
      force: write into a non-empty ``out``.
      progress: print one line per finished entry to stderr.

    Returns:
      A :class:`Board`; files: ``out/leaderboard.csv`` (+ manifest), ``out/leaderboard.html``,
      ``out/rows/NAME.csv`` (+ manifest, hidden seeds included: instructor-facing),
      ``out/submissions/NAME.json`` (status, full error text, check_agent lines).

    Raises:
      ValueError or TypeError: a bad configuration, a missing salt, no submissions, a non-empty ``out``
        without ``force``, ``workers`` < 1 — all before any scoring.
    """
    t0 = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    config_path = None
    if not isinstance(config, ChallengeConfig):
        config_path = pathlib.Path(config)
        config = load_config(config_path)
    if config.salt is None:
        raise ValueError("config has no salt: scoring on hidden seeds needs the instructor's challenge file")
    _int("workers", workers, 1)
    out = _check_out(out, force)
    files = _submissions(submissions)
    problems = config.hidden_problems()
    named = _named(files, config.baselines)
    out.mkdir(exist_ok=True)
    hidden = _hidden_paths([p for p in (config_path, pathlib.Path(submissions), out) if p is not None], files)
    log = (lambda s: print(f"jtk challenge: {s}", file=sys.stderr, flush=True)) if progress else (lambda s: None)
    entries, mode = _run(named, problems, config, workers=workers, hidden=hidden, log=log)
    board = leaderboard(entries, config.reference_baseline)
    _write_board(out, entries, board, config, problems, started, force, "jtk class challenge")
    return Board(board, entries, out, mode, time.monotonic() - t0)


def practice(submission, config=None, *, out=None, baselines: bool = True, force: bool = False,
             progress: bool = True) -> Board:
    """Scores one submission on the public practice seeds, through the same worker as :func:`score`.

    Args:
      submission: the student's ``.py`` file defining ``make_agent()``.
      config: a practice (or challenge) TOML path, a :class:`ChallengeConfig`, or None for the
        default (quick grid, one practice seed, mlp baseline). The salt is never needed nor read.
      out: optional board directory (as :func:`score`).
      baselines: also score the configuration's baselines.
      force: write into a non-empty ``out``.
      progress: print progress lines to stderr.

    Returns:
      A :class:`Board` whose rows use the seeds 0 .. practice_seeds - 1.
    """
    t0 = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    config_path = None
    if config is None:
        config = ChallengeConfig(grid="quick", practice_seeds=1, baselines=("mlp",))
    elif not isinstance(config, ChallengeConfig):
        config_path = pathlib.Path(config)
        config = load_config(config_path, need_salt=False)
    config = dataclasses.replace(config, salt=None, baselines=config.baselines if baselines else (),
                                 reference=config.reference if baselines else None)
    submission = pathlib.Path(submission)
    if not submission.is_file() or submission.suffix != ".py":
        raise ValueError(f"submission must be an existing .py file, got {str(submission)!r}")
    if out is not None:
        out = _check_out(out, force)
    problems = config.practice_problems()
    named = _named([submission], config.baselines)
    if out is not None:
        out.mkdir(exist_ok=True)
    hidden = _hidden_paths([p for p in (config_path, out) if p is not None], [submission])
    log = (lambda s: print(f"jtk challenge: {s}", file=sys.stderr, flush=True)) if progress else (lambda s: None)
    entries, mode = _run(named, problems, config, workers=1, hidden=hidden, log=log)
    board = leaderboard(entries, config.reference_baseline)
    if out is not None:
        _write_board(out, entries, board, config, problems, started, force, "jtk challenge practice")
    return Board(board, entries, out, mode, time.monotonic() - t0)


def format_board(board: pd.DataFrame) -> str:
    """The leaderboard as plain text (the CLI prints it)."""
    cols = [c for c in board.columns if c not in ("reference",)]
    with pd.option_context("display.width", 200, "display.max_colwidth", 80, "display.max_columns", 30):
        return board[cols].to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4f}")
