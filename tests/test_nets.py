"""jtk.nets: the K-member MLP kernel with its written-out backward pass, against autodiff of ``mlp_apply``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jtk import nets


def _members(key, k, sizes):
    return jax.vmap(lambda kk: nets.init_mlp(kk, sizes, first_bias_std=0.3))(jax.random.split(key, k))


def _reference_loss(params, x, y):
    """A loss of the members' outputs through the plain per-network apply: autodiff is the independent reference."""
    out = jax.vmap(nets.mlp_apply, (0, None))(params, x)  # [K, B, C]
    return jnp.sum(jnp.sin(out) * y)


def _kernel_loss(params_t, x, y):
    out = nets.members_logits_t(params_t, x)  # [K, C, B]
    return jnp.sum(jnp.sin(jnp.swapaxes(out, 1, 2)) * y)


@pytest.mark.parametrize("k, sizes, rows", [
    (3, (2, 50, 50, 2), 7),  # the testbed's networks, a two-class output (summed broadcast products)
    (1, (5, 8, 3), 4),  # one hidden layer, one member
    (4, (3, 6, 7, 9, 6), 5),  # three hidden layers, an output wider than SMALL_OUTPUT: dZ^T W (few rows)
    (2, (3, 8, 9, 6), nets.TRANSPOSE_ROWS + 3),  # enough rows to materialise W^T instead
    (2, (4, 3), 6),  # no hidden layer: a linear model
])
def test_member_kernel_matches_autodiff_of_mlp_apply(k, sizes, rows):
    keys = jax.random.split(jax.random.key(1), 4)
    params = _members(keys[0], k, sizes)
    # Shift the biases so that some pre-activations are exactly 0 (ReLU'(0) = 0 on both paths) and many negative.
    params = tuple((w, b - 0.2) for w, b in params)
    x = jax.random.normal(keys[1], (rows, sizes[0]))
    y = jax.random.normal(keys[2], (k, rows, sizes[-1]))
    params_t = nets.members_to_training(params)
    np.testing.assert_allclose(np.swapaxes(np.asarray(nets.members_logits_t(params_t, x)), 1, 2),
                               np.asarray(jax.vmap(nets.mlp_apply, (0, None))(params, x)), rtol=2e-5, atol=2e-5)
    want = jax.grad(_reference_loss)(params, x, y)
    got = nets.members_from_training(jax.grad(_kernel_loss)(params_t, x, y))
    for (gw, gb), (ww, wb) in zip(got, want):
        assert gw.shape == ww.shape and gb.shape == wb.shape
        np.testing.assert_allclose(np.asarray(gw), np.asarray(ww), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(gb), np.asarray(wb), rtol=1e-4, atol=1e-5)


def test_member_kernel_under_vmap_and_jit_equals_it_problem_by_problem():
    """The testbed vmaps the kernel over problems and jits it: the same gradients as one problem at a time."""
    keys = jax.random.split(jax.random.key(2), 4)
    params = jax.vmap(lambda kk: _members(kk, 3, (2, 9, 9, 2)))(jax.random.split(keys[0], 5))  # [P=5, K=3, ...]
    x = jax.random.normal(keys[1], (5, 6, 2))
    y = jax.random.normal(keys[2], (5, 3, 6, 2))
    params_t = jax.vmap(nets.members_to_training)(params)
    batched = jax.jit(jax.vmap(jax.grad(_kernel_loss)))(params_t, x, y)
    for p in range(5):
        one = jax.grad(_kernel_loss)(jax.tree_util.tree_map(lambda a: a[p], params_t), x[p], y[p])
        for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(batched)):
            np.testing.assert_allclose(np.asarray(b[p]), np.asarray(a), rtol=1e-5, atol=1e-6)


def test_training_layout_round_trips():
    params = _members(jax.random.key(3), 2, (2, 4, 3))
    back = nets.members_from_training(nets.members_to_training(params))
    for a, b in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert nets.members_to_training(params)[0][0].shape == (2, 4, 2)
