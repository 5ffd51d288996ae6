"""Checks for the exercise notebooks: fresh random cases, jtk as the reference, hints a student can act on.

Every ``check_*`` function takes the student's function, calls it on freshly
drawn random cases (so no fixed number can be copied), compares with jtk's own
implementation, and either prints one pass line or raises ``AssertionError``
whose message names the case, what was expected and what was got, and a hint.
A check never crashes on a wrong answer: exceptions, wrong types, wrong shapes
and NaNs in the student's result are all reported as ``AssertionError``.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable

import numpy as np
from scipy.special import log_softmax, logsumexp

PASS = "✅"


_Fail = AssertionError  # what a check raises: students see a plain AssertionError with the hint


def _rng(seed):
    return np.random.default_rng(seed)


def _call(title: str, fn: Callable, *args, **kwargs) -> Any:
    """Calls the student's function; any exception becomes an AssertionError with a hint."""
    if not callable(fn):
        raise _Fail(f"{title}: expected a function, got {type(fn).__name__}. Pass the function itself, "
                    f"without calling it (e.g. check(my_function), not check(my_function())).")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise _Fail(f"{title}: not implemented yet — replace the `raise NotImplementedError(...)` line "
                    f"with your answer, then run this check again.") from None
    except Exception as err:  # noqa: BLE001 - every student error is reported, never a crash
        where = traceback.extract_tb(err.__traceback__)[-1]
        raise _Fail(f"{title}: your function raised {type(err).__name__}: {err} (line {where.lineno}: "
                    f"{where.line!r}). Inputs: {_describe_args(args)}.") from None


def _describe_args(args) -> str:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(f"array of shape {a.shape}")
        else:
            out.append(repr(a) if len(repr(a)) < 60 else type(a).__name__)
    return ", ".join(out)


def _as_array(title: str, value, shape=None, what: str = "the result") -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _Fail(f"{title}: {what} should be numeric, got {type(value).__name__}: {value!r:.80}") from None
    if shape is not None and arr.shape != tuple(shape):
        raise _Fail(f"{title}: {what} should have shape {tuple(shape)}, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise _Fail(f"{title}: {what} contains NaN or inf ({arr.ravel()[:6]}...). "
                    f"Hint: work in log space (logsumexp) to avoid overflow/underflow.")
    return arr


def _passed(title: str, detail: str) -> None:
    print(f"{PASS} {title}: passed — {detail}")


# ------------------------------------------------------------------ (a) coins
def _coin_joint(biases, prior, flips):
    from jtk.envs import Coin

    return Coin(tuple(biases), tuple(prior)).joint(flips)


def check_coin_joint(coin_joint: Callable, seed=None) -> None:
    """Exercise 1a: ``coin_joint(biases, prior, flips)`` → array of shape (2,)*flips, index 1 = heads."""
    title = "Exercise 1a (coin joint)"
    rng = _rng(seed)
    cases = [((0.5,), (1.0,), 2), ((0.0, 1.0), (0.5, 0.5), 2)]
    for _ in range(8):
        b = int(rng.integers(1, 4))
        w = rng.random(b) + 0.05
        cases.append((tuple(np.round(rng.random(b), 3)), tuple(w / w.sum()), int(rng.integers(1, 5))))
    for biases, prior, flips in cases:
        got = _as_array(title, _call(title, coin_joint, biases, prior, flips))
        want = _coin_joint(biases, prior, flips)
        if got.shape != want.shape:
            raise _Fail(f"{title}: for flips={flips} the joint should have shape {want.shape} (one axis per flip), "
                        f"got {got.shape}.")
        if not np.allclose(got, want, atol=1e-8):
            hint = ""
            marg = np.dot(prior, biases)
            indep = np.ones(want.shape)
            for axis in range(flips):
                shape = [1] * flips
                shape[axis] = 2
                indep = indep * np.array([1 - marg, marg]).reshape(shape)
            if np.allclose(got, indep, atol=1e-8):
                hint = (" Hint: you multiplied the one-flip marginals, as if flips were independent. They are only "
                        "independent given the bias: average Π_t P(o_t | bias) over the prior instead.")
            elif np.allclose(got, np.flip(want), atol=1e-8):
                hint = " Hint: index 0 is tails and index 1 is heads."
            raise _Fail(f"{title}: wrong joint for biases={biases}, prior={tuple(np.round(prior, 3))}, "
                        f"flips={flips}: expected {np.round(want, 4).tolist()}, got {np.round(got, 4).tolist()}."
                        + hint)
    _passed(title, f"{len(cases)} coins, including the two coins of Fig. 1")


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


def check_try_then_commit(value_fn: Callable, seed=None) -> None:
    """Exercise 1b: ``value_fn(biases, prior, horizon)`` → expected heads of the try-then-commit policy."""
    title = "Exercise 1b (value of the joint)"
    rng = _rng(seed)
    cases = [((0.5,), (1.0,), 10), ((0.0, 1.0), (0.5, 0.5), 10)]
    for _ in range(8):
        b = int(rng.integers(1, 4))
        w = rng.random(b) + 0.05
        cases.append((tuple(np.round(rng.random(b), 3)), tuple(w / w.sum()), int(rng.integers(2, 30))))
    for biases, prior, horizon in cases:
        got = _as_array(title, _call(title, value_fn, biases, prior, horizon), shape=())
        want = try_then_commit_value(biases, prior, horizon)
        if not np.isclose(got, want, atol=1e-8):
            hint = ""
            if np.isclose(got, horizon * max(np.dot(prior, biases), 0.5)):
                hint = (" Hint: that is the value of deciding from the marginal alone; after the first flip the "
                        "decision maker updates its belief (Coin.posterior) and may switch.")
            raise _Fail(f"{title}: biases={biases}, prior={tuple(np.round(prior, 3))}, horizon={horizon}: "
                        f"expected {want:.6g}, got {float(got):.6g}." + hint)
    _passed(title, f"{len(cases)} coins and horizons")


# ------------------------------------------------------------------ (b) joint log-likelihood
def _reference_joint_ll(logits, y):
    lp = np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0].sum(-1)  # [M]
    return float(logsumexp(lp) - np.log(len(lp)))


def check_joint_log_likelihood(joint_ll: Callable, seed=None) -> None:
    """Exercise 2: ``joint_ll(logits [M, τ, K], y [τ])`` → log (1/M) Σ_m Π_t softmax(logits[m, t])[y_t]."""
    title = "Exercise 2 (Monte Carlo joint log-likelihood)"
    rng = _rng(seed)
    cases = []
    for scale in (1.0, 1.0, 5.0, 300.0):  # the last case overflows exp() without log-space arithmetic
        for _ in range(3):
            m, tau, k = int(rng.integers(2, 8)), int(rng.integers(1, 12)), int(rng.integers(2, 4))
            cases.append((rng.normal(size=(m, tau, k)) * scale, rng.integers(0, k, size=tau)))
    for logits, y in cases:
        got = _as_array(title, _call(title, joint_ll, logits.copy(), y.copy()), shape=())
        want = _reference_joint_ll(logits, y)
        if not np.isclose(got, want, rtol=1e-6, atol=1e-6):
            lp = np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0]  # [M, τ]
            hint = ""
            if np.isclose(got, lp.sum(-1).mean(), atol=1e-6):
                hint = (" Hint: you averaged the log-likelihoods over the M samples. Algorithm 3 averages the "
                        "likelihoods themselves: log of the mean of exp(...) — use logsumexp(...) - log(M).")
            elif np.isclose(got, np.log(np.exp(lp).mean(0)).sum(), atol=1e-6):
                hint = (" Hint: you multiplied the marginal predictive probabilities of each label. Each sample m is "
                        "one function: score it on all τ labels first (sum over τ), then average over m.")
            elif np.isclose(got, logsumexp(lp.sum(-1)), atol=1e-6):
                hint = " Hint: you forgot to divide by M (subtract log M)."
            raise _Fail(f"{title}: logits of shape {logits.shape} (scale {np.abs(logits).max():.3g}), y={y.tolist()}: "
                        f"expected {want:.6g}, got {float(got):.6g}." + hint)
    _passed(title, f"{len(cases)} random cases, including logits of size 300")


# ------------------------------------------------------------------ (c) randomized prior functions
def check_prior_member(member_logits: Callable, seed=None) -> None:
    """Exercise 3: ``member_logits(params, prior_params, x, prior_scale)`` → logits [n, K] of one ensemble+ member."""
    import jax

    from jtk import nets
    from jtk.envs.classification import sample_prior_params

    title = "Exercise 3 (randomized prior function)"
    rng = _rng(seed)
    for case in range(5):
        key = jax.random.key(int(rng.integers(2 ** 31)))
        k1, k2 = jax.random.split(key)
        params = nets.init_mlp(k1, (2, 50, 50, 2))
        prior_params = sample_prior_params(k2)
        x = rng.normal(size=(int(rng.integers(3, 20)), 2))
        scale = float(rng.choice([0.5, 3.0, 30.0]))
        want = np.asarray(nets.mlp_apply(params, x) + scale * nets.mlp_apply(prior_params, x))
        got = _as_array(title, _call(title, member_logits, params, prior_params, x, scale), shape=want.shape)
        if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
            trained, prior = np.asarray(nets.mlp_apply(params, x)), np.asarray(nets.mlp_apply(prior_params, x))
            hint = ""
            if np.allclose(got, trained + prior, atol=1e-4):
                hint = " Hint: multiply the prior network's output by prior_scale."
            elif np.allclose(got, trained * scale * prior, atol=1e-4) or np.allclose(got, trained * prior, atol=1e-4):
                hint = " Hint: the prior function is *added* to the trained network, not multiplied."
            elif np.allclose(got, scale * prior, atol=1e-4):
                hint = " Hint: add the trained network's output too: f(x) = g_θ(x) + scale · p(x)."
            raise _Fail(f"{title}: case {case} (prior_scale={scale}, {len(x)} inputs): expected logits starting "
                        f"{np.round(want[0], 4).tolist()}, got {np.round(got[0], 4).tolist()}." + hint)
    _passed(title, "5 random networks and prior scales")


# ------------------------------------------------------------------ (d) BLR anchor
def check_blr_posterior(blr_posterior: Callable, seed=None) -> None:
    """Exercise 4: ``blr_posterior(phi [n, p], y [n], noise_std)`` → (mean [p], cov [p, p]) under the flat prior."""
    title = "Exercise 4 (BLR anchor posterior)"
    rng = _rng(seed)
    for case in range(6):
        n, p = int(rng.integers(8, 40)), int(rng.integers(1, 5))
        phi = rng.normal(size=(n, p))
        sigma = float(rng.uniform(0.1, 2.0))
        y = phi @ rng.normal(size=p) + sigma * rng.normal(size=n)
        result = _call(title, blr_posterior, phi.copy(), y.copy(), sigma)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _Fail(f"{title}: return a pair (mean, cov), got {type(result).__name__}.")
        mean = _as_array(title, result[0], shape=(p,), what="the posterior mean")
        cov = _as_array(title, result[1], shape=(p, p), what="the posterior covariance")
        gram = phi.T @ phi
        want_mean = np.linalg.solve(gram, phi.T @ y)
        want_cov = sigma ** 2 * np.linalg.inv(gram)
        if not np.allclose(mean, want_mean, rtol=1e-6, atol=1e-8):
            raise _Fail(f"{title}: case {case}: posterior mean should be the least-squares solution "
                        f"(ΦᵀΦ)⁻¹Φᵀy = {np.round(want_mean, 4).tolist()}, got {np.round(mean, 4).tolist()}. Hint: with "
                        f"a flat prior there is no regularisation term.")
        if not np.allclose(cov, want_cov, rtol=1e-6, atol=1e-10):
            hint = ""
            if np.allclose(cov, np.linalg.inv(gram), rtol=1e-6):
                hint = " Hint: multiply by the noise variance σ²."
            elif np.allclose(cov, sigma * np.linalg.inv(gram), rtol=1e-6):
                hint = " Hint: the covariance scales with σ² (the variance), not σ."
            raise _Fail(f"{title}: case {case} (σ={sigma:.3g}): expected covariance diagonal "
                        f"{np.round(np.diag(want_cov), 5).tolist()}, got {np.round(np.diag(cov), 5).tolist()}." + hint)
    _passed(title, "6 random design matrices and noise levels")


# ------------------------------------------------------------------ (e) BatchMIG
def _random_cov(rng, n):
    a = rng.normal(size=(n, n // 2 + 2))
    return a @ a.T / a.shape[1] + 1e-3 * np.eye(n)


def _best_remaining(pool, chosen, scores) -> int:
    remaining = [i for i, p in enumerate(pool) if p not in chosen]
    return int(pool[remaining[int(np.argmax(np.asarray(scores)[remaining]))]])


def check_batch_mig_step(next_pick: Callable, seed=None) -> None:
    """Exercise 5: ``next_pick(cov, chosen, pool, test, noise_var)`` → the pool index BatchMIG adds next."""
    from jtk import active

    title = "Exercise 5 (one greedy BatchMIG step)"
    rng = _rng(seed)
    for case in range(6):
        n = int(rng.integers(10, 24))
        cov = _random_cov(rng, n)
        perm = rng.permutation(n)
        pool, test = np.sort(perm[: n // 2]), np.sort(perm[n // 2:])
        noise_var = float(rng.choice([0.01, 0.1, 1.0]))
        steps = int(rng.integers(1, 4))
        order = np.asarray(active.batch_mig(cov, pool, test, noise_var, steps + 1))
        chosen = order[:steps].tolist()
        got = _call(title, next_pick, cov.copy(), list(chosen), pool.copy(), test.copy(), noise_var)
        try:
            got = int(got)
        except (TypeError, ValueError):
            raise _Fail(f"{title}: return one index into cov (an int), got {type(got).__name__}: {got!r:.60}") from None
        want = int(order[steps])
        if got != want:
            hint = ""
            if got in chosen:
                hint = " Hint: skip the points already chosen."
            elif got not in pool:
                hint = " Hint: choose among the pool indices only."
            elif got == _best_remaining(pool, chosen, active.mig_scores(cov, pool, test, noise_var)):
                hint = (" Hint: that is MIG's best single point. BatchMIG scores a candidate p by the information the "
                        "whole batch chosen + [p] gives about the test points: −Σ_u log(1 − ρ²_u(S ∪ {p})).")
            elif got == _best_remaining(pool, chosen, np.diag(cov)[pool]):
                hint = " Hint: that is the highest-variance point (TIG); BatchMIG needs the correlation with the test set."
            raise _Fail(f"{title}: case {case} (pool {pool.tolist()}, chosen {chosen}, noise {noise_var}): "
                        f"expected index {want}, got {got}." + hint)
    _passed(title, "6 random covariances")


# ------------------------------------------------------------------ (f) Thompson sampling
def check_thompson_action(thompson_action: Callable, seed=None) -> None:
    """Exercise 6: ``thompson_action(member_logits [K, N, 2], seed)`` → the action a Thompson sampler takes.

    The check calls it with many seeds and compares the frequency of each action
    with the exact probability that Thompson sampling picks it (the fraction of
    ensemble members under which it is the best action).
    """
    title = "Exercise 6 (Thompson sampling step)"
    rng = _rng(seed)
    for case in range(3):
        k, n = int(rng.integers(4, 9)), int(rng.integers(3, 7))
        logits = rng.normal(size=(k, n, 2)) * 2
        p_reward = np.exp(log_softmax(logits, -1))[..., 1]  # [K, N]
        exact = np.bincount(p_reward.argmax(1), minlength=n) / k
        picks = []
        for s in range(400):
            a = _call(title, thompson_action, logits.copy(), s)
            try:
                a = int(a)
            except (TypeError, ValueError):
                raise _Fail(f"{title}: return one action index (an int), got {type(a).__name__}") from None
            if not 0 <= a < n:
                raise _Fail(f"{title}: the action must be an index in [0, {n}), got {a}.")
            picks.append(a)
        freq = np.bincount(picks, minlength=n) / len(picks)
        tv = 0.5 * np.abs(freq - exact).sum()
        if tv > 0.12:
            hint = ""
            greedy = int(p_reward.mean(0).argmax())
            if freq[greedy] == 1.0:
                hint = (" Hint: you always take the action that is best under the *mean* prediction — a marginal-only "
                        "agent that never explores. Sample one member (one whole function), then act greedily on it.")
            elif len(set(picks)) == 1:
                hint = " Hint: use the seed to draw a member at random, a different one for different seeds."
            elif np.allclose(freq, 1 / n, atol=0.1):
                hint = " Hint: you picked actions uniformly; pick a random member, then its best action."
            raise _Fail(f"{title}: case {case}: Thompson sampling should pick actions with probabilities "
                        f"{np.round(exact, 2).tolist()}, your frequencies over 400 seeds were "
                        f"{np.round(freq, 2).tolist()}." + hint)
    _passed(title, "action frequencies match Thompson sampling on 3 random ensembles")


CHECKS = {
    "coin_joint": check_coin_joint, "try_then_commit": check_try_then_commit,
    "joint_log_likelihood": check_joint_log_likelihood, "prior_member": check_prior_member,
    "blr_posterior": check_blr_posterior, "batch_mig_step": check_batch_mig_step,
    "thompson_action": check_thompson_action,
}
