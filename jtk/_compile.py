"""How jtk compiles its programs: ``jax.jit`` with XLA's CPU backend at LLVM optimisation level 1.

Every jitted function in jtk (the testbed, the agents' fits, the bandit, the labs' studies) is built with
:func:`jit`. On the CPU, most of a cold testbed run or a lab's first cell is XLA compiling a handful of programs,
and most of that is LLVM optimising the generated code. Level 1 (XLA's default is 2) halves the compile time and leaves the compiled
programs as fast, measured on the paper grid (docs/platforms.md, "Where the compile time goes on the CPU"); scores
move in the sixth significant digit (floating-point operations are ordered differently), far inside their
standard errors. The option is passed per program (``jax.jit(..., compiler_options=...)``), so jtk sets no global
``XLA_FLAGS`` and other JAX code in the process is unaffected; on a GPU the programs compile with XLA's defaults.
``JTK_FAST_COMPILE=0`` restores the default level on the CPU too.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any, Callable

import jax

CPU_COMPILER_OPTIONS = {"xla_backend_optimization_level": 1}


def compiler_options() -> dict[str, Any] | None:
    """The options jtk's testbed programs compile with on the current default backend (None: XLA's defaults)."""
    if jax.default_backend() != "cpu" or os.environ.get("JTK_FAST_COMPILE", "1") == "0":
        return None
    return dict(CPU_COMPILER_OPTIONS)


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

    def __init__(self, fun: Callable, kwargs: dict[str, Any]):
        self._fun, self._kwargs, self._jitted = fun, kwargs, None
        self._nested = jax.jit(fun, **kwargs)  # inside another transformation: no options, no backend needed
        self._lock = threading.Lock()  # chunks run in threads (jtk.executors.local_threads): build it once
        functools.update_wrapper(self, fun, updated=())

    def _get(self):
        if self._jitted is None:
            with self._lock:
                if self._jitted is None:
                    self._jitted = jax.jit(self._fun, compiler_options=compiler_options(), **self._kwargs)
        return self._jitted

    def __call__(self, *args, **kwargs):
        return (self._get() if _top_level() else self._nested)(*args, **kwargs)

    def __getattr__(self, name):  # lower, trace, _cache_size, ...: the jitted function's own
        if name.startswith("__") or name in ("_fun", "_kwargs", "_jitted", "_nested", "_lock"):
            raise AttributeError(name)
        return getattr(self._get(), name)


def jit(fun: Callable | None = None, **kwargs) -> Any:
    """``jax.jit`` with :func:`compiler_options`; use like ``jax.jit`` (``jit(f, static_argnums=0)`` or
    ``@functools.partial(jit, static_argnums=0)``)."""
    if fun is None:
        return functools.partial(jit, **kwargs)
    return _Jit(fun, kwargs)
