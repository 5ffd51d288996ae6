"""The Neural Testbed's generative model: random classification problems from an MLP prior.

Osband et al. (2022), §3.1 and App. B. Logits come from an MLP
input_dim → 50 → ReLU → 50 → ReLU → num_classes with weights drawn from a
truncated normal (±2 std, std = 1/sqrt(fan_in)) and a first-layer bias of
N(0, 1/input_dim); class probabilities are softmax(MLP(x) / temperature).
Inputs are x ~ N(0, I_d). (The paper calls the weights "standard Xavier"; the
numbers of its tables come from the truncated-normal prior used here, see
REFERENCE_FACTS.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets


def prior_sizes(input_dim: int, hidden: Sequence[int], num_classes: int) -> tuple[int, ...]:
    return (input_dim, *hidden, num_classes)


def sample_prior_params(key: jax.Array, input_dim: int = 2, hidden: Sequence[int] = (50, 50),
                        num_classes: int = 2) -> nets.Params:
    """Draws one logit function from the testbed prior (pure, jittable, vmappable over keys)."""
    return nets.init_mlp(key, prior_sizes(input_dim, hidden, num_classes),
                         first_bias_std=1.0 / np.sqrt(input_dim))


def sample_labels(key: jax.Array, logits: jax.Array) -> jax.Array:
    """Samples one label per row of logits [..., K] (Gumbel-max) → int32 [...]."""
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


@dataclass(frozen=True)
class MLPClassification:
    """One classification environment drawn from the testbed prior.

    Args:
      temperature: softmax temperature ρ > 0; small ρ = high signal-to-noise.
        The paper's grid uses 0.01, 0.1 and 0.5.
      input_dim: input dimension d (2 in the paper's grid).
      hidden: hidden widths of the generating MLP, (50, 50) in the paper.
      activation: hidden activation; one of relu, tanh, swish, sigmoid, selu,
        leaky_relu, gelu (§6 robustness study).
      num_classes: number of classes K (2 in the paper).
      seed: int or JAX PRNG key that picks the environment.

    Example:
      >>> env = MLPClassification(temperature=0.1, seed=0)
      >>> x, y = env.sample(5, seed=1)
      >>> env.probs(x).shape
      (5, 2)
    """

    temperature: float
    input_dim: int = 2
    hidden: tuple[int, ...] = (50, 50)
    activation: str = "relu"
    num_classes: int = 2
    seed: object = 0
    params: nets.Params = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        _checks.positive("temperature", self.temperature)
        _checks.integer("input_dim", self.input_dim, minimum=1)
        _checks.integer("num_classes", self.num_classes, minimum=2)
        hidden = tuple(self.hidden)
        for i, h in enumerate(hidden):
            _checks.integer(f"hidden[{i}]", h, minimum=1)
        if not hidden:
            raise ValueError("hidden must list at least one hidden width, got ()")
        object.__setattr__(self, "hidden", hidden)
        nets.activation_fn(self.activation)
        key = _checks.as_key(self.seed)
        object.__setattr__(self, "params", sample_prior_params(
            key, self.input_dim, hidden, self.num_classes))

    def _check_x(self, x) -> jax.Array:
        x = _checks.as_float_array("x", x, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have shape [n, {self.input_dim}] (input_dim={self.input_dim}), "
                             f"got shape {x.shape}")
        return jnp.asarray(x)

    def function(self, x) -> jax.Array:
        """The raw MLP output f(x) before the temperature: x [n, d] → [n, K]."""
        return nets.mlp_apply(self.params, self._check_x(x), self.activation)

    def logits(self, x) -> jax.Array:
        """Class logits f(x) / temperature, so that ``softmax(logits) == probs``: [n, K]."""
        return self.function(x) / self.temperature

    def probs(self, x) -> jax.Array:
        """Class probabilities p(y | x) = softmax(f(x) / temperature): [n, K]."""
        return jax.nn.softmax(self.logits(x), axis=-1)

    def sample_inputs(self, n: int, seed=0) -> jax.Array:
        """n inputs x ~ N(0, I_d): [n, d]."""
        n = _checks.integer("n", n, minimum=0)
        return jax.random.normal(_checks.as_key(seed), (n, self.input_dim))

    def sample(self, n: int, seed=0) -> tuple[jax.Array, jax.Array]:
        """Draws n i.i.d. pairs: x [n, d] ~ N(0, I), y [n] ~ p(y | x)."""
        n = _checks.integer("n", n, minimum=0)
        kx, ky = jax.random.split(_checks.as_key(seed))
        x = jax.random.normal(kx, (n, self.input_dim))
        return x, sample_labels(ky, self.logits(x))

    def mean_entropy(self, num_inputs: int = 10_000, seed=0) -> float:
        """Mean entropy (nats) of p(y | x) over x ~ N(0, I): how noisy the labels are."""
        p = self.probs(self.sample_inputs(num_inputs, seed))
        return float(-jnp.mean(jnp.sum(jax.scipy.special.xlogy(p, p), axis=-1)))
