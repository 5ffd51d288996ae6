"""The Neural Testbed's generative model: random classification problems from an MLP prior.

Osband et al. (2022), §3.1 and App. B. Logits come from an MLP
input_dim → 50 → ReLU → 50 → ReLU → num_classes with weights drawn from a
truncated normal (±2 std, std = 1/sqrt(fan_in)) and a first-layer bias of
N(0, 1/input_dim); class probabilities are softmax(MLP(x) / temperature).
Inputs are x ~ N(0, I_d).

One owner for drawing problems: :func:`sample_problem` draws an environment
and its training set from a problem key, :func:`sample_test` its test sets;
the testbed keys a problem by (seed, ρ, n) (:func:`problem_key`), the labs by
the seed alone (:func:`lab_keys`), the bandit by its seed (:func:`bandit_keys`).
:class:`MLPClassification` is the same environment as an object: its ``seed``
is the environment key (``problem_keys(key).environment``). (The paper calls the weights "standard Xavier"; the
numbers of its tables come from the truncated-normal prior used here, see
docs/reference.md, "Generative model".)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, _compile, _memory, nets
from jtk import train as train_lib


def sample_prior_params(key: jax.Array, input_dim: int = 2, hidden: Sequence[int] = (50, 50),
                        num_classes: int = 2) -> nets.Params:
    """Draws one logit function from the testbed prior (pure, jittable, vmappable over keys).

    Returns:
      Tuple of (w [fan_in, fan_out], b [fan_out]) pairs of the MLP ``(input_dim, *hidden, num_classes)``.
    """
    _checks.prng_key("key", key), _checks.integer("input_dim", input_dim, minimum=1)
    _checks.widths("hidden", hidden), _checks.integer("num_classes", num_classes, minimum=2)
    return nets.init_mlp(key, nets.mlp_sizes(input_dim, hidden, num_classes),
                         first_bias_std=1.0 / np.sqrt(input_dim))


def sample_labels(key: jax.Array, logits: jax.Array) -> jax.Array:
    """Samples one label per row of logits [..., K] (Gumbel-max) → int32 [...].

    The Gumbel noise depends on the key only: the same key at another temperature flips only the labels whose
    logits are close (what the joint-predictions lab shows as ρ moves).
    """
    _checks.prng_key("key", key)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def sample_inputs(key: jax.Array, n: int, input_dim: int) -> jax.Array:
    """n inputs x ~ N(0, I_d) (the testbed's input distribution): [n, d]."""
    _checks.prng_key("key", key), _checks.integer("n", n, minimum=0), _checks.integer("input_dim", input_dim, minimum=1)
    return jax.random.normal(key, (n, input_dim))


def _concrete(value) -> bool:
    """A Python / numpy scalar (checked at the entry); arrays, traced ones included, go through unchecked."""
    return not hasattr(value, "shape") or isinstance(value, np.generic)


def environment_logits(params: nets.Params, x: jax.Array, temperature, activation: str = "relu") -> jax.Array:
    """The environment's class logits f(x) / ρ: x [n, d] → [n, K]."""
    if _concrete(temperature):
        _checks.temperature("temperature", temperature)
    return nets.mlp_apply(params, x, activation) / temperature


def sample_data(key: jax.Array, params: nets.Params, temperature, n: int, activation: str = "relu"
                ) -> tuple[jax.Array, jax.Array]:
    """n i.i.d. pairs of one environment: x [n, d] ~ N(0, I), y [n] ~ softmax(f(x) / ρ) (pure, jittable)."""
    _checks.prng_key("key", key), _checks.integer("n", n, minimum=0)
    kx, ky = jax.random.split(key)
    x = sample_inputs(kx, n, params[0][0].shape[0])
    return x, sample_labels(ky, environment_logits(params, x, temperature, activation))


# ------------------------------------------------------------------ the testbed's problems
@dataclass(frozen=True)
class ProblemSettings:
    """The static (shape) settings of drawn problems; hashable, so a ``jax.jit`` static argument.

    Attributes:
      input_dim: input dimension d.
      num_classes: number of classes K.
      hidden: hidden widths of the generative MLP ((50, 50) in the paper).
      activation: hidden activation of the generative MLP (§6).
      capacity: rows of the (padded) training set; rows ≥ num_train are zeros.
      test_inputs: "iid" or "polyadic" test inputs (see ``jtk.testbed.Problem``).
      num_anchors: κ, anchors per τ-sample for polyadic test inputs.
    """

    input_dim: int = 2
    num_classes: int = 2
    hidden: tuple[int, ...] = (50, 50)
    activation: str = "relu"
    capacity: int = 1
    test_inputs: str = "iid"
    num_anchors: int = 2

    def __post_init__(self):
        _checks.integer("input_dim", self.input_dim, minimum=1), _checks.integer("num_classes", self.num_classes, minimum=2)
        _checks.widths("hidden", self.hidden), _checks.one_of("activation", self.activation, tuple(nets.ACTIVATIONS))
        _checks.integer("capacity", self.capacity, minimum=1), _checks.one_of("test_inputs", self.test_inputs, ("iid", "polyadic"))
        _checks.integer("num_anchors", self.num_anchors, minimum=1)


class TestData(NamedTuple):
    """The test set of one problem.

    Attributes:
      x: [N·τ, d] test inputs (consecutive blocks of τ are one τ-sample).
      y: [N·τ] labels drawn from the environment.
      true_logits: [N·τ, K] environment logits f(x) / ρ.
    """

    x: jax.Array
    y: jax.Array
    true_logits: jax.Array


class ProblemKeys(NamedTuple):
    """The keys one problem key splits into (the testbed's schedule)."""

    environment: jax.Array  # the generative MLP's weights
    train: jax.Array  # the training draw (inputs, then labels)
    test: jax.Array  # the test draws (folded with τ)


def problem_key(seed, temperature, num_train) -> jax.Array:
    """The testbed's key of problem (seed, ρ, n): every grid cell has its own environment and data.

    ``fold_in(fold_in(key(seed), num_train), round(ρ · 10⁶))`` (pure, jittable, vmappable).

    Args:
      seed: int in [0, 2**32) (or a uint32 array; a PRNG key is used in place of ``key(seed)``).
      temperature: ρ (float32).
      num_train: n.
    """
    if not _is_key(seed) and _concrete(seed):
        _checks.seed_int("seed", seed)
    if _concrete(temperature):
        _checks.temperature("temperature", temperature)
    if _concrete(num_train):
        _checks.integer("num_train", num_train, minimum=0)
    key = seed if _is_key(seed) else jax.random.key(seed)
    return jax.random.fold_in(jax.random.fold_in(key, num_train), jnp.round(temperature * 1e6).astype(jnp.uint32))


def problem_keys(key: jax.Array) -> ProblemKeys:
    """Environment, training and test keys of one problem key."""
    _checks.prng_key("key", key)
    return ProblemKeys(jax.random.fold_in(key, 0), jax.random.fold_in(key, 1), jax.random.fold_in(key, 2))


def _is_key(x) -> bool:
    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def sample_problem(settings: ProblemSettings, key: jax.Array, temperature, num_train
                   ) -> tuple[nets.Params, train_lib.Dataset]:
    """The one draw of a testbed environment and its training set from a problem key (pure, jittable, vmappable).

    The testbed's draw (key = :func:`problem_key` (seed, ρ, n)); the labs and the bandit compose the same
    pieces (:func:`sample_prior_params`, :func:`sample_data`) under their own key schedules (:func:`lab_keys`,
    :func:`bandit_keys`). The environment of key k is ``MLPClassification(ρ, seed=problem_keys(k).environment)``.

    Args:
      settings: :class:`ProblemSettings` (static).
      key: problem key.
      temperature: ρ (traced).
      num_train: n ≤ settings.capacity (traced): rows ≥ n are zeros.

    Returns:
      (params of the environment MLP, ``Dataset`` with x [capacity, d], y [capacity], n = num_train).
    """
    _checks.instance("settings", settings, ProblemSettings)
    keys = problem_keys(key)
    params = sample_prior_params(keys.environment, settings.input_dim, settings.hidden, settings.num_classes)
    x, y = sample_data(keys.train, params, temperature, settings.capacity, settings.activation)
    valid = jnp.arange(settings.capacity) < num_train
    return params, train_lib.Dataset(jnp.where(valid[:, None], x, 0.0), jnp.where(valid, y, 0), num_train)


def sample_test(settings: ProblemSettings, num_test: int, tau: int, params: nets.Params, key: jax.Array,
                temperature) -> TestData:
    """The test set of order τ of a problem (pure, jittable): ``num_test`` τ-samples, N·τ rows.

    Args:
      settings: :class:`ProblemSettings` (static; test_inputs and num_anchors pick the inputs).
      num_test: N (static).
      tau: τ (static).
      params: the environment from :func:`sample_problem` with the same key.
      key: problem key.
      temperature: ρ.
    """
    _checks.instance("settings", settings, ProblemSettings)
    kx, ky, ki = jax.random.split(jax.random.fold_in(problem_keys(key).test, tau), 3)
    if settings.test_inputs == "polyadic":
        anchors = jax.random.normal(kx, (num_test, settings.num_anchors, settings.input_dim))
        pick = jax.random.randint(ki, (num_test, tau), 0, settings.num_anchors)
        x = jnp.take_along_axis(anchors, pick[..., None], axis=1).reshape(num_test * tau, settings.input_dim)
    else:
        x = sample_inputs(kx, num_test * tau, settings.input_dim)
    logits = environment_logits(params, x, temperature, settings.activation)
    return TestData(x, sample_labels(ky, logits), logits)


def bandit_keys(seed) -> tuple[jax.Array, jax.Array]:
    """The neural bandit's key schedule: (actions key, environment key) of bandit problem ``seed``.

    ``split(fold_in(key(seed), 0xBA4D17))``; the actions are N inputs x ~ N(0, I) drawn with the first key
    (:func:`sample_inputs`), the environment with the second (:func:`sample_prior_params`).
    """
    if _concrete(seed):
        _checks.seed_int("seed", seed)
    k_actions, k_env = jax.random.split(jax.random.fold_in(jax.random.key(seed), 0xBA4D17))
    return k_actions, k_env


# ------------------------------------------------------------------ the labs' problems
LAB_TEST_POOL = 10_000  # test points drawn per lab environment (then cut): one compiled draw for every caller


class LabData(NamedTuple):
    """One lab environment and its data (numpy), from :func:`sample_lab_data`.

    Attributes:
      x_train: [n, 2] training inputs (the first k rows are the nested training set of size k).
      y_train: [n] training labels.
      x_test: [m, 2] test inputs.
      y_test: [m] test labels.
      true_logprobs: [m] the environment's log p(y_test | x_test).
      grid_probs: [G] the environment's p(y = 1 | x) at the grid points.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    true_logprobs: np.ndarray
    grid_probs: np.ndarray


LAB_SCHEDULES = ("joint", "ensembles")


def lab_keys(seed, lab: str = "joint") -> ProblemKeys:
    """The key schedule of a lab: the environment is ``MLPClassification(ρ, seed=seed)`` whatever ρ and n.

    Keyed by the seed alone, so a temperature slider shows one function at several noise levels (the Gumbel noise
    of each label is fixed: only labels near the boundary flip) and a num_train slider shows nested training sets.
    The two labs drew their data with different keys before the drawing code was unified; each keeps its schedule
    so that the labs' figures and the numbers their prose quotes stay what they were:

    * ``"joint"`` (lab 02): training draw ``fold_in(key(seed), 1)``, test draw ``fold_in(key(seed), 2)``;
    * ``"ensembles"`` (lab 03): training draw ``key(seed + 10000)``, test draw ``key(seed + 20000)``.

    Args:
      seed: uint32 seed (traced).
      lab: "joint" or "ensembles" (static).
    """
    key = jax.random.key(seed)
    if lab == "joint":
        return ProblemKeys(key, jax.random.fold_in(key, 1), jax.random.fold_in(key, 2))
    if lab == "ensembles":
        return ProblemKeys(key, jax.random.key(seed + 10_000), jax.random.key(seed + 20_000))
    raise ValueError(f"lab must be one of {LAB_SCHEDULES}, got {lab!r}")


@functools.partial(_compile.jit, static_argnums=(2, 3, 5))
def _lab_data(seed, temperature, num_train: int, num_test: int, grid, lab: str):
    keys = lab_keys(seed, lab)
    params = sample_prior_params(keys.environment)
    x, y = sample_data(keys.train, params, temperature, num_train)
    x_test, y_test = sample_data(keys.test, params, temperature, num_test)
    logits = environment_logits(params, x_test, temperature)
    true_lp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), y_test[:, None], -1)[:, 0]
    grid_probs = jax.nn.softmax(environment_logits(params, grid, temperature), -1)[:, 1]
    return x, y, x_test, y_test, true_lp, grid_probs


def sample_lab_data(seed: int, temperature: float, num_train: int, num_test: int, grid, lab: str = "joint"
                    ) -> LabData:
    """The environment of a lab (2-D, K = 2, the paper's prior) and its data, in one compiled call.

    The same draws as everywhere else (:func:`sample_prior_params`, :func:`sample_data`) with the lab's key
    schedule (:func:`lab_keys`). The test pool is drawn at a fixed size (at least :data:`LAB_TEST_POOL`) and cut
    to ``num_test``: the draws are prefix-stable (threefry keys per element), so callers with different pool sizes
    share one compiled program; likewise the first k training rows are the draw of k.

    Args:
      seed: int in [0, 2**32 − 20000].
      temperature: ρ > 0.
      num_train: training rows n ≥ 1.
      num_test: test points m ≥ 1.
      grid: [G, 2] points at which to evaluate p(y = 1 | x).
      lab: the key schedule, "joint" or "ensembles" (:func:`lab_keys`).

    Returns:
      :class:`LabData`.
    """
    seed = _checks.integer("seed", seed, minimum=0, maximum=2 ** 32 - 1 - 20_000)
    num_test = _checks.integer("num_test", num_test, minimum=1)
    lab = _checks.one_of("lab", lab, LAB_SCHEDULES)
    out = _lab_data(jnp.uint32(seed), jnp.float32(_checks.temperature("temperature", temperature)),
                    _checks.integer("num_train", num_train, minimum=1), max(num_test, LAB_TEST_POOL),
                    jnp.asarray(_checks.as_float_array("grid", grid, ndim=2), jnp.float32), lab)
    x_tr, y_tr, x_te, y_te, true_lp, grid_probs = (np.asarray(a) for a in out)
    return LabData(x_tr, y_tr, x_te[:num_test], y_te[:num_test], true_lp[:num_test], grid_probs)


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
        sizes = nets.mlp_sizes(self.input_dim, hidden, self.num_classes)
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
        return environment_logits(self.params, self._check_x(x), self.temperature, self.activation)

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
        return sample_data(_checks.as_key(seed), self.params, self.temperature, n, self.activation)

    def mean_entropy(self, num_inputs: int = 10_000, seed=0) -> float:
        """Mean entropy (nats) of p(y | x) over x ~ N(0, I): how noisy the labels are."""
        num_inputs = _checks.integer("num_inputs", num_inputs, minimum=1)
        self._check_rows("num_inputs", num_inputs)
        p = self.probs(self.sample_inputs(num_inputs, seed))
        return float(-jnp.mean(jnp.sum(jax.scipy.special.xlogy(p, p), axis=-1)))
