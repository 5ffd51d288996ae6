"""Bayes by backprop (Blundell et al. 2015; Osband et al. 2022, App. C.4).

A factorised Gaussian q(θ) = N(μ, diag σ²), σ = softplus(ρ_σ), over the
parameters of an MLP (50, 50), trained by minimising (per step, averaged over
8 reparameterised weight samples θ = μ + σ ⊙ ε)

    loss = mean cross-entropy on the minibatch + sqrt(ρ) · d · KL(q ‖ p) / n,

the reference ``ElboLoss`` with ``adaptive_scale``: the KL to the prior is
divided by n (a per-example ELBO) and multiplied by sqrt(temperature) · d.

Prior: the scale mixture π N(0, σ1²) + (1 − π) N(0, σ2²) with σ1 = 1,
σ2 = 0.75 and mixture weight π = 1 (docs/reference.md, "Agent defaults"), which is the Gaussian
N(0, σ1²): the KL is then exact and analytic, as in the reference
(``kl_method='analytical'``). For 0 < π < 1 the KL has no closed form and the
single-sample estimate log q(θ) − log p(θ) of Blundell et al. is used on each
weight sample (the reference's ``sample_based``).

Defaults: Adam 3e-3, 1000 steps, minibatch 100, 8 weight samples per step.
Posterior samples: one θ drawn from q per function (coherent across inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import NeuralAgent, ProblemInfo, register
from jtk.agents.ensemble import masked_cross_entropy
from jtk.agents.zoo_common import chunked_map, flat_mlp, mlp_sizes, mlp_unravel, sample_keys


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["BBBState", "BBBAgent", "bbb"]


class BBBState(NamedTuple):
    mu: jax.Array  # [P] posterior means
    rho: jax.Array  # [P] softplus⁻¹ of the posterior standard deviations


def gaussian_kl(mu: jax.Array, sigma: jax.Array, prior_sigma: float | jax.Array) -> jax.Array:
    """KL(N(μ, diag σ²) ‖ N(0, s² I)) = ½ Σ (σ²/s² + μ²/s² − 1 − 2 log(σ/s)); μ, σ [P] → []."""
    r = sigma / prior_sigma
    return 0.5 * jnp.sum(jnp.square(r) + jnp.square(mu / prior_sigma) - 1.0 - 2.0 * jnp.log(r))


def scale_mixture_log_prob(theta: jax.Array, sigma1: float, sigma2: float, weight: float) -> jax.Array:
    """log p(θ) under π N(0, σ1²) + (1 − π) N(0, σ2²), summed over θ [P] → []."""
    def log_normal(s):
        return -0.5 * jnp.square(theta / s) - jnp.log(s) - 0.5 * jnp.log(2 * jnp.pi)

    if weight >= 1.0:
        return jnp.sum(log_normal(sigma1))
    if weight <= 0.0:
        return jnp.sum(log_normal(sigma2))
    return jnp.sum(jnp.logaddexp(jnp.log(weight) + log_normal(sigma1), jnp.log1p(-weight) + log_normal(sigma2)))


def diag_gaussian_log_prob(theta: jax.Array, mu: jax.Array, sigma: jax.Array) -> jax.Array:
    """log N(θ; μ, diag σ²) summed over [P] → []."""
    return jnp.sum(-0.5 * jnp.square((theta - mu) / sigma) - jnp.log(sigma) - 0.5 * jnp.log(2 * jnp.pi))


@dataclass(frozen=True, kw_only=True)
class BBBAgent(NeuralAgent):
    """Bayes by backprop with a scale-mixture prior.

    It has no L2 multiplier (``l2_scale``): the KL to the prior regularises the weights.

    Attributes:
      sigma1: standard deviation of the first prior component (1.0).
      sigma2: standard deviation of the second prior component (0.75).
      mixture_weight: weight π of the first component, in [0, 1] (1.0).
      num_index_samples: weight samples averaged per step (8).
      kl_scale_by_temperature: multiply the KL by sqrt(ρ) · d (reference: True).
      init_sigma: initial posterior standard deviation of every parameter (0.01).
      learning_rate: Adam step size (3e-3, the reference's; redeclared from the shared 1e-3).
      hidden, num_steps, batch_size, num_classes: the shared training fields
        (:class:`~jtk.agents.base.NeuralAgent`: (50, 50), 1000 steps, minibatch 100).

    Hyper keys (``hyper(prior)``, traced per problem):
      kl_weight: sqrt(ρ) · d / n (or 1 / n), the weight of KL(q ‖ p) (the bandit: 2 sqrt(ρ), annealed as 1/t).
    """

    sigma1: float = 1.0
    sigma2: float = 0.75
    mixture_weight: float = 1.0
    num_index_samples: int = 8
    kl_scale_by_temperature: bool = True
    init_sigma: float = 0.01
    learning_rate: float = 3e-3

    def __check_init__(self):
        _checks.positive("sigma1", self.sigma1)
        _checks.positive("sigma2", self.sigma2)
        w = _checks.positive("mixture_weight", self.mixture_weight, allow_zero=True)
        if w > 1.0:
            raise ValueError(f"mixture_weight must be in [0, 1], got {self.mixture_weight!r}")
        _checks.integer("num_index_samples", self.num_index_samples, minimum=1)
        _checks.positive("init_sigma", self.init_sigma)

    @property
    def analytic_kl(self) -> bool:
        """True when the prior is a single Gaussian (π ∈ {0, 1}) and the KL is exact."""
        return self.mixture_weight in (0.0, 1.0)

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        scale = float(np.sqrt(prior.temperature)) * prior.input_dim if self.kl_scale_by_temperature else 1.0
        return {"kl_weight": scale / max(prior.num_train, 1)}

    annealed = ("kl_weight",)

    def online_hyper(self, prior: ProblemInfo) -> dict[str, float]:
        # Reference bandit: KL × 2 sqrt(ρ), annealed as 1/t.
        return {"kl_weight": 2.0 * float(np.sqrt(prior.temperature))}

    def kl_term(self, mu: jax.Array, sigma: jax.Array, theta: jax.Array | None = None) -> jax.Array:
        """KL(q ‖ p): exact for a Gaussian prior, else the one-sample estimate log q(θ) − log p(θ)."""
        if self.analytic_kl:
            return gaussian_kl(mu, sigma, self.sigma1 if self.mixture_weight == 1.0 else self.sigma2)
        return diag_gaussian_log_prob(theta, mu, sigma) - scale_mixture_log_prob(
            theta, self.sigma1, self.sigma2, self.mixture_weight)

    def _sizes(self, d):
        return mlp_sizes(d, self.hidden, self.num_classes)

    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[BBBState, None]:
        mu, _ = flat_mlp(key, self._sizes(data.x.shape[1]))
        return BBBState(mu, jnp.full_like(mu, np.log(np.expm1(self.init_sigma)))), None

    def loss(self, state: BBBState, fixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        unravel = mlp_unravel(self._sizes(batch.x.shape[1]))
        sigma = jax.nn.softplus(state.rho)

        def one_sample(eps):
            theta = state.mu + sigma * eps
            nll = masked_cross_entropy(nets.mlp_apply(unravel(theta), batch.x), batch)
            return nll + hyper["kl_weight"] * self.kl_term(state.mu, sigma, theta)

        eps = jax.random.normal(key, (self.num_index_samples, state.mu.shape[0]))
        return jnp.mean(jax.vmap(one_sample)(eps))

    def sample(self, state: BBBState, x, key, num_samples: int) -> jax.Array:
        unravel = mlp_unravel(self._sizes(x.shape[1]))
        sigma = jax.nn.softplus(state.rho)

        def one(k):
            return nets.mlp_apply(unravel(state.mu + sigma * jax.random.normal(k, state.mu.shape)), x)

        return chunked_map(one, sample_keys(key, num_samples))  # [M, n, K]


@register("bbb")
def bbb(**kw) -> BBBAgent:
    """Bayes by backprop, prior σ1 = 1, σ2 = 0.75, π = 1, lr 3e-3, 8 samples/step, KL × sqrt(ρ)·d / n (App. C.4)."""
    return BBBAgent(**kw)
