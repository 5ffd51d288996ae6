"""Deep ensembles: mlp, ensemble and ensemble+ (Osband et al. 2022, App. C.1, C.2, C.5).

All three are one agent: K MLPs trained on the same minibatches, differing only
in their initialisation, with an L2 penalty on all parameters.

* ``mlp``: K = 1.
* ``ensemble``: K members (reference default K = 100).
* ``ensemble+``: each member adds a fixed random *prior network* with the
  generative model's architecture (50, 50), scaled by prior_scale /
  sqrt(temperature) (reference: 3 / sqrt(ρ)): output = trained net(x) +
  scale · prior net(x), with the prior net never trained (Osband et al. 2018,
  "randomized prior functions"). Prior networks are drawn from the generative
  model's own prior (first-layer bias N(0, 1/d)), as the reference's are, so
  they have the reference's size (docs/reference.md, "Agent defaults", has the
  measured comparison). Optional bootstrap weights per (member, example).

Loss (reference factories): mean over members of the (weighted) mean
cross-entropy on the minibatch + l2 · Σ params², with
l2 = λ · sqrt(ρ) · d / (K · n) (docs/reference.md, "Agent defaults"; λ = 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import NeuralAgent, ProblemInfo, register
from jtk.agents.zoo_common import reference_bandit_l2, reference_l2
from jtk.envs.classification import sample_prior_params

BOOTSTRAPS = ("none", "exponential", "bernoulli")


class EnsembleFixed(NamedTuple):
    prior_params: nets.Params | None  # leaves [K, ...]: fixed prior networks (ensemble+)
    prior_scale: jax.Array  # [] scale of the prior networks (0 without prior)
    prior_rows: jax.Array | None  # [K, rows, C] scaled prior outputs at the rows of the training data
    weights: jax.Array  # [K, rows] bootstrap weights of the rows


class EnsembleState(NamedTuple):
    params: nets.Params  # leaves [K, ...]: trained members
    prior_params: nets.Params | None  # leaves [K, ...]: fixed prior networks (ensemble+)
    prior_scale: jax.Array  # [] scale of the prior networks (0 without prior)


def bootstrap_weights(key: jax.Array, kind: str, shape: tuple[int, ...]) -> jax.Array:
    """Per-example loss weights with mean 1: none → 1, exponential → Exp(1), bernoulli → 2·Bern(½)."""
    if kind == "exponential":
        return jax.random.exponential(key, shape)
    if kind == "bernoulli":
        return 2.0 * jax.random.bernoulli(key, 0.5, shape).astype(jnp.float32)
    return jnp.ones(shape)


def masked_cross_entropy(logits: jax.Array, batch: train_lib.Batch, weights: jax.Array | None = None
                         ) -> jax.Array:
    """Mean cross-entropy over the real rows of a batch: logits [..., B, K] → [...]."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    labels = jnp.broadcast_to(batch.y[:, None], logp.shape[:-1] + (1,))
    # take_along_axis, not a one-hot product: jax 0.10.2 on CPU mis-differentiated the one-hot
    # form under jit(vmap(grad)) for the hypermodel loss (checked against finite differences).
    nll = -jnp.take_along_axis(logp, labels, axis=-1)[..., 0]  # [..., B]
    w = batch.mask if weights is None else weights * batch.mask
    return jnp.sum(nll * w, axis=-1) / jnp.maximum(jnp.sum(batch.mask), 1.0)


@dataclass(frozen=True, kw_only=True)
class EnsembleAgent(NeuralAgent):
    """An ensemble of MLPs, optionally with additive prior networks (ensemble+).

    Attributes:
      num_members: ensemble size K (reference default 100; mlp = 1).
      l2_scale: λ in l2 = λ · sqrt(ρ) · d / (K · n) (1.0; the reference factories call it ``l2_weight_decay``).
      prior_scale: scale of the additive prior networks; 0 means no prior (ensemble).
      scale_prior_by_temperature: multiply prior_scale by 1 / sqrt(ρ) (reference: yes).
      prior_hidden: hidden widths of the prior networks (the generative model's, (50, 50)).
      bootstrap: "none" (default), "exponential" or "bernoulli" example weights.
      hidden, learning_rate, num_steps, batch_size, num_classes: the shared training fields
        (:class:`~jtk.agents.base.NeuralAgent`: (50, 50), Adam 1e-3, 1000 steps, minibatch 100).

    Hyper keys (``hyper(prior)``, traced per problem):
      l2: λ · sqrt(ρ) · d / (K · n), the weight of Σ params² (the bandit: λ · 2ρ / K, annealed as 1/t).
      prior_scale: the prior networks' scale, prior_scale / sqrt(ρ) (or prior_scale).
    """

    num_members: int = 100
    l2_scale: float = 1.0
    prior_scale: float = 0.0
    scale_prior_by_temperature: bool = True
    prior_hidden: tuple[int, ...] = (50, 50)
    bootstrap: str = "none"

    def __check_init__(self):
        _checks.integer("num_members", self.num_members, minimum=1)
        object.__setattr__(self, "prior_hidden", _checks.widths("prior_hidden", self.prior_hidden))
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        _checks.positive("prior_scale", self.prior_scale, allow_zero=True)
        _checks.one_of("bootstrap", self.bootstrap, BOOTSTRAPS)

    @property
    def num_networks(self) -> int:
        """K members per problem."""
        return self.num_members

    annealed = ("l2",)

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_l2(prior, self.l2_scale, self.num_members), "prior_scale": self._prior_scale(prior)}

    def online_hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_bandit_l2(prior, self.l2_scale, self.num_members),
                "prior_scale": self._prior_scale(prior)}

    def _prior_scale(self, prior: ProblemInfo) -> float:
        root_t = float(np.sqrt(prior.temperature))
        return self.prior_scale / root_t if self.scale_prior_by_temperature else self.prior_scale

    def _apply_members(self, params, x):
        return jax.vmap(nets.mlp_apply, (0, None))(params, x)  # [K, n, C]

    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[nets.Params, EnsembleFixed]:
        k_init, k_prior, k_boot = jax.random.split(key, 3)
        d, num_classes = data.x.shape[1], self.num_classes
        params = jax.vmap(lambda k: nets.init_mlp(k, (d, *self.hidden, num_classes)))(
            jax.random.split(k_init, self.num_members))
        prior_params, prior_rows = None, None
        if self.prior_scale > 0:
            prior_params = jax.vmap(lambda k: sample_prior_params(k, d, self.prior_hidden, num_classes))(
                jax.random.split(k_prior, self.num_members))
            # The prior nets are fixed: evaluate them at the rows of data once.
            prior_rows = hyper["prior_scale"] * self._apply_members(prior_params, data.x)  # [K, rows, C]
        weights = bootstrap_weights(k_boot, self.bootstrap, (self.num_members, data.x.shape[0]))
        scale = hyper["prior_scale"] if prior_params is not None else jnp.zeros(())
        return params, EnsembleFixed(prior_params, scale, prior_rows, weights)

    def loss(self, params, fixed: EnsembleFixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        logits = self._apply_members(params, batch.x)  # [K, B, C]
        if fixed.prior_params is not None:
            logits = logits + fixed.prior_rows[:, batch.index]
        ce = masked_cross_entropy(logits, batch, fixed.weights[:, batch.index])  # [K]
        return jnp.mean(ce) + hyper["l2"] * nets.sum_of_squares(params)

    def finalize(self, params, fixed: EnsembleFixed) -> EnsembleState:
        return EnsembleState(params, fixed.prior_params, fixed.prior_scale)

    def sample(self, state: EnsembleState, x, key, num_samples: int) -> jax.Array:
        """M members drawn uniformly with replacement, only those evaluated: [M, n, C]."""
        if num_samples >= self.num_members:
            return super().sample(state, x, key, num_samples)
        idx = jax.random.randint(key, (num_samples,), 0, self.num_members)
        params, prior_params = jax.tree_util.tree_map(lambda a: a[idx], (state.params, state.prior_params))
        return self.components(EnsembleState(params, prior_params, state.prior_scale), x)

    def components(self, state: EnsembleState, x) -> jax.Array:
        logits = self._apply_members(state.params, x)
        if state.prior_params is not None:
            logits = logits + state.prior_scale * self._apply_members(state.prior_params, x)
        return logits  # [K, n, C]


@register("mlp")
def mlp(**kw) -> EnsembleAgent:
    """A single MLP (50, 50) with L2 = λ·sqrt(ρ)·d/n, λ = 1 (App. C.1)."""
    return EnsembleAgent(**{"num_members": 1, **kw})


@register("ensemble")
def ensemble(**kw) -> EnsembleAgent:
    """A deep ensemble of K = 100 MLPs (App. C.2)."""
    return EnsembleAgent(**{"num_members": 100, **kw})


@register("ensemble+")
def ensemble_plus(**kw) -> EnsembleAgent:
    """A deep ensemble with additive prior networks, prior_scale 3/sqrt(ρ), K = 100 (App. C.5)."""
    return EnsembleAgent(**{"num_members": 100, "prior_scale": 3.0, **kw})
