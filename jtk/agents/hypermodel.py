"""Linear hypermodel with an additive prior (Dwaracherla et al. 2020; Osband et al. 2022, App. C.7).

An index z ∈ R^D, z ~ N(0, I/D) (the reference's scaled Gaussian indexer),
picks the parameters of a base MLP (50, 50) linearly,

    θ(z) = θ₀ + A z,          A ∈ R^{P×D},

and the sampled function adds a fixed random *prior function* of the same
index, an MLP d → 10 → K whose parameters are a fixed random linear map of z
(entries of B ~ N(0, 1/fan_in), so for each z the prior network is drawn like
a freshly initialised one):

    f(x, z) = MLP_{θ(z)}(x) + prior_scale · MLP_{B z}(x),   prior_scale = 1/sqrt(ρ).

Training (reference factory): Adam 1e-3 for 2000 steps on minibatches of 100;
each step averages the cross-entropy over 16 index samples and adds
l2 · (‖θ₀‖² + ‖A‖²) with l2 = λ · sqrt(ρ) · d / n, λ = 1. Only θ₀ and A are
trained; B is fixed. Defaults: index dimension 6, 16 index samples per step,
prior MLP (10,), prior_scale 1/sqrt(ρ) (REFERENCE_FACTS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import JaxAgent, Prior, register
from jtk.agents.ensemble import masked_cross_entropy
from jtk.agents.zoo_common import (chunked_map, fan_in_scales, flat_mlp, mlp_sizes, reference_bandit_l2,
                                    mlp_unravel, reference_l2)


class HypermodelState(NamedTuple):
    theta0: jax.Array  # [P] base parameters at z = 0
    a: jax.Array  # [P, D] linear hypermodel
    prior_b: jax.Array  # [Pp, D] fixed prior hypermodel
    prior_scale: jax.Array  # [] scale of the prior function


@dataclass(frozen=True)
class HypermodelAgent(JaxAgent):
    """A linear hypermodel over an MLP with an additive linear-hypermodel prior.

    Args:
      index_dim: D, dimension of the index z (6).
      num_index_samples: index samples averaged per training step (16).
      hidden: base network hidden widths ((50, 50)).
      prior_hidden: prior network hidden widths ((10,)).
      prior_scale: scale of the prior function before the temperature factor (1.0).
      scale_prior_by_temperature: divide prior_scale by sqrt(ρ) (reference: True).
      l2_scale: λ in l2 = λ · sqrt(ρ) · d / n (1.0).
      index_init_scale: initial A ~ index_init_scale · N(0, 1/fan_in) per base parameter.
      learning_rate: Adam step size (1e-3).
      num_steps: Adam steps (2000).
      batch_size: minibatch size (100).
      num_classes: outputs; set from the prior by ``fit`` and the testbed.
    """

    index_dim: int = 6
    num_index_samples: int = 16
    hidden: tuple[int, ...] = (50, 50)
    prior_hidden: tuple[int, ...] = (10,)
    prior_scale: float = 1.0
    scale_prior_by_temperature: bool = True
    l2_scale: float = 1.0
    index_init_scale: float = 1.0
    learning_rate: float = 1e-3
    num_steps: int = 2000
    batch_size: int = 100
    num_classes: int = 2

    mixture = False

    def __post_init__(self):
        _checks.integer("index_dim", self.index_dim, minimum=1)
        _checks.integer("num_index_samples", self.num_index_samples, minimum=1)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden))
        object.__setattr__(self, "prior_hidden", _checks.widths("prior_hidden", self.prior_hidden))
        _checks.positive("prior_scale", self.prior_scale, allow_zero=True)
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        _checks.positive("index_init_scale", self.index_init_scale, allow_zero=True)
        self.check_training_settings()

    def hyper(self, prior: Prior) -> dict[str, float]:
        scale = self.prior_scale / float(np.sqrt(prior.temperature)) if self.scale_prior_by_temperature \
            else self.prior_scale
        return {"l2": reference_l2(prior, self.l2_scale), "prior_scale": scale}

    annealed = ("l2",)

    def online_hyper(self, prior: Prior) -> dict[str, float]:
        return {**self.hyper(prior), "l2": reference_bandit_l2(prior, self.l2_scale)}

    def sample_index(self, key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
        """z ~ N(0, I/D): [..., D]."""
        return jax.random.normal(key, shape + (self.index_dim,)) / np.sqrt(self.index_dim)

    def function(self, state: HypermodelState, x: jax.Array, z: jax.Array) -> jax.Array:
        """f(x, z) for one index z [D]: x [n, d] → logits [n, K]."""
        d = x.shape[1]
        base = mlp_unravel(mlp_sizes(d, self.hidden, self.num_classes))(state.theta0 + state.a @ z)
        prior = mlp_unravel(mlp_sizes(d, self.prior_hidden, self.num_classes))(state.prior_b @ z)
        return nets.mlp_apply(base, x) + state.prior_scale * nets.mlp_apply(prior, x)

    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[tuple[jax.Array, jax.Array], tuple]:
        k_init, k_a, k_prior = jax.random.split(key, 3)
        d = data.x.shape[1]
        sizes = mlp_sizes(d, self.hidden, self.num_classes)
        theta0, _ = flat_mlp(k_init, sizes)
        a = jax.random.truncated_normal(k_a, -2.0, 2.0, (theta0.shape[0], self.index_dim)) \
            * (self.index_init_scale * fan_in_scales(sizes))[:, None]
        pb = fan_in_scales(mlp_sizes(d, self.prior_hidden, self.num_classes))
        prior_b = jax.random.normal(k_prior, (pb.shape[0], self.index_dim)) * pb[:, None]
        return (theta0, a), (prior_b, hyper["prior_scale"])

    def loss(self, trainable, fixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        state = HypermodelState(*trainable, *fixed)
        z = self.sample_index(key, (self.num_index_samples,))
        logits = jax.vmap(lambda zi: self.function(state, batch.x, zi))(z)  # [Z, B, K]
        return jnp.mean(masked_cross_entropy(logits, batch)) + hyper["l2"] * nets.sum_of_squares(trainable)

    def finalize(self, trainable, fixed) -> HypermodelState:
        return HypermodelState(*trainable, *fixed)

    def sample(self, state: HypermodelState, x, key, num_samples: int) -> jax.Array:
        z = self.sample_index(key, (num_samples,))
        return chunked_map(lambda zi: self.function(state, x, zi), z)  # [M, n, K]


@register("hypermodel")
def hypermodel(**kw) -> HypermodelAgent:
    """Linear hypermodel, index dim 6, 16 index samples/step, prior MLP (10,) × 1/sqrt(ρ), 2000 steps (App. C.7)."""
    return HypermodelAgent(**kw)
