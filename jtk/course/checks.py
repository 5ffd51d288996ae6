"""Checks for the exercise notebooks: fresh random cases, jtk as the reference, hints a student can act on.

Every ``check_*`` function takes the student's function, draws random cases, calls the function on each case and
judges each answer against jtk's own implementation. It prints one pass line, or raises :class:`CheckFailed`, whose
message names the case, what was expected and what was got, and a hint; IPython shows only that message (no
traceback). This is the *self-check*: it runs in the student's own kernel, on fresh cases every run
(``seed=None``), so a student can try as often as they like.

How a check is scored, and the misconception codes a failed case carries, are the judge's (:mod:`jtk.course._judge`;
the codes are ``jtk.checks.MISCONCEPTIONS``). While the student's function runs, the jtk functions that compute its
answer (listed per check in ``jtk.checks.FORBIDDEN``) raise, and the case fails with code ``uses_reference``.

Grading does not run these functions. ``jtk grade`` judges in its own process: it draws each case from a seed the
student's kernel never sees, calls the student's function with the case's inputs over a channel it owns, gets the
answer back as plain data and judges it there (:mod:`jtk.course.exercises`, docs/grading.md). In the grading sandbox this
module's checks, its reference answers and the jtk functions that compute them are not available at all.
"""

from __future__ import annotations

import secrets
import zlib
from typing import Callable

import numpy as np

from jtk.course._answers import Raised, _Budget, capture, encode

PASS = "✓"  # U+2713, in the text fonts (DejaVu, Liberation); an emoji check mark is an empty box without an emoji font

NAMES = ("coin_joint", "try_then_commit", "joint_log_likelihood", "prior_member", "blr_posterior",
         "batch_mig_step", "thompson_action")
"""The registered checks, in the order of the exercises."""

NOTEBOOK_CALL_SECONDS = 60.0
"""CPU seconds of one check call in a notebook: the student's function may run for ``jtk.course._answers.RUN_SHARE`` of
them, JAX compilation aside (see ``jtk.course._answers._Budget``)."""


# ------------------------------------------------------------------ failures
class CheckFailed(AssertionError):
    """A failed check: IPython shows only the message and hint, never the grader's source.

    Attributes:
      code: the misconception code of the first failed case.
    """

    def __init__(self, message: str, code: str = "generic.wrong_value"):
        super().__init__(message)
        self.code = code

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of a traceback
        return [f"\x1b[31m✗ {self}\x1b[0m"]



def _judge_module():
    """The judge (:mod:`jtk.course._judge`); in the grading sandbox a stub whose import says why it is not there."""
    from jtk.course import _judge

    return _judge


def __getattr__(name: str):  # the judge's names, loaded when first used (PEP 562)
    if name in ("Result", "Failure", "Check", "MISCONCEPTIONS", "FORBIDDEN", "evaluate", "try_then_commit_value"):
        return getattr(_judge_module(), name)
    raise AttributeError(f"module 'jtk.checks' has no attribute {name!r}")


def case_seed(seed) -> int:
    """An int seed from an int ≥ 0 or a JAX PRNG key (via ``jtk._checks.as_key``); None draws a fresh one."""
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if seed < 0:
            raise ValueError(f"seed must be ≥ 0, got {seed}")
        return int(seed)
    if not hasattr(seed, "dtype"):
        raise TypeError(f"seed must be an int, a JAX PRNG key or None, got {type(seed).__name__} {seed!r}")
    import jax

    from jtk import _checks

    return int(zlib.crc32(np.asarray(jax.random.key_data(_checks.as_key(seed))).tobytes()))


def run_check(name: str, fn: Callable, seed=None, hidden: bool = False):
    """Draws the cases, calls ``fn`` on each (within :data:`NOTEBOOK_CALL_SECONDS` of CPU time) and judges it.

    Returns:
      The judge's ``Result``: cases, and the failures with their codes and messages.
    """
    judge = _judge_module()
    check = judge.check_by_name(name)
    cases = judge.cases(name, case_seed(seed), hidden)
    with _Budget(NOTEBOOK_CALL_SECONDS) as budget:
        answers = []
        for args in cases:  # after a timeout the remaining cases are not tried
            late = answers and answers[-1].get("raised") == "timeout"
            answers.append(encode(capture(fn, args, budget, check.forbidden, check.seeds))
                           if not late and budget.left() > 0 else encode(Raised("timeout")))
    return judge.judge(name, cases, answers, hidden)


def _report(result) -> None:
    which = " (hidden cases)" if result.hidden else ""
    if result.ok:
        summary = _judge_module().check_by_name(result.name).summary.format(n=result.total)
        print(f"{PASS} {result.title}{which}: passed — {summary}")
        return
    first = result.failures[0]
    raise CheckFailed(f"{result.title}{which}: {result.passed} of {result.total} cases passed. "
                      f"Case {first.case + 1}: {first.message}", first.code)


def _public(name: str, answer_name: str, doc: str):
    def check(fn: Callable, seed=None, hidden: bool = False) -> None:
        _report(run_check(name, fn, seed=seed, hidden=hidden))

    check.__name__ = check.__qualname__ = f"check_{name}"
    check.__doc__ = (f"{doc}\n\n    Args:\n      {answer_name}: the student's function.\n      seed: seed of the "
                     f"random cases (None: fresh cases).\n      hidden: draw the hidden case family instead of the "
                     f"visible one.\n\n    Raises:\n      CheckFailed: a case failed; the message names it and gives a "
                     f"hint.\n    ")
    return check


check_coin_joint = _public("coin_joint", "coin_joint",
                           "Exercise 1a: ``coin_joint(biases, prior, flips)`` → array of shape (2,)*flips, index 1 = heads.")
check_try_then_commit = _public("try_then_commit", "value_fn",
                                "Exercise 1b: ``value_fn(biases, prior, horizon)`` → expected heads of try-then-commit.")
check_joint_log_likelihood = _public(
    "joint_log_likelihood", "joint_ll",
    "Exercise 2: ``joint_ll(logits [M, τ, K], y [τ])`` → log (1/M) Σ_m Π_t softmax(logits[m, t])[y_t].")
check_prior_member = _public(
    "prior_member", "member_logits",
    "Exercise 3: ``member_logits(params, prior_params, x, prior_scale)`` → logits [n, K] of one ensemble+ member.")
check_blr_posterior = _public(
    "blr_posterior", "blr_posterior",
    "Exercise 4: ``blr_posterior(phi [n, p], y [n], noise_std)`` → (mean [p], cov [p, p]) under the flat prior.")
check_batch_mig_step = _public(
    "batch_mig_step", "next_pick",
    "Exercise 5: ``next_pick(cov, chosen, pool, test, noise_var)`` → the pool index BatchMIG adds next.")
check_thompson_action = _public(
    "thompson_action", "thompson_action",
    "Exercise 6: ``thompson_action(member_logits [K, N, 2], seed)`` → the action a Thompson sampler takes.\n\n"
    "    Each case calls it with 400 seeds and compares the frequency of each action with the exact probability\n"
    "    that Thompson sampling picks it (the fraction of members under which it is the best action).")

CHECKS = {name: globals()[f"check_{name}"] for name in NAMES}
"""The public check functions by name."""
