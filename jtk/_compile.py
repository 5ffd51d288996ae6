"""How jtk compiles its programs: ``jax.jit`` with options that make XLA's CPU compiler fast.

Every jitted function in jtk (the testbed, the agents' fits, the bandit, the labs' studies) is built with
:func:`jit`. On the CPU, most of a cold testbed run or a lab's first cell is XLA compiling a handful of programs.
Two options (:data:`CPU_COMPILER_OPTIONS`) cut that compile time, measured in docs/platforms.md ("Where the compile
time goes on the CPU"):

* LLVM optimisation level 1 (XLA's default is 2): LLVM's optimisation passes take half the time, and the compiled
  programs run as fast;
* XLA's older per-fusion code generator instead of its newer "fusion emitters" (``xla_cpu_use_fusion_emitters``):
  XLA compiles every fusion of a program as its own small LLVM module, and the older generator's modules compile in
  about half the time, and their code runs a few per cent slower.

The testbed's training and scoring programs run once per chunk of a grid, for up to seconds each, where the newer
emitters' faster code (ensemble+ K = 100, hypermodel) outweighs their compile time: they pass ``long_running=True`` and compile with
level 1 only (:data:`LONG_RUNNING_CPU_OPTIONS`), so the testbed's scores are what they were. Everything else (the
testbed's data and initialisation programs, ``agent.fit``, the bandit, the labs' studies) is compiled for a short
wait: a lab's first cell is mostly compile time. Programs compiled with the fast options may give other bits in
the last digits (floating-point operations fused and ordered differently), far inside any standard error.

On a GPU (:data:`GPU_COMPILER_OPTIONS`) a third of a cold testbed run's compile time went to XLA's generated
(Triton) matrix-product kernels and the autotuning that compiles and times candidates for each product; cuBLAS
without autotuning compiles in a fraction of that (docs/platforms.md, "The paper grid on a GPU", measures what each
option saves and costs).

The options are passed per program (``jax.jit(..., compiler_options=...)``), so jtk sets no global ``XLA_FLAGS``
and other JAX code in the process is unaffected. ``JTK_FAST_COMPILE=0`` restores XLA's defaults;
``JTK_COMPILER_OPTIONS`` (a JSON object, e.g. ``'{"xla_gpu_autotune_level": 4}'``) adds options of your own on top,
for every jtk program, checked against this jaxlib before the first program compiles.

Compiled programs are kept, serialized, beside JAX's persistent compilation cache (:func:`executable_dir`): a
top-level call looks its program up by a key made of the function, the values of its static arguments, the shapes
and dtypes of the others, the compiler options, the jtk sources, the jax and jaxlib versions and the device
(:func:`program_key`), and a program found there is loaded and run without tracing, lowering or compiling it. JAX's
own cache saves only the compile; a warm run still traced and lowered every program, which was most of a warm
testbed run on a GPU (docs/platforms.md, "Kept programs"). A stored program is found without tracing the code, so
the key also holds what could make it stale: the jtk sources, the module-level constants and bindings of the jtk
modules loaded now (a constant set by hand or a function monkeypatched gives another key), and the static
arguments' types must be jtk's own (a researcher's subclass defined in a notebook is compiled as usual, not kept).
A program whose static arguments have no stable description (a function, an object printed with its address) is
not kept; ``JTK_EXECUTABLE_CACHE=0`` turns the store off; an entry that fails to load is compiled again and
rewritten. Only programs built with ``keep`` are kept: the testbed's grid programs and the bandit's.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import pathlib
import pickle
import sys
import threading
import types
import weakref
from typing import Any, Callable

import jax
import numpy as np

CPU_COMPILER_OPTIONS = {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False}
LONG_RUNNING_CPU_OPTIONS = {"xla_backend_optimization_level": 1}
# Every program on a GPU: no autotuning (XLA would compile and time candidate kernels for each matrix product; the
# chosen kernels then depend on those timings, so two runs could round differently), and cuBLAS rather than generated
# Triton kernels for the matrix products.
GPU_COMPILER_OPTIONS: dict[str, Any] = {"xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": False}
ENV_OPTIONS = "JTK_COMPILER_OPTIONS"


def _defaults(backend: str, long_running: bool) -> dict[str, Any]:
    if backend == "cpu":
        return LONG_RUNNING_CPU_OPTIONS if long_running else CPU_COMPILER_OPTIONS
    if backend in ("gpu", "cuda", "rocm"):
        return GPU_COMPILER_OPTIONS
    return {}


def compiler_options(long_running: bool = False) -> dict[str, Any] | None:
    """The options jtk's programs compile with on the current default backend (None: XLA's defaults).

    On the CPU: :data:`CPU_COMPILER_OPTIONS` (``long_running``: :data:`LONG_RUNNING_CPU_OPTIONS`); on a GPU:
    :data:`GPU_COMPILER_OPTIONS`; less any this jaxlib does not know (:func:`_known_options`). ``JTK_FAST_COMPILE=0``
    drops these; the options of ``JTK_COMPILER_OPTIONS`` (:func:`user_options`) are added on top.
    """
    backend = jax.default_backend()
    options = {} if os.environ.get("JTK_FAST_COMPILE", "1") == "0" else dict(_defaults(backend, long_running))
    known = _known_options(backend)
    options = {k: v for k, v in options.items() if k in known}
    options.update(user_options())
    return options or None


def _accepted(name: str, value: Any) -> bool:
    """Whether this jaxlib's compiler for the default backend compiles a one-operation program with the option."""
    try:
        jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(np.float32(0)).compile()
    except Exception:  # noqa: BLE001 - XLA reports an unknown option as a generic runtime error
        return False
    return True


@functools.lru_cache(maxsize=None)
def _known_options(backend: str | None = None) -> frozenset[str]:
    """The names among jtk's default options for ``backend`` (default: the default backend) that this jaxlib's
    compiler accepts.

    XLA refuses an option it does not know ("No such compile option") when a program is compiled, and options come
    and go between jaxlib releases (``xla_cpu_use_fusion_emitters`` is new in 2025). Each is tried once, on a
    one-operation program (a few milliseconds), so an older or newer jaxlib compiles without it instead of failing.
    """
    backend = backend or jax.default_backend()
    candidates = {**_defaults(backend, True), **_defaults(backend, False)}
    return frozenset(name for name, value in candidates.items() if _accepted(name, value))


def user_options() -> dict[str, Any]:
    """The options of the environment variable ``JTK_COMPILER_OPTIONS``: a JSON object of XLA option names and
    values (``'{"xla_gpu_autotune_level": 4}'``), added to jtk's own for every program; {} when unset.

    Raises:
      ValueError: the variable is not a JSON object of names to booleans, numbers or strings, or this jaxlib's
        compiler refuses one of its options (named, with the backend), before any jtk program compiles.
    """
    text = os.environ.get(ENV_OPTIONS, "").strip()
    return dict(_parse_user_options(text, jax.default_backend())) if text else {}


@functools.lru_cache(maxsize=None)
def _parse_user_options(text: str, backend: str) -> tuple[tuple[str, Any], ...]:
    import json

    try:
        options = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{ENV_OPTIONS} must be a JSON object of XLA option names and values, e.g. "
                         f"'{{\"xla_gpu_autotune_level\": 4}}', got {text!r} ({err.msg})") from None
    if not isinstance(options, dict) or not all(
            isinstance(k, str) and isinstance(v, (bool, int, float, str)) for k, v in options.items()):
        raise ValueError(f"{ENV_OPTIONS} must be a JSON object of XLA option names and values (booleans, numbers or "
                         f"strings), got {text!r}")
    for name, value in options.items():
        if not _accepted(name, value):
            raise ValueError(f"{ENV_OPTIONS}: XLA's compiler for the {backend!r} backend of this jaxlib "
                             f"({jax.__version__}) refuses the option {name}={value!r} (unknown name or value)")
    return tuple(options.items())


try:  # JAX's own test of "no transformation is running" (private; read once, not on every call)
    from jax._src.core import trace_state_clean as _trace_state_clean
except ImportError:  # pragma: no cover - a JAX without it: every call takes the plain path
    _trace_state_clean = None


def _top_level() -> bool:
    """True outside every JAX transformation: XLA options may only be given to a top-level ``jax.jit``."""
    return _trace_state_clean is not None and _trace_state_clean()


def store_limit_bytes() -> int:
    """The store's size cap: half of ``$JTK_CACHE_MAX_GB`` (2 GB by default, JAX's cache's cap), so the two caches
    together stay near it; programs of older jtk sources are never loaded again and age out first."""
    try:
        max_gb = float(os.environ.get("JTK_CACHE_MAX_GB", "2"))
    except ValueError:
        max_gb = 2.0
    return int(max_gb * 2 ** 30 / 2) if max_gb > 0 else -1


def _trim(folder: pathlib.Path) -> None:
    """Deletes the least recently used programs (by modification time, which a load renews) until the store is
    under :func:`store_limit_bytes`."""
    limit = store_limit_bytes()
    if limit < 0:
        return
    entries = []
    for path in folder.glob("*.bin"):
        try:
            stat = path.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= size


class _Unstable(Exception):
    """A static argument with no description that is the same in every process: its program is not kept."""


def _static_description(value: Any) -> Any:
    """A description of a static argument that is equal in two processes exactly when the argument is: dataclasses
    by their type and every field (also those left out of their repr), containers item by item, plain values by
    type and repr. Raises :class:`_Unstable` for anything else (a function, an object printed with its address)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, np.generic)):
        return (type(value).__name__, repr(value))
    if isinstance(value, enum.Enum):
        return (type(value).__module__, type(value).__qualname__, value.name)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not type(value).__module__.startswith("jtk."):
            raise _Unstable(f"{type(value).__qualname__} is defined outside jtk: its source is not in the key")
        return (type(value).__module__, type(value).__qualname__,
                tuple((f.name, _static_description(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_static_description(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _static_description(v)) for k, v in value.items())))
    text = repr(value)
    if callable(value) or " at 0x" in text or "object at" in text:
        raise _Unstable(text[:80])
    return (type(value).__module__, type(value).__qualname__, text)


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """SHA-256 of every jtk source file (path and contents): a program kept by another version of jtk is never
    loaded, whatever changed in it."""
    root = pathlib.Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _platform_description() -> str:
    import jaxlib

    devices = jax.devices()
    return repr((jax.__version__, getattr(jaxlib, "__version__", "?"), jax.default_backend(),
                 devices[0].device_kind, len(devices), getattr(devices[0], "platform_version", ""),
                 bool(jax.config.jax_enable_x64), str(jax.config.jax_default_matmul_precision),
                 str(jax.config.jax_default_prng_impl)))


def _runtime_state() -> str:
    """What the sources on disk do not show about the jtk modules loaded now: every module-level constant (an
    upper-case name bound to a number, string or tuple, read by programs while they trace) and what every
    module-level function, class and program name is bound to. A constant set by hand (``--patch``) or a function
    replaced at run time (a monkeypatch) changes it, so a program kept before is not loaded in its place."""
    h = hashlib.sha256()
    for name in sorted(n for n in sys.modules if n == "jtk" or n.startswith("jtk.")):
        module = sys.modules[name]
        for attr, value in list(vars(module).items()):
            if attr.isupper() and isinstance(value, (bool, int, float, str, tuple, frozenset)):
                h.update(f"{name}.{attr}={value!r}\0".encode())
            elif isinstance(value, _Jit):
                h.update(f"{name}.{attr}:{value._fun.__module__}.{getattr(value._fun, '__qualname__', '?')}\0".encode())
            elif isinstance(value, (types.FunctionType, type)):
                h.update(f"{name}.{attr}:{value.__module__}.{value.__qualname__}\0".encode())
    return h.hexdigest()


def _leaf_signature(leaf: Any) -> str:
    """The abstract value a jitted call sees for ``leaf`` (shape, dtype, weak type); a ShapeDtypeStruct gives the
    one of the array it stands for."""
    from jax.api_util import shaped_abstractify

    return repr(shaped_abstractify(leaf))


def executable_dir() -> pathlib.Path | None:
    """Where serialized programs are kept: ``xla-programs`` beside JAX's persistent compilation cache directory
    (jtk turns that on at import, in ``$JTK_CACHE_DIR``), or None when there is no such cache or
    ``JTK_EXECUTABLE_CACHE=0``."""
    if os.environ.get("JTK_EXECUTABLE_CACHE", "1") == "0":
        return None
    base = jax.config.jax_compilation_cache_dir
    if not base:
        return None
    return pathlib.Path(base) / "xla-programs"


_ALL: "weakref.WeakSet[_Jit]" = weakref.WeakSet()


def clear_programs() -> None:
    """Drops this process's loaded and compiled kept programs (as ``jax.clear_caches`` does JAX's): later calls
    load them again from :func:`executable_dir`."""
    for program in list(_ALL):
        program._programs.clear()
        program._unverified.clear()


def _identity(fun: Callable, keep: bool | str) -> str:
    """The name a kept program's key starts with: ``keep`` itself when it is a string (a program built by wrapping
    a function, ``jit(vmap(f, ...), keep="module.name")``), else the function's module and qualified name, for a
    plain module-level function of jtk (no closure: two programs of one name would share a key otherwise)."""
    import inspect

    if isinstance(keep, str):
        return keep
    if not inspect.isfunction(fun) or fun.__closure__ or "<" in fun.__qualname__ \
            or not fun.__module__.startswith("jtk."):
        raise ValueError(f"keep=True needs a module-level function of jtk without a closure, got {fun!r}; pass "
                         f"keep='module.name' for a wrapped one")
    return f"{fun.__module__}.{fun.__qualname__}"


class _Jit:
    """``jax.jit(fun, **kwargs)`` built on first use, when the backend (and so the options) is known.

    Called inside another jitted function, vmap or grad, it is a plain ``jax.jit`` (JAX refuses compiler options
    on a nested jit; the outer program's options apply to the whole of it anyway). Called at the top level, it runs
    the compiled program kept for its key (:meth:`compiled`), loading or compiling it once per process.
    """

    def __init__(self, fun: Callable, kwargs: dict[str, Any], long_running: bool = False, keep: bool | str = False):
        self._fun, self._kwargs, self._jitted, self._long_running = fun, kwargs, None, long_running
        self._nested = jax.jit(fun, **kwargs)  # inside another transformation: no options, no backend needed
        self._lock = threading.Lock()  # chunks run in threads (jtk.executors.local_threads): build it once
        static = kwargs.get("static_argnums", ())
        self._static = frozenset((static,) if isinstance(static, int) else static)
        self._programs: dict[str, Any] = {}  # key -> jax.stages.Compiled, this process's
        self._unverified: set[str] = set()  # keys loaded from the store and not yet run here
        _ALL.add(self)
        if "static_argnames" in kwargs or "donate_argnums" in kwargs or "donate_argnames" in kwargs:
            self._static = None  # keyword statics and donation: the plain jit path only
        self._identity = _identity(fun, keep) if keep else None
        if self._identity is None:
            self._static = None
        functools.update_wrapper(self, fun, updated=())

    def _get(self):
        if self._jitted is None:
            with self._lock:
                if self._jitted is None:
                    self._jitted = jax.jit(self._fun, compiler_options=compiler_options(self._long_running),
                                           **self._kwargs)
        return self._jitted

    def program_key(self, *args) -> tuple[str, tuple] | None:
        """(key, dynamic arguments) of a call with ``args``, or None where the program cannot be kept (static
        arguments with no stable description, keyword-only statics). The key hashes the program's name, the static
        arguments' descriptions, the tree and abstract values of the others and the compiler options: what tells
        two programs apart in one process, as jax.jit's own cache does. On disk the key adds the jtk sources, the
        loaded modules' constants and bindings, and the platform (:meth:`_disk_key`)."""
        if self._static is None:
            return None
        try:
            statics = tuple(_static_description(a) for i, a in enumerate(args) if i in self._static)
        except _Unstable:
            return None
        dynamic = tuple(a for i, a in enumerate(args) if i not in self._static)
        leaves, tree = jax.tree_util.tree_flatten(dynamic)
        h = hashlib.sha256()
        for part in (self._identity, repr(statics), str(tree), "|".join(_leaf_signature(x) for x in leaves),
                     jax.default_backend(), repr(sorted((compiler_options(self._long_running) or {}).items()))):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest(), dynamic

    @staticmethod
    def _disk_key(key: str) -> str:
        """The file name of ``key``'s program: also the jtk sources, the loaded jtk modules' constants and
        bindings (:func:`_runtime_state`: computed on a miss in this process only) and the platform."""
        h = hashlib.sha256()
        for part in (key, _source_digest(), _runtime_state(), _platform_description()):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def lookup(self, key: str):
        """The compiled program kept under ``key`` (this process's, else loaded from :func:`executable_dir`), or
        None."""
        found = self._programs.get(key)
        if found is not None:
            return found
        folder = executable_dir()
        path = folder / f"{self._disk_key(key)}.bin" if folder is not None else None
        if path is None or not path.is_file():
            return None
        from jax.experimental import serialize_executable

        try:
            payload, in_tree, out_tree = pickle.loads(path.read_bytes())
            found = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
            os.utime(path)  # its last use: the store drops the least recently used first (_trim)
        except Exception:  # noqa: BLE001 - a torn or foreign entry: compile again and overwrite it
            return None
        self._programs[key] = found
        self._unverified.add(key)
        return found

    def build(self, key: str, lowered):
        """Compiles ``lowered`` (this program, lowered for the call of ``key``) and keeps it (:meth:`store`).

        The compile bypasses JAX's persistent cache: an executable that JAX loaded from its cache serializes
        without its machine code on the CPU (jaxlib 0.10: loading that copy later fails with "Function ... not
        found"), so only a program compiled here is written to the store. Where this JAX has no per-thread switch
        for its cache, the program is kept for this process only.
        """
        try:
            from jax._src.config import enable_compilation_cache
        except ImportError:  # pragma: no cover - another JAX: compile as usual, keep in memory only
            compiled = lowered.compile()
            self._programs[key] = compiled
            return compiled
        with enable_compilation_cache(False):
            compiled = lowered.compile()
        self.store(key, compiled)
        return compiled

    def store(self, key: str, compiled) -> None:
        """Keeps ``compiled`` under ``key`` for this process and, serialized, in :func:`executable_dir` (a program
        compiled without JAX's persistent cache: :meth:`build`)."""
        self._programs[key] = compiled
        folder = executable_dir()
        if folder is None:
            return
        from jax.experimental import serialize_executable

        try:
            blob = pickle.dumps(serialize_executable.serialize(compiled))
            folder.mkdir(parents=True, exist_ok=True)
            name = self._disk_key(key)
            partial = folder / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"
            partial.write_bytes(blob)
            os.replace(partial, folder / f"{name}.bin")  # atomic: a reader sees the whole entry or none
            _trim(folder)
        except Exception:  # noqa: BLE001 - a backend that cannot serialize, a read-only disk: this process only
            pass

    def compiled(self, *args):
        """The compiled program for a top-level call with ``args`` (kept, loaded, or lowered and compiled and
        then kept), or None where it cannot be kept."""
        found = self.program_key(*args)
        if found is None:
            return None
        key, _ = found
        program = self.lookup(key)
        if program is None:
            program = self.build(key, self._get().lower(*args))
        return program

    def __call__(self, *args, **kwargs):
        if not _top_level():
            return self._nested(*args, **kwargs)
        if not kwargs:
            found = self.program_key(*args)
            if found is not None:
                key, dynamic = found
                program = self.lookup(key)
                if program is None:
                    program = self.build(key, self._get().lower(*args))
                if key not in self._unverified:
                    return program(*dynamic)
                return self._first_run(key, program, args, dynamic)
        return self._get()(*args, **kwargs)

    def _first_run(self, key: str, program, args: tuple, dynamic: tuple):
        """The first call of a program loaded from the store, waited for: an executable that deserialized but
        cannot run in this process (on the CPU, jaxlib 0.10 refused one whose functions this process had already
        compiled under the same names: "Function ... not found") is dropped, compiled afresh and kept again."""
        self._unverified.discard(key)
        try:
            return jax.block_until_ready(program(*dynamic))
        except Exception:  # noqa: BLE001 - XLA reports it as a generic runtime error
            self._programs.pop(key, None)
            return self.build(key, self._get().lower(*args))(*dynamic)

    def _cache_size(self) -> int:
        """Programs this process holds for this function: kept ones and those of its jax.jit."""
        return len(self._programs) + (self._jitted._cache_size() if self._jitted is not None else 0)

    def __getattr__(self, name):  # lower, trace, ...: the jitted function's own
        if name.startswith("__") or name in ("_fun", "_kwargs", "_jitted", "_nested", "_lock", "_long_running",
                                             "_static", "_programs", "_identity", "_unverified"):
            raise AttributeError(name)
        return getattr(self._get(), name)


def jit(fun: Callable | None = None, *, long_running: bool = False, keep: bool | str = False, **kwargs) -> Any:
    """``jax.jit`` with :func:`compiler_options`; use like ``jax.jit`` (``jit(f, static_argnums=0)`` or
    ``@functools.partial(jit, static_argnums=0)``).

    Args:
      fun: the function to compile.
      long_running: the program runs for seconds per call (trains many networks): compile it with
        :data:`LONG_RUNNING_CPU_OPTIONS`, which give a faster program for a slower compile.
      keep: keep the compiled program, serialized, for later processes (the module docstring): True for a
        module-level function of jtk, or a unique name (``"module.name"``) for a program built by wrapping one.
        Its static arguments (``static_argnums``) are then part of its key.
      **kwargs: ``jax.jit``'s own (``static_argnums``, ``donate_argnums``, ...).
    """
    if fun is None:
        return functools.partial(jit, long_running=long_running, keep=keep, **kwargs)
    return _Jit(fun, kwargs, long_running, keep)
