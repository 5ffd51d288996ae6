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

Training runs the members through :func:`jtk.nets.members_logits_t` (weights stored [K, fan_out, fan_in] while
training, a written-out backward pass; ``finalize`` gives them back in ``jtk.nets``' usual layout), and on the CPU
in blocks of members: the members do not interact, so each block runs the whole loop on the same minibatches while
its parameters, optimiser state and activations stay in the core's cache (``members_per_block``;
docs/platforms.md, "The member kernel: training near the small-product rate").
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


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["BOOTSTRAPS", "EnsembleFixed", "EnsembleState", "EnsembleAgent", "mlp", "ensemble", "ensemble_plus"]


class EnsembleFixed(NamedTuple):
    prior_params: nets.Params | None  # leaves [K, ...]: fixed prior networks (ensemble+)
    prior_scale: jax.Array  # [] scale of the prior networks (0 without prior)
    prior_rows: jax.Array | None  # [K, C, rows] scaled prior outputs at the rows of the training data
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


def masked_cross_entropy(logits: jax.Array, batch: train_lib.Batch, weights: jax.Array | None = None,
                         class_axis: int = -1) -> jax.Array:
    """Mean cross-entropy over the real rows of a batch: logits [..., B, K] (``class_axis=-2``: [..., K, B]) → [...]."""
    if class_axis not in (-1, -2):
        raise ValueError(f"class_axis must be -1 or -2, got {class_axis}")
    logp = jax.nn.log_softmax(logits, axis=class_axis)
    # take_along_axis, not a one-hot product: jax 0.10.2 on CPU mis-differentiated the one-hot
    # form under jit(vmap(grad)) for the hypermodel loss (checked against finite differences).
    if class_axis == -1:
        labels = jnp.broadcast_to(batch.y[:, None], logp.shape[:-1] + (1,))
        nll = -jnp.take_along_axis(logp, labels, axis=-1)[..., 0]  # [..., B]
    else:
        labels = jnp.broadcast_to(batch.y[None, :], logp.shape[:-2] + (1, logp.shape[-1]))
        nll = -jnp.take_along_axis(logp, labels, axis=-2)[..., 0, :]  # [..., B]
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

    @staticmethod
    def _apply_members(params, x) -> jax.Array:
        """All K members (``jtk.nets`` layout) at x [n, d], feature-major: [K, C, n], through
        :func:`jtk.nets.members_logits_t` (faster on the CPU than ``vmap(mlp_apply)``; docs/platforms.md)."""
        return nets.members_logits_t(nets.members_to_training(params), x)

    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[nets.Params, EnsembleFixed]:
        """Members (in the training layout of :func:`jtk.nets.members_to_training`) and the fixed parts."""
        k_init, k_prior, k_boot = jax.random.split(key, 3)
        d, num_classes = data.x.shape[1], self.num_classes
        params = jax.vmap(lambda k: nets.init_mlp(k, (d, *self.hidden, num_classes)))(
            jax.random.split(k_init, self.num_members))
        prior_params, prior_rows = None, None
        if self.prior_scale > 0:
            prior_params = jax.vmap(lambda k: sample_prior_params(k, d, self.prior_hidden, num_classes))(
                jax.random.split(k_prior, self.num_members))
            # The prior nets are fixed: evaluate them at the rows of data once.
            prior_rows = hyper["prior_scale"] * self._apply_members(prior_params, data.x)  # [K, C, rows]
        weights = bootstrap_weights(k_boot, self.bootstrap, (self.num_members, data.x.shape[0]))
        scale = hyper["prior_scale"] if prior_params is not None else jnp.zeros(())
        return nets.members_to_training(params), EnsembleFixed(prior_params, scale, prior_rows, weights)

    def loss(self, params, fixed: EnsembleFixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        """Σ over the members given of their cross-entropy, over K (the mean when all K are given), + l2 · Σ params²."""
        logits = nets.members_logits_t(params, batch.x)  # [K, C, B]
        if fixed.prior_rows is not None:
            logits = logits + fixed.prior_rows[:, :, batch.index]
        ce = masked_cross_entropy(logits, batch, fixed.weights[:, batch.index], class_axis=-2)  # [K]
        return jnp.sum(ce) / self.num_members + hyper["l2"] * nets.sum_of_squares(params)

    def members_per_block(self) -> int:
        """Members trained at once: all of them off the CPU; on the CPU the largest divisor of K within
        :func:`jtk.train.cpu_block_size` at this minibatch size (5 of 100 at minibatch 100), or, when that divisor
        is under half of it (K = 7: 1), the smallest divisor above it: few large blocks beat many tiny ones."""
        if jax.default_backend() != "cpu":
            return self.num_members
        most = train_lib.cpu_block_size(self.batch_size, self.num_members)
        divisors = [b for b in range(1, self.num_members + 1) if self.num_members % b == 0]
        below = max(b for b in divisors if b <= most)
        return below if 2 * below >= most else min(b for b in divisors if b >= most)

    def run_steps(self, trainable, fixed: EnsembleFixed, data: train_lib.Dataset, hyper, key, indices=None):
        """The shared loop, one block of members after another (``lax.map``), each on the same minibatches.

        The loss is a sum over members, so a block's gradients are the full loss's gradients of its members; the
        prior networks are only needed through ``prior_rows``. The minibatch rows are drawn once for all blocks.
        """
        per_block = self.members_per_block()
        if per_block == self.num_members:
            return super().run_steps(trainable, fixed, data, hyper, key, indices)
        if indices is None and not self.whole_set:
            indices = train_lib.batch_indices(key, data, self.batch_size, self.num_steps)
        blocks = self.num_members // per_block
        split = lambda a: a.reshape((blocks, per_block) + a.shape[1:])  # noqa: E731

        def block(args):
            params, rows, weights = args
            return super(EnsembleAgent, self).run_steps(params, fixed._replace(prior_params=None, prior_rows=rows,
                                                                                weights=weights), data, hyper, key,
                                                        indices)

        rows = None if fixed.prior_rows is None else split(fixed.prior_rows)
        trained = jax.lax.map(block, (jax.tree_util.tree_map(split, trainable), rows, split(fixed.weights)))
        return jax.tree_util.tree_map(lambda a: a.reshape((self.num_members,) + a.shape[2:]), trained)

    def finalize(self, params, fixed: EnsembleFixed) -> EnsembleState:
        return EnsembleState(nets.members_from_training(params), fixed.prior_params, fixed.prior_scale)

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
        return jnp.swapaxes(logits, 1, 2)  # [K, n, C]


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
