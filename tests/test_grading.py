"""Every check passes a right answer, gives a specific hint for a plausible wrong one, and never crashes."""

import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp

from jtk import grading, nets


# ---------- right answers
def coin_joint(biases, prior, flips):
    out = np.zeros((2,) * flips)
    for idx in np.ndindex(*out.shape):
        h = sum(idx)
        out[idx] = sum(p * b ** h * (1 - b) ** (flips - h) for b, p in zip(biases, prior))
    return out


def joint_ll(logits, y):
    lp = np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0].sum(-1)
    return logsumexp(lp) - np.log(len(lp))


def member_logits(params, prior_params, x, prior_scale):
    return nets.mlp_apply(params, x) + prior_scale * nets.mlp_apply(prior_params, x)


def blr_posterior(phi, y, noise_std):
    gram_inv = np.linalg.inv(phi.T @ phi)
    return gram_inv @ phi.T @ y, noise_std ** 2 * gram_inv


def thompson_action(member_logits, seed):
    k = np.random.default_rng(seed).integers(len(member_logits))
    return int(np.argmax(member_logits[k, :, 1] - member_logits[k, :, 0]))


def next_pick(cov, chosen, pool, test, noise_var):
    best, best_score = None, -np.inf
    for p in pool:
        if p in chosen:
            continue
        s = list(chosen) + [p]
        sig_ss = cov[np.ix_(s, s)] + noise_var * np.eye(len(s))
        sig_us = cov[np.ix_(test, s)]
        rho2 = np.einsum("us,st,ut->u", sig_us, np.linalg.inv(sig_ss), sig_us) / np.diag(cov)[test]
        score = -np.log1p(-rho2).sum()
        if score > best_score:
            best, best_score = p, score
    return best


RIGHT = {
    "coin_joint": coin_joint, "try_then_commit": lambda b, p, h: grading.try_then_commit_value(b, p, h),
    "joint_log_likelihood": joint_ll, "prior_member": member_logits, "blr_posterior": blr_posterior,
    "batch_mig_step": next_pick, "thompson_action": thompson_action,
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_answers_pass(name, capsys):
    grading.CHECKS[name](RIGHT[name], seed=0)
    assert capsys.readouterr().out.startswith("✅")


# ---------- plausible wrong answers get specific hints
def independent_flips(biases, prior, flips):
    m = float(np.dot(prior, biases))
    out = np.ones((2,) * flips)
    for idx in np.ndindex(*out.shape):
        out[idx] = np.prod([m if o else 1 - m for o in idx])
    return out


def mean_of_logliks(logits, y):
    return np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0].sum(-1).mean()


WRONG = {
    "coin_joint": (independent_flips, "independent given the bias"),
    "try_then_commit": (lambda b, p, h: h * max(float(np.dot(p, b)), 0.5), "marginal alone"),
    "joint_log_likelihood": (mean_of_logliks, "averaged the log-likelihoods"),
    "prior_member": (lambda p, q, x, s: nets.mlp_apply(p, x) + nets.mlp_apply(q, x), "multiply the prior network"),
    "blr_posterior": (lambda phi, y, s: (blr_posterior(phi, y, s)[0], s * np.linalg.inv(phi.T @ phi)),
                      "σ² (the variance), not σ"),
    "batch_mig_step": (lambda cov, chosen, pool, test, nv: int([p for p in pool if p not in chosen][
        int(np.argmax([-np.log1p(-cov[p, test] ** 2 / ((cov[p, p] + nv) * np.diag(cov)[test])).sum()
                       for p in pool if p not in chosen]))]), "MIG's best single point"),
    "thompson_action": (lambda logits, seed: int(np.argmax(np.exp(log_softmax(logits, -1))[..., 1].mean(0))),
                        "*mean* prediction"),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_answers_get_a_specific_hint(name):
    fn, hint = WRONG[name]
    with pytest.raises(AssertionError, match=None) as info:
        grading.CHECKS[name](fn, seed=1)
    assert hint in str(info.value), str(info.value)


# ---------- nothing a student writes crashes a check
def not_implemented(*args):
    raise NotImplementedError("write your answer here")


@pytest.mark.parametrize("name", sorted(grading.CHECKS))
@pytest.mark.parametrize("bad, message", [
    (not_implemented, "not implemented yet"),
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    (lambda *a: "forty-two", ""),
    (lambda *a: np.full((3, 3, 3), np.nan), ""),
    (lambda *a: None, ""),
    (42, "expected a function"),
])
def test_bad_answers_are_reported_not_crashed(name, bad, message):
    with pytest.raises(AssertionError) as info:
        grading.CHECKS[name](bad, seed=2)
    assert message in str(info.value)
    assert str(info.value).startswith("Exercise")
