"""The untrusted side of ``jtk grade``: runs one student's notebook cells and calls their functions, over pipes.

Started by :mod:`jtk.course.exercises` as ``python -I -B -m jtk.course._grading_worker`` with a minimal environment, under
resource limits and (in the ``bwrap`` mode) inside the sandbox of :func:`jtk.course.sandbox.bwrap_args`, where jtk's
judge and reference functions are stubs. It knows nothing of the grading: no salt, no seed, no case generator, no
reference answer. The grader sends it the code of the cells to run, and for each check the name of the student's
function and one case's inputs at a time; it sends back whether a cell raised, and each answer as plain data.

Protocol (frames of :mod:`jtk.course._wire`, all JSON):

=====================================================  ==============================================================
grader → worker                                        worker → grader
=====================================================  ==============================================================
(start)                                                ``{"ready": true, "jtk": dir}`` once IPython, numpy and jtk are
                                                       imported (before any student code), or ``{"fault": "..."}``
``{"op": "run", "code": str}``                         ``{"ok": true, "error": null or "Type: message"}``
``{"op": "begin", "function": expression, "seconds",   ``{"ok": true, "error": null or "Type: message"}`` (the
"compile_seconds", "forbidden": [...], "seeds": N}``     expression did not give a value)
``{"op": "case", "args": packed tuple}``               ``{"answer": record}`` (:func:`jtk.course._answers.encode`)
``{"op": "end"}``                                      ``{"ok": true}``
``{"op": "quit"}``                                     (exits)
=====================================================  ==============================================================

Everything the student's code prints goes to stderr, never into the protocol. The student's code runs in this
process and can reach the pipes too: whatever it sends can only stand in for its own answers, which the grader
judges on cases it drew itself (docs/grading.md, "What an answer cell can reach").
"""

from __future__ import annotations

import os
import sys


def _error(err: BaseException | None) -> str | None:
    if err is None:
        return None
    return f"{type(err).__name__}: {err}"[:2000]


def main() -> None:
    """Serves the grader until ``quit`` or end of input."""
    from jtk.course import _wire

    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the student's code reads nothing from the grader's pipe
    os.dup2(2, 1)  # and what it prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    try:
        # What every exercise notebook imports, before any student code: a failure here is the grader's (too little
        # memory for jtk, a broken installation), never the student's.
        import numpy  # noqa: F401
        from IPython.core.interactiveshell import InteractiveShell

        import jtk  # noqa: F401
        from jtk.course import _answers

        if os.environ.get("JTK_WORKER_JAX", "1") == "1":
            import jax.numpy as jnp

            jnp.zeros(1).block_until_ready()  # the backend starts here, with its own memory
        shell = InteractiveShell.instance()
    except BaseException as err:  # noqa: BLE001
        _wire.write_frame(proto_out, {"fault": _error(err)})
        return
    _wire.write_frame(proto_out, {"ready": True, "jtk": os.path.dirname(os.path.realpath(jtk.__file__))})
    call = None  # the check call in progress: its function, budget and forbidden names
    while True:
        try:
            msg = _wire.read_frame(proto_in, max_bytes=1 << 28)
        except (EOFError, _wire.WireError):
            return
        op = msg.get("op") if isinstance(msg, dict) else None
        if op == "quit":
            return
        if op == "run":
            result = shell.run_cell(str(msg["code"]), store_history=False, silent=False)
            reply = {"ok": True, "error": _error(result.error_before_exec or result.error_in_exec)}
        elif op == "begin":
            try:
                fn = eval(str(msg["function"]), shell.user_ns)  # noqa: S307 - the source's expression, not the student's
                error = None
            except BaseException as err:  # noqa: BLE001 - a missing function is the student's answer, not a crash
                fn, error = None, _error(err)
            budget = _answers._Budget(float(msg["seconds"]), float(msg["compile_seconds"]))
            budget.__enter__()
            call = (fn, budget, tuple(str(p) for p in msg.get("forbidden", ())), int(msg.get("seeds", 0)))
            reply = {"ok": True, "error": error}
        elif op == "case" and call is not None:
            fn, budget, forbidden, seeds = call
            try:
                args = _wire.unpack(msg["args"])
                answer = (_answers.Raised("timeout", f"{budget.run_seconds:.3g}") if budget.left() <= 0 else
                          _answers.capture(fn, tuple(args), budget, forbidden, seeds))
                record = _answers.encode(answer)
            except BaseException as err:  # noqa: BLE001 - whatever happens, this case gets an answer
                record = _answers.encode(_answers.Raised("exception", _error(err)))
            reply = {"answer": record}
        elif op == "end" and call is not None:
            call[1].__exit__(None, None, None)
            call, reply = None, {"ok": True}
        else:
            reply = {"ok": False, "error": f"unexpected message {str(op)[:40]!r}"}
        try:
            _wire.write_frame(proto_out, reply)
        except (OSError, ValueError, TypeError):
            _wire.write_frame(proto_out, {"answer": {"opaque": "invalid", "repr": "an answer that cannot be sent"}}
                              if op == "case" else {"ok": False, "error": "a reply that cannot be sent"})


if __name__ == "__main__":
    main()
