"""The judge of the exercise checks: cases, reference answers, partial credit and misconception codes.

This module is the grader's side of a check. It draws a check's cases from a seed (:func:`cases`), and judges
recorded answers against jtk's reference (:func:`judge`, :func:`evaluate`). ``jtk grade`` runs it in the
grader's own process only: the student's code never reaches it. In the grading sandbox this file is replaced by a
stub, and so is every jtk function in :data:`STUBBED` (:mod:`jtk.course.sandbox`). In a student's own notebook,
:mod:`jtk.checks` uses it for the self-check on the visible cases.

How a check is scored: a check cell scores ``points × passed cases / all cases``, summed over every check call in
the cell, visible and hidden alike. A case passes when the answer for it is right; an exception, a wrong type,
shape or value, NaN, or a call to a function that *is* the answer fails it. Every failed case carries a stable
misconception code (:data:`MISCONCEPTIONS`).
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any, Callable

import numpy as np
from scipy.special import log_softmax, logsumexp

from jtk.course._answers import Opaque, Raised, decode

class _Fail(Exception):
    """Raised by a judge: this case is wrong, with a misconception code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code



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
    from jtk.ppc import active

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
    from jtk.ppc import active

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
      seeds: 0 to call the answer once per case, ``fn(*args)``; N to call ``fn(*args, s)`` for s = 0 … N − 1
        and judge the list of N answers.
      fixed: how many of the first (visible, hidden) cases are written in this module rather than drawn: anyone
        can read them, so they are gates (a check earns nothing unless they all pass) and earn nothing alone.
    """

    name: str
    title: str
    cases: Callable[[np.random.Generator, bool], list]
    judge: Callable[[tuple, Any], None]
    summary: str
    forbidden: tuple[str, ...] = ()
    seeds: int = 0
    fixed: tuple[int, int] = (0, 0)


_CHECKS = {c.name: c for c in [
    Check("coin_joint", "Exercise 1a (coin joint)", _coin_joint_cases, _coin_joint_judge,
          "{n} coins, including the two coins of Fig. 1",
          ("jtk.envs.coin:Coin.joint", "jtk.envs.coin:Coin.sequence_probability", "jtk.course._judge:_coin_joint"),
          fixed=(2, 3)),
    Check("try_then_commit", "Exercise 1b (value of the joint)", _try_then_commit_cases, _try_then_commit_judge,
          "{n} coins and horizons",
          ("jtk.course._judge:try_then_commit_value",
           # the lab's decision machinery computes the same value for a coin beside the fair one
           "jtk.envs.coin:expected_cumulative_heads", "jtk.envs.coin:_forward", "jtk.envs.coin:_bayes_value",
           "jtk.envs.coin:decision_table", "jtk.envs.coin:_decision_table", "jtk.envs.coin:decision_summary"),
          fixed=(2, 3)),
    Check("joint_log_likelihood", "Exercise 2 (Monte Carlo joint log-likelihood)", _joint_ll_cases, _joint_ll_judge,
          "{n} random cases, including large logits",
          ("jtk.likelihood:joint_log_likelihood", "jtk.likelihood:_joint_ll", "jtk.course._judge:_reference_joint_ll",
           # the testbed's exact mixture likelihood is the same formula with uniform weights
           "jtk.likelihood:mixture_joint_log_likelihood", "jtk.likelihood:mixture_kl",
           "jtk.likelihood:mixture_kl_by_tau")),
    Check("prior_member", "Exercise 3 (randomized prior function)", _prior_member_cases, _prior_member_judge,
          "{n} random networks and prior scales",
          ("jtk.agents.ensemble:EnsembleAgent.components", "jtk.agents.ensemble:EnsembleAgent.sample",
           "jtk.course._judge:_mlp")),
    Check("blr_posterior", "Exercise 4 (BLR anchor posterior)", _blr_cases, _blr_judge,
          "{n} random design matrices and noise levels",
          ("jtk.regression.blr:BayesianLinearRegression.fit", "jtk.regression.blr:BayesianLinearRegression._factor",
           "jtk.regression.blr:BayesianLinearRegression.fit_predict_many")),
    Check("batch_mig_step", "Exercise 5 (one greedy BatchMIG step)", _batch_mig_cases, _batch_mig_judge,
          "{n} random covariances",
          ("jtk.ppc.active:batch_mig", "jtk.ppc.active:_batch_mig", "jtk.ppc.active:batch_mig_score", "jtk.ppc.active:select",
           # MIG's best point is BatchMIG's first pick
           "jtk.ppc.active:mig", "jtk.ppc.active:mig_scores", "jtk.ppc.active:_mig_scores", "jtk.ppc.active:select_many")),
    Check("thompson_action", "Exercise 6 (Thompson sampling step)", _thompson_cases, _thompson_judge,
          "action frequencies match Thompson sampling on {n} random ensembles", (), _THOMPSON_SEEDS),
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

STUBBED = tuple(sorted({path for c in _CHECKS.values() for path in c.forbidden if not path.startswith("jtk.course._judge:")}))
"""The jtk functions (``"module:qualname"``) that compute an exercise's answer or judge one, outside this module:
every function that computes an answer, found by reading jtk for each exercise's formula (the judges use only
this module, numpy and these).

In the grading sandbox each is a stub that raises :class:`jtk.course._answers.NotAvailable`, and this module is a stub
as a whole (:func:`jtk.course.sandbox.stubbed_package`)."""


# ------------------------------------------------------------------ judging answers
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




def _rng(name: str, seed: int, hidden: bool) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), int(hidden)])


def check_by_name(name: str) -> Check:
    """The registered :class:`Check` called ``name``.

    Raises:
      ValueError: an unknown name.
    """
    if name not in _CHECKS:
        raise ValueError(f"name (the check) must be one of {sorted(_CHECKS)}, got {name!r}")
    return _CHECKS[name]


def cases(name: str, seed: int, hidden: bool = False) -> list:
    """The argument tuples of check ``name``'s visible (or hidden) cases drawn from ``seed``."""
    check = check_by_name(name)
    return check.cases(_rng(name, seed, hidden), hidden)


def judge(name: str, cases: list, answers: list, hidden: bool = False) -> Result:
    """Judges ``answers`` (records of :func:`jtk.course._answers.encode`, one per case) on ``cases``.

    Never raises for what the answers hold: a missing, forged or broken record is a failed case.
    """
    check = check_by_name(name)
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
    """Judges recorded answers on the cases that ``seed`` draws (:func:`cases`, then :func:`judge`)."""
    return judge(name, cases(name, seed, hidden), answers, hidden)
