"""MC dropout (Gal & Ghahramani 2016; Osband et al. 2022, App. C.3).

An MLP (50, 50) trained with dropout on its hidden units and the reference
weight decay ``l2 = length_scale · sqrt(ρ) · d / n`` on all parameters
(biases included). A posterior sample is the network with one dropout mask:
a Bernoulli(1 − rate) keep/drop decision per *unit*, rescaled by 1/(1 − rate),
shared by every input, so sample m is one function at all n inputs (as the
reference ENN, whose index is the mask's PRNG key). Training draws one mask per
step, shared by the minibatch (the reference trains with one index sample per
step).

Defaults (docs/reference.md, "Agent defaults": reference factory and the paper's sweep): rate 0.1,
length_scale 1, hidden (50, 50), no dropout on the inputs, Adam 1e-3, 1000
steps, minibatch 100.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import JaxAgent, ProblemInfo, register
from jtk.agents.ensemble import masked_cross_entropy
from jtk.agents.zoo_common import chunked_map, reference_bandit_l2, reference_l2, sample_keys


@dataclass(frozen=True)
class DropoutAgent(JaxAgent):
    """MC dropout over an MLP.

    Args:
      dropout_rate: probability p of dropping a hidden unit, in [0, 1) (0.1).
      length_scale: l in the weight decay l · sqrt(ρ) · d / n (1.0).
      hidden: hidden widths ((50, 50)).
      dropout_input: also drop input coordinates (False, as the reference default).
      learning_rate: Adam step size (1e-3).
      num_steps: Adam steps (1000).
      batch_size: minibatch size (100; the whole set when n is smaller).
      num_classes: outputs; set from the prior by ``fit`` and the testbed.
    """

    dropout_rate: float = 0.1
    length_scale: float = 1.0
    hidden: tuple[int, ...] = (50, 50)
    dropout_input: bool = False
    learning_rate: float = 1e-3
    num_steps: int = 1000
    batch_size: int = 100
    num_classes: int = 2

    mixture = False

    def __post_init__(self):
        rate = _checks.positive("dropout_rate", self.dropout_rate, allow_zero=True)
        if rate >= 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {self.dropout_rate!r}")
        _checks.positive("length_scale", self.length_scale, allow_zero=True)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden))
        if not self.hidden:
            raise ValueError("hidden must list at least one hidden width, got ()")
        self.check_training_settings()

    annealed = ("l2",)

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_l2(prior, self.length_scale)}

    def online_hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_bandit_l2(prior, self.length_scale)}

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
    """MC dropout, rate 0.1, (50, 50), L2 = length_scale · sqrt(ρ) · d / n (App. C.3)."""
    return DropoutAgent(**kw)
