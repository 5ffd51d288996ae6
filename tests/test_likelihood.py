import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import log_softmax

import jtk
from jtk import likelihood


def _numpy_joint_ll(logits, y):
    """Independent re-derivation: log of the mean over models of the product of probabilities."""
    probs = np.exp(log_softmax(logits.astype(np.float64), -1))  # [M, ..., τ, K]
    p_y = np.take_along_axis(probs, np.broadcast_to(y, logits.shape[:-1])[..., None], -1)[..., 0]
    return np.log(np.mean(np.prod(p_y, axis=-1), axis=0))


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(1, 5), st.integers(2, 4)),
                  elements=st.floats(-5, 5)), st.data())
def test_joint_log_likelihood_matches_numpy(logits, data):
    m, n, tau, k = logits.shape
    y = data.draw(hnp.arrays(np.int64, (n, tau), elements=st.integers(0, k - 1)))
    np.testing.assert_allclose(jtk.joint_log_likelihood(logits, y), _numpy_joint_ll(logits, y), rtol=1e-4, atol=1e-4)


def test_joint_log_likelihood_is_stable_for_huge_logits():
    # probabilities underflow to 0 in float32, log space stays finite and exact
    logits = np.array([[[0.0, 200.0]] * 10, [[200.0, 0.0]] * 10], np.float32)  # M=2, τ=10, K=2
    y = np.zeros(10, int)
    out = float(jtk.joint_log_likelihood(logits, y))
    assert np.isfinite(out) and abs(out - np.log(0.5)) < 1e-4


def test_two_coin_example_joint_vs_marginal():
    # Fig. 1: fair coin vs the {always tails, always heads} coin; equal marginals, different joints.
    big = 30.0
    fair = np.zeros((1, 2, 2))  # one model, p = ½ everywhere, τ = 2
    extreme = np.array([[[big, -big]] * 2, [[-big, big]] * 2])  # two models, τ = 2
    for y in ([0], [1]):
        assert np.isclose(jtk.joint_log_likelihood(fair[:, :1], y), jtk.joint_log_likelihood(extreme[:, :1], y),
                          atol=1e-6)
    assert np.isclose(jtk.joint_log_likelihood(fair, [1, 1]), np.log(0.25), atol=1e-6)
    assert np.isclose(jtk.joint_log_likelihood(extreme, [1, 1]), np.log(0.5), atol=1e-6)


def test_log_likelihood_sums_over_tau():
    logits = np.random.default_rng(0).normal(size=(3, 4, 2))
    y = np.random.default_rng(1).integers(0, 2, size=(3, 4))
    expect = np.take_along_axis(log_softmax(logits, -1), y[..., None], -1)[..., 0].sum(-1)
    np.testing.assert_allclose(likelihood.log_likelihood(logits, y), expect, rtol=1e-5)


def test_summarize_kl_clips_inf_and_reports_fraction_finite():
    s = likelihood.summarize_kl([0.1, 0.3, np.inf, 0.2])
    assert s.frac_finite == 0.75 and np.isclose(s.kl, (0.1 + 0.3 + 0.3 + 0.2) / 4)
    assert np.isclose(s.kl_std, np.std([0.1, 0.3, 0.3, 0.2]))
    with pytest.raises(ValueError, match="NaN"):
        likelihood.summarize_kl([np.nan])


def test_accuracy_and_ece_against_hand_computation():
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.45, 0.55]])
    y = np.array([0, 1, 1, 0])
    assert jtk.accuracy(probs, y) == 0.5
    # bins (10 equal-width): 0.9 → bin 8 (acc 1), 0.8 → bin 7 (acc 0), 0.7 → bin 6 (acc 1), 0.55 → bin 5 (acc 0)
    expect = (abs(1 - 0.9) + abs(0 - 0.8) + abs(1 - 0.7) + abs(0 - 0.55)) / 4
    assert np.isclose(jtk.expected_calibration_error(probs, y), expect)
    perfectly_calibrated = np.tile([0.5, 0.5], (4, 1))
    assert np.isclose(jtk.expected_calibration_error(perfectly_calibrated, [0, 1, 0, 1]), 0.0)


@pytest.mark.parametrize("logits, y, err, match", [
    (np.zeros((2, 3, 2)), np.zeros(4, int), ValueError, r"y must have shape \(3,\)"),
    (np.zeros((2, 3, 2)), np.full(3, 2), ValueError, r"y must be labels in \[0, 2\)"),
    (np.zeros((2, 3, 2)), np.full(3, -1), ValueError, r"y must be labels"),
    (np.full((2, 3, 2), np.nan), np.zeros(3, int), ValueError, "logits must be finite"),
    (np.zeros((3, 2)), np.zeros(3, int), ValueError, "at least 3 dimensions"),
    (np.zeros((2, 3, 2)), np.full(3, 0.5), ValueError, "whole-number"),
    (np.zeros((2, 3, 2)), ["a", "b", "c"], TypeError, "integer labels"),
])
def test_bad_input_names_the_argument(logits, y, err, match):
    with pytest.raises(err, match=match):
        jtk.joint_log_likelihood(logits, y)


def test_bad_probs_for_accuracy():
    with pytest.raises(ValueError, match="probs"):
        jtk.accuracy(np.array([[0.5, 0.6]]), [0])
    with pytest.raises(ValueError, match="y must have 1 labels"):
        jtk.accuracy(np.array([[0.5, 0.5]]), [0, 1])


# ------------------------------------------------------------------ exact finite mixtures (one implementation)
def _numpy_mixture_kl(member_lp, true_lp, tau, weights=None):
    """Independent float64 reference: loops over blocks and components, probabilities not logs."""
    k, n = member_lp.shape
    w = np.full(k, 1.0 / k) if weights is None else np.asarray(weights) / np.sum(weights)
    out = []
    for b in range(n // tau):
        sl = slice(b * tau, (b + 1) * tau)
        joint = sum(w[c] * np.prod(np.exp(member_lp[c, sl])) for c in range(k))
        out.append(np.sum(true_lp[sl]) - np.log(joint))
    return np.asarray(out)


def test_mixture_kl_matches_an_independent_numpy_computation():
    rng = np.random.default_rng(0)
    k, n = 4, 60
    member_lp = np.log(rng.uniform(0.05, 1.0, size=(k, n)))
    true_lp = np.log(rng.uniform(0.05, 1.0, size=n))
    weights = rng.uniform(0.1, 1.0, size=k)
    for tau in (1, 3, 7, 60):
        m = n // tau * tau
        expected = _numpy_mixture_kl(member_lp, true_lp, tau)
        np.testing.assert_allclose(likelihood.mixture_kl(member_lp[:, :m], true_lp[:m], tau), expected, rtol=1e-10)
        got_jax = likelihood.mixture_kl(jnp.asarray(member_lp[:, :m], jnp.float32),
                                        jnp.asarray(true_lp[:m], jnp.float32), tau)
        np.testing.assert_allclose(np.asarray(got_jax), expected, rtol=1e-4, atol=1e-4)
        weighted = _numpy_mixture_kl(member_lp, true_lp, tau, weights)
        np.testing.assert_allclose(likelihood.mixture_kl(member_lp[:, :m], true_lp[:m], tau, np.log(weights)),
                                   weighted, rtol=1e-10)
        np.testing.assert_allclose(np.asarray(likelihood.mixture_kl(
            jnp.asarray(member_lp[:, :m], jnp.float32), jnp.asarray(true_lp[:m], jnp.float32), tau,
            jnp.log(jnp.asarray(weights, jnp.float32)) + 3.0)), weighted, rtol=1e-4, atol=1e-4)
        assert likelihood.mixture_kl_by_tau(member_lp, true_lp, [tau])[0] == pytest.approx(expected.mean(), rel=1e-10)


def test_mixture_kl_by_tau_matches_the_monte_carlo_estimator_on_the_components():
    rng = np.random.default_rng(0)
    k, n = 4, 60
    logits = rng.normal(size=(k, n, 2)) * 2
    y = rng.integers(0, 2, n)
    true_logits = rng.normal(size=(n, 2))
    member_lp = np.take_along_axis(jax.nn.log_softmax(logits, -1), y[None, :, None], -1)[..., 0]
    true_lp = np.take_along_axis(jax.nn.log_softmax(true_logits, -1), y[:, None], -1)[:, 0]
    for tau in (1, 3, 7, 60):
        m = n // tau
        ll = likelihood.joint_log_likelihood(logits[:, :m * tau].reshape(k, m, tau, 2), y[:m * tau].reshape(m, tau))
        truth = likelihood.log_likelihood(true_logits[:m * tau].reshape(m, tau, 2), y[:m * tau].reshape(m, tau))
        expected = float(np.mean(np.asarray(truth) - np.asarray(ll)))
        got = likelihood.mixture_kl_by_tau(member_lp, true_lp, [tau])[0]
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_mixture_kl_by_tau_of_one_function_is_additive_in_tau():
    rng = np.random.default_rng(1)
    lp = np.log(rng.uniform(0.05, 1, size=(1, 100)))
    true = np.log(rng.uniform(0.05, 1, size=100))
    kl = likelihood.mixture_kl_by_tau(lp, true, [1, 10, 100])
    assert kl[1] == pytest.approx(10 * kl[0]) and kl[2] == pytest.approx(100 * kl[0])
    with pytest.raises(ValueError, match="tau"):
        likelihood.mixture_kl_by_tau(lp, true, [101])
    with pytest.raises(ValueError, match="true_logprobs"):
        likelihood.mixture_kl_by_tau(lp, true[:5], [1])
