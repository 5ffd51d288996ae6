"""The Neural Testbed's generative model: random classification problems from an MLP prior.

Osband et al. (2022), §3.1 and App. B. Logits come from an MLP
input_dim → 50 → ReLU → 50 → ReLU → num_classes with weights drawn from a
truncated normal (±2 std, std = 1/sqrt(fan_in)) and a first-layer bias of
N(0, 1/input_dim); class probabilities are softmax(MLP(x) / temperature).
Inputs are x ~ N(0, I_d). (The paper calls the weights "standard Xavier"; the
numbers of its tables come from the truncated-normal prior used here, see
docs/reference.md, "Generative model".)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, _memory, nets


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
      temperature: softmax temperature ρ in [1e-6, float32 max]; small ρ = high
        signal-to-noise. The paper's grid uses 0.01, 0.1 and 0.5 (below 1e-6 the
        float32 logits f(x) / ρ approach overflow, so such values are refused).
      input_dim: input dimension d (2 in the paper's grid).
      hidden: hidden widths of the generating MLP, (50, 50) in the paper.
      activation: hidden activation; one of relu, tanh, swish, sigmoid, selu,
        leaky_relu, gelu (§6 robustness study).
      num_classes: number of classes K (2 in the paper).
      seed: int in [0, 2**32) or JAX PRNG key that picks the environment.

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
        _checks.temperature("temperature", self.temperature)
        _checks.integer("input_dim", self.input_dim, minimum=1)
        _checks.integer("num_classes", self.num_classes, minimum=2)
        hidden = _checks.widths("hidden", self.hidden, allow_empty=False)
        object.__setattr__(self, "hidden", hidden)
        nets.activation_fn(self.activation)
        key = _checks.as_key(self.seed)
        sizes = prior_sizes(self.input_dim, hidden, self.num_classes)
        _memory.check_budget("MLP parameters (input_dim, *hidden, num_classes) float32 (×2 while drawn)",
                             2 * 4 * _memory.mlp_params(sizes), "lower num_classes, hidden or input_dim")
        object.__setattr__(self, "params", sample_prior_params(
            key, self.input_dim, hidden, self.num_classes))

    def _check_x(self, x) -> jax.Array:
        x = _checks.as_float_array("x", x, ndim=2, dtype=_checks.jax_float_dtype())
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have shape [n, {self.input_dim}] (input_dim={self.input_dim}), "
                             f"got shape {x.shape}")
        self._check_rows("x rows", x.shape[0])
        return jnp.asarray(x)

    def _check_rows(self, what: str, n: int) -> None:
        """Refuses n rows whose activations (n × (d + widths + 2K) float32) exceed the memory budget."""
        width = self.input_dim + sum(self.hidden) + 2 * self.num_classes
        _memory.check_budget(f"{what} × (input_dim + hidden + 2 num_classes) float32",
                             _memory.nbytes(n, width), "lower n or evaluate the inputs in chunks")

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
        _memory.check_budget("n × input_dim float32", _memory.nbytes(n, self.input_dim), "lower n")
        return jax.random.normal(_checks.as_key(seed), (n, self.input_dim))

    def sample(self, n: int, seed=0) -> tuple[jax.Array, jax.Array]:
        """Draws n i.i.d. pairs: x [n, d] ~ N(0, I), y [n] ~ p(y | x)."""
        n = _checks.integer("n", n, minimum=0)
        self._check_rows("n", n)
        kx, ky = jax.random.split(_checks.as_key(seed))
        x = jax.random.normal(kx, (n, self.input_dim))
        return x, sample_labels(ky, self.logits(x))

    def mean_entropy(self, num_inputs: int = 10_000, seed=0) -> float:
        """Mean entropy (nats) of p(y | x) over x ~ N(0, I): how noisy the labels are."""
        num_inputs = _checks.integer("num_inputs", num_inputs, minimum=1)
        self._check_rows("num_inputs", num_inputs)
        p = self.probs(self.sample_inputs(num_inputs, seed))
        return float(-jnp.mean(jnp.sum(jax.scipy.special.xlogy(p, p), axis=-1)))
