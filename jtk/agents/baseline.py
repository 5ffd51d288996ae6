"""The uniform agent: predicts 1/K for every class, the reference point of the leaderboard.

Its d_KL^τ has a closed form: for a τ-sample, log p(y_{1:τ}) − τ · log(1/K).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from jtk.agents.base import JaxAgent, register


@dataclass(frozen=True, kw_only=True)
class UniformAgent(JaxAgent):
    """Ignores the data; one component with all-zero logits (a finite mixture of one function).

    Attributes:
      batch_size: unused (1).
      num_classes: outputs; set from the prior by ``fit`` and the testbed (2).

    Hyper keys: none.
    """

    batch_size: int = 1

    def train(self, key, data, hyper) -> jax.Array:
        return jnp.zeros((1,))  # one mixture component, no parameters

    def components(self, state, x) -> jax.Array:
        return jnp.zeros((state.shape[0], x.shape[0], self.num_classes))


@register("uniform")
def uniform() -> UniformAgent:
    """Uniform class probabilities 1/K everywhere."""
    return UniformAgent()
