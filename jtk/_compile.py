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
"""

from __future__ import annotations

import functools
import os
import threading
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


class _Jit:
    """``jax.jit(fun, **kwargs)`` built on first use, when the backend (and so the options) is known.

    Called inside another jitted function, vmap or grad, it is a plain ``jax.jit`` (JAX refuses compiler options
    on a nested jit; the outer program's options apply to the whole of it anyway).
    """

    def __init__(self, fun: Callable, kwargs: dict[str, Any], long_running: bool = False):
        self._fun, self._kwargs, self._jitted, self._long_running = fun, kwargs, None, long_running
        self._nested = jax.jit(fun, **kwargs)  # inside another transformation: no options, no backend needed
        self._lock = threading.Lock()  # chunks run in threads (jtk.executors.local_threads): build it once
        functools.update_wrapper(self, fun, updated=())

    def _get(self):
        if self._jitted is None:
            with self._lock:
                if self._jitted is None:
                    self._jitted = jax.jit(self._fun, compiler_options=compiler_options(self._long_running),
                                           **self._kwargs)
        return self._jitted

    def __call__(self, *args, **kwargs):
        return (self._get() if _top_level() else self._nested)(*args, **kwargs)

    def __getattr__(self, name):  # lower, trace, _cache_size, ...: the jitted function's own
        if name.startswith("__") or name in ("_fun", "_kwargs", "_jitted", "_nested", "_lock", "_long_running"):
            raise AttributeError(name)
        return getattr(self._get(), name)


def jit(fun: Callable | None = None, *, long_running: bool = False, **kwargs) -> Any:
    """``jax.jit`` with :func:`compiler_options`; use like ``jax.jit`` (``jit(f, static_argnums=0)`` or
    ``@functools.partial(jit, static_argnums=0)``).

    Args:
      fun: the function to compile.
      long_running: the program runs for seconds per call (trains many networks): compile it with
        :data:`LONG_RUNNING_CPU_OPTIONS`, which give a faster program for a slower compile.
      **kwargs: ``jax.jit``'s own (``static_argnums``, ``donate_argnums``, ...).
    """
    if fun is None:
        return functools.partial(jit, long_running=long_running, **kwargs)
    return _Jit(fun, kwargs, long_running)
