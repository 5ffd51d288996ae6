"""Checks for the exercise notebooks: fresh random cases, jtk as the reference, hints a student can act on.

Every ``check_*`` function takes the student's function, draws random cases
from a seed, calls the function on each case and judges each answer against
jtk's own implementation. In a notebook it prints one pass line, or raises
:class:`CheckFailed`, whose message names the case, what was expected and what
was got, and a hint; IPython shows only that message (no traceback).

How a check is scored (the rule ``jtk grade`` applies):

* A check cell scores ``points × passed cases / all cases``, summed over every
  check call in the cell, visible and hidden (``hidden=True``) alike. A case
  passes when the student's answer for it is right; an exception, a wrong type,
  shape or value, NaN, or a call to a function that *is* the answer fails it.
* Every failed case carries a stable misconception code (``coin.product_of_marginals``,
  ``jll.mean_of_logs``, ``batchmig.used_mig``, ...; :data:`MISCONCEPTIONS` lists
  them all), so an instructor can count who holds which misconception.
* The cases come from a seed. In a notebook the default (``seed=None``) draws
  fresh cases on every run. ``jtk grade`` derives one seed per (student, check)
  from a stable hash and replaces the cell's seed with it, so a regrade is
  identical and two students get different cases.
* No answer from the library: while the student's function runs, the jtk
  functions that compute the answer (listed per check in :data:`FORBIDDEN`)
  raise, and the case fails with code ``uses_reference``. This stops calling
  the answer, not copying jtk's source, which is open.

Under ``jtk grade`` a check does not judge inside the student's kernel: it
records the student's answers (numbers only, encoded without pickle) as a
display output, and the grader judges them in its own process against cases
it draws itself. Whatever a submission does to this module in its kernel can
therefore only change the answers that are judged, never the judgement.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import os
import reprlib
import secrets
import signal
import sys
import threading
import time
import traceback
import zlib
from typing import Any, Callable, Sequence

import numpy as np
from scipy.special import log_softmax, logsumexp

PASS = "✅"
MIME = "application/vnd.jtk.check+json"
"""The MIME type of the records a check leaves in a graded notebook."""

_MAX_RECORD_VALUES = 200_000  # numbers recorded per answer; more is reported as too large


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
        return [f"\x1b[31m❌ {self}\x1b[0m"]


class _Fail(Exception):
    """Raised by a judge: this case is wrong, with a misconception code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


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


@dataclasses.dataclass(frozen=True)
class Failure:
    case: int
    code: str
    message: str


@dataclasses.dataclass(frozen=True)
class Result:
    """The judgement of one check call: how many cases, which failed and why."""

    name: str
    title: str
    hidden: bool
    total: int
    failures: tuple[Failure, ...]

    @property
    def passed(self) -> int:
        return self.total - len(self.failures)

    @property
    def ok(self) -> bool:
        return not self.failures


# ------------------------------------------------------------------ helpers for judges
def _as_array(value, shape=None, what: str = "the result") -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        name = value.type_name if isinstance(value, Opaque) else type(value).__name__
        raise _Fail("generic.not_numeric", f"{what} should be numeric, got {name}: {value!r:.80}") from None
    if shape is not None and arr.shape != tuple(shape):
        raise _Fail("generic.wrong_shape", f"{what} should have shape {tuple(shape)}, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise _Fail("generic.nonfinite", f"{what} contains NaN or inf ({arr.ravel()[:6]}...). "
                    f"Hint: work in log space (logsumexp) to avoid overflow/underflow.")
    return arr


def _as_int(value, what: str) -> int:
    arr = np.asarray(value) if not isinstance(value, Opaque) else None
    if arr is None or arr.shape != () or arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and arr != np.round(arr)):
        raise _Fail("generic.not_an_index", f"return {what} (an int), got {value!r:.60}")
    return int(arr)


def _describe_args(args) -> str:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(f"array of shape {a.shape}")
        else:
            out.append(repr(a) if len(repr(a)) < 60 else type(a).__name__)
    return ", ".join(out)


def _copy(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# ------------------------------------------------------------------ (a) coins
def _coin_joint(biases, prior, flips):
    b, p = np.asarray(biases, float), np.asarray(prior, float)
    out = np.zeros((2,) * flips)
    for idx in np.ndindex(*out.shape):
        h = sum(idx)
        out[idx] = np.sum(p * b ** h * (1 - b) ** (flips - h))
    return out


def _random_coin(rng, max_biases=3):
    b = int(rng.integers(1, max_biases + 1))
    w = rng.random(b) + 0.05
    return tuple(float(v) for v in np.round(rng.random(b), 3)), tuple(float(v) for v in w / w.sum())


def _coin_joint_cases(rng, hidden):
    if not hidden:
        cases = [((0.5,), (1.0,), 2), ((0.0, 1.0), (0.5, 0.5), 2)]
        return cases + [(*_random_coin(rng), int(rng.integers(1, 5))) for _ in range(8)]
    # Edge cases: one flip, certain biases, a zero prior weight, many biases, six flips.
    return [((0.0, 1.0), (0.25, 0.75), 1), ((1.0,), (1.0,), 3), ((0.2, 0.9, 0.5), (0.0, 0.6, 0.4), 3)] + [
        (*_random_coin(rng, 6), int(rng.integers(4, 7))) for _ in range(3)]


def _coin_joint_judge(args, got):
    biases, prior, flips = args
    got = _as_array(got)
    want = _coin_joint(biases, prior, flips)
    if got.shape != want.shape:
        raise _Fail("coin.wrong_shape", f"for flips={flips} the joint should have shape {want.shape} "
                    f"(one axis per flip), got {got.shape}.")
    if np.allclose(got, want, atol=1e-8):
        return
    marg = float(np.dot(prior, biases))
    indep = np.ones(want.shape)
    for axis in range(flips):
        shape = [1] * flips
        shape[axis] = 2
        indep = indep * np.array([1 - marg, marg]).reshape(shape)
    code, hint = "coin.wrong_value", (" Hint: entry [o1, ..., on] is Σ_i prior_i · Π_t P(o_t | bias_i); "
                                      "check that the entries sum to 1.")
    if np.allclose(got, indep, atol=1e-8):
        code, hint = "coin.product_of_marginals", (
            " Hint: you multiplied the one-flip marginals, as if flips were independent. They are only "
            "independent given the bias: average Π_t P(o_t | bias) over the prior instead.")
    elif np.allclose(got, np.flip(want), atol=1e-8):
        code, hint = "coin.heads_tails_swapped", " Hint: index 0 is tails and index 1 is heads."
    elif not np.isclose(got.sum(), 1.0, atol=1e-6):
        code, hint = "coin.not_normalised", (f" Hint: your joint sums to {got.sum():.4g}, a distribution sums to "
                                             f"1: weight each bias by its prior probability.")
    raise _Fail(code, f"wrong joint for biases={biases}, prior={tuple(np.round(prior, 3))}, flips={flips}: "
                f"expected {np.round(want, 4).tolist()}, got {np.round(got, 4).tolist()}." + hint)


def try_then_commit_value(biases, prior, horizon: int, alternative: float = 0.5) -> float:
    """Expected heads of "flip the uncertain coin once, then commit to the better option".

    After the first flip the decision maker keeps flipping the uncertain coin if
    its posterior P(heads) exceeds ``alternative`` (a coin known to land heads
    with that probability) and switches to the alternative otherwise.
    """
    from jtk.envs import Coin

    coin = Coin(tuple(biases), tuple(prior))
    p_heads = coin.marginal()
    value = p_heads  # the first flip
    for outcome, p in ((1, p_heads), (0, 1 - p_heads)):
        if p > 0:
            value += p * (horizon - 1) * max(coin.posterior([outcome]).marginal(), alternative)
    return float(value)


def _try_then_commit_cases(rng, hidden):
    if not hidden:
        cases = [((0.5,), (1.0,), 10), ((0.0, 1.0), (0.5, 0.5), 10)]
        return cases + [(*_random_coin(rng), int(rng.integers(2, 30))) for _ in range(8)]
    # Edge cases: a horizon of one flip, a coin that always lands heads, a long horizon.
    return [((0.0, 1.0), (0.5, 0.5), 1), ((1.0,), (1.0,), 5), ((0.1, 0.8), (0.7, 0.3), 1000)] + [
        (*_random_coin(rng, 5), int(rng.integers(30, 200))) for _ in range(3)]


def _try_then_commit_judge(args, got):
    biases, prior, horizon = args
    got = float(_as_array(got, shape=()))
    want = try_then_commit_value(biases, prior, horizon)
    if np.isclose(got, want, atol=1e-8):
        return
    marg = float(np.dot(prior, biases))
    code, hint = "ttc.wrong_value", (" Hint: the first flip is always the uncertain coin (worth P(heads)); each of "
                                     "the other horizon − 1 flips is worth max(posterior P(heads) after the first "
                                     "flip, ½), averaged over the two outcomes of the first flip.")
    if np.isclose(got, horizon * max(marg, 0.5)):
        code, hint = "ttc.marginal_only", (" Hint: that is the value of deciding from the marginal alone; after "
                                           "the first flip the decision maker updates its belief (Coin.posterior) "
                                           "and may switch.")
    elif np.isclose(got, marg + (horizon - 1) * max(marg, 0.5)):
        code, hint = "ttc.no_update", (" Hint: after the first flip use the *posterior* P(heads) given that flip "
                                       "(Coin(biases, prior).posterior([outcome]).marginal()), not the prior one.")
    elif horizon > 1 and np.isclose(got, want - marg) or np.isclose(got, want * horizon / max(horizon - 1, 1)):
        code, hint = "ttc.horizon_off_by_one", (" Hint: count the flips: the first flip plus horizon − 1 "
                                                "committed flips make horizon flips in all.")
    raise _Fail(code, f"biases={biases}, prior={tuple(np.round(prior, 3))}, horizon={horizon}: "
                f"expected {want:.6g}, got {got:.6g}." + hint)


# ------------------------------------------------------------------ (b) joint log-likelihood
def _reference_joint_ll(logits, y):
    lp = np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0].sum(-1)  # [M]
    return float(logsumexp(lp) - np.log(len(lp)))


def _joint_ll_cases(rng, hidden):
    cases = []
    if not hidden:
        for scale in (1.0, 1.0, 5.0, 300.0):  # the last overflows exp() without log-space arithmetic
            for _ in range(3):
                m, tau, k = int(rng.integers(2, 8)), int(rng.integers(1, 12)), int(rng.integers(2, 4))
                cases.append((rng.normal(size=(m, tau, k)) * scale, rng.integers(0, k, size=tau)))
        return cases
    # Edge cases: one sample, one label, ten classes, logits of size 2000, τ = 100.
    for m, tau, k, scale in ((1, 5, 2, 1.0), (6, 1, 2, 1.0), (4, 6, 10, 3.0), (5, 8, 3, 2000.0), (3, 100, 2, 1.0)):
        cases.append((rng.normal(size=(m, tau, k)) * scale, rng.integers(0, k, size=tau)))
    return cases


def _joint_ll_judge(args, got):
    logits, y = args
    got = float(_as_array(got, shape=()))
    want = _reference_joint_ll(logits, y)
    if np.isclose(got, want, rtol=1e-6, atol=1e-6):
        return
    lp = np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0]  # [M, τ]
    code, hint = "jll.wrong_value", (" Hint: per sample m, sum log softmax(logits[m, t])[y_t] over t; then "
                                     "logsumexp over m minus log M.")
    if np.isclose(got, lp.sum(-1).mean(), atol=1e-6):
        code, hint = "jll.mean_of_logs", (" Hint: you averaged the log-likelihoods over the M samples. Algorithm 3 "
                                          "averages the likelihoods themselves: log of the mean of exp(...) — use "
                                          "logsumexp(...) - log(M).")
    elif np.isclose(got, np.log(np.exp(lp).mean(0)).sum(), atol=1e-6):
        code, hint = "jll.product_of_marginals", (
            " Hint: you multiplied the marginal predictive probabilities of each label. Each sample m is "
            "one function: score it on all τ labels first (sum over τ), then average over m.")
    elif np.isclose(got, logsumexp(lp.sum(-1)), atol=1e-6):
        code, hint = "jll.forgot_divide_by_m", " Hint: you forgot to divide by M (subtract log M)."
    elif np.isclose(got, _reference_joint_ll(logits, 1 - y) if logits.shape[-1] == 2 else np.nan, atol=1e-6):
        code, hint = "jll.wrong_label", " Hint: pick the log-probability of the observed label y_t, not the other one."
    raise _Fail(code, f"logits of shape {logits.shape} (scale {np.abs(logits).max():.3g}), y={y.tolist()[:12]}: "
                f"expected {want:.6g}, got {got:.6g}." + hint)


# ------------------------------------------------------------------ (c) randomized prior functions
def _random_mlp(rng, sizes, first_bias_std: float = 0.0) -> tuple:
    """MLP parameters drawn as ``jtk.nets.init_mlp`` draws them (weights normal / sqrt(fan_in), truncated at ±2 std;
    biases 0 but the first layer's, N(0, first_bias_std²)), in float32 like jtk's, but with numpy: drawing a case
    must not compile (JAX's samplers cost a fresh grading kernel 3.6 s of CPU time for one call's cases)."""
    params = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = rng.normal(size=(fan_in, fan_out))
        while (out := np.abs(w) > 2.0).any():
            w[out] = rng.normal(size=int(out.sum()))
        b = first_bias_std * rng.normal(size=fan_out) if i == 0 and first_bias_std else np.zeros(fan_out)
        params.append(((w / np.sqrt(fan_in)).astype(np.float32), b.astype(np.float32)))
    return tuple(params)


def _prior_member_cases(rng, hidden):
    cases = []
    specs = [((2, 50, 50, 2), None)] * 5 if not hidden else [((2, 50, 50, 2), 0.0), ((3, 16, 4), None),
                                                             ((2, 50, 50, 2), None)]
    for sizes, fixed_scale in specs:
        params = _random_mlp(rng, sizes)  # a trained member's start, and the testbed prior's draw
        prior = _random_mlp(rng, sizes, first_bias_std=1.0 / np.sqrt(sizes[0]))
        n = int(rng.integers(3, 20)) if not hidden else int(rng.choice([1, 7]))
        x = rng.normal(size=(n, sizes[0]))
        scale = float(rng.choice([0.5, 3.0, 30.0])) if fixed_scale is None else fixed_scale
        cases.append((params, prior, x, scale))
    return cases


def _mlp(params, x):
    h = x
    for w, b in params[:-1]:
        h = np.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    return h @ w + b


def _prior_member_judge(args, got):
    params, prior_params, x, scale = args
    trained, prior = _mlp(params, x), _mlp(prior_params, x)
    want = trained + scale * prior
    got = _as_array(got, shape=want.shape, what="the logits")
    if np.allclose(got, want, rtol=1e-4, atol=1e-4):
        return
    code, hint = "prior.wrong_value", " Hint: f(x) = g_θ(x) + prior_scale · p(x), with nets.mlp_apply for g and p."
    if np.allclose(got, trained + prior, atol=1e-4):
        code, hint = "prior.unscaled", " Hint: multiply the prior network's output by prior_scale."
    elif np.allclose(got, trained * scale * prior, atol=1e-4) or np.allclose(got, trained * prior, atol=1e-4):
        code, hint = "prior.multiplied", " Hint: the prior function is *added* to the trained network, not multiplied."
    elif np.allclose(got, scale * prior, atol=1e-4):
        code, hint = "prior.missing_trained", " Hint: add the trained network's output too: f(x) = g_θ(x) + scale · p(x)."
    elif np.allclose(got, trained, atol=1e-4):
        code, hint = "prior.missing_prior", " Hint: add the fixed prior network, scaled: + prior_scale · p(x)."
    raise _Fail(code, f"prior_scale={scale}, {len(x)} inputs of dimension {x.shape[1]}: expected logits starting "
                f"{np.round(want[0], 4).tolist()}, got {np.round(got[0], 4).tolist()}." + hint)


# ------------------------------------------------------------------ (d) BLR anchor
def _blr_cases(rng, hidden):
    cases = []
    sizes = [(int(rng.integers(8, 40)), int(rng.integers(1, 5))) for _ in range(6)] if not hidden else [
        (1, 1), (5, 5), (200, 8)]  # one observation, exactly determined, many observations
    for n, p in sizes:
        phi = rng.normal(size=(n, p))
        sigma = float(rng.uniform(0.1, 2.0))
        cases.append((phi, phi @ rng.normal(size=p) + sigma * rng.normal(size=n), sigma))
    return cases


def _blr_judge(args, result):
    phi, y, sigma = args
    p = phi.shape[1]
    if not isinstance(result, tuple) or len(result) != 2:
        raise _Fail("blr.not_a_pair", f"return a pair (mean, cov), got {result!r:.60}.")
    mean = _as_array(result[0], shape=(p,), what="the posterior mean")
    cov = _as_array(result[1], shape=(p, p), what="the posterior covariance")
    gram = phi.T @ phi
    want_mean = np.linalg.solve(gram, phi.T @ y)
    want_cov = sigma ** 2 * np.linalg.inv(gram)
    if not np.allclose(mean, want_mean, rtol=1e-6, atol=1e-8):
        raise _Fail("blr.regularised_mean", f"{len(y)} observations, {p} features: the posterior mean should be the "
                    f"least-squares solution (ΦᵀΦ)⁻¹Φᵀy = {np.round(want_mean, 4).tolist()}, got "
                    f"{np.round(mean, 4).tolist()}. Hint: with a flat prior there is no regularisation term.")
    if np.allclose(cov, want_cov, rtol=1e-6, atol=1e-10):
        return
    code, hint = "blr.wrong_covariance", " Hint: the covariance is σ²(ΦᵀΦ)⁻¹."
    if np.allclose(cov, np.linalg.inv(gram), rtol=1e-6):
        code, hint = "blr.missing_noise_variance", " Hint: multiply by the noise variance σ²."
    elif np.allclose(cov, sigma * np.linalg.inv(gram), rtol=1e-6):
        code, hint = "blr.std_not_variance", " Hint: the covariance scales with σ² (the variance), not σ."
    elif np.allclose(cov, sigma ** 2 * np.linalg.inv(gram + np.eye(p)), rtol=1e-6):
        code, hint = "blr.regularised_covariance", " Hint: with a flat prior nothing is added to ΦᵀΦ."
    raise _Fail(code, f"{len(y)} observations (σ={sigma:.3g}): expected covariance diagonal "
                f"{np.round(np.diag(want_cov), 5).tolist()}, got {np.round(np.diag(cov), 5).tolist()}." + hint)


# ------------------------------------------------------------------ (e) BatchMIG
def _random_cov(rng, n):
    a = rng.normal(size=(n, n // 2 + 2))
    return a @ a.T / a.shape[1] + 1e-3 * np.eye(n)


def _best_remaining(pool, chosen, scores) -> int:
    remaining = [i for i, p in enumerate(pool) if p not in chosen]
    return int(pool[remaining[int(np.argmax(np.asarray(scores)[remaining]))]])


def _batch_mig_cases(rng, hidden):
    from jtk import active

    cases = []
    for case in range(6 if not hidden else 3):
        n = int(rng.integers(10, 24)) if not hidden else int(rng.integers(30, 40))
        cov = _random_cov(rng, n)
        perm = rng.permutation(n)
        pool, test = np.sort(perm[: n // 2]), np.sort(perm[n // 2:])
        if hidden:  # unsorted index arrays, a nearly noise-free pool, and the very first step
            pool, test = rng.permutation(pool), rng.permutation(test)
        noise_var = float(rng.choice([0.01, 0.1, 1.0])) if not hidden else (1e-4, 0.1, 0.5)[case]
        steps = int(rng.integers(1, 4)) if not hidden else (0, 2, 5)[case]
        order = np.asarray(active.batch_mig(cov, pool, test, noise_var, steps + 1))
        cases.append((cov, [int(i) for i in order[:steps]], pool, test, noise_var))
    return cases


def _batch_mig_judge(args, got):
    from jtk import active

    cov, chosen, pool, test, noise_var = args
    got = _as_int(got, "one index into cov")
    order = np.asarray(active.batch_mig(cov, pool, test, noise_var, len(chosen) + 1))
    want = int(order[len(chosen)])
    if got == want:
        return
    code, hint = "batchmig.wrong_pick", (" Hint: for each candidate p, compute −Σ_u log(1 − ρ²_u(S ∪ {p})) with "
                                         "the noise variance on the diagonal of Σ_SS; return the argmax.")
    if got in chosen:
        code, hint = "batchmig.repeats_chosen", " Hint: skip the points already chosen."
    elif got not in pool:
        code, hint = "batchmig.outside_pool", " Hint: choose among the pool indices only."
    elif got == _best_remaining(pool, chosen, active.mig_scores(cov, pool, test, noise_var)):
        code, hint = "batchmig.used_mig", (" Hint: that is MIG's best single point. BatchMIG scores a candidate p by "
                                           "the information the whole batch chosen + [p] gives about the test "
                                           "points: −Σ_u log(1 − ρ²_u(S ∪ {p})).")
    elif got == _best_remaining(pool, chosen, np.diag(cov)[pool]):
        code, hint = "batchmig.used_tig", (" Hint: that is the highest-variance point (TIG); BatchMIG needs the "
                                           "correlation with the test set.")
    elif noise_var > 0 and got == int(np.asarray(active.batch_mig(cov, pool, test, 1e-9, len(chosen) + 1))[-1]):
        code, hint = "batchmig.no_noise", " Hint: add the noise variance to the diagonal of Σ_SS."
    raise _Fail(code, f"pool {np.asarray(pool).tolist()}, chosen {chosen}, noise {noise_var}: expected index {want}, "
                f"got {got}." + hint)


# ------------------------------------------------------------------ (f) Thompson sampling
_THOMPSON_SEEDS = 400


def _thompson_cases(rng, hidden):
    sizes = [(int(rng.integers(4, 9)), int(rng.integers(3, 7))) for _ in range(3)] if not hidden else [
        (1, 5), (12, 20)]  # a single member (no randomness), many actions
    return [(rng.normal(size=(k, n, 2)) * 2,) for k, n in sizes]


def _thompson_call(fn, args):
    (logits,) = args
    return [fn(logits.copy(), s) for s in range(_THOMPSON_SEEDS)]


def _thompson_judge(args, actions):
    (logits,) = args
    n = logits.shape[1]
    if isinstance(actions, Opaque):
        raise _Fail("generic.not_an_index", f"return one action index (an int), got {actions!r:.60}")
    arr = np.asarray(actions)
    if arr.dtype.kind not in "iuf" or arr.shape != (_THOMPSON_SEEDS,) or np.any(arr != np.round(arr)):
        raise _Fail("generic.not_an_index", "return one action index (an int) for each seed.")
    picks = arr.astype(int)
    if np.any((picks < 0) | (picks >= n)):
        raise _Fail("thompson.out_of_range", f"the action must be an index in [0, {n}), got {picks.min()}..{picks.max()}.")
    p_reward = np.exp(log_softmax(logits, -1))[..., 1]  # [K, N]
    exact = np.bincount(p_reward.argmax(1), minlength=n) / len(logits)
    freq = np.bincount(picks, minlength=n) / len(picks)
    if 0.5 * np.abs(freq - exact).sum() <= 0.12:
        return
    code, hint = "thompson.wrong_distribution", (" Hint: draw one member at random with the seed, then take the "
                                                 "action with the highest P(reward) under that member.")
    greedy = int(p_reward.mean(0).argmax())
    if freq[greedy] == 1.0:
        code, hint = "thompson.greedy_on_mean", (
            " Hint: you always take the action that is best under the *mean* prediction — a marginal-only "
            "agent that never explores. Sample one member (one whole function), then act greedily on it.")
    elif len(set(picks.tolist())) == 1:
        code, hint = "thompson.ignores_seed", " Hint: use the seed to draw a member at random, a different one for different seeds."
    elif np.allclose(freq, 1 / n, atol=0.1):
        code, hint = "thompson.uniform", " Hint: you picked actions uniformly; pick a random member, then its best action."
    elif np.allclose(freq, np.bincount(p_reward.argmin(1), minlength=n) / len(logits), atol=0.12):
        code, hint = "thompson.argmin", " Hint: a reward is label 1: take the action whose P(y = 1) is highest."
    raise _Fail(code, f"{len(logits)} members, {n} actions: Thompson sampling should pick actions with probabilities "
                f"{np.round(exact, 2).tolist()}, your frequencies over {_THOMPSON_SEEDS} seeds were "
                f"{np.round(freq, 2).tolist()}." + hint)


# ------------------------------------------------------------------ the registry
@dataclasses.dataclass(frozen=True)
class Check:
    """One exercise check: how to draw cases, call the answer, and judge it.

    Attributes:
      name: registry key, e.g. "coin_joint".
      title: what the student sees, e.g. "Exercise 1a (coin joint)".
      cases: (rng, hidden) -> list of argument tuples.
      judge: (args, answer) -> None, or raises _Fail(code, message).
      summary: the pass line's detail.
      forbidden: "module:qualname" of the jtk functions that are the answer.
      call: (fn, args) -> answer; default ``fn(*copies of args)``.
    """

    name: str
    title: str
    cases: Callable[[np.random.Generator, bool], list]
    judge: Callable[[tuple, Any], None]
    summary: str
    forbidden: tuple[str, ...] = ()
    call: Callable | None = None


_CHECKS = {c.name: c for c in [
    Check("coin_joint", "Exercise 1a (coin joint)", _coin_joint_cases, _coin_joint_judge,
          "{n} coins, including the two coins of Fig. 1",
          ("jtk.envs.coin:Coin.joint", "jtk.envs.coin:Coin.sequence_probability", "jtk.checks:_coin_joint")),
    Check("try_then_commit", "Exercise 1b (value of the joint)", _try_then_commit_cases, _try_then_commit_judge,
          "{n} coins and horizons", ("jtk.checks:try_then_commit_value",)),
    Check("joint_log_likelihood", "Exercise 2 (Monte Carlo joint log-likelihood)", _joint_ll_cases, _joint_ll_judge,
          "{n} random cases, including large logits",
          ("jtk.likelihood:joint_log_likelihood", "jtk.likelihood:_joint_ll", "jtk.checks:_reference_joint_ll")),
    Check("prior_member", "Exercise 3 (randomized prior function)", _prior_member_cases, _prior_member_judge,
          "{n} random networks and prior scales",
          ("jtk.agents.ensemble:EnsembleAgent.components", "jtk.agents.ensemble:EnsembleAgent.sample",
           "jtk.checks:_mlp")),
    Check("blr_posterior", "Exercise 4 (BLR anchor posterior)", _blr_cases, _blr_judge,
          "{n} random design matrices and noise levels",
          ("jtk.regression.blr:BayesianLinearRegression.fit", "jtk.regression.blr:BayesianLinearRegression._factor",
           "jtk.regression.blr:BayesianLinearRegression.fit_predict_many")),
    Check("batch_mig_step", "Exercise 5 (one greedy BatchMIG step)", _batch_mig_cases, _batch_mig_judge,
          "{n} random covariances",
          ("jtk.active:batch_mig", "jtk.active:_batch_mig", "jtk.active:batch_mig_score", "jtk.active:select")),
    Check("thompson_action", "Exercise 6 (Thompson sampling step)", _thompson_cases, _thompson_judge,
          "action frequencies match Thompson sampling on {n} random ensembles", (), _thompson_call),
]}

FORBIDDEN = {name: c.forbidden for name, c in _CHECKS.items()}
"""For each check, the jtk functions that are its answer and raise while the student's function runs."""

MISCONCEPTIONS = sorted({
    "uses_reference", "generic.not_implemented", "generic.exception", "generic.not_callable", "generic.not_numeric",
    "generic.wrong_shape", "generic.nonfinite", "generic.not_an_index", "generic.no_result", "generic.judge_error",
    "generic.timeout", "generic.wrong_value",
    "coin.wrong_shape", "coin.wrong_value", "coin.product_of_marginals", "coin.heads_tails_swapped",
    "coin.not_normalised", "ttc.wrong_value", "ttc.marginal_only", "ttc.no_update", "ttc.horizon_off_by_one",
    "jll.wrong_value", "jll.mean_of_logs", "jll.product_of_marginals", "jll.forgot_divide_by_m", "jll.wrong_label",
    "prior.wrong_value", "prior.unscaled", "prior.multiplied", "prior.missing_trained", "prior.missing_prior",
    "blr.not_a_pair", "blr.regularised_mean", "blr.wrong_covariance", "blr.missing_noise_variance",
    "blr.std_not_variance", "blr.regularised_covariance", "batchmig.wrong_pick", "batchmig.repeats_chosen",
    "batchmig.outside_pool", "batchmig.used_mig", "batchmig.used_tig", "batchmig.no_noise",
    "thompson.out_of_range", "thompson.wrong_distribution", "thompson.greedy_on_mean", "thompson.ignores_seed",
    "thompson.uniform", "thompson.argmin"})
"""Every misconception code a failed case can carry."""


# ------------------------------------------------------------------ calling the student's function
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


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


def _capture(check: Check, fn: Callable, args: tuple, budget: _Budget | None = None):
    """The student's answer for one case, or a Raised saying what happened instead.

    Args:
      budget: the CPU time left to the call this case belongs to (None: no limit); past it the case is a timeout.
    """
    if not callable(fn):
        return Raised("not_callable", type(fn).__name__)
    guard = _Guard(_forbidden_codes(check.forbidden))
    try:
        with _Timer(budget), guard:
            out = check.call(fn, args) if check.call else fn(*(_copy(a) for a in args))
    except _OutOfTime:
        return Raised("timeout", f"{budget.run_seconds:.3g}")
    except _UsesReference as err:
        return Raised("uses_reference", err.name)
    except NotImplementedError:
        return Raised("not_implemented")
    except (Exception, SystemExit) as err:  # noqa: BLE001 - every student error is reported, never a crash
        frames = traceback.extract_tb(err.__traceback__)
        where = f" (line {frames[-1].lineno}: {frames[-1].line!r})" if len(frames) > 1 else ""
        return Raised("exception", f"{type(err).__name__}: {err}{where}"[:400])
    if guard.removed:
        return Raised("guard_removed")
    return out


def _raised_failure(raised: Raised, args) -> tuple[str, str]:
    if raised.kind == "not_implemented":
        return "generic.not_implemented", ("not implemented yet — replace the `raise NotImplementedError(...)` line "
                                           "with your answer, then run this check again.")
    if raised.kind == "uses_reference":
        return "uses_reference", (f"your function calls jtk's {raised.text}, which computes the answer to this "
                                  f"exercise. Write it yourself (numpy and the functions the exercise names are fine).")
    if raised.kind == "guard_removed":
        return "uses_reference", "your function switched off the check's guard (sys.setprofile); that is not allowed."
    if raised.kind == "timeout":
        budget = (f" its {raised.text} s of CPU time (JAX compilation not counted)" if raised.text
                  else " its CPU-time budget")
        return "generic.timeout", (f"your function used up{budget} without returning (an infinite loop, or a loop "
                                   f"that never ends for these inputs?); the remaining cases were not tried.")
    if raised.kind == "not_callable":
        return "generic.not_callable", (f"expected a function, got {raised.text}. Pass the function itself, without "
                                        f"calling it (e.g. check(my_function), not check(my_function())).")
    return "generic.exception", f"your function raised {raised.text}. Inputs: {_describe_args(args)}."


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
        if arr is not None and arr.dtype.kind in "biuf" and arr.size <= _MAX_RECORD_VALUES:
            return _npy(arr)
        return {"seq": [encode(v, depth + 1) for v in list(value)[:16]]}
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001
        arr = None
    if arr is not None and arr.dtype.kind in "biuf":
        if arr.size > _MAX_RECORD_VALUES:
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
            raw = base64.b64decode(str(obj["npy"])[: 16 * _MAX_RECORD_VALUES], validate=True)
            arr = np.load(io.BytesIO(raw), allow_pickle=False)
        except Exception:  # noqa: BLE001 - a forged or broken record is just a wrong answer
            return Opaque("invalid", "an unreadable record")
        return arr if arr.dtype.kind in "biuf" else Opaque("invalid", "an unreadable record")
    if "seq" in obj and isinstance(obj["seq"], list):
        return tuple(decode(v, depth + 1) for v in obj["seq"][:16])
    return Opaque(str(obj.get("opaque", "object"))[:40], str(obj.get("repr", ""))[:200])


# ------------------------------------------------------------------ running and judging
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


def _rng(name: str, seed: int, hidden: bool) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), int(hidden)])


def _judge(check: Check, cases: list, answers: list, hidden: bool) -> Result:
    failures = []
    if len(answers) != len(cases):
        failures = [Failure(i, "generic.no_result", "no answer was recorded for this case.") for i in range(len(cases))]
        return Result(check.name, check.title, hidden, len(cases), tuple(failures))
    for i, (args, answer) in enumerate(zip(cases, answers)):
        answer = decode(answer)
        if isinstance(answer, Raised):
            failures.append(Failure(i, *_raised_failure(answer, args)))
            continue
        try:
            check.judge(args, answer)
        except _Fail as err:
            failures.append(Failure(i, err.code, str(err)))
        except Exception as err:  # noqa: BLE001 - answers are untrusted: a judge never crashes on them
            failures.append(Failure(i, "generic.judge_error", f"your answer could not be compared ({type(err).__name__}: "
                                                              f"{str(err)[:120]}); return the type the exercise asks for."))
    return Result(check.name, check.title, hidden, len(cases), tuple(failures))


def evaluate(name: str, answers: list, seed: int, hidden: bool = False) -> Result:
    """Judges recorded answers (from :func:`encode`) on the cases that ``seed`` draws; the grader's side."""
    check = _check_by_name(name)
    cases = check.cases(_rng(name, seed, hidden), hidden)
    return _judge(check, cases, answers, hidden)


def _check_by_name(name: str) -> Check:
    if name not in _CHECKS:
        raise ValueError(f"unknown check {name!r}; known: {sorted(_CHECKS)}")
    return _CHECKS[name]


# The grading context: set by the cells `jtk grade` runs (see jtk.exercises); None in a student's notebook.
_CONTEXT: dict | None = None


NOTEBOOK_CALL_SECONDS = 60.0
"""CPU seconds of one check call in a notebook (``jtk grade`` sets its own): the student's function may run for
``RUN_SHARE`` of them, JAX compilation aside (see _Budget)."""


def _grading_context(seed: int, call_seconds: float = 10.0, compile_seconds: float | None = None) -> None:
    """Called by the grader at the top of each check cell it runs: record answers, use this seed, this many CPU
    seconds per check call and credit this much JAX compilation per call (None: ``call_seconds``; see _Budget)."""
    global _CONTEXT
    _CONTEXT = {"seed": int(seed), "call_seconds": float(call_seconds),
                "compile_seconds": float(call_seconds if compile_seconds is None else compile_seconds)}


def _emit(record: dict) -> None:
    try:
        from IPython.display import display
    except ImportError:  # pragma: no cover - jtk grade always runs in IPython
        return
    display({MIME: record}, raw=True)


def run_check(name: str, fn: Callable, seed=None, hidden: bool = False) -> Result | None:
    """Draws the cases, calls ``fn`` on each and judges it; under ``jtk grade`` records the answers instead.

    Returns:
      The :class:`Result`, or None when the answers were recorded for the grader.
    """
    check = _check_by_name(name)
    context = _CONTEXT
    seed = case_seed(context["seed"] if context else seed)
    cases = check.cases(_rng(name, seed, hidden), hidden)
    # The cases of one call share a budget of the process's CPU time (user + system, all threads), which a busy
    # machine does not shrink: see _Budget.
    seconds = (context["call_seconds"], context["compile_seconds"]) if context else (NOTEBOOK_CALL_SECONDS,)
    with _Budget(*seconds) as budget:
        answers = []
        for args in cases:  # after a timeout the remaining cases (of this grading cell) are not tried
            late = (answers and answers[-1].get("raised") == "timeout") or (context or {}).get("timed_out")
            answers.append(encode(Raised("timeout") if late or budget.left() <= 0 else _capture(check, fn, args, budget)))
    if context is not None and answers and answers[-1].get("raised") == "timeout":
        context["timed_out"] = True
    if context is not None:
        _emit({"check": name, "hidden": bool(hidden), "answers": answers})
        print(f"{check.title}{' (hidden cases)' if hidden else ''}: {len(cases)} answers recorded for grading")
        return None
    return _judge(check, cases, answers, hidden)


def _report(result: Result) -> None:
    which = " (hidden cases)" if result.hidden else ""
    if result.ok:
        print(f"{PASS} {result.title}{which}: passed — {_check_by_name(result.name).summary.format(n=result.total)}")
        return
    first = result.failures[0]
    raise CheckFailed(f"{result.title}{which}: {result.passed} of {result.total} cases passed. "
                      f"Case {first.case + 1}: {first.message}", first.code)


def _public(name: str, answer_name: str, doc: str):
    def check(fn: Callable, seed=None, hidden: bool = False) -> None:
        result = run_check(name, fn, seed=seed, hidden=hidden)
        if result is not None:
            _report(result)

    check.__name__ = check.__qualname__ = f"check_{name}"
    check.__doc__ = (f"{doc}\n\n    Args:\n      {answer_name}: the student's function.\n      seed: seed of the "
                     f"random cases (None: fresh cases); under ``jtk grade`` the grader's seed is used.\n      hidden: "
                     f"draw the hidden case family instead of the visible one.\n\n    Raises:\n      CheckFailed: "
                     f"a case failed; the message names it and gives a hint.\n    ")
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

CHECKS = {name: globals()[f"check_{name}"] for name in _CHECKS}
"""The public check functions by name."""
