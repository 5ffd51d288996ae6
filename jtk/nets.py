"""Plain-JAX multilayer perceptrons shared by the generative models and the agents.

Parameters are a tuple of ``(w, b)`` pairs, ``w`` of shape [fan_in, fan_out].
A function handles one network; ``jax.vmap`` batches members, samples and problems.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp

from jtk import _checks

Params = tuple[tuple[jax.Array, jax.Array], ...]

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "swish": jax.nn.swish,
    "sigmoid": jax.nn.sigmoid,
    "selu": jax.nn.selu,
    "leaky_relu": jax.nn.leaky_relu,
    "gelu": jax.nn.gelu,
}


def activation_fn(name: str) -> Callable[[jax.Array], jax.Array]:
    """Looks up an activation by name (one of ``ACTIVATIONS``)."""
    _checks.one_of("activation", name, tuple(ACTIVATIONS))
    return ACTIVATIONS[name]


def mlp_sizes(input_dim: int, hidden: Sequence[int], num_classes: int) -> tuple[int, ...]:
    """Layer widths of an MLP ``input_dim → *hidden → num_classes``, e.g. (2, 50, 50, 2)."""
    return (input_dim, *hidden, num_classes)


def init_mlp(key: jax.Array, sizes: Sequence[int], first_bias_std: float = 0.0) -> Params:
    """Draws MLP parameters with the reference initialisation.

    Weights: normal with std 1/sqrt(fan_in), truncated at ±2 std, no variance
    correction (haiku's default and the testbed prior; docs/reference.md, "Generative model").
    Biases: 0, except the first layer's, which is N(0, first_bias_std²).

    Args:
      key: PRNG key.
      sizes: layer widths including input and output, e.g. (2, 50, 50, 2).
      first_bias_std: std of the first-layer bias (1/sqrt(input_dim) for the prior).

    Returns:
      Tuple of (w [fan_in, fan_out], b [fan_out]) pairs.
    """
    keys = jax.random.split(key, len(sizes))
    params = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = jax.random.truncated_normal(keys[i], -2.0, 2.0, (fan_in, fan_out)) / jnp.sqrt(fan_in)
        if i == 0 and first_bias_std:
            b = first_bias_std * jax.random.normal(keys[-1], (fan_out,))
        else:
            b = jnp.zeros((fan_out,))
        params.append((w, b))
    return tuple(params)


def mlp_apply(params: Params, x: jax.Array, activation: str = "relu") -> jax.Array:
    """Applies the MLP: x [n, d] → outputs [n, out]; no activation on the last layer."""
    act = ACTIVATIONS[activation]
    for w, b in params[:-1]:
        x = act(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def mlp_features(params: Params, x: jax.Array, activation: str = "relu") -> jax.Array:
    """Penultimate-layer features: x [n, d] → [n, hidden[-1]]."""
    act = ACTIVATIONS[activation]
    for w, b in params[:-1]:
        x = act(x @ w + b)
    return x


def sum_of_squares(tree) -> jax.Array:
    """Σ params² over every leaf of a pytree (the reference L2 penalty, biases included)."""
    return sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree_util.tree_leaves(tree))
