"""What a student writes for each misconception the exercise checks know (``jtk.checks.MISCONCEPTIONS``).

One wrong answer per specific code, keyed by the check's name: tests/test_checks.py holds that the check gives each
its code, and tests/test_exercise_after_checks.py that the cells after each exercise's check print something else
for it than for the solution. The catch-all codes (``*.wrong_value``, ``*.wrong_pick``, ...) name no particular
mistake and have no entry; a naive answer that leaves log space is listed under the generic code the check gives it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, logsumexp, softmax

from jtk import nets

CATCH_ALL = {"coin.wrong_value", "ttc.wrong_value", "jll.wrong_value", "prior.wrong_value", "blr.wrong_covariance",
             "batchmig.wrong_pick", "thompson.wrong_distribution"}
"""Codes a judge gives when no known mistake matches: no single wrong answer stands for them."""


# ------------------------------------------------------------------ exercise 1a: the joint of several flips
def _joint(biases, prior, flips, weights=True):
    out = np.zeros((2,) * flips)
    for idx in np.ndindex(*out.shape):
        h = sum(idx)
        out[idx] = sum((p if weights else 1.0) * b ** h * (1 - b) ** (flips - h) for b, p in zip(biases, prior))
    return out


def coin_product_of_marginals(biases, prior, flips):
    m = float(np.dot(prior, biases))
    out = np.ones((2,) * flips)
    for idx in np.ndindex(*out.shape):
        out[idx] = np.prod([m if o else 1 - m for o in idx])
    return out


COIN_JOINT = {
    "coin.product_of_marginals": coin_product_of_marginals,
    "coin.heads_tails_swapped": lambda b, p, f: np.flip(_joint(b, p, f)),
    "coin.not_normalised": lambda b, p, f: _joint(b, p, f, weights=False),
    "coin.wrong_shape": lambda b, p, f: _joint(b, p, f).ravel(),
}


# ------------------------------------------------------------------ exercise 1b: try, then commit
def _ttc(biases, prior, horizon, update=True, first=True):
    b, p = np.asarray(biases, float), np.asarray(prior, float)
    heads = float(p @ b)
    value = heads if first else 0.0
    for outcome, prob in ((1, heads), (0, 1 - heads)):
        if prob > 0:
            w = p * (b if outcome else 1 - b)
            post = float(w @ b / w.sum()) if update else heads
            value += prob * (horizon - 1) * max(post, 0.5)
    return value


TRY_THEN_COMMIT = {
    "ttc.marginal_only": lambda b, p, h: h * max(float(np.dot(p, b)), 0.5),
    "ttc.no_update": lambda b, p, h: _ttc(b, p, h, update=False),
    "ttc.horizon_off_by_one": lambda b, p, h: _ttc(b, p, h, first=False),  # the first flip not counted
}


# ------------------------------------------------------------------ exercise 2: the joint log-likelihood
def _per_sample(logits, y):
    return np.take_along_axis(log_softmax(logits, -1), np.asarray(y)[None, :, None], -1)[..., 0]  # [M, τ]


def jll_naive(logits, y):
    """Averages products of probabilities outside log space: right on paper, −inf once the products underflow."""
    probs = np.take_along_axis(softmax(logits, -1), np.asarray(y)[None, :, None], -1)[..., 0]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return float(np.log(np.mean(np.prod(probs, axis=-1))))


JOINT_LOG_LIKELIHOOD = {
    "jll.mean_of_logs": lambda lg, y: float(_per_sample(lg, y).sum(-1).mean()),
    "jll.product_of_marginals": lambda lg, y: float(np.log(np.exp(_per_sample(lg, y)).mean(0)).sum()),
    "jll.forgot_divide_by_m": lambda lg, y: float(logsumexp(_per_sample(lg, y).sum(-1))),
    "jll.wrong_label": lambda lg, y: float(logsumexp(_per_sample(lg, 1 - np.asarray(y)).sum(-1))
                                           - np.log(len(lg))),
    "generic.nonfinite": jll_naive,
}


# ------------------------------------------------------------------ exercise 3: a randomized prior function
PRIOR_MEMBER = {
    "prior.unscaled": lambda p, q, x, s: nets.mlp_apply(p, x) + nets.mlp_apply(q, x),
    "prior.multiplied": lambda p, q, x, s: nets.mlp_apply(p, x) * s * nets.mlp_apply(q, x),
    "prior.missing_trained": lambda p, q, x, s: s * nets.mlp_apply(q, x),
    "prior.missing_prior": lambda p, q, x, s: nets.mlp_apply(p, x),
}


# ------------------------------------------------------------------ exercise 4: the BLR anchor
def _gram_inv(phi, ridge=0.0):
    return np.linalg.inv(phi.T @ phi + ridge * np.eye(phi.shape[1]))


BLR_POSTERIOR = {
    "blr.not_a_pair": lambda phi, y, s: _gram_inv(phi) @ phi.T @ y,
    "blr.regularised_mean": lambda phi, y, s: (_gram_inv(phi, 1.0) @ phi.T @ y, s ** 2 * _gram_inv(phi)),
    "blr.missing_noise_variance": lambda phi, y, s: (_gram_inv(phi) @ phi.T @ y, _gram_inv(phi)),
    "blr.std_not_variance": lambda phi, y, s: (_gram_inv(phi) @ phi.T @ y, s * _gram_inv(phi)),
    "blr.regularised_covariance": lambda phi, y, s: (_gram_inv(phi) @ phi.T @ y, s ** 2 * _gram_inv(phi, 1.0)),
}


# ------------------------------------------------------------------ exercise 5: one BatchMIG step
def _batch_score(cov, s, test, noise_var):
    sig_ss = cov[np.ix_(s, s)] + noise_var * np.eye(len(s))
    sig_us = cov[np.ix_(test, s)]
    rho2 = np.einsum("us,st,ut->u", sig_us, np.linalg.inv(sig_ss), sig_us) / np.diag(cov)[test]
    return -np.log1p(-np.minimum(rho2, 1 - 1e-12)).sum()


def _greedy(candidates, score):
    return int(candidates[int(np.argmax([score(p) for p in candidates]))])


def _remaining(pool, chosen):
    return [int(p) for p in pool if p not in chosen]


BATCH_MIG_STEP = {
    "batchmig.repeats_chosen": lambda cov, chosen, pool, test, nv: _greedy(
        [int(p) for p in pool], lambda p: _batch_score(cov, [p], test, nv)),
    "batchmig.outside_pool": lambda cov, chosen, pool, test, nv: _greedy(
        [i for i in range(len(cov)) if i not in chosen],
        lambda p: _batch_score(cov, list(chosen) + [p], test, nv)),
    "batchmig.used_mig": lambda cov, chosen, pool, test, nv: _greedy(
        _remaining(pool, chosen), lambda p: _batch_score(cov, [p], test, nv)),
    "batchmig.used_tig": lambda cov, chosen, pool, test, nv: _greedy(_remaining(pool, chosen), lambda p: cov[p, p]),
    "batchmig.no_noise": lambda cov, chosen, pool, test, nv: _greedy(
        _remaining(pool, chosen), lambda p: _batch_score(cov, list(chosen) + [p], test, 1e-9)),
}


# ------------------------------------------------------------------ exercise 6: one Thompson-sampling step
def _p_reward(logits):
    return softmax(np.asarray(logits), -1)[..., 1]  # [K, N]


THOMPSON_ACTION = {
    "thompson.greedy_on_mean": lambda lg, seed: int(np.argmax(_p_reward(lg).mean(0))),
    "thompson.ignores_seed": lambda lg, seed: int(np.argmax(_p_reward(lg)[0])),
    "thompson.uniform": lambda lg, seed: int(np.random.default_rng(seed).integers(np.shape(lg)[1])),
    "thompson.argmin": lambda lg, seed: int(np.argmin(_p_reward(lg)[np.random.default_rng(seed).integers(len(lg))])),
    "thompson.out_of_range": lambda lg, seed: int(np.argmax(
        _p_reward(lg)[np.random.default_rng(seed).integers(len(lg))])) + 1,
}

WRONG_ANSWERS = {
    "coin_joint": COIN_JOINT, "try_then_commit": TRY_THEN_COMMIT, "joint_log_likelihood": JOINT_LOG_LIKELIHOOD,
    "prior_member": PRIOR_MEMBER, "blr_posterior": BLR_POSTERIOR, "batch_mig_step": BATCH_MIG_STEP,
    "thompson_action": THOMPSON_ACTION,
}
"""check name → {misconception code: a wrong answer the check gives that code}."""
