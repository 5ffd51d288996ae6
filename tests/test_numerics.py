"""jtk._numerics' XLA factorisations against numpy / scipy (LAPACK), and their bits against the CPU's BLAS kernels."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from jtk import _numerics

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


def _spd(m: int, seed: int, dtype=np.float64) -> np.ndarray:
    g = np.random.default_rng(seed).normal(size=(m, m + 3))
    return (g @ g.T / m + 0.1 * np.eye(m)).astype(dtype)


@pytest.mark.parametrize("m", [1, 2, 7, 50])
def test_cholesky_matches_lapack(m):
    a = _spd(m, m)
    with jax.enable_x64(True):
        low = np.asarray(jax.jit(_numerics.cholesky)(jnp.asarray(a)))
    np.testing.assert_allclose(low, np.linalg.cholesky(a), rtol=1e-10, atol=1e-12)
    assert np.all(np.triu(low, 1) == 0)


def test_cholesky_of_an_indefinite_matrix_is_nan():
    low = np.asarray(_numerics.cholesky(jnp.asarray(np.diag([1.0, -1.0, 2.0]), jnp.float32)))
    assert np.isnan(low[1:, 1:]).any()


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("shape", [(6,), (6, 3), (6, 4, 2)])
def test_solve_triangular_matches_scipy(transpose, shape):
    low = np.linalg.cholesky(_spd(6, 1))
    b = np.random.default_rng(2).normal(size=shape)
    with jax.enable_x64(True):
        x = np.asarray(_numerics.solve_triangular(jnp.asarray(low), jnp.asarray(b), transpose=transpose))
    want = scipy.linalg.solve_triangular(low, b.reshape(6, -1), lower=True, trans=1 if transpose else 0)
    np.testing.assert_allclose(x.reshape(6, -1), want, rtol=1e-10, atol=1e-12)


def test_a_batch_gives_the_same_bits_whatever_its_width():
    """The testbed vmaps agents over chunks of problems of varying width: a problem's factor must not change."""
    a = jnp.asarray(np.stack([_spd(5, s, np.float32) for s in range(4)]))
    four = np.asarray(jax.jit(jax.vmap(_numerics.cholesky))(a))
    two = np.asarray(jax.jit(jax.vmap(_numerics.cholesky))(a[:2]))
    np.testing.assert_array_equal(four[:2], two)
    np.testing.assert_allclose(four[3], np.linalg.cholesky(np.asarray(a[3], np.float64)), rtol=1e-5, atol=1e-6)


_BITS = """
import hashlib, jax, jax.numpy as jnp, numpy as np
from jtk import _numerics
g = jnp.asarray(np.random.default_rng(0).normal(size=(50, 80)).astype(np.float32))
a = jax.jit(lambda g: g @ g.T / 50 + 0.1 * jnp.eye(50))(g)  # in XLA: numpy's product would use the BLAS
low = jax.jit(_numerics.cholesky)(a)
x = jax.jit(lambda l, b: _numerics.solve_triangular(l, b, transpose=True))(low, g[:, :30])
lapack = jnp.linalg.cholesky(a)
print(hashlib.sha256(np.asarray(low).tobytes() + np.asarray(x).tobytes()).hexdigest(),
      hashlib.sha256(np.asarray(lapack).tobytes()).hexdigest())
"""


def test_bits_do_not_depend_on_the_blas_kernels():
    """OpenBLAS picks its kernels by the CPU (OPENBLAS_CORETYPE overrides it): jtk's XLA factorisations give the
    same bits under every kernel this CPU can run, while JAX's own cholesky (LAPACK from scipy) may not."""
    out = {}
    for core in ("Prescott", "Sandybridge", "Haswell"):
        env = {**os.environ, "OPENBLAS_CORETYPE": core, "JAX_PLATFORMS": "cpu"}
        out[core] = subprocess.run([sys.executable, "-c", _BITS], env=env, capture_output=True, text=True,
                                   check=True, timeout=120).stdout.split()
    assert len({v[0] for v in out.values()}) == 1, out


def test_numpy_inputs_are_accepted_outside_jit():
    """Called eagerly with numpy arrays (as deep_kernel's Woodbury formula is in its tests), not only with JAX arrays."""
    a = _spd(5, 3, np.float32)
    low = np.asarray(_numerics.cholesky(a))
    np.testing.assert_allclose(low, np.linalg.cholesky(a.astype(np.float64)), rtol=1e-4, atol=1e-5)
    b = np.random.default_rng(4).normal(size=(5, 2)).astype(np.float32)
    x = np.asarray(_numerics.solve_triangular(low, b))
    np.testing.assert_allclose(low @ x, b, rtol=1e-4, atol=1e-4)
