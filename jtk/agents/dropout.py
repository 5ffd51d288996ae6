"""MC dropout (Gal & Ghahramani 2016; Osband et al. 2022, App. C.3).

An MLP (50, 50) trained with dropout on its hidden units and the reference
weight decay ``l2 = l2_scale · sqrt(ρ) · d / n`` on all parameters
(biases included). A posterior sample is the network with one dropout mask:
a Bernoulli(1 − rate) keep/drop decision per *unit*, rescaled by 1/(1 − rate),
shared by every input, so sample m is one function at all n inputs (as the
reference ENN, whose index is the mask's PRNG key). Training draws one mask per
step, shared by the minibatch (the reference trains with one index sample per
step).

Defaults (docs/reference.md, "Agent defaults": reference factory and the paper's sweep): rate 0.1,
l2_scale 1 (the reference's ``length_scale``), hidden (50, 50), no dropout on the inputs, Adam 1e-3, 1000
steps, minibatch 100.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import NeuralAgent, ProblemInfo, register, renamed_keywords
from jtk.agents.ensemble import masked_cross_entropy
from jtk.agents.zoo_common import chunked_map, reference_bandit_l2, reference_l2, sample_keys


@renamed_keywords(length_scale="l2_scale")
@dataclass(frozen=True, kw_only=True)
class DropoutAgent(NeuralAgent):
    """MC dropout over an MLP.

    Attributes:
      dropout_rate: probability p of dropping a hidden unit, in [0, 1) (0.1).
      l2_scale: λ in the weight decay λ · sqrt(ρ) · d / n (1.0; the reference calls it ``length_scale``,
        jtk's old keyword, still accepted with a DeprecationWarning).
      dropout_input: also drop input coordinates (False, as the reference default).
      hidden, learning_rate, num_steps, batch_size, num_classes: the shared training fields
        (:class:`~jtk.agents.base.NeuralAgent`: (50, 50) (not empty), Adam 1e-3, 1000 steps, minibatch 100).

    Hyper keys (``hyper(prior)``, traced per problem):
      l2: λ · sqrt(ρ) · d / n, the weight of Σ params² (the bandit: λ · 2ρ, annealed as 1/t).
    """

    dropout_rate: float = 0.1
    l2_scale: float = 1.0
    dropout_input: bool = False

    def __check_init__(self):
        rate = _checks.positive("dropout_rate", self.dropout_rate, allow_zero=True)
        if rate >= 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {self.dropout_rate!r}")
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        if not self.hidden:
            raise ValueError("hidden must list at least one hidden width, got ()")

    annealed = ("l2",)

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_l2(prior, self.l2_scale)}

    def online_hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_bandit_l2(prior, self.l2_scale)}

    def masks(self, key: jax.Array, input_dim: int) -> tuple[jax.Array, ...]:
        """One dropout mask per layer input (inputs, then each hidden layer), rescaled: [d], [h1], ..."""
        keep = 1.0 - self.dropout_rate
        sizes = (input_dim, *self.hidden)
        keys = jax.random.split(key, len(sizes))
        out = [jax.random.bernoulli(k, keep, (s,)).astype(jnp.float32) / keep for k, s in zip(keys, sizes)]
        if not self.dropout_input:
            out[0] = jnp.ones((input_dim,))
        return tuple(out)

    @staticmethod
    def apply(params: nets.Params, x: jax.Array, masks: tuple[jax.Array, ...]) -> jax.Array:
        """The masked network: x [n, d] → logits [n, K]."""
        h = x * masks[0]
        for (w, b), m in zip(params[:-1], masks[1:]):
            h = jax.nn.relu(h @ w + b) * m
        w, b = params[-1]
        return h @ w + b

    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[nets.Params, None]:
        d = data.x.shape[1]
        return nets.init_mlp(key, (d, *self.hidden, self.num_classes), first_bias_std=1.0 / np.sqrt(d)), None

    def loss(self, params, fixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        logits = self.apply(params, batch.x, self.masks(key, batch.x.shape[1]))
        return masked_cross_entropy(logits, batch) + hyper["l2"] * nets.sum_of_squares(params)

    def sample(self, state: nets.Params, x, key, num_samples: int) -> jax.Array:
        d = x.shape[1]
        return chunked_map(lambda k: self.apply(state, x, self.masks(k, d)),
                           sample_keys(key, num_samples))  # [M, n, K]


@register("dropout")
def dropout(**kw) -> DropoutAgent:
    """MC dropout, rate 0.1, (50, 50), L2 = l2_scale · sqrt(ρ) · d / n (App. C.3)."""
    return DropoutAgent(**kw)
