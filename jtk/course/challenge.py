"""A class challenge: students submit agents, jtk scores them on hidden testbed problems.

The instructor writes a configuration (:func:`new_config`, ``jtk challenge new``) whose random
``salt`` defines the hidden problems; students practise on the public seeds
``0 .. practice_seeds - 1`` (:func:`practice`) and hand in a Python file defining ``make_agent()``;
:func:`score` scores every file and the baselines on the hidden problems and writes the board.

Hidden problems (:func:`hidden_key`, :func:`hidden_agent_seed`): hidden problem ``i`` of a grid cell has
an environment key, a training key and a test key, each a full JAX PRNG key (threefry2x32: 64 bits of key
material) taken from HMAC-SHA-256 keyed by the salt (128 bits or more) over a domain-separation label, the
problem (index, d, K, n, ρ) and the purpose. The integer seeds handed to an agent come from the same HMAC
with their own label, so they say nothing about the keys. Nothing a student sees is a function of a
small secret: there is no seed space to search (docs/challenge.md, "Why there is nothing to search").
Practice problems are the testbed's own (:func:`jtk.testbed.load_problem`, :func:`jtk.testbed.agent_seed`).

Security model: a student who learns a hidden environment can score d_KL = 0
(:class:`jtk.testbed.OracleAgent`). So a submission never runs in the process that knows the salt. The
trusted scorer (this module) generates each problem's data and sends only the training arrays, the prior
information any agent gets (input_dim, num_classes, num_train, temperature, tau), an integer seed for
the agent, and test inputs to an untrusted worker (:mod:`jtk.course._challenge_worker`) over pipes
(length-prefixed JSON and ``.npy`` frames; nothing is unpickled). The worker runs with a minimal
environment, in a fresh temporary directory, with ``RLIMIT_AS`` / ``RLIMIT_FSIZE`` / no core dumps, in
its own session, and — when bubblewrap works here (:mod:`jtk.course.sandbox`) — inside bwrap, where the
configuration file, the submissions and the output directory are hidden and the scorer's processes are
invisible. Without bubblewrap (``sandbox = "none"``) the worker runs as the instructor's user and could
read the configuration file or the scorer's memory: use that mode only for trusted practice runs.
Submissions are regular files only: a symbolic link, FIFO, directory or device named ``*.py`` is
skipped, named on the board and in the log, and never opened through (:data:`SUBMISSION_MAX_BYTES`).

The scorer validates every answer (shapes, NaN, mixture weights) and checks coherence itself on
duplicated test rows hidden among the scored ones; the worker also runs
:func:`jtk.testbed.check_agent` on a public problem. Statuses: ``ok``, ``error`` (raised, or no
``make_agent``), ``timeout`` (the wall-clock limit per submission), ``memory`` (the memory limit),
``incoherent`` (sample m is not one function of all inputs), ``invalid`` (malformed answers; a file
that is not a regular file; or a test τ-sample whose KL is +inf: an observed label given probability 0).
The last rule replaces the testbed's clip for the board: the reference clips a +inf KL to the problem's
largest finite one, which lets -inf or ±1e300 logits score better than any honest agent, so an entry
with any +inf is not ranked (column ``frac_finite``). Baselines on hidden problems run in this process
through the same scoring loop (``jtk.testbed.evaluate`` draws public seeds only); on practice problems
through ``jtk.testbed.evaluate``.

Outputs (``out``): ``leaderboard.csv`` and ``leaderboard.html`` are student-facing and hold no
secret (messages are one line with long digit runs masked); ``rows/NAME.csv`` (+ manifest) hold one
row per problem (the ``seed`` column is the hidden problem's index, not a key), ``submissions/NAME.json``
the full error text. The board manifest records the SHA-256 of every published file and ``leaderboard.sig``
holds the instructor's Ed25519 signature of it (:mod:`jtk.course._signing`; the key stays outside the board).
:func:`verify_board` (``jtk verify BOARD``) checks the signature against the published key or fingerprint,
that the board follows from the rows and, given the challenge file with its salt and the submissions, scores
the board again: every status re-derived, a fresh (printed) sample of rows or all of them, within the
tolerance of the instructor's record.
"""
from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import datetime
import difflib
import functools
import hashlib
import hmac
import html
import io
import json
import math
import os
import pathlib
import re
import secrets
import shutil
import sys
import tempfile
import time
import tomllib
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from jtk.course import untrusted

STATUSES = ("ok", "error", "timeout", "memory", "incoherent", "invalid")
SANDBOXES = ("auto", "bwrap", "none")
LIKELIHOODS = ("auto", "mc")
WORKER_ENV_KEYS = frozenset({"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "JAX_PLATFORMS", "MPLBACKEND",
                             "MPLCONFIGDIR", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE", "JTK_COMPILATION_CACHE",
                             "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "IPYTHONDIR",
                             "MALLOC_ARENA_MAX", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "XLA_FLAGS"})
COHERENCE_ROWS = 32  # duplicated test rows hidden in every logits request
COHERENCE_TOL = 1e-5  # relative |Δ| between a row and its duplicate within one sample
SALT_HEX_CHARS = 32
_MESSAGE_CHARS = 240
DERIVATION = "jtk-challenge/hmac-sha256/v2"  # domain-separation label of every hidden key and agent seed
KEY_PURPOSES = ("environment", "train", "test")  # the keys of one hidden problem (hidden_key)
SUBMISSION_MAX_BYTES = 1 << 20  # a submission file larger than this is skipped (1 MiB of Python)


# ------------------------------------------------------------------ configuration
@dataclasses.dataclass(frozen=True)
class ChallengeConfig:
    """A challenge: the grid, the hidden problems' salt, limits and baselines (one TOML file).

    Attributes:
      grid: named testbed grid ("quick", "paper", "classification"; ``jtk.testbed.GRIDS``).
      seeds: number of hidden seeds (problem indices 0 .. seeds - 1); every problem of the grid is drawn
        for each, with keys derived from the salt (:func:`hidden_key`).
      salt: hex secret from which the hidden problems derive (None in a practice configuration).
      baselines: registered jtk agents scored beside the submissions (``jtk.agents.names()``).
      reference: the baseline paired differences are taken to (default: "ensemble+" if a
        baseline, else the first baseline).
      time_limit_s: wall-clock seconds per submission, all its problems together.
      memory_limit_mb: address-space limit of a submission's worker (MiB).
      practice_seeds: public seeds 0 .. practice_seeds - 1 for practice (testbed draws; the hidden
        problems are keyed by the salt, never by a public seed).
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
        """The problems the submissions are scored on: their ``seed`` is the hidden index 0 .. seeds - 1.

        The index only names a problem; its data come from keys derived from the salt (:func:`hidden_key`),
        never from ``jtk.testbed.load_problem`` (which would draw the public problem of that seed).

        Raises:
          ValueError: a practice configuration (no salt).
        """
        if self.salt is None:
            raise ValueError("salt is missing: this is a practice configuration; hidden problems need the "
                             "instructor's challenge.toml")
        return self.problems(range(self.seeds))

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


_TEMPLATE = '''# jtk class challenge (jtk challenge new). Keep this file private: the salt defines the hidden problems.
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


def _check_salt(salt) -> str:
    if not isinstance(salt, str) or len(salt) < SALT_HEX_CHARS or not re.fullmatch(r"[0-9a-fA-F]+", salt):
        shown = f"{len(salt)} characters" if isinstance(salt, str) else type(salt).__name__
        raise ValueError(f"salt must be a hex string of at least {SALT_HEX_CHARS} digits, got {shown}")
    return salt.lower()


def _hidden_digest(salt: str, purpose: str, problem, tau: int | None = None) -> bytes:
    """HMAC-SHA-256 keyed by the salt over a canonical JSON message: label, purpose, the problem's cell."""
    message = json.dumps({"derivation": DERIVATION, "purpose": purpose, "index": int(problem.seed),
                          "input_dim": int(problem.input_dim), "num_classes": int(problem.num_classes),
                          "num_train": int(problem.num_train),
                          "temperature_micro": int(round(problem.temperature * 1e6)), "tau": tau},
                         sort_keys=True, separators=(",", ":"))
    return hmac.new(_check_salt(salt).encode("ascii"), message.encode(), hashlib.sha256).digest()


def hidden_key(salt: str, problem, purpose: str):
    """A hidden problem's JAX PRNG key: threefry2x32 key data (64 bits) from HMAC-SHA-256 of the salt.

    Args:
      salt: the challenge's secret (≥ 32 hex digits).
      problem: a :class:`jtk.testbed.Problem` whose ``seed`` is the hidden index (``hidden_problems``).
      purpose: "environment" (the generative MLP), "train" (the training draw) or "test" (the test
        draws; τ is folded in as the testbed does).

    Returns:
      A typed JAX key. Keys of different purposes, problems or salts are independent: each is a separate
      HMAC output, so learning one (say, by searching the training inputs) tells nothing of another.
    """
    import jax
    import jax.numpy as jnp

    _one_of("purpose", purpose, KEY_PURPOSES)
    words = np.frombuffer(_hidden_digest(salt, purpose, problem)[:8], dtype=">u4").astype(np.uint32)
    return jax.random.wrap_key_data(jnp.asarray(words, jnp.uint32), impl="threefry2x32")


def hidden_agent_seed(salt: str, problem, purpose: int) -> int:
    """The integer seed handed to an agent on a hidden problem (purpose 0: fit, τ: sampling for that τ).

    31 bits, as :func:`jtk.testbed.agent_seed` (agents such as scikit-learn's take integers), from HMAC-SHA-256
    of the salt with its own label: it is independent of the problem's keys, so it reveals nothing about them.
    """
    if isinstance(purpose, bool) or not isinstance(purpose, int):
        raise TypeError(f"purpose must be an int (0: fit, tau: sampling), got {purpose!r}")
    digest = _hidden_digest(salt, "agent-seed", problem, tau=int(purpose))
    return int.from_bytes(digest[:4], "big") >> 1


def _salt_id(salt: str) -> str:
    """A public fingerprint of the salt (HMAC output: says nothing about it), recorded on the board."""
    return hmac.new(_check_salt(salt).encode("ascii"), f"{DERIVATION}:salt-id".encode(), hashlib.sha256).hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def _keyed_programs():
    """The compiled hidden draws: the testbed's own pieces, with separately keyed environment and training."""
    from jtk import _compile
    from jtk.envs import classification

    def training(settings, env_key, train_key, temperature):
        params = classification.sample_prior_params(env_key, settings.input_dim, settings.hidden,
                                                    settings.num_classes)
        x, y = classification.sample_data(train_key, params, temperature, settings.capacity, settings.activation)
        return params, x, y

    return (_compile.jit(training, static_argnums=0),
            _compile.jit(classification.sample_test, static_argnums=(0, 1, 2)))


class _Draws:
    """Where a board's data and the agents' seeds come from.

    ``salt`` None: the testbed's public draw (practice): ``jtk.testbed.load_problem`` and ``agent_seed``,
    exactly as ``jtk.testbed.evaluate``. A salt: the hidden draw, every key and seed from HMAC-SHA-256.
    """

    def __init__(self, salt: str | None):
        self.salt = None if salt is None else _check_salt(salt)

    @property
    def hidden(self) -> bool:
        return self.salt is not None

    def training(self, p):
        """(environment params, x [n, d], y [n]) of a problem's training group."""
        from jtk import testbed

        n = p.num_train
        if self.salt is None:
            params, data, _ = testbed.load_problem(p)
            return params, np.asarray(data.x[:n]), np.asarray(data.y[:n])
        import jax.numpy as jnp

        training, _ = _keyed_programs()
        params, x, y = training(testbed.engine.data_config(p), hidden_key(self.salt, p, "environment"),
                                hidden_key(self.salt, p, "train"), jnp.float32(p.temperature))
        return params, np.asarray(x[:n]), np.asarray(y[:n])

    def test(self, p, params):
        """The problem's test data (:class:`jtk.envs.classification.TestData`)."""
        from jtk import testbed

        if self.salt is None:
            return testbed.load_problem(p)[2]
        import jax.numpy as jnp

        _, test = _keyed_programs()
        return test(testbed.engine.data_config(p), p.num_test, p.tau, params, hidden_key(self.salt, p, "test"),
                    jnp.float32(p.temperature))

    def seed(self, p, purpose: int) -> int:
        """The agent's integer seed (purpose 0: fit, τ: sampling)."""
        from jtk import testbed

        return testbed.agent_seed(p, purpose) if self.salt is None else hidden_agent_seed(self.salt, p, purpose)


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


def resolve_sandbox(mode: str) -> str:
    """The containment that will run: "bwrap" or "none" ("auto": bwrap when it works here)."""
    from jtk.course import sandbox

    _one_of("sandbox", mode, SANDBOXES)
    if mode == "auto":
        return "bwrap" if sandbox.bwrap_works() else "none"
    return sandbox.resolve(mode)


class _Worker:
    """A submission's worker: :class:`jtk.course.sandbox.Worker` (the one untrusted-execution path of grading and the
    challenge: its launcher, its limits on the whole sandbox, its wire protocol) run in a fresh folder holding
    ``submission.py``, against the entry's deadline. What the worker does wrong becomes a :class:`_Failure`."""

    COMMAND = ("-I", "-B", "-m", "jtk.course._challenge_worker")

    def __init__(self, submission: pathlib.Path, *, mode: str, memory_bytes: int, hidden: Sequence[str],
                 deadline: float):
        from jtk.course import sandbox

        del hidden  # bwrap mounts only what it names: the configuration and the board are not in its view
        self.deadline = deadline
        self.workdir = tempfile.mkdtemp(prefix="jtk-challenge-")
        shutil.copyfile(submission, os.path.join(self.workdir, "submission.py"))
        # In bwrap the submission's folder is mounted read-only at the same path (its working directory), and it
        # writes only into its private, size-limited /tmp (jtk.course.sandbox.bwrap_args: no network, no other files).
        self.worker = sandbox.Worker([sys.executable, *self.COMMAND], mode=mode, memory=memory_bytes,
                                     workdir=self.workdir, binds=[(self.workdir, self.workdir)], cwd=self.workdir)
        self.proc = self.worker.proc

    @staticmethod
    def _failure(err) -> _Failure:
        if err.kind == "timeout":
            return _Failure("timeout", "")
        if err.kind == "died":
            return _Failure("error", "the worker died")
        return _Failure("invalid", str(err).replace("the worker sent", "the submission sent"))

    def send(self, obj) -> None:
        from jtk.course.sandbox import WorkerError

        try:
            self.worker.send(obj, self.deadline)
        except WorkerError as err:
            raise self._failure(err) from None

    def recv(self, max_bytes: int = 1 << 20, array: bool = False):
        from jtk.course.sandbox import WorkerError

        try:
            return self.worker.recv(self.deadline, max_bytes, array=array)
        except WorkerError as err:
            raise self._failure(err) from None

    def call(self, msg: dict, *arrays, what: str) -> dict:
        self.send(msg)
        for a in arrays:
            self.send(np.asarray(a, np.float32) if a.dtype.kind == "f" else np.asarray(a, np.int32))
        reply = self.recv()
        if not reply.get("ok"):
            err = str(reply.get("error", "unknown error"))
            raise _Failure("memory" if reply.get("memory") else "error", f"{what} raised {err}", err)
        return reply

    def stderr_tail(self) -> str:
        return self.worker.stderr_tail()

    @property
    def limit_hit(self) -> str | None:
        """After :meth:`close`: the limit of the whole sandbox it went over (``memory``, ``processes``), or None."""
        return self.worker.limit_hit

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.worker.send({"op": "quit"}, min(self.deadline, time.monotonic() + 2))
                    self.proc.wait(timeout=2)
                except Exception:  # noqa: BLE001 - it is killed below either way
                    pass
        finally:
            self.worker.close()
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
        raise _Failure("invalid", f"{what} holds {nan} NaN and {pos_inf} +inf logits: logits must not be NaN or +inf "
                                  f"(±1e300 is ±inf in float32)")
    all_neg = int(np.isneginf(logits).all(axis=-1).sum())
    if all_neg:
        raise _Failure("invalid", f"{what} holds {all_neg} rows whose logits are all -inf: no class has a probability")
    return logits


def _coherence_gap(logits: np.ndarray, n: int, dup: np.ndarray) -> tuple[int, float]:
    """(samples whose duplicated rows differ, worst relative gap) between rows ``dup`` and rows n.."""
    a, b = logits[:, dup], logits[:, n:]
    with np.errstate(invalid="ignore"):
        gap = np.abs(a - b) / np.maximum(1.0, np.abs(a))
    gap = np.nan_to_num(gap, nan=0.0, posinf=np.inf).max(axis=(1, 2))  # [M]
    return int((gap > COHERENCE_TOL).sum()), float(gap.max())


class _WorkerAgent:
    """The scorer's end of a submission's worker: fit and logits over the pipe protocol (answers untrusted)."""

    def __init__(self, worker: _Worker):
        self.worker = worker

    def fit(self, prior: dict, seed: int, x: np.ndarray, y: np.ndarray) -> int | None:
        reply = self.worker.call({"op": "fit", "prior": prior, "seed": seed}, x, y, what="fit")
        c = reply.get("num_components")
        return c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else None

    def logits(self, *, exact: bool, num_samples: int, seed: int, x: np.ndarray, num_classes: int,
               components: int | None):
        """(logits as received, whether log weights follow)."""
        request = {"op": "logits", "mode": "components" if exact else "samples", "num_samples": num_samples,
                   "seed": seed}
        reply = self.worker.call(request, x, what="components" if exact else "sample_logits")
        # 4x the expected size: a wrong shape gets its own message, a flood is refused here
        rows_out = 4 * max(components or 0, num_samples, 1) * len(x) * num_classes * 4 + 2 ** 20
        return self.worker.recv(max_bytes=rows_out, array=True), bool(reply.get("log_weights"))

    def log_weights(self, count: int):
        return self.worker.recv(max_bytes=8 * count + 4096, array=True)


class _LocalAgent:
    """A trusted baseline, called in this process with exactly what a worker would be sent and would send back."""

    def __init__(self, agent):
        self.agent = agent
        self.posterior = None
        self._log_w = None

    def fit(self, prior: dict, seed: int, x: np.ndarray, y: np.ndarray) -> int | None:
        from jtk.agents.base import ProblemInfo, as_mixture

        try:
            self.posterior = self.agent.fit(np.asarray(x, np.float32), np.asarray(y, np.int32), seed=seed,
                                            prior=ProblemInfo(**prior))
            mixture = as_mixture(self.posterior)
        except Exception as err:  # noqa: BLE001 - the baseline's failure is its row's status
            raise _Failure("error", f"fit raised {type(err).__name__}: {err}") from None
        return None if mixture is None else int(mixture.num_components)

    def logits(self, *, exact: bool, num_samples: int, seed: int, x: np.ndarray, num_classes: int,
               components: int | None):
        from jtk.agents.base import as_mixture

        x = np.asarray(x, np.float32)
        self._log_w = None
        try:
            if exact:
                mixture = as_mixture(self.posterior)
                out = mixture.components(x)
                lw = mixture.log_weights()
                self._log_w = None if lw is None else np.asarray(lw, np.float32)
            else:
                out = self.posterior.sample_logits(x, num_samples, seed)
            out = np.asarray(out)
        except Exception as err:  # noqa: BLE001
            call = "components" if exact else "sample_logits"
            raise _Failure("error", f"{call} raised {type(err).__name__}: {err}") from None
        if not np.issubdtype(out.dtype, np.number) or np.iscomplexobj(out):
            raise _Failure("invalid", f"the posterior returned logits of dtype {out.dtype}; expected floats")
        with np.errstate(over="ignore"):
            return out.astype(np.float32), self._log_w is not None

    def log_weights(self, count: int):
        return self._log_w


def _score_problems(agent, problems: Sequence, config: ChallengeConfig, draws: _Draws, name: str) -> pd.DataFrame:
    """Scores one agent (a :class:`_WorkerAgent` or :class:`_LocalAgent`) on every problem: the testbed's rows.

    Raises _Failure for the agent's faults: malformed answers, incoherent samples, NaN scores.
    """
    from jtk import testbed

    groups: dict = {}
    for p in problems:
        groups.setdefault(p.training_problem, []).append(p)
    rng = np.random.default_rng(secrets.randbits(64))  # where the duplicated rows go: unknown to the agent
    rows: list[dict] = []
    for group in groups.values():
        head = group[0]
        params, x, y = draws.training(head)
        t_fit = time.monotonic()
        c = agent.fit(dataclasses.asdict(head.prior()), draws.seed(head, 0), np.asarray(x, np.float32),
                      np.asarray(y, np.int32))
        train_s = (time.monotonic() - t_fit) / len(group)
        exact = c is not None and config.likelihood == "auto"
        for p in group:
            t_eval = time.monotonic()
            test = draws.test(p, params)
            tx = np.asarray(test.x, np.float32)
            n = tx.shape[0]
            dup = rng.choice(n, size=min(COHERENCE_ROWS, n), replace=False)
            order = rng.permutation(n + len(dup))  # row i of the request is row order[i] of [x; x[dup]]
            raw, weighted = agent.logits(exact=exact, num_samples=p.num_samples, seed=draws.seed(p, p.tau),
                                         x=np.concatenate([tx, tx[dup]])[order], num_classes=p.num_classes,
                                         components=c)
            logits = _check_logits(raw, n=n + len(dup), k=p.num_classes, first=c if exact else p.num_samples,
                                   what="components(x)" if exact else "sample_logits(x, M, seed)")
            logits = logits[:, np.argsort(order)]  # back to [x; x[dup]]
            log_w = None
            if weighted:
                log_w = agent.log_weights(logits.shape[0])
                if not isinstance(log_w, np.ndarray) or log_w.shape != (logits.shape[0],) or np.isnan(
                        log_w).any() or np.isposinf(log_w).any() or np.isneginf(log_w).all():
                    raise _Failure("invalid", f"log_weights() must be [{logits.shape[0]}] without NaN/+inf and not "
                                              f"all -inf")
            bad, worst = _coherence_gap(logits, n, dup)
            if bad:
                raise _Failure("incoherent", f"duplicated test inputs got different logits within {bad} of "
                                             f"{logits.shape[0]} samples (max relative |Δ| {worst:.3g}): sample "
                                             f"m must be one function evaluated at every input")
            kl, probs = testbed.engine.score_numpy(logits[:, :n], test, p.tau, log_w)
            if np.isnan(kl).any():
                raise _Failure("invalid", f"{int(np.isnan(kl).sum())} test τ-samples scored NaN: the predictive "
                                          f"probabilities are not defined")
            kind = "exact" if exact else f"mc{p.num_samples}"
            rows += testbed.engine.result_rows([p], [kl], [probs], [np.asarray(test.y)], kind, train_s,
                                  time.monotonic() - t_eval, name)
    return pd.DataFrame(rows, columns=testbed.RESULT_COLUMNS)


def _finite_verdict(entry: Entry) -> Entry:
    """The board's rule for +inf KL: an entry whose fraction of finite test τ-samples is below 1 is invalid.

    The reference's clip (:func:`jtk.likelihood.summarize_kl`) would replace each +inf by the problem's largest
    finite KL, which an agent with -inf logits can make ≤ 0: a perfect score. Any other finite stand-in is a
    price a hard-max agent can weigh against its gain; invalid (not ranked, below every ranked entry) gains it
    nothing, whatever it does when probed.
    """
    if entry.status != "ok" or entry.rows is None or not len(entry.rows):
        return entry
    frac = pd.to_numeric(entry.rows["frac_finite"], errors="coerce").fillna(0.0)
    if (frac >= 1.0).all():
        return entry
    entry.status = "invalid"
    entry.message = _public_message(
        f"{1.0 - float(frac.mean()):.3%} of test τ-samples had KL = +inf on {int((frac < 1).sum())} of {len(frac)} "
        f"problems: an observed label got probability 0 (-inf logits, or ±1e300 that float32 makes ±inf); the "
        f"testbed's clip would hide it, so the entry is not ranked")
    return entry


def _score_in_worker(name: str, path: pathlib.Path, problems: Sequence, config: ChallengeConfig, *, mode: str,
                     hidden: Sequence[str], draws: _Draws | None = None, sha256: str | None = None) -> Entry:
    """Runs one submission in its worker on every problem; never raises for the submission's faults."""
    draws = draws if draws is not None else _Draws(config.salt)
    t0 = time.monotonic()
    entry = Entry(name, "submission", "ok", sha256=sha256 or hashlib.sha256(path.read_bytes()).hexdigest())
    worker = None
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
        entry.rows = _score_problems(_WorkerAgent(worker), problems, config, draws, name)
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
            if worker.limit_hit:  # over a limit of the whole sandbox: the entry loses its rows, whatever it answered
                from jtk.course import sandbox

                entry.status = "memory" if worker.limit_hit == "memory" else "error"
                entry.message = ("went over " + (f"the memory limit of {config.memory_limit_mb} MiB"
                                                 if worker.limit_hit == "memory" else
                                                 f"the limit of {sandbox.DEFAULT_PROCESSES} processes and threads")
                                 + ", all its processes together")
        entry.seconds = time.monotonic() - t0
        if entry.status != "ok":
            entry.rows = None
        entry.message = _public_message(entry.message)
    return _finite_verdict(entry)


def _score_baseline(name: str, problems: Sequence, config: ChallengeConfig, draws: _Draws | None = None) -> Entry:
    """A registered jtk agent: ``jtk.testbed.evaluate`` on public problems, the scoring loop on hidden ones."""
    from jtk import testbed
    from jtk.agents import base as agents_base

    draws = draws if draws is not None else _Draws(config.salt)
    t0 = time.monotonic()
    try:
        if draws.hidden:
            rows = _score_problems(_LocalAgent(agents_base.make(name)), problems, config, draws, name)
        else:
            rows = testbed.evaluate(name, problems, name=name, progress=False, likelihood=config.likelihood)
        entry = Entry(name, "baseline", "ok", rows=rows, seconds=time.monotonic() - t0)
    except _Failure as f:
        entry = Entry(name, "baseline", f.status, message=_public_message(f.message), detail=f.detail,
                      seconds=time.monotonic() - t0)
    except Exception as err:  # noqa: BLE001 - a failing baseline gets its row too
        entry = Entry(name, "baseline", "error", message=_public_message(f"{type(err).__name__}: {err}"),
                      seconds=time.monotonic() - t0)
    return _finite_verdict(entry)


# ------------------------------------------------------------------ the leaderboard


def leaderboard(entries: Sequence[Entry], reference: str | None) -> pd.DataFrame:
    """One row per entry: status, mean d_KL^τ with seed standard errors, paired differences to ``reference``.

    Standard errors are the testbed's (std of per-seed means / sqrt(#seeds)); ``diff_τ`` is the mean over
    the same problems of (entry's d_KL^τ − reference's), with the same kind of standard error.
    ``frac_finite`` is the fraction of the entry's test τ-samples whose KL was finite (the mean of its rows';
    every problem of a board has the same N); below 1 the entry is ``invalid`` (``_finite_verdict``).
    Ranked by d_KL^10 (else the largest τ) among entries with status ok; every other entry comes after them,
    unranked. One entry's rows never stop the board: an entry that cannot be summarised gets status
    ``error`` with the reason.
    """
    if isinstance(entries, (str, bytes)) or not all(isinstance(e, Entry) for e in entries):
        raise TypeError(f"entries must be a list of Entry, got {type(entries).__name__}")
    from jtk import testbed

    ref_rows = next((e.rows for e in entries if e.name == reference and e.status == "ok"), None)
    taus = sorted({int(t) for e in entries if e.rows is not None and "tau" in e.rows
                   for t in pd.to_numeric(e.rows["tau"], errors="coerce").dropna().unique()}) or [1, 10]
    out = []
    for e in entries:
        row: dict[str, Any] = {"name": e.name, "kind": e.kind, "status": e.status}
        for tau in taus:
            row.update({f"kl_{tau}": np.nan, f"kl_{tau}_se": np.nan, f"diff_{tau}": np.nan, f"diff_{tau}_se": np.nan})
        row["frac_finite"] = np.nan
        message = e.message
        try:
            if e.rows is not None and len(e.rows) and "frac_finite" in e.rows:
                row["frac_finite"] = float(pd.to_numeric(e.rows["frac_finite"], errors="coerce").mean())
            if e.status == "ok" and e.rows is not None and len(e.rows):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", testbed.InfiniteKLWarning)  # the board's own rule decides
                    table = testbed.summarize(e.rows, allow_mixed=True)
                scores = {}
                for tau in taus:
                    if f"kl_{tau}" in table:
                        scores[f"kl_{tau}"] = float(table[f"kl_{tau}"].iloc[0])
                        scores[f"kl_{tau}_se"] = float(table[f"kl_{tau}_se"].iloc[0])
                if ref_rows is not None:
                    for tau in taus:
                        scores[f"diff_{tau}"], scores[f"diff_{tau}_se"] = testbed.paired_difference(e.rows, ref_rows,
                                                                                                    tau)
                row.update(scores)
        except Exception as err:  # noqa: BLE001 - one entry's rows must not cost the class its board
            row["status"] = "error"
            message = _public_message(f"scorer: its rows could not be summarised: {type(err).__name__}: {err}")
            for tau in taus:
                row.update({f"kl_{tau}": np.nan, f"kl_{tau}_se": np.nan, f"diff_{tau}": np.nan,
                            f"diff_{tau}_se": np.nan})
        row["reference"] = reference
        row["seconds"] = round(e.seconds, 1)
        row["message"] = message
        out.append(row)
    df = pd.DataFrame(out)
    rank_by = "kl_10" if 10 in taus else f"kl_{taus[-1]}"
    ok = df["status"].eq("ok") & df[rank_by].notna()
    df["rank"] = pd.Series(pd.NA, index=df.index, dtype="Int64")
    df.loc[ok, "rank"] = df.loc[ok, rank_by].rank(method="min").astype(int)
    df = df.assign(_o=df["rank"].fillna(10 ** 9)).sort_values(["_o", "kind", "name"]).drop(columns="_o")
    cols = ["rank", "name", "kind", "status"] + [c for c in df.columns if c.startswith(("kl_", "diff_"))] + [
        "frac_finite", "reference", "seconds", "message"]
    return df[cols].reset_index(drop=True)


def _figure_png(board: pd.DataFrame) -> bytes | None:
    """The d_KL^1 vs d_KL^10 figure as PNG bytes, or None when nothing was scored. Entry names are labels through
    :func:`jtk.course.untrusted.plot_text` (never mathtext), so a name such as ``$\\oops$`` is drawn as written."""
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
            ax.annotate(untrusted.plot_text(str(r["name"])), (r["kl_1"], r["kl_10"]), textcoords="offset points",
                        xytext=(4, 4), fontsize=8, color=color,
                        fontweight="bold" if kind == "baseline" else "normal")
    ax.set_xlabel(r"$d_{KL}^{1}$ (marginal)")
    ax.set_ylabel(r"$d_{KL}^{10}$ (joint)")
    ax.set_title("Class challenge: lower is better")
    ax.legend()
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def leaderboard_html(board: pd.DataFrame, title: str = "jtk class challenge") -> str:
    """A self-contained page: the table (every cell HTML-escaped) and a d_KL^1 vs d_KL^10 figure (embedded PNG).
    A figure that cannot be drawn costs the figure, never the page."""
    if not isinstance(board, pd.DataFrame):
        raise TypeError(f"board must be a leaderboard DataFrame, got {type(board).__name__}")
    try:
        png = _figure_png(board)
    except Exception as err:  # noqa: BLE001 - the table is the board; the figure is a view of it
        png, failed = None, f"<p>The figure could not be drawn ({html.escape(type(err).__name__)}).</p>"
    else:
        failed = "<p>No submission was scored.</p>"
    img = (f'<img alt="d_KL^1 vs d_KL^10" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
           if png else failed)
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
    signed_by: dict | None = None  # public_key, fingerprint, key (its path) and created (made by this call)


def _safe(name: str) -> str:
    """The file name of an entry's rows and record: :func:`jtk.course.untrusted.file_name` (collision-free, so
    ``alice~smith`` and ``alice_smith`` keep their own files; the board keeps the name as handed in)."""

    return untrusted.file_name(name)


def _hidden_paths(paths: Sequence[pathlib.Path], submissions: Sequence[pathlib.Path]) -> list[str]:
    """What bwrap hides; a directory that holds Python or jtk is replaced by its submission files."""
    from jtk.course import sandbox

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


@dataclasses.dataclass(frozen=True)
class _Submission:
    """A submission file read once, safely: the bytes every worker gets are these, at ``path`` (a private copy)."""

    name: str
    source: pathlib.Path  # the file in the submissions folder (named on the board and in messages)
    path: pathlib.Path  # the private copy the worker is started from
    sha256: str


def _read_submission(path: pathlib.Path) -> bytes:
    """A submission file's bytes through grading's reader (:func:`jtk.course.exercises.read_bytes`), at most
    :data:`SUBMISSION_MAX_BYTES`; ValueError (the reason, which names the file) for anything else."""
    from jtk.course.exercises import read_bytes

    return read_bytes(path, max_bytes=SUBMISSION_MAX_BYTES)


def _submission_files(directory) -> list[pathlib.Path]:
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise ValueError(f"submissions must be a directory of .py files, got {str(directory)!r}")
    files = sorted(directory.glob("*.py"))
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


def _take_submissions(named: Sequence[tuple[str, pathlib.Path]], private: str, log: Callable[[str], None]
                      ) -> tuple[list[_Submission], list[Entry]]:
    """Reads every named file into ``private``; a file that is not a regular file gets an ``invalid`` entry."""
    taken, skipped = [], []
    for i, (name, path) in enumerate(named):
        try:
            data = _read_submission(path)
        except ValueError as err:
            message = f"skipped: {err}"
            log(f"{name}: {message}")
            skipped.append(Entry(name, "submission", "invalid", message=_public_message(message), detail=message))
            continue
        copy = pathlib.Path(private) / f"{i:04d}.py"
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        taken.append(_Submission(name, path, copy, hashlib.sha256(data).hexdigest()))
    return taken, skipped


def _run(subs: Sequence[_Submission], problems: Sequence, config: ChallengeConfig, *, workers: int,
         hidden: Sequence[str], log: Callable[[str], None]) -> tuple[list[Entry], str]:
    mode = resolve_sandbox(config.sandbox)
    if mode == "none":
        log("warning: no bubblewrap sandbox: submissions run as this user and could read the challenge file "
            "(use only for trusted or practice runs)")
    draws = _Draws(config.salt)
    entries = []
    for b in config.baselines:
        log(f"baseline {b} …")
        entries.append(_score_baseline(b, problems, config, draws))
        log(f"baseline {b}: {entries[-1].status} ({entries[-1].seconds:.0f} s)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_score_in_worker, s.name, s.path, problems, config, mode=mode, hidden=hidden,
                               draws=draws, sha256=s.sha256) for s in subs]
        for fut in futures:
            e = fut.result()
            log(f"{e.name}: {e.status} ({e.seconds:.0f} s){' — ' + e.message if e.message else ''}")
            entries.append(e)
    return entries, mode


def _write_board(out: pathlib.Path, entries: Sequence[Entry], board: pd.DataFrame, config: ChallengeConfig,
                 problems: Sequence, started: str, force: bool, title: str, signing=None) -> None:
    """Writes the board's files; with ``signing`` (a :class:`jtk.course._signing.SigningKey`) signs its manifest.

    The board manifest records the SHA-256 of every published file (``leaderboard.csv``, ``leaderboard.html``,
    each rows CSV and each rows manifest) and the numerics key of this machine, so the one signature of its bytes
    (``leaderboard.sig``) covers the scores, statuses, messages and provenance. The instructor's record of the
    signed manifest (its SHA-256 and this machine's numerics key) is kept in the instructor's jtk folder
    (:func:`jtk.course._signing.config_dir`), outside the board.
    """
    from jtk import _info, results
    from jtk.course import _signing

    (out / "rows").mkdir(parents=True, exist_ok=True)
    (out / "submissions").mkdir(exist_ok=True)
    draw = "hidden" if config.salt is not None else "public"
    challenge_info = {"draw": draw, "derivation": DERIVATION if draw == "hidden" else "jtk.testbed"}
    rows_record = {}
    for e in entries:
        fname = _safe(e.name)
        if e.rows is not None and len(e.rows):
            agent = e.name if e.kind == "baseline" else {"name": e.name, "registered": False, "class": None,
                                                         "repr": f"submission sha256 {e.sha256}"}
            rows_csv = out / "rows" / f"{fname}.csv"
            manifest = results.save_results(
                e.rows, rows_csv, agent=agent, config=config.public(), problems=problems,
                estimator=config.likelihood, started=started, force=True,
                extra={"challenge": {**challenge_info, "entry": e.name, "kind": e.kind, "sha256": e.sha256}})
            rows_record[e.name] = {"file": f"rows/{fname}.csv", "sha256": manifest["sha256"],
                                   "manifest_sha256": results.sha256_file(results.manifest_path(rows_csv))}
        record = {"name": e.name, "kind": e.kind, "status": e.status, "message": e.message, "detail": e.detail,
                  "check_agent": e.probes, "seconds": e.seconds, "sha256": e.sha256}
        (out / "submissions" / f"{fname}.json").write_text(json.dumps(record, indent=1, default=str))
    written = {pathlib.PurePosixPath(r["file"]).name for r in rows_record.values()}
    written |= {results.manifest_path(name).name for name in written}
    for f in (out / "rows").iterdir():  # an earlier board's rows (--force) are not this board's
        if f.name not in written and f.is_file() and (f.suffix == ".csv" or f.name.endswith(".manifest.json")):
            f.unlink()
    page = leaderboard_html(board, title).encode()
    results.write_atomic(out / "leaderboard.html", page)
    numerics_key = _info.numerics()["numerics_key"]
    public = {**config.public(), "board": "leaderboard"}
    board_info = {**challenge_info, "reference": config.reference_baseline, "rows": rows_record,
                  "submissions": {e.name: e.sha256 for e in entries if e.kind == "submission" and e.sha256},
                  "salt_id": _salt_id(config.salt) if config.salt is not None else None,
                  "html_sha256": results.sha256_bytes(page), "numerics_key": numerics_key}
    results.save_results(board, out / "leaderboard.csv", config=public, started=started, force=True,
                         agent_column="name", extra={"challenge": board_info})
    signature = out / _signing.SIGNATURE_FILE
    if signing is None:
        signature.unlink(missing_ok=True)  # a board written again over a signed one is unsigned, not mis-signed
        return
    manifest_bytes = results.manifest_path(out / "leaderboard.csv").read_bytes()
    results.write_json_atomic(signature, _signing.sign(signing, manifest_bytes))
    _signing.record_board(results.sha256_bytes(manifest_bytes), {
        "numerics_key": numerics_key, "salt_id": board_info["salt_id"], "board": str(out.resolve()),
        "fingerprint": signing.fingerprint, "written": results.timestamp()})


def _log(progress: bool) -> Callable[[str], None]:
    return (lambda s: print(f"jtk challenge: {s}", file=sys.stderr, flush=True)) if progress else (lambda s: None)


def score(submissions, config, out, *, workers: int = 1, force: bool = False, progress: bool = True,
          key=None) -> Board:
    """Scores every ``*.py`` in ``submissions`` and the baselines on the hidden problems; writes the board.

    Args:
      submissions: a directory of student files, each defining ``make_agent()``. Only regular files are
        read (a symbolic link, FIFO, directory or device named ``*.py`` gets an ``invalid`` row saying so).
      config: a challenge TOML path (with its salt) or a :class:`ChallengeConfig`.
      out: the board directory (created; must be empty unless ``force``).
      workers: submissions scored at once (one worker process each).
      force: write into a non-empty ``out``.
      progress: print one line per finished entry to stderr.
      key: the instructor's Ed25519 signing key (a PEM file, mode 0600), kept outside every board; default
        ``$XDG_CONFIG_HOME/jtk/challenge-signing-key.pem``, created on first use.

    Returns:
      A :class:`Board` (``signed_by``: the public key and fingerprint to publish); files:
      ``out/leaderboard.csv`` (+ manifest, which records the SHA-256 of every published file),
      ``out/leaderboard.sig`` (the manifest's signature), ``out/leaderboard.html``, ``out/rows/NAME.csv``
      (+ manifest; one row per problem, ``seed`` = the hidden index), ``out/submissions/NAME.json`` (status,
      full error text, check_agent lines). Every entry gets its row whatever the others do.

    Raises:
      ValueError or TypeError: a bad configuration, a missing salt, no submissions, a non-empty ``out``
        without ``force``, ``workers`` < 1, a key file that is not a private Ed25519 key — all before any scoring.
    """
    from jtk.course import _signing

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    t0 = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    config_path = None
    if not isinstance(config, ChallengeConfig):
        config_path = pathlib.Path(config)
        config = load_config(config_path)
    if config.salt is None:
        raise ValueError("config has no salt: scoring on hidden problems needs the instructor's challenge file")
    _int("workers", workers, 1)
    out = _check_out(out, force)
    files = _submission_files(submissions)
    problems = config.hidden_problems()
    named = _named(files, config.baselines)
    signing = _signing.load_signing_key(key)
    out.mkdir(exist_ok=True)
    log = _log(progress)
    private = tempfile.mkdtemp(prefix="jtk-challenge-submissions-")
    try:
        subs, skipped = _take_submissions(named, private, log)
        hidden = _hidden_paths([p for p in (config_path, pathlib.Path(submissions), out, pathlib.Path(private))
                                if p is not None], [s.source for s in subs])
        entries, mode = _run(subs, problems, config, workers=workers, hidden=hidden, log=log)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    entries += skipped
    board = leaderboard(entries, config.reference_baseline)
    _write_board(out, entries, board, config, problems, started, force, "jtk class challenge", signing)
    return Board(board, entries, out, mode, time.monotonic() - t0,
                 {"public_key": signing.public_key, "fingerprint": signing.fingerprint, "key": str(signing.path),
                  "created": signing.created})


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
    (name, _), = _named([submission], config.baselines)
    if out is not None:
        out.mkdir(exist_ok=True)
    log = _log(progress)
    private = tempfile.mkdtemp(prefix="jtk-challenge-submissions-")
    try:
        # the file the student named (a link they made is followed once, here), read as a regular file
        subs, skipped = _take_submissions([(name, pathlib.Path(os.path.realpath(submission)))], private, log)
        if skipped:
            raise ValueError(f"submission {str(submission)!r}: {skipped[0].detail}")
        hidden = _hidden_paths([p for p in (config_path, out, pathlib.Path(private)) if p is not None],
                               [submission])
        entries, mode = _run(subs, problems, config, workers=1, hidden=hidden, log=log)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    board = leaderboard(entries, config.reference_baseline)
    if out is not None:
        _write_board(out, entries, board, config, problems, started, force, "jtk challenge practice")
    return Board(board, entries, out, mode, time.monotonic() - t0)


# ------------------------------------------------------------------ verification
BOARD_RTOL, BOARD_ATOL = 1e-12, 1e-15  # board vs the board derived again from its rows (CSV floats round-trip)
_BOARD_TEXT = ("status",)


def _board_path(board) -> pathlib.Path:
    path = pathlib.Path(board)
    return path / "leaderboard.csv" if path.is_dir() else path


def is_board(board) -> bool:
    """Whether ``board`` (a folder, or its ``leaderboard.csv``) is a challenge board: its manifest says so."""
    if not isinstance(board, (str, os.PathLike)):
        return False
    from jtk import results

    try:
        manifest = results.read_manifest(_board_path(board))
    except (ValueError, OSError):
        return False
    return isinstance(manifest.get("challenge"), dict) and manifest.get("config", {}).get("board") == "leaderboard"


def _problem_key(r) -> tuple:
    return (int(r["seed"]), int(r["num_train"]), float(r["temperature"]), int(r["tau"]), int(r["input_dim"]))


def _same(a, b, rtol: float, atol: float) -> bool:
    a, b = pd.to_numeric(pd.Series([a, b]), errors="coerce")
    if pd.isna(a) or pd.isna(b):
        return bool(pd.isna(a) and pd.isna(b))
    return bool(np.isclose(a, b, rtol=rtol, atol=atol))


SAMPLE_ALL = "all"  # verify_board(sample=...): score every row again


def verify_board(board, *, key=None, fingerprint: str | None = None, config=None, submissions=None,
                 sample: int | str = 10, seed: int | None = None, names: Sequence[str] | None = None,
                 workers: int = 1, progress: bool = False) -> pd.DataFrame:
    """Checks a challenge board: its signature, its hashes, the board against its rows, and (with the salt) its scoring.

    Anyone holding the published folder (``leaderboard.csv``, ``leaderboard.sig``, ``leaderboard.html``, ``rows/``
    and the manifests) can check, without a secret:

    * with ``key`` or ``fingerprint`` (the instructor's, from the course page): that ``leaderboard.sig`` is a
      valid Ed25519 signature of the board manifest by that key — a missing signature, another key's and a
      changed byte are each failed and named;
    * every file's SHA-256 against the board manifest (the board, the page, each rows CSV and rows manifest),
      that ``rows/`` holds nothing the manifest does not list, and that every recorded entry is on the board;
    * that the board follows from the rows: it is derived again (:func:`leaderboard`, with the +inf rule of
      ``_finite_verdict``) and compared row by row — status, every ``kl_*`` / ``diff_*`` / ``frac_finite`` and
      the rank.

    Without a key the result proves only that the files agree with each other (``attrs["signature"]`` says so):
    whoever can write the folder can rewrite them all consistently.

    With ``config`` (the instructor's challenge file with its salt, or the practice file for a practice board)
    and ``submissions``, the board is scored again: every entry's status is re-derived (an entry that is not
    ``ok`` is run again on every problem and must come out the same; an ``ok`` one on its sampled rows, at least
    one, and must come out ``ok``), every submission file must be on the board with the SHA-256 it was scored
    with, and each sampled row's ``kl`` must agree within the tolerance of the instructor's record of the board
    (:func:`jtk.course._signing.recorded_board`: same-machine :data:`jtk.results.VERIFY_RTOL` unless that record
    says the board was scored on another numerics key); the board's own provenance never sets it.

    Args:
      board: the board folder or its ``leaderboard.csv``.
      key: the instructor's public key (44 characters of base64, as ``jtk challenge score`` prints) or a file
        holding it.
      fingerprint: the key's fingerprint instead (``xxxx-xxxx-xxxx-xxxx-xxxx``).
      config: None, a challenge TOML path or a :class:`ChallengeConfig`.
      submissions: the folder of submission files (needed when the board has submissions and ``config`` is given).
      sample: rows of ``ok`` entries to score again (at least one per entry), or ``"all"``.
      seed: picks the sample; None draws a fresh one, recorded in ``attrs["seed"]`` so the check can be repeated.
      names: check only these entries' statuses and rows (default: every entry, and every submission file).
      workers: submissions scored again at once (one worker process each), as :func:`score`'s ``workers``.
      progress: print progress lines to stderr.

    Returns:
      One row per check: ``check`` (signature, sha256, file, rows, board row, config, salt, status, recompute,
      ...), ``item``, ``recorded``, ``recomputed``, ``ok`` and a ``note``; ``attrs``: ``tolerance`` (what was
      compared how), ``signature`` (what the signature check proved, or that none was made), ``authenticated``
      (a key was given and the signature is valid) and ``seed``.

    Raises:
      ValueError: not a challenge board, a bad ``sample`` / ``seed`` / ``key`` / ``fingerprint``, a configuration
        that cannot be read, submissions needed but not given.
      jtk.results.ManifestMismatch: the board has no readable manifest.
    """
    from jtk import results
    from jtk.course import _signing

    if sample != SAMPLE_ALL and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise ValueError(f"sample must be an int >= 1 or {SAMPLE_ALL!r}, got {sample!r}")
    if seed is None:
        seed = secrets.randbelow(2 ** 32)
    _int("seed", seed, 0)
    _int("workers", workers, 1)
    path = _board_path(board)
    if not path.is_file():
        raise ValueError(f"board must be a challenge board folder or its leaderboard.csv, got {str(board)!r}")
    manifest = results.read_manifest(path)
    info = manifest.get("challenge")
    if not isinstance(info, dict):
        raise ValueError(f"board: {str(path)!r} is not a jtk challenge board (its manifest records no challenge); "
                         "for testbed results use jtk verify ROWS.csv")
    manifest_bytes = results.manifest_path(path).read_bytes()
    root = path.parent
    log = _log(progress)
    checks: list[dict] = []

    def add(check: str, item: str, ok: bool, recorded: Any = "", recomputed: Any = "", note: str = "") -> None:
        checks.append({"check": check, "item": item, "recorded": recorded, "recomputed": recomputed, "ok": bool(ok),
                       "note": note})

    sig_path = root / _signing.SIGNATURE_FILE
    sig_bytes = sig_path.read_bytes() if sig_path.is_file() else None
    authenticated = False
    if key is not None or fingerprint is not None:
        ok, want, found, why = _signing.check(manifest_bytes, sig_bytes, key=key, fingerprint_text=fingerprint)
        add("signature", results.manifest_path(path).name, ok, want, found, why)
        authenticated = ok
        signature = (f"signed by the published key {want}" if ok else
                     f"NOT authenticated: the board is not signed by the published key {want}")
    else:
        who = _signing.signer(sig_bytes)
        signature = ("no key given: this proves only that the board's files agree with each other, not who wrote "
                     "them (anyone who can edit the folder can rewrite them all consistently); " +
                     (f"its signature names the key {who}: compare it with the instructor's published fingerprint, "
                      "or pass --key / --fingerprint" if who else "and the board carries no signature"))
    data = path.read_bytes()
    digest = results.sha256_bytes(data)
    add("sha256", path.name, digest == manifest["sha256"], manifest["sha256"], digest,
        "" if digest == manifest["sha256"] else "the board was edited after it was written, or its hash was")
    table = untrusted.read_csv(io.BytesIO(data))  # an entry named NA is a name, not a missing value
    add("rows", path.name, len(table) == int(manifest["rows"]), int(manifest["rows"]), len(table))
    page = root / "leaderboard.html"
    if info.get("html_sha256") and page.is_file():
        got = results.sha256_file(page)
        add("sha256", page.name, got == info["html_sha256"], info["html_sha256"], got,
            "" if got == info["html_sha256"] else "the page differs from the one the board manifest records")
    record = info.get("rows") or {}
    on_board = {str(n) for n in table["name"]}
    for name in record:
        if name not in on_board:
            add("rows", name, False, note="the board manifest records rows for it, but the board has no row for it")
    listed = {str(rec.get("file")) for rec in record.values()}
    listed |= {str(results.manifest_path(pathlib.PurePosixPath(f)).as_posix()) for f in listed}
    if (root / "rows").is_dir():
        for f in sorted((root / "rows").iterdir()):
            if f"rows/{f.name}" not in listed:
                add("file", f"rows/{f.name}", False, note="in rows/ but not recorded by the board manifest")
    entries, rows_by_name = [], {}
    for _, r in table.iterrows():
        name, status = str(r["name"]), str(r["status"])
        rows = None
        rec = record.get(name)
        if rec is not None:
            rpath = root / str(rec["file"])
            try:
                rdata = rpath.read_bytes()
                rmdata = results.manifest_path(rpath).read_bytes()
                rman = results.read_manifest(rpath)
            except (OSError, ValueError) as err:
                add("sha256", str(rec["file"]), False, rec.get("sha256"), "", f"{type(err).__name__}: {err}")
            else:
                got = results.sha256_bytes(rdata)
                ok = got == rec["sha256"] == rman["sha256"]
                add("sha256", str(rec["file"]), ok, rec["sha256"], got,
                    "" if ok else "the rows file differs from the board manifest's record or from its own manifest")
                if "manifest_sha256" in rec:
                    got = results.sha256_bytes(rmdata)
                    ok = got == rec["manifest_sha256"]
                    add("sha256", str(results.manifest_path(pathlib.PurePosixPath(str(rec["file"])))), ok,
                        rec["manifest_sha256"], got,
                        "" if ok else "the rows manifest (its provenance, numerics key) was edited")
                rows = untrusted.read_csv(io.BytesIO(rdata))
                rows_by_name[name] = rows
        elif status == "ok":
            add("rows", name, False, "ok", "", "ranked on the board, but the board's manifest records no rows for it")
        seconds = pd.to_numeric(pd.Series([r.get("seconds")]), errors="coerce").iloc[0]
        entries.append(Entry(name, str(r["kind"]), "ok" if rows is not None else status,
                             rows=rows, seconds=0.0 if pd.isna(seconds) else float(seconds)))
    for e in entries:
        _finite_verdict(e)
    derived = leaderboard(entries, info.get("reference")).set_index("name")
    columns = ["status", "rank"] + [c for c in table.columns if c.startswith(("kl_", "diff_")) or c == "frac_finite"]
    for _, r in table.iterrows():
        name = str(r["name"])
        if name not in derived.index:
            add("board row", name, False, note="not derivable from the rows")
            continue
        d = derived.loc[name]
        differ = [c for c in columns if c in d.index and not (
            str(r[c]) == str(d[c]) if c in _BOARD_TEXT else _same(r[c], d[c], BOARD_RTOL, BOARD_ATOL))]
        first = differ[0] if differ else None
        add("board row", name, not differ, f"{first}={r[first]}" if first else "",
            f"{first}={d[first]}" if first else "", f"differs from its rows in {differ}" if differ else "")
    tolerance = f"board vs rows: rtol {BOARD_RTOL:g}"
    if config is not None:
        tolerance += _recompute(config, info, manifest, results.sha256_bytes(manifest_bytes), table, rows_by_name,
                                submissions, root, sample, seed, names, workers, add, log)
    out = pd.DataFrame(checks, columns=["check", "item", "recorded", "recomputed", "ok", "note"])
    out.attrs.update(tolerance=tolerance, signature=signature, authenticated=authenticated, seed=seed)
    return out


def _sample_rows(rows_by_name: dict, wanted: Sequence[str], sample: int | str, seed: int) -> dict[str, list[int]]:
    """Which rows of each ``ok`` entry to score again: ``sample`` random rows of them all, and one of every entry."""
    candidates = [(n, i) for n in wanted for i in range(len(rows_by_name[n]))]
    if sample == SAMPLE_ALL:
        picked = range(len(candidates))
    else:
        rng = np.random.default_rng(seed)
        picked = rng.choice(len(candidates), size=min(sample, len(candidates)), replace=False)
    chosen: dict[str, set[int]] = {n: set() for n in wanted}
    for j in picked:
        n, i = candidates[j]
        chosen[n].add(i)
    rng = np.random.default_rng([seed, 1])
    for n in wanted:  # every entry's status is re-derived: at least one of its rows is scored again
        if not chosen[n] and len(rows_by_name[n]):
            chosen[n].add(int(rng.integers(len(rows_by_name[n]))))
    return {n: sorted(idxs) for n, idxs in chosen.items()}


def _recorded_tolerance(manifest_sha256: str) -> tuple[float, float, str]:
    """(rtol, atol, why) of the re-check, from the instructor's record of the board: never from the board."""
    from jtk import _info, results
    from jtk.course import _signing

    recorded, where = _signing.recorded_board(manifest_sha256)
    here = _info.numerics()["numerics_key"]
    strict = (results.VERIFY_RTOL, results.VERIFY_ATOL)
    if recorded is None:
        return (*strict, f"same machine: the instructor's record {str(where)!r} has no entry for this board "
                         f"manifest, and a board's own provenance never loosens the tolerance")
    if recorded.get("numerics_key") == here:
        return (*strict, f"same machine: the instructor's record says it was scored on numerics key {here}")
    return (results.CROSS_MACHINE_RTOL, results.CROSS_MACHINE_ATOL,
            f"across machines: the instructor's record says it was scored on numerics key "
            f"{recorded.get('numerics_key')}, this is {here}")


def _recompute(config, info: dict, manifest: dict, manifest_sha256: str, table: pd.DataFrame, rows_by_name: dict,
               submissions, root: pathlib.Path, sample: int | str, seed: int, names, workers: int, add, log) -> str:
    """Scores a board again (see :func:`verify_board`); returns the tolerance's text."""
    from jtk import results

    hidden_draw = info.get("draw") == "hidden"
    config_path = None
    if not isinstance(config, ChallengeConfig):
        config_path = pathlib.Path(config)
        config = load_config(config_path, need_salt=hidden_draw)
    recorded = {k: v for k, v in (manifest.get("config") or {}).items() if k != "board"}
    public = results.jsonable(config.public())
    ok = public == recorded
    add("config", "challenge file", ok, note="" if ok else f"the challenge file differs from the board's: "
        f"{sorted(k for k in set(public) | set(recorded) if public.get(k) != recorded.get(k))}")
    if hidden_draw:
        ok = ok and _salt_id(config.salt) == info.get("salt_id")
        add("salt", "challenge file", _salt_id(config.salt) == info.get("salt_id"), info.get("salt_id"),
            _salt_id(config.salt), "" if _salt_id(config.salt) == info.get("salt_id") else "another salt")
        problems = config.hidden_problems()
    else:
        config = dataclasses.replace(config, salt=None)
        problems = config.practice_problems()
    if not ok:
        return "; nothing recomputed (the challenge file is not the board's)"
    draws = _Draws(config.salt)
    by_key = {_problem_key(dataclasses.asdict(p)): p for p in problems}
    board = {str(r["name"]): (str(r["kind"]), str(r["status"]), str(r["message"]) if pd.notna(r["message"]) else "")
             for _, r in table.iterrows()}
    for n in names or ():
        if n not in board:
            add("status", n, False, note="not on the board")
    wanted = [n for n in board if names is None or n in set(names)]
    files: dict[str, pathlib.Path] = {}
    if any(board[n][0] == "submission" for n in wanted):
        if submissions is None:
            raise ValueError("submissions: re-deriving the submissions' statuses needs the folder of submission files "
                             "(--submissions DIR)")
        files = dict(_named(_submission_files(submissions), config.baselines))
    if names is None:
        for n, f in files.items():
            if n not in board:
                add("status", n, False, "", "", f"{f.name} is in the submissions folder but has no row on the board")
        for b in config.baselines:
            if b not in board:
                add("status", b, False, "", "", "a baseline of the challenge file has no row on the board")
    rtol, atol, why = _recorded_tolerance(manifest_sha256)
    log(f"verify: {'every row' if sample == SAMPLE_ALL else f'sample seed {seed}'}; rows within rtol {rtol:g} ({why})")
    sampled = _sample_rows(rows_by_name, [n for n in wanted if board[n][1] == "ok" and n in rows_by_name], sample,
                           seed)
    mode = resolve_sandbox(config.sandbox)
    private = tempfile.mkdtemp(prefix="jtk-challenge-submissions-")

    def again(name: str) -> list[tuple]:
        """One entry scored again: its checks (status, then rows), in the order they are added."""
        found: list[tuple] = []

        def add(*check) -> None:
            found.append(check)

        kind, status, message = board[name]
        recorded_rows = rows_by_name.get(name)
        if name in sampled:  # ok on the board: its sampled rows, which must come out ok
            recorded_rows = recorded_rows.iloc[sampled[name]]
            subset = [by_key.get(_problem_key(r)) for _, r in recorded_rows.iterrows()]
            if any(p is None for p in subset):
                add("recompute", name, False, "", "", "rows name problems the challenge file does not have")
                return found
            expect = "ok"
        else:  # anything else is run on every problem and must come out as the board says
            subset, expect = problems, status
        log(f"verify: scoring {name} again on {len(subset)} problems …")
        if kind == "baseline":
            if name not in config.baselines:
                add("status", name, False, status, "", "a baseline the challenge file does not name")
                return found
            new = _score_baseline(name, subset, config, draws)
        else:
            source = files.get(name)
            if source is None:
                add("status", name, False, status, "", f"no submission file for {name!r} in {str(submissions)!r}")
                return found
            folder = tempfile.mkdtemp(dir=private)  # one private folder per submission
            subs, skipped = _take_submissions([(name, source)], folder, log)
            want = (info.get("submissions") or {}).get(name)
            if skipped:
                new = skipped[0]
            elif subs[0].sha256 != want:
                add("sha256", f"submission {source.name}", False, want, subs[0].sha256,
                    "the file differs from the one scored")
                return found
            else:
                hidden = _hidden_paths([p for p in (config_path, pathlib.Path(submissions), root,
                                                    pathlib.Path(private)) if p is not None], [source])
                new = _score_in_worker(name, subs[0].path, subset, config, mode=mode, hidden=hidden, draws=draws,
                                       sha256=subs[0].sha256)
        same = new.status == expect
        note = "" if same else f"scored again: {new.status}" + (f" ({new.message})" if new.message else "")
        if same and expect != "ok" and new.message != message:
            note = f"same status; the message now reads {new.message!r}"
        add("status", name, same, expect, new.status, note)
        got = {} if new.rows is None else {_problem_key(r): r for _, r in new.rows.iterrows()}
        for _, r in (recorded_rows if recorded_rows is not None else pd.DataFrame()).iterrows():
            item = (f"{name} seed={int(r['seed'])} num_train={int(r['num_train'])} "
                    f"temperature={float(r['temperature']):g} tau={int(r['tau'])}")
            n = got.get(_problem_key(r))
            if n is None:
                add("recompute", item, False, float(r["kl"]), "", f"scored again: {new.status} {new.message}")
                continue
            ok = (_same(r["kl"], n["kl"], rtol, atol) and str(r["likelihood"]) == str(n["likelihood"])
                  and _same(r["frac_finite"], n["frac_finite"], 0.0, 0.0))
            add("recompute", item, ok, float(r["kl"]), float(n["kl"]), "" if ok else "kl differs from the row")
        return found

    try:
        # as score does: the baselines in this process first, then the submissions, ``workers`` at once
        done = {n: again(n) for n in wanted if board[n][0] == "baseline"}
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {n: pool.submit(again, n) for n in wanted if n not in done}
            for name in wanted:
                for check in done[name] if name in done else futures[name].result():
                    add(*check)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    rows = "every row" if sample == SAMPLE_ALL else f"sample seed {seed} (repeat with --seed {seed})"
    return f"; scored again: {rows}; rows within rtol {rtol:g}, atol {atol:g} ({why})"


def format_board(board: pd.DataFrame) -> str:
    """The leaderboard as plain text (the CLI prints it)."""
    if not isinstance(board, pd.DataFrame):
        raise TypeError(f"board must be a leaderboard DataFrame, got {type(board).__name__}")
    cols = [c for c in board.columns if c not in ("reference",)]
    with pd.option_context("display.width", 200, "display.max_colwidth", 80, "display.max_columns", 30):
        return board[cols].to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4f}")
