"""Plain-JAX multilayer perceptrons shared by the generative models and the agents.

Parameters are a tuple of ``(w, b)`` pairs, ``w`` of shape [fan_in, fan_out].
A function handles one network; ``jax.vmap`` batches members, samples and problems.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp

from jtk import _checks

# The public surface: the networks a user (or an exercise) builds and applies, and the ensembles' member layout
# (docs/platforms.md). The L2 penalty sum_of_squares is the agents' internal helper, not in __all__.
__all__ = ["ACTIVATIONS", "activation_fn", "mlp_sizes", "init_mlp", "mlp_apply", "mlp_features", "SMALL_OUTPUT",
           "TRANSPOSE_ROWS", "members_to_training", "members_from_training", "members_logits_t"]

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
    _checks.integer("input_dim", input_dim, minimum=1), _checks.integer("num_classes", num_classes, minimum=1)
    hidden = _checks.widths("hidden", hidden)
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
    _checks.prng_key("key", key)
    if len(_checks.widths("sizes", sizes)) < 2:
        raise ValueError(f"sizes must list at least the input and output widths, got {tuple(sizes)}")
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


def _check_params(name: str, params) -> None:
    """A static check (shapes only, so it also passes traced arrays): a non-empty sequence of (w, b) pairs."""
    if isinstance(params, (str, bytes)) or not hasattr(params, "__len__") or not len(params):
        raise ValueError(f"{name} must be a non-empty tuple of (w, b) pairs, got {type(params).__name__} {params!r:.80}")
    for i, layer in enumerate(params):
        if not (isinstance(layer, (tuple, list)) and len(layer) == 2 and all(hasattr(a, "shape") for a in layer)):
            raise TypeError(f"{name}[{i}] must be a (w, b) pair of arrays, got {type(layer).__name__}")


def mlp_apply(params: Params, x: jax.Array, activation: str = "relu") -> jax.Array:
    """Applies the MLP: x [n, d] → outputs [n, out]; no activation on the last layer."""
    _check_params("params", params)
    act = activation_fn(activation)
    for w, b in params[:-1]:
        x = act(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def mlp_features(params: Params, x: jax.Array, activation: str = "relu") -> jax.Array:
    """Penultimate-layer features: x [n, d] → [n, hidden[-1]]."""
    _check_params("params", params)
    act = activation_fn(activation)
    for w, b in params[:-1]:
        x = act(x @ w + b)
    return x


def sum_of_squares(tree) -> jax.Array:
    """Σ params² over every leaf of a pytree (the reference L2 penalty, biases included)."""
    return sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree_util.tree_leaves(tree))


# ---------------------------------------------------------------- K member MLPs, laid out for training on the CPU
# Ensembles train K networks side by side on one shared minibatch. With ``jax.vmap(mlp_apply)`` and autodiff, XLA's
# CPU backend runs the weight gradient X^T dY (contracting the batch rows, the leading axis of both operands) in a
# slow generic kernel and the other products at about half the speed its GEMM kernels reach on these shapes
# (benchmarks/training_flops.py). Here the activations are feature-major ([K, width, rows]), weights are stored
# [K, fan_out, fan_in] while training, and the backward pass is written out so that every product is one the GEMM
# kernels run well: W @ H forward, dZ @ H^T for the weight gradient, and W^T @ dZ with the smaller of W and dZ
# transposed into a copy first. Hand-written for speed, checked against autodiff of ``mlp_apply``
# (tests/test_nets.py). ReLU hidden layers, linear output: the ensembles' networks.
SMALL_OUTPUT = 4  # an output layer at most this wide back-propagates as a sum of broadcast products, not a product
TRANSPOSE_ROWS = 32  # from this many minibatch rows on W^T is materialised, below it dZ^T (docs/platforms.md)


def members_to_training(params: Params) -> Params:
    """K member MLPs (weights [K, fan_in, fan_out], biases [K, fan_out]) in the training layout of
    :func:`members_logits_t`: weights [K, fan_out, fan_in]. :func:`members_from_training` undoes it."""
    _check_params("params", params)
    return tuple((jnp.swapaxes(w, -1, -2), b) for w, b in params)


def members_from_training(params_t: Params) -> Params:
    """The inverse of :func:`members_to_training`: weights back to [K, fan_in, fan_out]."""
    _check_params("params_t", params_t)
    return tuple((jnp.swapaxes(w, -1, -2), b) for w, b in params_t)


def _members_forward(params_t: Params, x: jax.Array):
    """z_L [K, C, B] and the hidden activations h_1..h_{L-1} ([K, width, B]) of K ReLU MLPs on shared x [B, d]."""
    w, b = params_t[0]
    k, width, d = w.shape
    z = (w.reshape(k * width, d) @ x.T).reshape(k, width, -1) + b[:, :, None]  # one product for all members
    hidden = []
    for w, b in params_t[1:]:
        h = jax.nn.relu(z)
        hidden.append(h)
        z = jnp.einsum("koi,kib->kob", w, h) + b[:, :, None]
    return z, hidden


def members_logits_t(params_t: Params, x: jax.Array) -> jax.Array:
    """Outputs of K ReLU MLPs on the same inputs, feature-major: params in the training layout, x [B, d] → [K, C, B].

    Equal to ``jnp.swapaxes(jax.vmap(mlp_apply, (0, None))(members_from_training(params_t), x), 1, 2)`` up to
    floating-point rounding; its gradient with respect to ``params_t`` is written out (module comment above). No
    gradient flows to ``x``.
    """
    _check_params("params_t", params_t)
    if not hasattr(x, "shape") or len(x.shape) != 2 or len(params_t[0][0].shape) != 3 \
            or x.shape[1] != params_t[0][0].shape[2]:
        raise ValueError(f"x must be an array [B, d] with d = {params_t[0][0].shape[-1]} (the first weights' fan_in "
                         f"in the training layout [K, fan_out, fan_in]), got {type(x).__name__} of shape "
                         f"{getattr(x, 'shape', None)}")
    return _members_logits_t(params_t, x)


@jax.custom_vjp
def _members_logits_t(params_t: Params, x: jax.Array) -> jax.Array:
    return _members_forward(params_t, x)[0]


def _members_fwd(params_t, x):
    z, hidden = _members_forward(params_t, x)
    return z, (params_t, x, hidden)


def _members_bwd(residuals, dz):
    params_t, x, hidden = residuals
    grads = [None] * len(params_t)
    for layer in range(len(params_t) - 1, 0, -1):
        w, _ = params_t[layer]
        h = hidden[layer - 1]  # the layer's input [K, fan_in, B]
        grads[layer] = (jnp.einsum("kob,kib->koi", dz, h), jnp.sum(dz, axis=-1))
        if w.shape[1] <= SMALL_OUTPUT:  # W^T dZ as a few broadcast products: a product this narrow runs slowly
            dh = sum(w[:, o, :, None] * dz[:, o, None, :] for o in range(w.shape[1]))
        elif dz.shape[-1] >= TRANSPOSE_ROWS:  # materialise W^T (an optimisation barrier keeps XLA from folding the
            dh = jnp.einsum("kio,kob->kib", jax.lax.optimization_barrier(jnp.swapaxes(w, 1, 2)), dz)  # transpose in)
        else:  # few rows: transpose dZ, smaller than W, and take dZ^T W
            dz_t = jax.lax.optimization_barrier(jnp.swapaxes(dz, 1, 2))  # [K, rows, fan_out]
            dh = jnp.swapaxes(jnp.einsum("kbo,koi->kbi", dz_t, w), 1, 2)
        dz = jnp.where(h > 0, dh, 0.0)  # ReLU'(z) = [z > 0] = [h > 0], as jax.nn.relu's derivative (0 at 0)
    k, width, d = params_t[0][0].shape
    grads[0] = ((dz.reshape(k * width, -1) @ x).reshape(k, width, d), jnp.sum(dz, axis=-1))
    return tuple(grads), None


_members_logits_t.defvjp(_members_fwd, _members_bwd)
