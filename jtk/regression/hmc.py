"""Hamiltonian Monte Carlo for the oracle-matched regression BNN (Wang et al. 2021, §2.1 "HMC BNNs", §5).

:func:`hmc_chain` is a generic, pure HMC sampler (Neal 2011, §5.3.2) for any differentiable log density over a
pytree: every iteration draws a fresh momentum p ~ N(0, I), runs ``num_leapfrog`` leapfrog steps of size ε and
accepts the end point with the Metropolis–Hastings probability min(1, exp(−ΔH)), H(θ, p) = −log π(θ) + ‖p‖² / 2.
Proposals whose energy is not finite are rejected. It keeps a burn-in phase and then one sample every ``thin``
iterations; it is jittable and vmappable (one chain per call, ``jax.vmap`` over chains and over data sets).

:class:`HMCRegression` runs it on the one-hidden-layer ReLU network of :mod:`jtk.regression.bnn` (raw parameters,
prior N(0, η) with η = prior_scale² = 1 matching the oracle kernel, Gaussian likelihood with the given noise
variance), full batch, several chains in parallel. The paper's hyperparameter treatment (§2.1): instead of sampling
the prior variance η (hard to mix, Neal) it uses Monte-Carlo EM — HMC moves the weights and η (and, on real data,
the observation variance) is set to its maximum-likelihood value under the current weights. Here that update runs
after every burn-in iteration (η ← mean θ², σ² ← mean residual² when ``learn_noise_var``); during sampling the
hyperparameters stay fixed, so the kept chain is an exact MCMC chain for one posterior (a departure: the paper does
not say whether it stops the EM updates). The reference scripts' schedule (docs/reference.md, "Active learning"):
one chain, 5 leapfrog steps an iteration, 100 iterations between kept samples, burn-in = the grid's epochs.
The step size is fixed (the grid's "learning rate"); ``target_accept`` optionally tunes it during burn-in by dual
averaging (Hoffman & Gelman 2014, §3.2), a jtk addition.

``schedule="authors"`` runs the authors' own EM-HMC instead (:func:`em_hmc_chain`; docs/reference.md, "Active
learning"): an iteration is an EM iteration of 10 HMC transitions whose first 3 adapt the step size (initially
0.01) towards acceptance 0.75, followed by one Adam step on η (and σ² on real data) at the grid's learning rate;
adaptation and EM never stop, and the states after every 100th iteration past burn-in are kept.

Example:
  >>> import numpy as np
  >>> x = np.random.default_rng(0).normal(size=(20, 2)); y = x[:, 0]
  >>> post = HMCRegression(hidden=20, burn_in=50, thin=5, samples_per_chain=10, num_chains=2).fit(x, y, seed=0)
  >>> post.sample_functions(x[:3], 5, seed=1).shape, post.accept_rate.shape
  ((5, 3), (2,))
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, _compile, nets
from jtk._numerics import serial_blas
from jtk.envs.gp import NOISE_VAR
from jtk.regression import bnn

LogProb = Callable[[Any, Any], jax.Array]  # log_prob(params, hyper) -> scalar


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["NOISE_VAR", "HMCResult", "hmc_chain", "EMHMCResult", "em_hmc_chain", "kept_em_steps", "HMCPosterior",
           "HMCRegression"]


class HMCResult(NamedTuple):
    """One chain's output."""

    samples: Any  # pytree, leaves [num_samples, ...]
    accept_rate: jax.Array  # [] mean MH acceptance probability over the sampling iterations
    burn_in_accept_rate: jax.Array  # [] the same over the burn-in iterations
    hyper: Any  # hyperparameters after burn-in (changed only by em_update)
    step_size: jax.Array  # [] the step size used while sampling


def _dot(a: Any, b: Any) -> jax.Array:
    return sum(jnp.sum(x * y) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


def _axpy(alpha: jax.Array, x: Any, y: Any) -> Any:
    return jax.tree_util.tree_map(lambda u, v: v + alpha * u, x, y)


def _transition(grad_fn: Callable, num_leapfrog: int) -> Callable:
    """One HMC transition: fresh momenta, ``num_leapfrog`` leapfrog steps of size ``eps``, then a Metropolis
    accept / reject. ``transition(q, lp, g, hyper, eps, key)`` → (q, log p, ∇ log p, acceptance probability);
    ``grad_fn(q, hyper)`` → (log p, ∇ log p)."""

    def transition(q, lp, g, hyper, eps, k):
        k_mom, k_acc = jax.random.split(k)
        leaves, tree = jax.tree_util.tree_flatten(q)
        ks = jax.random.split(k_mom, len(leaves))
        p0 = jax.tree_util.tree_unflatten(tree, [jax.random.normal(kk, leaf.shape, leaf.dtype)
                                                 for kk, leaf in zip(ks, leaves)])

        def leapfrog(carry, _):
            q1, p1, g1, _ = carry
            p1 = _axpy(eps / 2, g1, p1)
            q1 = _axpy(eps, p1, q1)
            lp1, g1 = grad_fn(q1, hyper)
            return (q1, _axpy(eps / 2, g1, p1), g1, lp1), None

        (q1, p1, g1, lp1), _ = jax.lax.scan(leapfrog, (q, p0, g, lp), None, length=num_leapfrog)
        log_ratio = (lp1 - 0.5 * _dot(p1, p1)) - (lp - 0.5 * _dot(p0, p0))
        log_ratio = jnp.where(jnp.isfinite(log_ratio), log_ratio, -jnp.inf)
        accept_prob = jnp.exp(jnp.minimum(log_ratio, 0.0))
        accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
        pick = functools.partial(jnp.where, accept)
        return jax.tree_util.tree_map(pick, q1, q), pick(lp1, lp), jax.tree_util.tree_map(pick, g1, g), accept_prob

    return transition


def hmc_chain(log_prob: LogProb, init: Any, hyper: Any, key: jax.Array, *, step_size: jax.Array,
              num_leapfrog: int, burn_in: int, thin: int, num_samples: int,
              em_update: Callable[[Any, Any], Any] | None = None,
              target_accept: float | None = None) -> HMCResult:
    """Runs one HMC chain (pure: jit and vmap freely).

    Args:
      log_prob: ``log_prob(params, hyper)`` → scalar log density (up to a constant) of the target.
      init: the starting point (a pytree of float arrays).
      hyper: traced hyperparameters handed to ``log_prob`` (any pytree).
      key: PRNG key of the chain.
      step_size: leapfrog step ε (traced).
      num_leapfrog: leapfrog steps per iteration L (static).
      burn_in: iterations before the first kept sample (static, ≥ 0).
      thin: iterations between kept samples (static, ≥ 1); the first sample is kept ``thin`` iterations after
        burn-in.
      num_samples: kept samples S (static, ≥ 1).
      em_update: optional ``em_update(params, hyper)`` → hyper, applied after every burn-in iteration (Monte-Carlo
        EM for hyperparameters, Wang et al. §2.1); never during sampling.
      target_accept: when given, ε is tuned during burn-in by dual averaging towards this mean acceptance
        probability, then frozen at its averaged value.

    Returns:
      :class:`HMCResult` with samples of leaves [S, ...].
    """
    # the static arguments only (Python values even under jit): the traced ones are checked where they come from
    _checks.function("log_prob", log_prob, "a callable log_prob(params, hyper)")
    _checks.prng_key("key", key)
    _checks.integer("num_leapfrog", num_leapfrog, minimum=1)
    _checks.integer("burn_in", burn_in, minimum=0)
    _checks.integer("thin", thin, minimum=1)
    _checks.integer("num_samples", num_samples, minimum=1)
    if em_update is not None:
        _checks.function("em_update", em_update, "None or a callable em_update(params, hyper)")
    if isinstance(target_accept, (int, float)):  # a Python number (None: no tuning)
        _checks.positive("target_accept", target_accept)
        if not target_accept < 1:
            raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
    grad_fn = jax.value_and_grad(log_prob)
    step_size = jnp.asarray(step_size, jnp.float32)

    transition = _transition(grad_fn, num_leapfrog)

    lp0, g0 = grad_fn(init, hyper)
    k_burn, k_samp = jax.random.split(key)

    # dual averaging (Hoffman & Gelman 2014, Alg. 5): log ε_t = μ − √t / γ · H̄_t, averaged with weight t^(−κ)
    mu = jnp.log(10 * step_size)

    def burn_step(carry, kt):
        q, lp, g, hyper, log_eps, log_eps_bar, h_bar, t = carry
        q, lp, g, a = transition(q, lp, g, hyper, jnp.exp(log_eps), kt)
        if em_update is not None:
            hyper = em_update(q, hyper)
            lp, g = grad_fn(q, hyper)
        if target_accept is not None:
            t = t + 1.0
            h_bar = (1 - 1 / (t + 10)) * h_bar + (target_accept - a) / (t + 10)
            log_eps = mu - jnp.sqrt(t) / 0.05 * h_bar
            w = t ** -0.75
            log_eps_bar = w * log_eps + (1 - w) * log_eps_bar
        return (q, lp, g, hyper, log_eps, log_eps_bar, h_bar, t), a

    log_eps0 = jnp.log(step_size)
    carry = (init, lp0, g0, hyper, log_eps0, log_eps0, jnp.float32(0.0), jnp.float32(0.0))
    if burn_in > 0:
        carry, burn_acc = jax.lax.scan(burn_step, carry, jax.random.split(k_burn, burn_in))
        burn_rate = jnp.mean(burn_acc)
    else:
        burn_rate = jnp.float32(jnp.nan)
    q, lp, g, hyper, _, log_eps_bar, _, _ = carry
    eps = jnp.exp(log_eps_bar) if target_accept is not None else step_size

    def sample_step(state, k):
        def one(s, kk):
            q, lp, g = s
            q, lp, g, a = transition(q, lp, g, hyper, eps, kk)
            return (q, lp, g), a

        state, acc = jax.lax.scan(one, state, jax.random.split(k, thin))
        return state, (state[0], jnp.mean(acc))

    _, (samples, acc) = jax.lax.scan(sample_step, (q, lp, g), jax.random.split(k_samp, num_samples))
    return HMCResult(samples, jnp.mean(acc), burn_rate, hyper, eps)


# ------------------------------------------------------------------ the authors' EM-HMC (their core/emHMC.py)
AUTHORS_TARGET_ACCEPT = 0.75  # TensorFlow Probability's SimpleStepSizeAdaptation defaults, which emhmc keeps
AUTHORS_ADAPTATION_RATE = 0.01


def kept_em_steps(burn_in: int, thin: int, num_samples: int) -> np.ndarray:
    """The 0-based EM iterations whose state the authors' emhmc keeps → int array [K].

    Their driver runs T = num_samples · thin + burn_in − 1 EM iterations and keeps the state after iteration g when
    g > burn_in and g is a multiple of ``thin``. When ``burn_in`` is a multiple of ``thin`` (their synthetic grid:
    100, 300, 1000 with thin 100) that is num_samples − 1 states; their real-data burn-in of 5999 gives num_samples.
    """
    burn_in = _checks.integer("burn_in", burn_in, minimum=0)
    thin = _checks.integer("thin", thin, minimum=1)
    num_samples = _checks.integer("num_samples", num_samples, minimum=1)
    total = num_samples * thin + burn_in - 1
    first = (burn_in // thin + 1) * thin
    return np.arange(first, total, thin, dtype=np.int64)


class EMHMCResult(NamedTuple):
    """The output of :func:`em_hmc_chain`."""

    samples: Any  # pytree, leaves [K, ...]: the state after each kept EM iteration
    accept_rate: jax.Array  # [] mean acceptance probability over the transitions after burn-in
    burn_in_accept_rate: jax.Array  # [] the same over the burn-in transitions
    hyper: Any  # the unconstrained hyperparameters after the last kept iteration
    step_size: jax.Array  # [] the step size after the last kept iteration


def _adam(grads, state, learning_rate, t):
    """One Adam step (Kingma & Ba; TensorFlow 1's defaults β = 0.9, 0.999, ε = 1e-8) → (update, new state)."""
    b1, b2, eps = 0.9, 0.999, 1e-8
    m, v = state
    m = jax.tree_util.tree_map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
    v = jax.tree_util.tree_map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
    rate = learning_rate * jnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return jax.tree_util.tree_map(lambda a, b: -rate * a / (jnp.sqrt(b) + eps), m, v), (m, v)


def em_hmc_chain(log_prob: LogProb, init: Any, hyper: Any, key: jax.Array, *, step_size: jax.Array,
                 learning_rate: jax.Array, em_scale: jax.Array, num_leapfrog: int, steps_per_em: int,
                 adapt_steps: int, burn_in: int, thin: int, num_samples: int,
                 target_accept: float = AUTHORS_TARGET_ACCEPT,
                 adaptation_rate: float = AUTHORS_ADAPTATION_RATE) -> EMHMCResult:
    """Wang et al.'s EM-HMC (their ``core/emHMC.py`` with TensorFlow Probability's HMC), as a pure function.

    One EM iteration: ``steps_per_em`` HMC transitions (unit mass, ``num_leapfrog`` leapfrog steps, MH accept), the
    step size adapted after each of the first ``adapt_steps`` of them (ε ← ε · (1 + r) when the transition's
    acceptance probability exceeds ``target_accept``, else ε / (1 + r), r = ``adaptation_rate``); then one Adam step
    of rate ``learning_rate`` on ``hyper`` that descends −log_prob(θ, hyper) · ``em_scale`` at the chain's θ. The
    adaptation and the Adam step run in every iteration, after burn-in too, as in the authors' code (so the kept
    chain is not an exact MCMC chain for one posterior). States are kept after the iterations
    :func:`kept_em_steps` lists.

    Args:
      log_prob: ``log_prob(params, hyper)`` → scalar log density; ``hyper`` is the pytree of unconstrained
        hyperparameters that EM learns (an empty dict learns nothing).
      init: the starting point (pytree); several chains are one state here, with one joint accept (their code's).
      hyper: initial unconstrained hyperparameters (pytree of float scalars).
      key: PRNG key.
      step_size: initial leapfrog step ε (their 0.01).
      learning_rate: Adam's rate for ``hyper`` (their grid's learning rate).
      em_scale: the EM objective's scale (their 1 / (n · chains)).
      num_leapfrog, steps_per_em, adapt_steps: L (5), transitions per EM iteration (10 synthetic, 5 real) and how
        many of them adapt ε (3 synthetic, 5 real).
      burn_in, thin, num_samples: their ``--hmc_burnin``, ``--num_steps_between_samples`` and ``--hmc_samples``,
        counted in EM iterations.

    Returns:
      :class:`EMHMCResult`, samples with leaves [len(kept_em_steps(burn_in, thin, num_samples)), ...].
    """
    _checks.function("log_prob", log_prob, "a callable log_prob(params, hyper)")
    _checks.prng_key("key", key)
    for name, value, low in (("num_leapfrog", num_leapfrog, 1), ("steps_per_em", steps_per_em, 1),
                             ("adapt_steps", adapt_steps, 0)):
        _checks.integer(name, value, minimum=low)
    if isinstance(target_accept, (int, float)) and not 0 < target_accept < 1:  # a Python number (else traced)
        raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
    if isinstance(adaptation_rate, (int, float)):
        _checks.positive("adaptation_rate", adaptation_rate)
    kept = kept_em_steps(burn_in, thin, num_samples)
    if len(kept) == 0:
        raise ValueError(f"burn_in={burn_in}, thin={thin}, num_samples={num_samples} keep no state: the authors' "
                         "schedule keeps the iterations g > burn_in, g % thin == 0, g < num_samples · thin + burn_in − 1")
    grad_fn = jax.value_and_grad(log_prob)
    em_grad = jax.grad(lambda h, q: -em_scale * log_prob(q, h))
    eps0 = jnp.asarray(step_size, jnp.float32)

    transition = _transition(grad_fn, num_leapfrog)

    def em_iteration(carry, k):
        q, hyper, eps, adam, t = carry
        lp, g = grad_fn(q, hyper)

        def one(c, ik):
            i, kk = ik
            q, lp, g, eps = c
            q, lp, g, a = transition(q, lp, g, hyper, eps, kk)
            adapted = jnp.where(a > target_accept, eps * (1 + adaptation_rate), eps / (1 + adaptation_rate))
            return (q, lp, g, jnp.where(i < adapt_steps, adapted, eps)), a

        (q, _, _, eps), acc = jax.lax.scan(one, (q, lp, g, eps),
                                           (jnp.arange(steps_per_em), jax.random.split(k, steps_per_em)))
        t = t + 1.0
        update, adam = _adam(em_grad(hyper, q), adam, learning_rate, t)
        hyper = jax.tree_util.tree_map(jnp.add, hyper, update)
        return (q, hyper, eps, adam, t), jnp.mean(acc)

    zeros = jax.tree_util.tree_map(jnp.zeros_like, hyper)
    carry = (init, hyper, eps0, (zeros, zeros), jnp.float32(0.0))
    k_burn, k_samp = jax.random.split(key)
    # iterations 0 … kept[0] (burn-in, then up to the first kept state), then blocks of `thin` ending on a kept one
    first = int(kept[0]) + 1
    carry, acc_first = jax.lax.scan(em_iteration, carry, jax.random.split(k_burn, first))  # [first]
    state0 = carry[0]

    def block(c, k):
        c, acc = jax.lax.scan(em_iteration, c, jax.random.split(k, thin))
        return c, (c[0], jnp.mean(acc))

    # fold_in, not split: block i's key does not depend on how many blocks follow, so a run with more samples begins
    # with exactly the states of a shorter one (the study reads every S off its longest run)
    block_keys = jax.vmap(lambda i: jax.random.fold_in(k_samp, i))(jnp.arange(len(kept) - 1))
    carry, (rest, acc_rest) = jax.lax.scan(block, carry, block_keys)
    samples = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), state0, rest)
    after = acc_first[burn_in + 1:]  # per-iteration means after burn-in (at least one: kept[0] > burn_in)
    accept_rate = (jnp.sum(after) + thin * jnp.sum(acc_rest)) / (after.shape[0] + thin * acc_rest.shape[0])
    _, hyper, eps, _, _ = carry
    return EMHMCResult(samples, accept_rate, jnp.mean(acc_first[:burn_in + 1]), hyper, eps)


def bnn_log_joint(raw: nets.Params, hyper: dict, batch) -> jax.Array:
    """log p(y, θ | η, σ²) of the regression BNN on a full masked batch, with the θ-free normalisers of the prior.

    ``hyper`` holds "n", "noise_var" and "prior_var" (η = prior_scale²).
    """
    num_params = sum(leaf.size for leaf in jax.tree_util.tree_leaves(raw))
    return (-bnn.neg_log_joint(raw, batch, hyper["n"], hyper["noise_var"], jnp.sqrt(hyper["prior_var"]))
            - 0.5 * num_params * jnp.log(2 * jnp.pi * hyper["prior_var"]))


def _em_update(learn_prior: bool, learn_noise: bool):
    """Maximum-likelihood hyperparameters under the current weights (Monte-Carlo EM with one sample)."""

    def update(raw, hyper, batch):
        hyper = dict(hyper)
        if learn_prior:
            num_params = sum(leaf.size for leaf in jax.tree_util.tree_leaves(raw))
            hyper["prior_var"] = jnp.maximum(nets.sum_of_squares(raw) / num_params, 1e-6)
        if learn_noise:
            resid = batch.mask * (batch.y - bnn.apply_raw(raw, batch.x)) ** 2
            hyper["noise_var"] = jnp.maximum(jnp.sum(resid) / hyper["n"], 1e-6)
        return hyper

    return update


@functools.lru_cache(maxsize=32)
def _hmc_fit_fn(input_dim: int, hidden: int, num_leapfrog: int, burn_in: int, thin: int, samples_per_chain: int,
                num_chains: int, learn_prior_var: bool, learn_noise_var: bool, target_accept: float | None):
    """fit(key, batch, hyper) → (samples leaves [C·S, ...], accept [C], burn-in accept [C], prior_var [C],
    noise_var [C], step size [C]) for one data set; ``bnn.map_datasets`` maps it over data sets."""
    learn = learn_prior_var or learn_noise_var

    def chain(key, batch, hyper):
        k_init, k_run = jax.random.split(key)
        raw = bnn.init_raw(k_init, input_dim, hidden, jnp.sqrt(hyper["prior_var"]))
        em = _em_update(learn_prior_var, learn_noise_var)
        res = hmc_chain(lambda q, h: bnn_log_joint(q, h, batch), raw, hyper, k_run, step_size=hyper["step_size"],
                        num_leapfrog=num_leapfrog, burn_in=burn_in, thin=thin, num_samples=samples_per_chain,
                        em_update=(lambda q, h: em(q, h, batch)) if learn else None, target_accept=target_accept)
        return res.samples, res.accept_rate, res.burn_in_accept_rate, res.hyper["prior_var"], \
            res.hyper["noise_var"], res.step_size

    def fit(key, batch, hyper):
        samples, *stats = jax.vmap(chain, (0, None, None))(jax.random.split(key, num_chains), batch, hyper)
        return (jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), samples), *stats)

    return _compile.jit(fit)


def _softplus_inverse(x: float) -> float:
    return float(np.log(np.expm1(x)))


@functools.lru_cache(maxsize=32)
def _authors_fit_fn(input_dim: int, hidden: int, num_leapfrog: int, steps_per_em: int, adapt_steps: int, burn_in: int,
                    thin: int, samples_per_chain: int, num_chains: int, learn_prior_var: bool, learn_noise_var: bool):
    """fit(key, batch, hyper) → the same tuple as :func:`_hmc_fit_fn`'s, by the authors' EM-HMC: the chains are one
    joint state (one accept, one step size, one η and σ² shared, as their code); kept samples come sample-major."""

    def fit(key, batch, hyper):
        k_init, k_run = jax.random.split(key)
        init = jax.vmap(lambda k: bnn.init_raw(k, input_dim, hidden, 1.0))(jax.random.split(k_init, num_chains))
        learned = {}
        if learn_prior_var:  # their η = softplus(a), a learned
            learned["prior_var"] = jnp.log(jnp.expm1(hyper["prior_var"]))
        if learn_noise_var:  # their σ = exp(s), s learned
            learned["noise_var"] = 0.5 * jnp.log(hyper["noise_var"])

        def values(h):
            out = dict(hyper)
            if learn_prior_var:
                out["prior_var"] = jax.nn.softplus(h["prior_var"])
            if learn_noise_var:
                out["noise_var"] = jnp.exp(2 * h["noise_var"])
            return out

        def log_prob(q, h):
            v = values(h)
            return jnp.sum(jax.vmap(lambda raw: bnn_log_joint(raw, v, batch))(q))

        res = em_hmc_chain(log_prob, init, learned, k_run, step_size=hyper["step_size"],
                           learning_rate=hyper["learning_rate"], em_scale=1.0 / (hyper["n"] * num_chains),
                           num_leapfrog=num_leapfrog, steps_per_em=steps_per_em, adapt_steps=adapt_steps,
                           burn_in=burn_in, thin=thin, num_samples=samples_per_chain)
        v = values(res.hyper)
        per_chain = lambda a: jnp.full((num_chains,), a, jnp.float32)  # noqa: E731
        samples = jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), res.samples)  # [K·C, ...]
        return (samples, per_chain(res.accept_rate), per_chain(res.burn_in_accept_rate), per_chain(v["prior_var"]),
                per_chain(v["noise_var"]), per_chain(res.step_size))

    return _compile.jit(fit)


@dataclass(frozen=True, eq=False)
class HMCPosterior(bnn.ParticlePosterior):
    """HMC samples of the raw parameters (leaves [S, ...], chains one after another) and the chains' diagnostics.

    ``accept_rate`` [C]: each chain's mean acceptance probability while sampling; ``burn_in_accept_rate`` [C] the
    same during burn-in; ``prior_var`` / ``noise_var`` [C]: the hyperparameters each chain sampled with (after
    Monte-Carlo EM); ``step_size`` [C]: the leapfrog step each chain sampled with.
    """

    accept_rate: np.ndarray = None
    burn_in_accept_rate: np.ndarray = None
    prior_var: np.ndarray = None
    noise_var: np.ndarray = None
    step_size: np.ndarray = None

    def first(self, num_samples: int) -> HMCPosterior:
        """The posterior of the first ``num_samples`` samples (the study's S ∈ {3, 10, 100} from one run)."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=2, maximum=self.num_moment_samples)
        sub = jax.tree_util.tree_map(lambda a: a[:num_samples], self.samples)
        return HMCPosterior(sub, self.input_dim, self.accept_rate, self.burn_in_accept_rate, self.prior_var,
                            self.noise_var, self.step_size)


@dataclass(frozen=True)
class HMCRegression:
    """Full-batch HMC regression BNN with Metropolis–Hastings correction (Wang et al. 2021, §2.1; Neal 2011).

    Args:
      hidden: hidden width H (50; the paper's grid: 50 or 100).
      noise_var: Gaussian likelihood variance (the true 0.01 on the synthetic data, §5.1).
      prior_scale: initial std of the raw-parameter prior, sqrt(η); 1 matches the oracle kernel.
      step_size: leapfrog step ε on the raw parameters (1e-2, the grid's largest learning rate; the grid: 1e-3 …
        1e-2; check ``accept_rate`` of the posterior).
      num_leapfrog: leapfrog steps per iteration L (5, the reference scripts').
      num_chains: chains run in parallel (``jax.vmap``), each from its own prior draw (1, the reference's).
      burn_in: iterations discarded per chain (1000; the grid's "epochs").
      thin: iterations between kept samples (100, the reference's).
      samples_per_chain: kept samples per chain (100); S = num_chains × samples_per_chain.
      learn_prior_var: Monte-Carlo EM for η during burn-in (True, §2.1).
      learn_noise_var: Monte-Carlo EM for the noise variance during burn-in (False: the synthetic study gives every
        model the true variance, §5.1; the paper learns it on real data).
      target_accept: None (fixed ε) or a mean acceptance probability to tune ε to during burn-in.
      schedule: "jtk" (the above: one HMC transition an iteration, EM by maximum likelihood during burn-in only) or
        "authors": Wang et al.'s emhmc (:func:`em_hmc_chain`). Then an iteration is an EM iteration of
        ``steps_per_em`` transitions, ``step_size`` is the initial ε, adapted in the first ``adapt_steps``
        transitions of every iteration, η and (with ``learn_noise_var``) σ² take one Adam step of rate
        ``learning_rate`` per iteration throughout, the chains are one joint state, ``noise_var`` and
        ``prior_scale`` are the initial values, and the samples kept are those :func:`kept_em_steps` lists
        (``burn_in``, ``thin`` and ``samples_per_chain`` are the authors' ``--hmc_burnin``,
        ``--num_steps_between_samples`` and ``--hmc_samples``). ``target_accept`` must then be None.
      steps_per_em: HMC transitions per EM iteration of the "authors" schedule (10: their synthetic scripts'; 5 on
        real data).
      adapt_steps: of those, how many adapt ε (3 synthetic, 5 real).
      learning_rate: Adam's rate for the EM step of the "authors" schedule (their grid's learning rate).
    """

    hidden: int = 50
    noise_var: float = NOISE_VAR
    prior_scale: float = 1.0
    step_size: float = 1e-2
    num_leapfrog: int = 5
    num_chains: int = 1
    burn_in: int = 1000
    thin: int = 100
    samples_per_chain: int = 100
    learn_prior_var: bool = True
    learn_noise_var: bool = False
    target_accept: float | None = None
    schedule: str = "jtk"
    steps_per_em: int = 10
    adapt_steps: int = 3
    learning_rate: float = 1e-3

    def __post_init__(self):
        _checks.one_of("schedule", self.schedule, ("jtk", "authors"))
        _checks.integer("steps_per_em", self.steps_per_em, minimum=1)
        _checks.integer("adapt_steps", self.adapt_steps, minimum=0)
        _checks.positive("learning_rate", self.learning_rate, allow_zero=True)
        if self.schedule == "authors":
            if self.target_accept is not None:
                raise ValueError("target_accept must be None with schedule='authors' (it adapts ε its own way), got "
                                 f"{self.target_accept!r}")
            kept = len(kept_em_steps(self.burn_in, self.thin, self.samples_per_chain))
            if kept * self.num_chains < 2:
                raise ValueError(f"schedule='authors' keeps {kept} state(s) a chain for burn_in={self.burn_in}, "
                                 f"thin={self.thin}, samples_per_chain={self.samples_per_chain}; num_chains × kept must "
                                 f"be >= 2 to estimate a covariance, got {self.num_chains} × {kept}")
        _checks.integer("hidden", self.hidden, minimum=1)
        _checks.positive("noise_var", self.noise_var)
        _checks.positive("prior_scale", self.prior_scale)
        _checks.positive("step_size", self.step_size)
        _checks.integer("num_leapfrog", self.num_leapfrog, minimum=1)
        _checks.integer("num_chains", self.num_chains, minimum=1)
        _checks.integer("burn_in", self.burn_in, minimum=0)
        _checks.integer("thin", self.thin, minimum=1)
        _checks.integer("samples_per_chain", self.samples_per_chain, minimum=1)
        for name in ("learn_prior_var", "learn_noise_var"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.target_accept is not None:
            t = _checks.positive("target_accept", self.target_accept)
            if not t < 1:
                raise ValueError(f"target_accept must be in (0, 1) or None, got {self.target_accept!r}")
        if self.num_chains * self.samples_per_chain < 2:
            raise ValueError("num_chains * samples_per_chain must be >= 2 to estimate a covariance, got "
                             f"{self.num_chains} * {self.samples_per_chain}")

    @property
    def num_kept(self) -> int:
        """Samples the posterior will hold: num_chains × the states a chain keeps."""
        if self.schedule == "authors":
            return self.num_chains * len(kept_em_steps(self.burn_in, self.thin, self.samples_per_chain))
        return self.num_chains * self.samples_per_chain

    def _fn(self, input_dim: int):
        if self.schedule == "authors":
            return _authors_fit_fn(input_dim, self.hidden, self.num_leapfrog, self.steps_per_em, self.adapt_steps,
                                   self.burn_in, self.thin, self.samples_per_chain, self.num_chains,
                                   self.learn_prior_var, self.learn_noise_var)
        return _hmc_fit_fn(input_dim, self.hidden, self.num_leapfrog, self.burn_in, self.thin, self.samples_per_chain,
                           self.num_chains, self.learn_prior_var, self.learn_noise_var,
                           None if self.target_accept is None else float(self.target_accept))

    def _hyper(self, n: int) -> dict:
        return {"n": jnp.float32(n), "noise_var": jnp.float32(self.noise_var),
                "prior_var": jnp.float32(self.prior_scale ** 2), "step_size": jnp.float32(self.step_size),
                "learning_rate": jnp.float32(self.learning_rate)}

    @staticmethod
    def _posterior(out, input_dim: int) -> HMCPosterior:
        samples, acc, burn, prior_var, noise_var, eps = out
        return HMCPosterior(samples, input_dim, np.asarray(acc), np.asarray(burn), np.asarray(prior_var),
                            np.asarray(noise_var), np.asarray(eps))

    @serial_blas
    def fit(self, x, y, seed: Any = 0, prior: Any = None) -> HMCPosterior:
        """Runs the chains on x [n, d], y [n] → :class:`HMCPosterior` with S samples. ``prior`` is ignored."""
        batch = bnn.full_batch(x, y)
        key = _checks.as_key(seed)
        d = batch.x.shape[1]
        out = self._fn(d)(key, batch, self._hyper(int(np.sum(batch.mask))))
        return self._posterior(jax.tree_util.tree_map(np.asarray, out), d)

    @serial_blas
    def fit_many(self, xs, ys, seed: Any = 0) -> list[HMCPosterior]:
        """Runs the chains on every data set of a stack at once: xs [B, n, d], ys [B, n] → B posteriors.

        Data set i is fitted with key ``jax.random.split(key, B)[i]`` (vmapped: the chains make no LAPACK calls).
        """
        batches, n, d = bnn.stack_full_batches(xs, ys)
        out = bnn.map_datasets(self._fn(d), _checks.as_key(seed), batches, self._hyper(n), vectorize=True)
        return [self._posterior(bnn.unstack(out, i), d) for i in range(batches.x.shape[0])]
