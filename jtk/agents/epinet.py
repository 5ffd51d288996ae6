"""Epinet: an MLP with an epistemic head and an additive prior (Osband et al., "Epistemic neural networks").

An epistemic neural network (arXiv:2107.08924) takes an input x and an index
z; the epinet (the paper's epinet section) adds to a base network μ_ζ(x) a small network that
sees the index and the base network's features φ_ζ(x), held fixed by a stop-gradient:

    f(x, z) = μ_ζ(x) + σ^L_η(sg[φ_ζ(x)], z) + σ^P(sg[φ_ζ(x)], z),

with a learnable part σ^L and a fixed prior part σ^P. Built as the reference
testbed agent builds it (docs/reference.md, "Epinet"):

* **index**: z ~ N(0, I_D), D = 8 (unscaled, unlike the hypermodel's N(0, I/D)).
* **base network** μ: MLP d → 50 → 50 → K (ReLU), haiku's default initialisation
  (weights truncated normal with std 1/sqrt(fan_in), biases 0).
* **features** φ(x) = [x, h₂(x)], the input and the last hidden layer (after its
  ReLU), with a stop-gradient: the epinet's loss does not train the base through them.
* **learnable epinet** σ^L(φ, z) = Σ_i z_i · MLP_η([z, φ])_{·,i}: an MLP
  (D + d + 50) → 15 → 15 → K·D on the index concatenated to the features,
  its output read as a [K, D] matrix and multiplied by z.
* **prior**: an additive prior function linear in the index,
  prior_scale/ρ · Σ_{i=1..D} z_i · p_i(x), with D fixed random MLPs p_i: d → 5 → 5 → K
  (haiku's default initialisation), prior_scale = 0.3. The reference's own prior
  epinet σ^P (same architecture as σ^L, fixed) has scale 0 in the testbed
  configuration; ``epinet_prior_scale`` > 0 turns it on.

Training (reference factory): Adam 1e-3, minibatches of 100, 1000 steps
(10 000 when n / d > 500; never on the paper's 2-D grid), loss = cross-entropy
averaged over 8 index samples per step + l2 · Σ params² over the base network
and the learnable epinet (not the priors), l2 = 0.2 · (d / n)^0.7.

Its posterior is not a finite mixture (z is Gaussian): the testbed scores it
with M sampled indices.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import NeuralAgent, ProblemInfo, register
from jtk.agents.ensemble import masked_cross_entropy
from jtk.agents.zoo_common import chunked_map, mlp_sizes


class EpinetFixed(NamedTuple):
    prior_nets: nets.Params  # leaves [D, ...]: the additive prior's D fixed MLPs
    prior_epinet: nets.Params | None  # fixed prior epinet σ^P (None when epinet_prior_scale = 0)
    prior_scale: jax.Array  # [] scale of the additive prior (prior_scale / ρ)
    prior_rows: jax.Array  # [D, rows, K] unscaled p_i at the rows of the training data


class EpinetState(NamedTuple):
    base: nets.Params  # base MLP μ
    epinet: nets.Params  # learnable epinet σ^L
    prior_nets: nets.Params  # leaves [D, ...]
    prior_epinet: nets.Params | None
    prior_scale: jax.Array  # []


@dataclass(frozen=True, kw_only=True)
class EpinetAgent(NeuralAgent):
    """An MLP with an epinet head and an additive index-linear prior (the reference's testbed epinet).

    Attributes:
      index_dim: D, dimension of the Gaussian index z (8).
      epinet_hidden: hidden widths of the epinet ((15, 15)).
      prior_hidden: hidden widths of each of the D additive prior MLPs ((5, 5)).
      prior_scale: scale of the additive prior before the temperature factor (0.3).
      scale_prior_by_temperature: divide prior_scale by ρ (linear, as the reference; True).
      epinet_prior_scale: scale of the fixed prior epinet σ^P (0: off, the reference's testbed setting).
      num_index_samples: index samples averaged per training step (8 = D, as the reference).
      l2_scale: λ in l2 = λ · (d / n)^0.7 (0.2; the reference calls it ``l2_weight_decay``).
      high_data_steps_factor: num_steps is multiplied by this when n / d > 500 (10).
      hidden, learning_rate, num_steps, batch_size, num_classes: the shared training fields
        (:class:`~jtk.agents.base.NeuralAgent`: base network (50, 50) (not empty), Adam 1e-3, 1000 steps,
        minibatch 100).

    Hyper keys (``hyper(prior)``, traced per problem):
      l2: λ · (d / n)^0.7, the weight of Σ params² of the base network and the learnable epinet (the bandit:
      its value at n = 1, annealed as 1/t).
      prior_scale: the additive prior's scale, prior_scale / ρ (or prior_scale).

    Defaults: the reference factory's (docs/reference.md, "Epinet").
    """

    index_dim: int = 8
    epinet_hidden: tuple[int, ...] = (15, 15)
    prior_hidden: tuple[int, ...] = (5, 5)
    prior_scale: float = 0.3
    scale_prior_by_temperature: bool = True
    epinet_prior_scale: float = 0.0
    num_index_samples: int = 8
    l2_scale: float = 0.2
    high_data_steps_factor: int = 10

    def __check_init__(self):
        _checks.integer("index_dim", self.index_dim, minimum=1)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden, allow_empty=False))
        object.__setattr__(self, "epinet_hidden", _checks.widths("epinet_hidden", self.epinet_hidden))
        object.__setattr__(self, "prior_hidden", _checks.widths("prior_hidden", self.prior_hidden))
        _checks.positive("prior_scale", self.prior_scale, allow_zero=True)
        if not isinstance(self.scale_prior_by_temperature, (bool, np.bool_)):
            raise TypeError(f"scale_prior_by_temperature must be a bool, got {self.scale_prior_by_temperature!r}")
        _checks.positive("epinet_prior_scale", self.epinet_prior_scale, allow_zero=True)
        _checks.integer("num_index_samples", self.num_index_samples, minimum=1)
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        _checks.integer("high_data_steps_factor", self.high_data_steps_factor, minimum=1)

    # ------------------------------------------------------------ configuration
    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        l2 = self.l2_scale * (prior.input_dim / max(prior.num_train, 1)) ** 0.7
        return {"l2": l2, "prior_scale": self._prior_scale(prior)}

    def _prior_scale(self, prior: ProblemInfo) -> float:
        return self.prior_scale / prior.temperature if self.scale_prior_by_temperature else self.prior_scale

    annealed = ("l2",)

    def online_hyper(self, prior: ProblemInfo) -> dict[str, float]:
        """The offline hyperparameters at n = 1; the bandit anneals l2 as 1/t (jtk's choice: no reference)."""
        return self.hyper(dataclasses.replace(prior, num_train=1))

    def specialize(self, prior: ProblemInfo) -> "EpinetAgent":
        """Static shapes for a problem, and the reference's ×10 steps when n / d > 500."""
        agent = super().specialize(prior)
        if prior.num_train > 500 * prior.input_dim:
            agent = dataclasses.replace(agent, num_steps=self.num_steps * self.high_data_steps_factor,
                                        high_data_steps_factor=1)
        return agent

    def sample_index(self, key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
        """z ~ N(0, I_D): [..., D]."""
        return jax.random.normal(key, shape + (self.index_dim,))

    # ------------------------------------------------------------ networks
    def epinet_sizes(self, input_dim: int) -> tuple[int, ...]:
        """Layer widths of σ^L and σ^P: ``(D + d + hidden[-1], *epinet_hidden, K · D)``."""
        return (self.index_dim + input_dim + self.hidden[-1], *self.epinet_hidden, self.num_classes * self.index_dim)

    def features(self, base: nets.Params, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Base logits μ(x) [n, K] and the epinet's features sg([x, h_last(x)]) [n, d + hidden[-1]]."""
        h = nets.mlp_features(base, x)
        w, b = base[-1]
        return h @ w + b, jax.lax.stop_gradient(jnp.concatenate([x, h], axis=1))

    def head(self, params: nets.Params, phi: jax.Array, z: jax.Array) -> jax.Array:
        """An epinet σ(φ, z) for one index z [D]: φ [n, F] → [n, K]."""
        n = phi.shape[0]
        inputs = jnp.concatenate([jnp.broadcast_to(z, (n, self.index_dim)), phi], axis=1)
        out = nets.mlp_apply(params, inputs).reshape(n, self.num_classes, self.index_dim)
        return out @ z

    def apply_priors(self, prior_nets: nets.Params, x: jax.Array) -> jax.Array:
        """The D additive prior MLPs at x: [D, n, K] (unscaled)."""
        return jax.vmap(nets.mlp_apply, (0, None))(prior_nets, x)

    def function(self, state: EpinetState, x: jax.Array, z: jax.Array) -> jax.Array:
        """f(x, z) for one index z [D]: x [n, d] → logits [n, K]."""
        mu, phi = self.features(state.base, x)
        prior = jnp.einsum("d,dnk->nk", z, self.apply_priors(state.prior_nets, x))
        return self._combine(state.epinet, state.prior_epinet, mu, phi, prior, state.prior_scale, z)

    def _combine(self, epinet, prior_epinet, mu, phi, prior_out, prior_scale, z):
        logits = mu + self.head(epinet, phi, z) + prior_scale * prior_out
        if prior_epinet is not None:
            logits = logits + self.epinet_prior_scale * self.head(prior_epinet, phi, z)
        return logits

    # ------------------------------------------------------------ learner
    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[tuple[nets.Params, nets.Params], EpinetFixed]:
        k_base, k_epi, k_prior, k_pepi = jax.random.split(key, 4)
        d = data.x.shape[1]
        base = nets.init_mlp(k_base, mlp_sizes(d, self.hidden, self.num_classes))
        epinet = nets.init_mlp(k_epi, self.epinet_sizes(d))
        prior_nets = jax.vmap(lambda k: nets.init_mlp(k, mlp_sizes(d, self.prior_hidden, self.num_classes)))(
            jax.random.split(k_prior, self.index_dim))
        prior_epinet = nets.init_mlp(k_pepi, self.epinet_sizes(d)) if self.epinet_prior_scale > 0 else None
        fixed = EpinetFixed(prior_nets, prior_epinet, jnp.asarray(hyper["prior_scale"], jnp.float32),
                            self.apply_priors(prior_nets, data.x))
        return (base, epinet), fixed

    def loss(self, trainable, fixed: EpinetFixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        base, epinet = trainable
        mu, phi = self.features(base, batch.x)
        rows = fixed.prior_rows[:, batch.index]  # [D, B, K]
        z = self.sample_index(key, (self.num_index_samples,))
        logits = jax.vmap(lambda zi: self._combine(epinet, fixed.prior_epinet, mu, phi,
                                                   jnp.einsum("d,dnk->nk", zi, rows), fixed.prior_scale, zi))(z)
        return jnp.mean(masked_cross_entropy(logits, batch)) + hyper["l2"] * nets.sum_of_squares(trainable)

    def finalize(self, trainable, fixed: EpinetFixed) -> EpinetState:
        return EpinetState(*trainable, fixed.prior_nets, fixed.prior_epinet, fixed.prior_scale)

    def sample(self, state: EpinetState, x, key, num_samples: int) -> jax.Array:
        """M functions at x [n, d] → [M, n, K]; the base network and the priors are evaluated once."""
        mu, phi = self.features(state.base, x)
        priors = self.apply_priors(state.prior_nets, x)  # [D, n, K]
        z = self.sample_index(key, (num_samples,))
        return chunked_map(lambda zi: self._combine(state.epinet, state.prior_epinet, mu, phi,
                                                    jnp.einsum("d,dnk->nk", zi, priors), state.prior_scale, zi), z)


@register("epinet")
def epinet(**kw) -> EpinetAgent:
    """Epinet: MLP (50, 50) + epinet (15, 15) on sg[x, h₂] and z ~ N(0, I_8), additive prior 0.3/ρ (ENN paper)."""
    return EpinetAgent(**kw)
