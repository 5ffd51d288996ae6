"""The untrusted side of ``jtk challenge``: runs one student's submission, answers the scorer over pipes.

Started by :mod:`jtk.course.challenge` as ``python -I -m jtk.course._challenge_worker`` with a minimal environment, in
a temporary directory holding ``submission.py``, under resource limits and (when available) inside
bubblewrap. It knows nothing of the challenge: no salt, no seeds, no test labels. It receives training
sets, the prior information the testbed gives any agent, and test inputs; it sends back logits.

Protocol (one frame = 8-byte big-endian length, 1-byte kind ``J`` JSON or ``N`` ``.npy`` bytes, payload):

=================================================  =====================================================
scorer → worker                                    worker → scorer
=================================================  =====================================================
``{"op": "load"}``                                 ``{"ok": true}`` once ``make_agent()`` returned
``{"op": "check", "prior": {...}}``                ``{"ok": true, "probes": [[name, ok, message], ...]}``
``{"op": "fit", "prior", "seed"}`` + x + y         ``{"ok": true, "num_components": C or null}``
``{"op": "logits", "mode", "num_samples", "seed"}``  ``{"ok": true, "log_weights": bool}`` + logits
  + x                                                [+ log_weights]
``{"op": "quit"}``                                 (exits)
=================================================  =====================================================

Any failure answers ``{"ok": false, "error": "Type: message", "memory": bool}``. Arrays are float32
``.npy`` without pickles. Everything the submission prints goes to stderr, never into the protocol.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback

import numpy as np

from jtk.course._wire import HEADER, read_frame, write_frame  # noqa: F401 - the frames (shared with grading); the scorer uses them


def _prior(d: dict):
    from jtk.agents.base import ProblemInfo

    return ProblemInfo(**d)


def _error(err: BaseException) -> dict:
    text = f"{type(err).__name__}: {err}".strip()
    memory = isinstance(err, MemoryError) or "RESOURCE_EXHAUSTED" in text or "bad_alloc" in text
    traceback.print_exc(file=sys.stderr)
    return {"ok": False, "error": text[:4000], "memory": memory}


def main() -> None:
    """Serves the scorer until ``quit`` or end of input."""
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the submission reads nothing from the scorer's pipe
    os.dup2(2, 1)  # and what it prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    agent = posterior = None
    while True:
        try:
            msg = read_frame(proto_in)
        except EOFError:
            return
        op = msg.get("op")
        try:
            if op == "quit":
                return
            if op == "load":
                spec = importlib.util.spec_from_file_location("submission", os.path.abspath("submission.py"))
                module = importlib.util.module_from_spec(spec)
                sys.modules["submission"] = module
                spec.loader.exec_module(module)
                if not callable(getattr(module, "make_agent", None)):
                    raise AttributeError("the submission defines no make_agent() function")
                agent = module.make_agent()
                if not callable(getattr(agent, "fit", None)):
                    raise TypeError(f"make_agent() returned a {type(agent).__name__} without a fit(x, y, seed, "
                                    "prior) method")
                reply = {"ok": True}
            elif op == "check":
                from jtk import testbed

                report = testbed.check_agent(agent, _prior(msg["prior"]), estimate_time=False)
                reply = {"ok": True, "probes": [[p.name, bool(p.ok), p.message] for p in report.probes]}
            elif op == "fit":
                x, y = read_frame(proto_in), read_frame(proto_in)
                posterior = agent.fit(x, y, seed=int(msg["seed"]), prior=_prior(msg["prior"]))
                from jtk.agents.base import as_mixture

                mixture = as_mixture(posterior)
                reply = {"ok": True, "num_components": None if mixture is None else int(mixture.num_components)}
            elif op == "logits":
                x = read_frame(proto_in)
                log_w = None
                if msg["mode"] == "components":
                    from jtk.agents.base import as_mixture

                    mixture = as_mixture(posterior)
                    if mixture is None:
                        raise TypeError(f"the posterior ({type(posterior).__name__}) is not a finite mixture: it has "
                                        "no num_components / components(x)")
                    logits = mixture.components(x)
                    lw = mixture.log_weights()
                    log_w = None if lw is None else np.asarray(lw, np.float32)
                else:
                    logits = posterior.sample_logits(x, int(msg["num_samples"]), int(msg["seed"]))
                logits = np.asarray(logits)
                if not np.issubdtype(logits.dtype, np.number) or np.iscomplexobj(logits):
                    raise TypeError(f"the posterior returned logits of dtype {logits.dtype}; expected floats")
                write_frame(proto_out, {"ok": True, "log_weights": log_w is not None})
                write_frame(proto_out, logits.astype(np.float32))
                if log_w is not None:
                    write_frame(proto_out, log_w)
                continue
            else:
                raise ValueError(f"unknown op {op!r}")
        except BaseException as err:  # noqa: BLE001 - every failure of the submission is reported, not raised
            if isinstance(err, KeyboardInterrupt):
                raise
            reply = _error(err)
            if op == "fit":
                posterior = None
        write_frame(proto_out, reply)


if __name__ == "__main__":
    main()
