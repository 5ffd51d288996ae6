"""The synthetic oracle of Wang, Sun & Grosse (2021, §5.1): a GP with the ReLU-network kernel.

The kernel is the covariance of an infinitely wide one-hidden-layer ReLU
network (Neal 1995; Cho & Saul 2009), with inputs scaled by 1/d:

    K⁰(x, x') = σ²_b0 + σ²_w0 · x·x' / d
    K¹(x, x') = σ²_w1 · sqrt(K⁰(x, x) K⁰(x', x')) · (sin θ + (π − θ) cos θ) / (2π) + σ²_b1,
    θ = arccos(K⁰(x, x') / sqrt(K⁰(x, x) K⁰(x', x'))).

Reference constants (docs/reference.md, "Active learning"): σ²_b0 = σ²_b1 = 2.5, σ²_w0 = 1.414,
σ²_w1 = 1.737. A data set draws x ~ N(0, I_d) for 5d training, pool and test points,
one function f ~ GP(0, K¹) at all of them, and y = f + ε with ε ~ N(0, 0.01). The
paper's text (§5.1) has 500 test and 200 pool points (``PAPER_NUM_TEST``,
``PAPER_NUM_POOL``); :meth:`ReLUKernelGP.sample_split` keeps its older defaults of
500 pool and 200 test points, which earlier studies were run with: pass the paper's
sizes explicitly. All linear algebra is numpy float64.

Example:
  >>> oracle = ReLUKernelGP(input_dim=3)
  >>> split = oracle.sample_split(seed=0, num_pool=PAPER_NUM_POOL, num_test=PAPER_NUM_TEST)
  >>> split.x_train.shape, split.x_pool.shape, split.x_test.shape
  ((15, 3), (200, 3), (500, 3))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from jtk import _checks, _memory
from jtk._numerics import numpy_rng, serial_blas

# Reference constants of the oracle kernel (docs/reference.md, "Active learning").
BIAS0_VAR = 2.5
WEIGHT0_VAR = 1.414
WEIGHT1_VAR = 1.737
BIAS1_VAR = 2.5
NOISE_VAR = 0.01
JITTER = 1e-8
# The paper's data sizes (§5.1: "5d, 500, 200 points ... as the training, test and pool sets, respectively").
PAPER_NUM_TEST = 500
PAPER_NUM_POOL = 200


@serial_blas
def relu_kernel(x1, x2=None, *, bias0_var: float = BIAS0_VAR, weight0_var: float = WEIGHT0_VAR,
                weight1_var: float = WEIGHT1_VAR, bias1_var: float = BIAS1_VAR) -> np.ndarray:
    """Infinite-width one-hidden-layer ReLU network kernel (arc-cosine kernel of order 1).

    Args:
      x1: inputs [n1, d].
      x2: inputs [n2, d]; ``x1`` when None.
      bias0_var: σ²_b0, variance of the hidden biases (2.5).
      weight0_var: σ²_w0, variance of the hidden weights times d (1.414).
      weight1_var: σ²_w1, variance of the output weights times width (1.737).
      bias1_var: σ²_b1, variance of the output bias (2.5).

    Returns:
      K [n1, n2] float64.
    """
    x1 = _checks.as_float_array("x1", x1, ndim=2).astype(np.float64)
    x2 = x1 if x2 is None else _checks.as_float_array("x2", x2, ndim=2).astype(np.float64)
    if x1.shape[1] != x2.shape[1]:
        raise ValueError(f"x2 must have {x1.shape[1]} columns like x1, got an array of shape {x2.shape}")
    for name, v in (("bias0_var", bias0_var), ("weight0_var", weight0_var), ("weight1_var", weight1_var),
                    ("bias1_var", bias1_var)):
        _checks.positive(name, v, allow_zero=True)
    _memory.check_budget(f"kernel matrix: x1 rows × x2 rows float64 × 5 ({len(x1)} × {len(x2)})",
                         _memory.nbytes(5, len(x1), len(x2), dtype=np.float64), "use fewer inputs x1 / x2")
    d = x1.shape[1]
    k12 = bias0_var + weight0_var * (x1 @ x2.T) / d  # [n1, n2]
    k11 = bias0_var + weight0_var * np.sum(x1 * x1, 1) / d  # [n1]
    k22 = bias0_var + weight0_var * np.sum(x2 * x2, 1) / d  # [n2]
    norm = np.sqrt(np.maximum(np.outer(k11, k22), 1e-300))
    cos = np.clip(k12 / norm, -1.0, 1.0)
    theta = np.arccos(cos)
    return weight1_var * norm * (np.sin(theta) + (np.pi - theta) * cos) / (2 * np.pi) + bias1_var


def relu_network_kernel_mc(x1, x2, num_hidden: int = 100_000, seed: Any = 0, *, bias0_var: float = BIAS0_VAR,
                           weight0_var: float = WEIGHT0_VAR, weight1_var: float = WEIGHT1_VAR,
                           bias1_var: float = BIAS1_VAR) -> np.ndarray:
    """Monte Carlo estimate of the same kernel from one very wide random ReLU layer.

    Draws ``num_hidden`` hidden units u_j(x) = b_j + w_j·x with b_j ~ N(0, σ²_b0) and
    w_j ~ N(0, σ²_w0/d · I) and returns σ²_w1 · mean_j relu(u_j(x1)) relu(u_j(x2)) + σ²_b1,
    the covariance of f = b + Σ_j v_j relu(u_j) / sqrt(H) with v_j ~ N(0, σ²_w1). An
    independent check of :func:`relu_kernel` (tests), not meant for speed.

    Returns:
      K [n1, n2] float64.
    """
    x1 = _checks.as_float_array("x1", x1, ndim=2).astype(np.float64)
    x2 = _checks.as_float_array("x2", x2, ndim=2).astype(np.float64)
    _checks.integer("num_hidden", num_hidden, minimum=1)
    if x2.shape[1] != x1.shape[1]:
        raise ValueError(f"x2 must have {x1.shape[1]} columns like x1, got shape {x2.shape}")
    for name, var in (("bias0_var", bias0_var), ("weight0_var", weight0_var), ("weight1_var", weight1_var),
                      ("bias1_var", bias1_var)):
        _checks.positive(name, var, allow_zero=True)
    rng = numpy_rng(seed)
    d = x1.shape[1]
    w = rng.normal(0.0, np.sqrt(weight0_var / d), (d, num_hidden))
    b = rng.normal(0.0, np.sqrt(bias0_var), num_hidden)
    h1 = np.maximum(x1 @ w + b, 0.0)
    h2 = np.maximum(x2 @ w + b, 0.0)
    return weight1_var * (h1 @ h2.T) / num_hidden + bias1_var


class GPSplit(NamedTuple):
    """One synthetic data set: inputs, noisy targets and noise-free function values."""

    x_train: np.ndarray  # [n_train, d]
    y_train: np.ndarray  # [n_train]
    x_pool: np.ndarray  # [n_pool, d]
    y_pool: np.ndarray  # [n_pool]  (revealed only when queried)
    x_test: np.ndarray  # [n_test, d]
    y_test: np.ndarray  # [n_test]
    f_train: np.ndarray  # [n_train] noise-free f
    f_pool: np.ndarray  # [n_pool]
    f_test: np.ndarray  # [n_test]


@dataclass(frozen=True)
class ReLUKernelGP:
    """The oracle: f ~ GP(0, ReLU kernel), y = f + N(0, noise_var) (Wang et al. 2021, §5.1).

    Args:
      input_dim: d (the paper uses 1, 3, 5, 7, 9).
      noise_var: observation noise variance (0.01).
      bias0_var, weight0_var, weight1_var, bias1_var: kernel constants (reference values).
    """

    input_dim: int = 1
    noise_var: float = NOISE_VAR
    bias0_var: float = BIAS0_VAR
    weight0_var: float = WEIGHT0_VAR
    weight1_var: float = WEIGHT1_VAR
    bias1_var: float = BIAS1_VAR

    def __post_init__(self):
        _checks.integer("input_dim", self.input_dim, minimum=1)
        _checks.positive("noise_var", self.noise_var, allow_zero=True)
        for name in ("bias0_var", "weight0_var", "weight1_var", "bias1_var"):
            _checks.positive(name, getattr(self, name), allow_zero=True)

    @property
    def noise_std(self) -> float:
        return float(np.sqrt(self.noise_var))

    def kernel(self, x1, x2=None) -> np.ndarray:
        """K(x1, x2) [n1, n2] with this oracle's constants."""
        x1 = self._check_x("x1", x1)
        x2 = None if x2 is None else self._check_x("x2", x2)
        return relu_kernel(x1, x2, bias0_var=self.bias0_var, weight0_var=self.weight0_var,
                           weight1_var=self.weight1_var, bias1_var=self.bias1_var)

    def __call__(self, x1, x2=None) -> np.ndarray:
        return self.kernel(x1, x2)

    def _check_x(self, name, x):
        x = _checks.as_float_array(name, x, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"{name} must have input_dim={self.input_dim} columns, got an array of shape {x.shape}")
        return x

    @serial_blas
    def sample_function_values(self, x, seed: Any = 0) -> np.ndarray:
        """One function draw f ~ GP(0, K) at x [n, d] → [n] (Cholesky with jitter 1e-8·mean diag)."""
        x = self._check_x("x", x)
        _memory.check_budget(f"GP draw: x rows² float64 × 3 with n = {len(x)}",
                             _memory.nbytes(3, len(x), len(x), dtype=np.float64), "use fewer inputs x")
        k = self.kernel(x)
        chol = np.linalg.cholesky(k + JITTER * np.mean(np.diag(k)) * np.eye(len(k)))
        return chol @ numpy_rng(seed).standard_normal(len(k))

    @serial_blas
    def sample_split_at(self, x_train, x_pool, x_test, seed: Any = 0) -> GPSplit:
        """Draws f at given inputs and noisy targets → a :class:`GPSplit` (e.g. the 1-D toy)."""
        parts = [self._check_x(n, v).astype(np.float64) for n, v in
                 (("x_train", x_train), ("x_pool", x_pool), ("x_test", x_test))]
        rng = numpy_rng(seed)
        x = np.concatenate(parts)
        _memory.check_budget(f"GP split: rows of x_train + x_pool + x_test, squared, float64 × 3 with n = {len(x)}",
                             _memory.nbytes(3, len(x), len(x), dtype=np.float64), "use fewer pool / test points")
        k = self.kernel(x)
        chol = np.linalg.cholesky(k + JITTER * np.mean(np.diag(k)) * np.eye(len(k)))
        f = chol @ rng.standard_normal(len(x))
        y = f + self.noise_std * rng.standard_normal(len(x))
        a, b = len(parts[0]), len(parts[0]) + len(parts[1])
        return GPSplit(parts[0], y[:a], parts[1], y[a:b], parts[2], y[b:], f[:a], f[a:b], f[b:])

    def sample_split(self, seed: Any = 0, num_train: int | None = None, num_pool: int = 500,
                     num_test: int = 200) -> GPSplit:
        """A data set: x ~ N(0, I_d) for 5d training, ``num_pool`` pool and ``num_test`` test points, one f, noisy y.

        Args:
          seed: int or JAX key; the same seed gives the same split.
          num_train: training points (default 5·d, §5.1).
          num_pool: pool points (default 500, the older studies'; the paper's text has 200, ``PAPER_NUM_POOL``).
          num_test: test points (default 200, the older studies'; the paper's text has 500, ``PAPER_NUM_TEST``).

        Returns:
          GPSplit with x_* [n_*, d], y_* and f_* [n_*].
        """
        num_train = 5 * self.input_dim if num_train is None else num_train
        _checks.integer("num_train", num_train, minimum=0)
        _checks.integer("num_pool", num_pool, minimum=1)
        _checks.integer("num_test", num_test, minimum=1)
        check_split_memory(num_train + num_pool + num_test)
        rng = numpy_rng(seed)
        x = rng.standard_normal((num_train + num_pool + num_test, self.input_dim))
        inner = int(rng.integers(0, 2**31 - 1))
        return self.sample_split_at(x[:num_train], x[num_train:num_train + num_pool],
                                    x[num_train + num_pool:], seed=inner)


def check_split_memory(n: int) -> None:
    """Refuses a split whose n × n kernel, its Cholesky factor and a work copy (float64) exceed the budget."""
    _checks.integer("n", n, minimum=1)
    _memory.check_budget(f"GP split: (num_train + num_pool + num_test)² float64 × 3 with n = {n}",
                         _memory.nbytes(3, n, n, dtype=np.float64), "lower num_pool, num_test or num_train")


def toy_split_1d(seed: Any = 0, num_train: int = 6, num_pool: int = 60, num_test: int = 10,
                 oracle: ReLUKernelGP | None = None) -> GPSplit:
    """The 1-D toy of Fig. 2: training points on the left, test points in a narrow window.

    Training inputs lie in [−4, −1.5], the pool covers [−4, 4] evenly and the test
    points sit in [1, 2.5], so TIG (largest variance) is drawn to the far edge,
    MIG to one cluster next to the test window and BatchMIG spreads its batch
    over it.

    Returns:
      GPSplit with d = 1.
    """
    oracle = ReLUKernelGP(input_dim=1) if oracle is None else oracle
    if oracle.input_dim != 1:
        raise ValueError(f"oracle must have input_dim=1, got input_dim={oracle.input_dim}")
    _checks.integer("num_train", num_train, minimum=1)
    _checks.integer("num_pool", num_pool, minimum=1)
    _checks.integer("num_test", num_test, minimum=1)
    check_split_memory(num_train + num_pool + num_test)
    rng = numpy_rng(seed)
    x_train = np.sort(rng.uniform(-4.0, -1.5, num_train))[:, None]
    x_pool = np.linspace(-4.0, 4.0, num_pool)[:, None]
    x_test = np.sort(rng.uniform(1.0, 2.5, num_test))[:, None]
    return oracle.sample_split_at(x_train, x_pool, x_test, seed=int(rng.integers(0, 2**31 - 1)))
