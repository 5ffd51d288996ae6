"""Calling a student's function: a CPU-time budget, the reference guard, and the answer recorded as plain data.

This is the side of a check that runs where the student's code runs: in their own notebook (the self-check of
:mod:`jtk.checks`) and in the grading sandbox (:mod:`jtk.course._grading_worker`). It holds no case, seed, reference or
expected answer: it calls a function on the inputs it is given, within a budget, and encodes what came back
(numbers as ``.npy``, never pickled) or what happened instead (:class:`Raised`). Judging happens elsewhere
(:mod:`jtk.course._judge`), in the grader's process when a notebook is graded.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import os
import reprlib
import signal
import sys
import threading
import time
import traceback
from typing import Callable, Sequence

import numpy as np

MAX_ANSWER_VALUES = 200_000
"""Numbers recorded per answer; a larger answer is recorded as too large (and judged wrong)."""


class NotAvailable(RuntimeError):
    """Raised by the stubs that replace jtk's reference functions in the grading sandbox (:mod:`jtk.course.sandbox`).

    Args:
      name: the replaced function, ``"module:qualname"``.
    """

    def __init__(self, name: str):
        super().__init__(f"{name} computes the answer to an exercise, so it is not available while the "
                         f"exercise is graded")
        self.name = name

class _OutOfTime(BaseException):
    """Raised by the timer in the student's function (a BaseException, so `except Exception` cannot eat it)."""


class _UsesReference(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


@dataclasses.dataclass(frozen=True)
class Raised:
    """What the student's function did instead of returning: kind is not_implemented, exception, timeout,
    uses_reference, guard_removed or not_callable."""

    kind: str
    text: str = ""


@dataclasses.dataclass(frozen=True)
class Opaque:
    """A returned value that is not numbers (a string, None, a dict, ...), kept as its type and repr."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text


def _copy(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # jtk/ (this file: jtk/course/)


def _qualname(code) -> str:
    return getattr(code, "co_qualname", code.co_name)  # co_qualname is Python ≥ 3.11


def _forbidden_codes(paths: Sequence[str]) -> dict:
    """(source file, qualified name) of each forbidden function -> its name for messages.

    Functions are recognised by where their code was defined, not by the objects the module holds now, so
    replacing ``Coin.joint`` by something else before saving the original does not get past the guard.
    """
    keys = {}
    for path in paths:
        module, qualname = path.split(":")
        parts = module.split(".")[1:]  # below the jtk package
        filename = os.path.join(_PACKAGE_DIR, *parts[:-1], parts[-1] + ".py") if parts else os.path.join(
            _PACKAGE_DIR, "__init__.py")
        keys[(filename, qualname if sys.version_info >= (3, 11) else qualname.split(".")[-1])] = qualname
    return keys


class _Guard:
    """While active, a call to any function in ``codes`` raises _UsesReference (a profile hook sees every Python
    call, also through saved references to the function)."""

    def __init__(self, codes: dict):
        self.codes = codes
        self.removed = False
        self.hook = self._profile  # one bound method, so that `is` can recognise it

    def _profile(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            name = self.codes.get((code.co_filename, _qualname(code)))
            if name is not None:
                raise _UsesReference(name)

    def __enter__(self):
        self._previous = sys.getprofile()
        if self.codes:
            threading.setprofile(self.hook)
            sys.setprofile(self.hook)
        return self

    def __exit__(self, *exc):
        if self.codes:
            self.removed = sys.getprofile() is not self.hook and exc[0] is not _UsesReference
            sys.setprofile(self._previous)
            threading.setprofile(None)
        return False


RUN_SHARE = 0.3
"""Share of a check call's CPU seconds the student's function may spend running, JAX compilation aside."""

GRACE_SECONDS = 0.25
"""CPU seconds between the budget's first alarm and the timeout: a compilation that has just ended is counted."""

_COMPILE_EVENTS = frozenset(f"/jax/core/compile/{stage}_duration"
                            for stage in ("jaxpr_trace", "jaxpr_to_mlir_module", "backend_compile"))


class _Budget:
    """The CPU time one check call may spend in the student's function.

    CPU time, not wall time: the budget separates an answer that loops from a machine that is busy. A kernel that
    shares its cores with other jobs gets fewer time slices, so its wall time grows with the load, but the CPU
    time its code needs stays what it is on a quiet machine (docs/grading.md, "Time limits under load"). An answer
    that waits without computing (``time.sleep``) spends no CPU time; the grader's wall-clock cell limit stops it.

    Of the call's ``seconds``, running code may use ``RUN_SHARE``. JAX's tracing, lowering and compilation
    (jax.monitoring's duration events, counted while the budget is entered and only if the kernel has imported
    JAX) are not counted, up to ``compile_seconds`` of them. A correct answer written with JAX spends most of its
    time compiling each new shape of the cases (docs/grading.md, "Check budgets"); a loop spends all of it
    running, so it is stopped after ``RUN_SHARE × seconds``.

    Args:
      seconds: the call's share of its cell's CPU budget.
      compile_seconds: the most compilation credited (None: ``seconds``).

    Attributes:
      run_seconds: ``RUN_SHARE × seconds``, the most the call may spend outside compilation.
      compiled: seconds of compilation seen so far.
    """

    def __init__(self, seconds: float, compile_seconds: float | None = None):
        self.seconds = float(seconds)
        self.compile_seconds = self.seconds if compile_seconds is None else float(compile_seconds)
        self.run_seconds = RUN_SHARE * self.seconds
        self.compiled = 0.0
        self.start = time.process_time()
        self._monitoring = None

    def _listen(self, event: str, duration: float, **_) -> None:
        if event in _COMPILE_EVENTS:
            self.compiled += duration

    def used(self) -> float:
        """CPU seconds spent since the budget was made, less the compilation it credits."""
        return time.process_time() - self.start - min(self.compiled, self.compile_seconds)

    def left(self) -> float:
        """Running seconds left."""
        return self.run_seconds - self.used()

    def __enter__(self):
        self._monitoring = sys.modules.get("jax.monitoring")
        if self._monitoring is not None:
            self._monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc):
        if self._monitoring is not None:
            try:
                self._monitoring.unregister_event_duration_listener(self._listen)
            except Exception:  # noqa: BLE001 - the student's code cleared JAX's listeners: nothing left to undo
                pass
        return False


class _Timer:
    """Raises _OutOfTime in the main thread once ``budget`` has no running seconds left (SIGPROF; a no-op off the
    main thread).

    The timer rings when the budget would be spent if nothing compiled; it then asks the budget again and waits
    on for what compilation has given back. Out of time, it waits ``GRACE_SECONDS`` more once, for a compilation
    that has ended but not yet reported its duration, before it raises.
    """

    def __init__(self, budget: _Budget | None):
        self.budget, self.warned, self.stopped = budget, False, False
        self.armed = (budget is not None and hasattr(signal, "setitimer")
                      and threading.current_thread() is threading.main_thread())

    def _ring(self, signum, frame):
        if self.stopped:  # rang while __exit__ disarms: re-arming now would outlive the handler (SIGPROF's default
            return        # action ends the process)
        left = self.budget.left()
        if left > 0:
            self.warned = False
            signal.setitimer(signal.ITIMER_PROF, max(left, 0.01))
        elif not self.warned:
            self.warned = True
            signal.setitimer(signal.ITIMER_PROF, GRACE_SECONDS)
        else:
            raise _OutOfTime()

    def __enter__(self):
        if self.armed:
            self._previous = signal.signal(signal.SIGPROF, self._ring)
            signal.setitimer(signal.ITIMER_PROF, max(self.budget.left(), 0.01))
        return self

    def __exit__(self, *exc):
        if self.armed:
            self.stopped = True
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, self._previous)
        return False


def capture(fn: Callable, args: tuple, budget: _Budget | None = None, forbidden: Sequence[str] = (),
            seeds: int = 0):
    """The student's answer for one case, or a :class:`Raised` saying what happened instead.

    Args:
      fn: the student's function.
      args: the case's inputs; ``fn`` gets copies.
      budget: the CPU time left to the call this case belongs to (None: no limit); past it the case is a timeout.
      forbidden: ``"module:qualname"`` of the jtk functions that are the answer: a call to one is ``uses_reference``.
      seeds: 0 to call ``fn(*args)`` once; N to call ``fn(*args, s)`` for s = 0 … N − 1 and answer the list.
    """
    if not callable(fn):
        return Raised("not_callable", type(fn).__name__)
    guard = _Guard(_forbidden_codes(forbidden))
    try:
        with _Timer(budget), guard:
            if seeds:
                out = [fn(*(_copy(a) for a in args), s) for s in range(seeds)]
            else:
                out = fn(*(_copy(a) for a in args))
    except _OutOfTime:
        return Raised("timeout", f"{budget.run_seconds:.3g}")
    except _UsesReference as err:
        return Raised("uses_reference", err.name)
    except NotAvailable as err:
        return Raised("uses_reference", err.name.split(":")[-1])
    except NotImplementedError:
        return Raised("not_implemented")
    except KeyboardInterrupt:
        return Raised("exception", "KeyboardInterrupt, which nothing but your own code raises in a check: "
                                   "return an answer, or raise another exception")
    except (Exception, SystemExit) as err:  # noqa: BLE001 - every student error is reported, never a crash
        frames = traceback.extract_tb(err.__traceback__)
        where = f" (line {frames[-1].lineno}: {frames[-1].line!r})" if len(frames) > 1 else ""
        return Raised("exception", f"{type(err).__name__}: {err}{where}"[:400])
    if guard.removed:
        return Raised("guard_removed")
    return out


# ------------------------------------------------------------------ encoding answers (no pickle)
def _npy(arr: np.ndarray) -> dict:
    buf = io.BytesIO()
    np.save(buf, np.array(arr, order="C"), allow_pickle=False)
    return {"npy": base64.b64encode(buf.getvalue()).decode("ascii")}


def encode(value, depth: int = 0) -> dict:
    """A JSON-safe record of an answer: numbers as .npy (never pickle), anything else as its type and repr."""
    if isinstance(value, Raised):
        return {"raised": value.kind, "text": value.text}
    if isinstance(value, (tuple, list)) and depth < 2:
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001 - ragged sequences are recorded element by element
            arr = None
        if arr is not None and arr.dtype.kind in "biuf" and arr.size <= MAX_ANSWER_VALUES:
            return _npy(arr)
        return {"seq": [encode(v, depth + 1) for v in list(value)[:16]]}
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001
        arr = None
    if arr is not None and arr.dtype.kind in "biuf":
        if arr.size > MAX_ANSWER_VALUES:
            return {"opaque": "array", "repr": f"an array of {arr.size} numbers (too large to record)"}
        return _npy(arr)
    try:
        text = reprlib.repr(value)[:200]
    except Exception:  # noqa: BLE001
        text = "<unprintable>"
    return {"opaque": type(value).__name__, "repr": text}


def decode(obj, depth: int = 0):
    """Reads :func:`encode`'s record back: arrays, tuples, :class:`Raised` or :class:`Opaque`; never unpickles."""
    if not isinstance(obj, dict) or depth > 3:
        return Opaque("invalid", "an unreadable record")
    if "raised" in obj:
        return Raised(str(obj["raised"]), str(obj.get("text", ""))[:400])
    if "npy" in obj:
        try:
            raw = base64.b64decode(str(obj["npy"])[: 16 * MAX_ANSWER_VALUES], validate=True)
            arr = np.load(io.BytesIO(raw), allow_pickle=False)
        except Exception:  # noqa: BLE001 - a forged or broken record is just a wrong answer
            return Opaque("invalid", "an unreadable record")
        return arr if arr.dtype.kind in "biuf" else Opaque("invalid", "an unreadable record")
    if "seq" in obj and isinstance(obj["seq"], list):
        return tuple(decode(v, depth + 1) for v in obj["seq"][:16])
    return Opaque(str(obj.get("opaque", "object"))[:40], str(obj.get("repr", ""))[:200])


