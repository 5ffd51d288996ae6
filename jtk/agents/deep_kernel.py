"""Deep kernel: a trained MLP's features with a Bayesian last layer (Osband et al. 2022, App. C.9).

1. Train an MLP (50, 50) exactly as the mlp agent does (Adam 1e-3, 1000 steps,
   minibatch 100, L2 = l2_scale · sqrt(ρ) · d / n) — this reuses the
   ensemble agent's training with one member.
2. Take the penultimate features φ(x) ∈ R^m of the trained net, normalised to
   unit length (the reference's ``only_output`` normalisation), and treat
   k(x, x') = φ(x)ᵀφ(x') as a GP kernel on each logit. With Φ [n, m] the
   training features and Φ* [n*, m] the test features, the posterior
   covariance of the logits is (App. C.9)

       Σ = Φ*Φ*ᵀ − Φ*Φᵀ (σ² I_n + ΦΦᵀ)⁻¹ ΦΦ*ᵀ            (direct, n × n inverse)
         = σ² Φ* (σ² I_m + ΦᵀΦ)⁻¹ Φ*ᵀ                      (Woodbury, m × m inverse).

   The Woodbury form is used: with (σ² I + ΦᵀΦ) = L Lᵀ, a sample of all
   logits at once is

       logits = NN(x*) + s · Φ* L⁻ᵀ ζ,   ζ ~ N(0, I_{m×K}),

   whose covariance per class is s² Φ* (σ² I + ΦᵀΦ)⁻¹ Φ*ᵀ = (s²/σ²) Σ. The
   mean is the trained network's output, not the GP mean (the true logits are
   never observed).

Reference constants: σ² = sigma_squared_factor · ρ with factor 4, and
s = scale_factor · σ / sqrt(n ρ) with scale_factor 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, _numerics, nets, train as train_lib
from jtk.agents.base import NeuralAgent, ProblemInfo, register, renamed_keywords
from jtk.agents.ensemble import EnsembleAgent


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["DeepKernelState", "DeepKernelAgent", "deep_kernel"]


class DeepKernelState(NamedTuple):
    params: nets.Params  # trained MLP
    chol: jax.Array  # [m, m] lower Cholesky factor of σ² I + ΦᵀΦ
    scale: jax.Array  # [] s, the sampling scale


def normalized_features(params: nets.Params, x: jax.Array) -> jax.Array:
    """Penultimate features scaled to unit norm: x [n, d] → [n, m]."""
    phi = nets.mlp_features(params, x)
    return phi / (1e-6 + jnp.linalg.norm(phi, axis=-1, keepdims=True))


def woodbury_covariance(phi_train: jax.Array, phi_test: jax.Array, sigma2) -> jax.Array:
    """σ² Φ* (σ² I_m + ΦᵀΦ)⁻¹ Φ*ᵀ: Φ [n, m], Φ* [n*, m] → [n*, n*] (zero rows of Φ are absent data)."""
    m = phi_train.shape[1]
    chol = _numerics.cholesky(sigma2 * jnp.eye(m) + phi_train.T @ phi_train)
    half = _numerics.solve_triangular(chol, phi_test.T)  # L⁻¹ Φ*ᵀ  [m, n*]
    return sigma2 * half.T @ half


def direct_covariance(phi_train: jax.Array, phi_test: jax.Array, sigma2) -> jax.Array:
    """Φ*Φ*ᵀ − Φ*Φᵀ (σ² I_n + ΦΦᵀ)⁻¹ ΦΦ*ᵀ, the GP posterior covariance with the n × n inverse → [n*, n*]."""
    n = phi_train.shape[0]
    cross = phi_test @ phi_train.T  # [n*, n]
    return phi_test @ phi_test.T - cross @ jnp.linalg.solve(sigma2 * jnp.eye(n) + phi_train @ phi_train.T, cross.T)


@renamed_keywords(weight_decay="l2_scale")
@dataclass(frozen=True, kw_only=True)
class DeepKernelAgent(NeuralAgent):
    """MLP features + Bayesian last layer (GP with the learned kernel), Woodbury form.

    Attributes:
      l2_scale: λ in the training L2 = λ · sqrt(ρ) · d / n (1.0; the reference calls it ``weight_decay``,
        jtk's old keyword, still accepted with a DeprecationWarning).
      sigma_squared_factor: σ² = factor · ρ, the observation noise of the GP (4.0).
      scale_factor: s = factor · σ / sqrt(n ρ) (2.0).
      hidden, learning_rate, num_steps, batch_size, num_classes: the shared training fields
        (:class:`~jtk.agents.base.NeuralAgent`: (50, 50) (not empty; m = hidden[-1] features), Adam 1e-3,
        1000 steps, minibatch 100).

    Hyper keys (``hyper(prior)``, traced per problem):
      l2, prior_scale: the mlp's (:class:`~jtk.agents.ensemble.EnsembleAgent` with one member, no prior).
      sigma2: σ² = sigma_squared_factor · ρ.
      scale: s = scale_factor · σ / sqrt(n ρ).
    """

    l2_scale: float = 1.0
    sigma_squared_factor: float = 4.0
    scale_factor: float = 2.0

    def __check_init__(self):
        if not self.hidden:
            raise ValueError("hidden must list at least one hidden width, got ()")
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        _checks.positive("sigma_squared_factor", self.sigma_squared_factor)
        _checks.positive("scale_factor", self.scale_factor, allow_zero=True)

    def _mlp(self) -> EnsembleAgent:
        return EnsembleAgent(num_members=1, hidden=self.hidden, l2_scale=self.l2_scale,
                             learning_rate=self.learning_rate, num_steps=self.num_steps,
                             batch_size=self.batch_size, num_classes=self.num_classes)

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        sigma2 = self.sigma_squared_factor * prior.temperature
        scale = self.scale_factor * np.sqrt(sigma2) / np.sqrt(max(prior.num_train, 1) * prior.temperature)
        return {**self._mlp().hyper(prior), "sigma2": sigma2, "scale": float(scale)}

    def train(self, key, data: train_lib.Dataset, hyper) -> DeepKernelState:
        member = self._mlp().train(key, data, hyper).params
        params = jax.tree_util.tree_map(lambda a: a[0], member)
        valid = (jnp.arange(data.x.shape[0]) < data.n)[:, None]
        phi = jnp.where(valid, normalized_features(params, data.x), 0.0)  # [cap, m]; padding rows are 0
        m = phi.shape[1]
        chol = _numerics.cholesky(hyper["sigma2"] * jnp.eye(m) + phi.T @ phi)
        return DeepKernelState(params, chol, hyper["scale"])

    def sample(self, state: DeepKernelState, x, key, num_samples: int) -> jax.Array:
        mean = nets.mlp_apply(state.params, x)  # [n, K]
        phi = normalized_features(state.params, x)  # [n, m]
        zeta = jax.random.normal(key, (num_samples, phi.shape[1], self.num_classes))  # [M, m, K]
        a = jnp.moveaxis(_numerics.solve_triangular(state.chol, jnp.moveaxis(zeta, 0, 1), transpose=True), 0, 1)
        return mean + state.scale * jnp.einsum("nm,smk->snk", phi, a)  # [M, n, K]


@register("deep_kernel")
def deep_kernel(**kw) -> DeepKernelAgent:
    """Trained MLP (1000 steps) + Bayesian last layer on unit-norm features, σ² = 4ρ, s = 2σ/sqrt(nρ) (App. C.9)."""
    return DeepKernelAgent(**kw)
