"""Joint log-likelihoods, the d_KL^τ estimator, accuracy and calibration.

Osband et al. (2022), §2.2 and App. B (Algorithms 1–3). For one test τ-sample
(x_{1:τ}, y_{1:τ}) the agent's joint likelihood is estimated from M functions
drawn from its posterior (Algorithm 3),

    p̂(y_{1:τ}) = (1/M) Σ_m Π_t softmax(logits_m(x_t))[y_t],

computed in log space as a log-mean-exp of summed log-probabilities. The KL of
the τ-sample is log p(y_{1:τ} | environment) − log p̂(y_{1:τ}); a problem's
d_KL^τ is the mean over its test τ-samples (Algorithm 1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, _compile


def _check_logits_labels(logits, y, logits_name="logits", min_ndim=2):
    logits = _checks.as_float_array(logits_name, logits)  # float64 stays float64 (see _use_numpy)
    if logits.ndim < min_ndim:
        raise ValueError(f"{logits_name} must have at least {min_ndim} dimensions "
                         f"(..., τ, K), got shape {logits.shape}")
    num_classes = logits.shape[-1]
    if num_classes < 2:
        raise ValueError(f"{logits_name} must have at least 2 classes in its last axis, got shape {logits.shape}")
    y = _checks.as_labels("y", y, num_classes)
    return logits, y


def _use_numpy(logits: np.ndarray) -> bool:
    """float64 logits are computed in float64 (numpy) when JAX runs in float32.

    Casting them to float32 would lose the answer for large logits (e.g. [1e8, 1e8 + 1]
    become equal), so float64 input gets a float64 result, computed with numpy
    unless ``jax_enable_x64`` is on; float32 input takes the jitted JAX path.
    """
    return logits.dtype == np.float64 and not jax.config.jax_enable_x64


def _np_label_log_probs(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    top = logits.max(axis=-1, keepdims=True)
    logp = logits - top - np.log(np.sum(np.exp(logits - top), axis=-1, keepdims=True))
    return np.take_along_axis(logp, y[..., None].astype(np.int64), axis=-1)[..., 0]


@_compile.jit
def _label_log_probs(logits, y):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, y[..., None], axis=-1)[..., 0]


def log_likelihood(logits, y) -> jax.Array:
    """Log-likelihood of labels under one model, summed over the τ axis.

    Args:
      logits: [..., τ, K] class logits of a single model (e.g. the environment).
      y: [..., τ] integer labels in [0, K).

    Returns:
      [...] Σ_t log softmax(logits_t)[y_t].
    """
    logits, y = _check_logits_labels(logits, y)
    if y.shape != logits.shape[:-1]:
        raise ValueError(f"y must have shape {logits.shape[:-1]} to match logits {logits.shape}, got {y.shape}")
    if _use_numpy(logits):
        return np.sum(_np_label_log_probs(logits, y), axis=-1)
    return jnp.sum(_label_log_probs(jnp.asarray(logits), jnp.asarray(y)), axis=-1)


@_compile.jit
def _joint_ll(logits, y):
    ll = jnp.sum(_label_log_probs(logits, jnp.broadcast_to(y, logits.shape[:-1])), axis=-1)  # [M, ...]
    return jax.nn.logsumexp(ll, axis=0) - jnp.log(logits.shape[0])


def joint_log_likelihood(logits, y) -> jax.Array:
    """Monte Carlo joint log-likelihood of Algorithm 3 (numerically stable).

    Args:
      logits: [M, ..., τ, K] logits of M posterior functions; sample m is one
        function evaluated at every input.
      y: [..., τ] integer labels in [0, K).

    Returns:
      [...] log (1/M) Σ_m Π_t softmax(logits[m, ..., t])[y_t]: a float32 JAX
      array, or a float64 numpy array for float64 logits (computed in float64,
      so large logits keep their precision).

    Raises:
      ValueError: M = 0, K < 2, NaN/inf logits, labels outside [0, K), or y
        whose shape is not logits.shape[1:-1].

    Example:
      >>> import numpy as np
      >>> # two functions, certain of opposite labels: the joint of (0, 0) is ½.
      >>> logits = np.array([[[9., -9.], [9., -9.]], [[-9., 9.], [-9., 9.]]])
      >>> round(float(joint_log_likelihood(logits, np.array([0, 0]))), 3)
      -0.693
    """
    logits, y = _check_logits_labels(logits, y, min_ndim=3)
    if logits.shape[0] == 0:
        raise ValueError(f"logits must hold at least one posterior sample (M >= 1 in [M, ..., τ, K]), "
                         f"got shape {logits.shape}")
    if y.shape != logits.shape[1:-1]:
        raise ValueError(f"y must have shape {logits.shape[1:-1]} (logits without its first axis M and "
                         f"last axis K), got {y.shape}; logits has shape {logits.shape} = [M, ..., τ, K]")
    if _use_numpy(logits):
        ll = np.sum(_np_label_log_probs(logits, np.broadcast_to(y, logits.shape[:-1])), axis=-1)  # [M, ...]
        top = ll.max(axis=0)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):  # a joint probability of 0 gives -inf, as on the JAX path
            return np.log(np.mean(np.exp(ll - top), axis=0)) + top
    return _joint_ll(jnp.asarray(logits), jnp.asarray(y))


def _logsumexp0(a):
    """log Σ exp over axis 0, numpy (float64) or JAX alike."""
    if isinstance(a, np.ndarray):
        top = a.max(axis=0)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return np.log(np.sum(np.exp(a - top), axis=0)) + top
    return jax.nn.logsumexp(a, axis=0)


def _check_mixture(label_logprobs, tau, log_weights, true_logprobs=None) -> None:
    """Shape checks shared by the mixture likelihoods; static shapes only, so they hold under ``jax.jit`` too."""
    shape = getattr(label_logprobs, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"label_logprobs: expected a [C, N·τ] array (components × test points), got "
                         f"{'shape ' + str(tuple(shape)) if shape is not None else type(label_logprobs).__name__}")
    if isinstance(tau, bool) or not isinstance(tau, (int, np.integer)) or tau < 1:
        raise ValueError(f"tau: expected an integer τ ≥ 1, got {tau!r}")
    if shape[0] < 1 or shape[1] % tau:
        raise ValueError(f"label_logprobs: expected [C, N·τ] with C ≥ 1 and a number of test points divisible by "
                         f"tau = {tau} (consecutive blocks of τ are one τ-sample), got shape {tuple(shape)}")
    if log_weights is not None and tuple(np.shape(log_weights)) != (shape[0],):
        raise ValueError(f"log_weights: expected None or [C] = [{shape[0]}] log weights, one per component of "
                         f"label_logprobs, got shape {tuple(np.shape(log_weights))}")
    if true_logprobs is not None and tuple(np.shape(true_logprobs)) != (shape[1],):
        raise ValueError(f"true_logprobs: expected [N·τ] = [{shape[1]}] entries, one per column of label_logprobs "
                         f"{tuple(shape)}, got shape {tuple(np.shape(true_logprobs))}")


def mixture_joint_log_likelihood(label_logprobs, tau: int, log_weights=None):
    """Exact joint log-likelihood of a finite mixture (ensembles, SG-MCMC samples, k-NN): no Monte Carlo.

    For τ-sample i, log Σ_c w_c Π_t p_c(y_{i,t}), with w uniform when ``log_weights`` is None. The one
    implementation used by the testbed (``likelihood="exact"``, jitted, float32) and the labs (numpy float64).

    Args:
      label_logprobs: [C, N·τ] log p_c(y | x) of each component at each test point; consecutive blocks of τ
        points are one τ-sample. A numpy array is computed in numpy (float64 stays float64), else in JAX.
      tau: τ (static).
      log_weights: None, or [C] unnormalised log mixture weights.

    Returns:
      [N] joint log-likelihoods.
    """
    _check_mixture(label_logprobs, tau, log_weights)
    xp = np if isinstance(label_logprobs, np.ndarray) else jnp
    c = label_logprobs.shape[0]
    lp = label_logprobs.reshape(c, -1, tau).sum(-1)  # [C, N]
    if log_weights is None:
        return _logsumexp0(lp) - xp.log(c)
    if xp is np:
        log_w = np.asarray(log_weights, np.float64)
        log_w = log_w - _logsumexp0(log_w)
    else:
        log_w = jax.nn.log_softmax(log_weights)
    return _logsumexp0(lp + log_w[:, None])


def mixture_kl(label_logprobs, true_logprobs, tau: int, log_weights=None):
    """Per-τ-sample KL of a finite mixture: log p(y_{1:τ} | environment) − log p̂(y_{1:τ}) → [N].

    Args:
      label_logprobs: [C, N·τ] component log-probabilities of the labels (see
        :func:`mixture_joint_log_likelihood`).
      true_logprobs: [N·τ] the environment's log p(y | x).
      tau: τ.
      log_weights: None (uniform) or [C] log weights.
    """
    _check_mixture(label_logprobs, tau, log_weights, true_logprobs)
    return true_logprobs.reshape(-1, tau).sum(-1) - mixture_joint_log_likelihood(label_logprobs, tau, log_weights)


def mixture_kl_by_tau(label_logprobs, true_logprobs, taus, log_weights=None) -> np.ndarray:
    """d_KL^τ of a finite mixture for many τ from one test pool (float64, numpy).

    The N test points are cut into consecutive blocks of τ (⌊N/τ⌋ τ-samples, the rest unused); d_KL^τ is
    the mean of :func:`mixture_kl` over the blocks (App. B, Algorithms 1–3, exact over the components).

    Args:
      label_logprobs: [C, N] log p_c(y_i | x_i).
      true_logprobs: [N] log p(y_i | x_i) under the environment.
      taus: iterable of τ in [1, N].
      log_weights: None (uniform) or [C] log weights.

    Returns:
      [len(taus)] d_KL^τ (float64).
    """
    lp = _checks.as_float_array("label_logprobs", label_logprobs, ndim=2).astype(np.float64)
    true = _checks.as_float_array("true_logprobs", true_logprobs, ndim=1).astype(np.float64)
    n = lp.shape[1]
    if true.shape[0] != n:
        raise ValueError(f"true_logprobs must have {n} entries to match label_logprobs {lp.shape}, got {true.shape}")
    log_w = None if log_weights is None else np.asarray(log_weights, np.float64)
    out = []
    for i, tau in enumerate(taus):
        tau = _checks.integer(f"taus[{i}]", tau, minimum=1, maximum=n)
        m = n // tau * tau
        out.append(float(np.mean(mixture_kl(lp[:, :m], true[:m], tau, log_w))))
    return np.asarray(out)


class KLSummary(NamedTuple):
    """Per-problem summary of per-τ-sample KL values (as the reference computes it)."""

    kl: float  # mean KL after clipping inf to the largest finite value
    kl_std: float  # standard deviation of the clipped values
    frac_finite: float  # fraction of τ-samples whose KL was finite


def summarize_kl(kl_values) -> KLSummary:
    """Clips +inf to the largest finite value and returns mean, std and fraction finite.

    Args:
      kl_values: [N] KL estimates of N test τ-samples (may contain +inf when an
        agent gives a label probability 0; NaN is an error).
    """
    kl = _checks.as_float_array("kl_values", kl_values, finite=False, dtype=np.float64).reshape(-1)
    if kl.size == 0:
        raise ValueError("kl_values must hold at least one value, got an empty array")
    if np.any(np.isnan(kl)):
        raise ValueError("kl_values must not contain NaN")
    finite = np.isfinite(kl)
    frac = float(finite.mean())
    if frac == 0.0:
        return KLSummary(float("inf"), float("nan"), 0.0)
    clipped = np.where(finite, kl, kl[finite].max())
    return KLSummary(float(clipped.mean()), float(clipped.std()), frac)


def _check_probs(probs, y):
    probs = _checks.as_float_array("probs", probs, ndim=2)
    if probs.shape[0] == 0:
        raise ValueError(f"probs must hold at least one row [n >= 1, K], got shape {probs.shape}")
    if np.any(probs < 0) or not np.allclose(probs.sum(-1), 1.0, atol=1e-3):
        raise ValueError("probs must be non-negative rows summing to 1 (shape [n, K])")
    y = _checks.as_labels("y", y, probs.shape[1], ndim=1)
    if y.shape[0] != probs.shape[0]:
        raise ValueError(f"y must have {probs.shape[0]} labels to match probs {probs.shape}, got {y.shape}")
    return probs, y


def accuracy(probs, y) -> float:
    """Fraction of inputs whose most probable class is the label: probs [n, K], y [n]."""
    probs, y = _check_probs(probs, y)
    return float(np.mean(np.argmax(probs, -1) == y))


def expected_calibration_error(probs, y, num_bins: int = 10) -> float:
    """ECE with equal-width confidence bins (Guo et al. 2017): ``Σ_b (n_b / n) |acc_b − conf_b|``.

    Args:
      probs: [n, K] marginal predictive probabilities.
      y: [n] labels.
      num_bins: number of equal-width bins over [0, 1] (the reference uses 10).
    """
    probs, y = _check_probs(probs, y)
    _checks.integer("num_bins", num_bins, minimum=1)
    conf = probs.max(-1)
    correct = (probs.argmax(-1) == y).astype(np.float64)
    bins = np.clip(np.ceil(conf * num_bins).astype(int) - 1, 0, num_bins - 1)
    n = len(y)
    ece = 0.0
    for b in range(num_bins):
        sel = bins == b
        if sel.any():
            ece += sel.sum() / n * abs(correct[sel].mean() - conf[sel].mean())
    return float(ece)
