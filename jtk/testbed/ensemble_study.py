"""ensemble vs ensemble+ on the labs' 2-D testbed problems: many fits in one compile, exact scores.

Osband et al. (2022), App. D.1 / Fig. 12, §4.2 / Fig. 5 and Fig. 6. The fitting and
scoring behind the widgets of :mod:`jtk.widgets.ensembles` and
:mod:`jtk.widgets.joint`, which only index what is computed here (one owner:
widgets plot and wire controls, this module fits and scores).

Both agents are jtk's :class:`~jtk.agents.EnsembleAgent`. ensemble+ adds to
each member a fixed random prior network scaled by ``prior_scale / sqrt(ρ)``
(reference: 3 / sqrt(ρ)); with prior scale 0 it *is* the plain ensemble, so one
compiled training function fits both (the scale is a traced hyperparameter).

* :func:`fit_ensembles` trains any number of (data set, temperature, prior
  scale) problems by ``vmap`` over fixed-size chunks of problems, with training
  sets padded to one capacity and one static minibatch size: exactly one XLA
  compilation per process, whatever the num_train, temperature or prior scale.
* Teaching settings, documented in the notebooks: K = 10 members (the paper
  reports little change above 10), 500 Adam steps instead of 1000, minibatch 32
  instead of 100 (the whole set when n ≤ 32, as in the reference). Each
  problem's fit depends only on its own seed, not on the other problems
  trained in the same vmapped chunk (threefry keys are batch-invariant).
* Ensemble size: the first k members of a K-member fit. With Adam the members
  of jtk's ensemble train independently under the same effective L2
  (the reference L2 with K members, ``reference_l2``), so the first k
  members are a k-member ensemble; the same argument makes member 0 an ``mlp``.
* Environments and data: :func:`jtk.envs.classification.sample_lab_data` (the
  testbed's draw keyed by the seed alone); d_KL^τ: the exact finite-mixture
  scorer :func:`jtk.likelihood.mixture_kl_by_tau`.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from jtk import _checks, _compile, _memory, executors, likelihood, train as train_lib
from jtk.agents.base import ProblemInfo, train_many
from jtk.agents.ensemble import EnsembleAgent
from jtk.agents.zoo_common import reference_l2
from jtk.envs.classification import LAB_TEST_POOL as TEST_POOL, LabData, sample_lab_data  # noqa: F401 (TEST_POOL: re-export)

CHUNK = 10  # problems trained per vmapped call (fixed, so the compiled shape never changes)
NUM_MEMBERS, NUM_STEPS, BATCH_SIZE = 10, 500, 32
EXTENT = 3.0  # probability maps cover [-3, 3]^2 (inputs are N(0, I))


@dataclass(frozen=True)
class FitSettings:
    """Training settings of the labs' ensemble fits (see the module docstring).

    Attributes:
      num_members: ensemble size K.
      num_steps: Adam steps.
      batch_size: static minibatch size (the whole set when n ≤ batch_size).
      capacity: rows of the padded training sets (≥ the largest num_train).
      learning_rate: Adam step size.
    """

    num_members: int = NUM_MEMBERS
    num_steps: int = NUM_STEPS
    batch_size: int = BATCH_SIZE
    capacity: int = 128
    learning_rate: float = 1e-3

    def __post_init__(self):
        _checks.integer("num_members", self.num_members, minimum=1)
        _checks.integer("num_steps", self.num_steps, minimum=1)
        _checks.integer("batch_size", self.batch_size, minimum=1)
        _checks.integer("capacity", self.capacity, minimum=1)
        _checks.positive("learning_rate", self.learning_rate)

    def agent(self) -> EnsembleAgent:
        """The static ensemble+ agent every problem is trained with (its prior scale is traced)."""
        return EnsembleAgent(num_members=self.num_members, prior_scale=1.0, num_steps=self.num_steps,
                             batch_size=self.batch_size, learning_rate=self.learning_rate, num_classes=2)


def fit_ensembles(xs: Sequence, ys: Sequence, temperatures: Sequence[float], prior_scales: Sequence[float],
                  seeds: Sequence[int], settings: FitSettings = FitSettings(), progress: bool = False):
    """Trains one ensemble(+) per problem, all with one compiled function.

    Args:
      xs: P training inputs, each [n_p, 2] (n_p ≤ settings.capacity).
      ys: P label arrays, each [n_p].
      temperatures: [P] temperatures ρ (set the L2 scale and the prior scaling).
      prior_scales: [P] prior scales λ_prior ≥ 0; the prior networks are scaled
        by λ_prior / sqrt(ρ); 0 gives the plain ensemble.
      seeds: [P] ints: member initialisation, prior networks and minibatches.
      settings: :class:`FitSettings`.
      progress: show a progress bar over the chunks of ``CHUNK`` problems (they run side by side on a multi-core
        CPU).

    Returns:
      ``EnsembleState`` of numpy arrays whose leaves have a leading axis P
      (members next: [P, K, ...]).
    """
    p = len(xs)
    if p == 0 or not (len(ys) == len(temperatures) == len(prior_scales) == len(seeds) == p):
        raise ValueError(f"xs, ys, temperatures, prior_scales and seeds must be non-empty and of equal length, "
                         f"got {len(xs)}, {len(ys)}, {len(temperatures)}, {len(prior_scales)}, {len(seeds)}")
    agent = settings.agent()
    cap = settings.capacity
    x_all = np.zeros((p + (-p) % CHUNK, cap, 2), np.float32)  # padded to whole chunks (repeats of the last)
    y_all = np.zeros((x_all.shape[0], cap), np.int32)
    n_all = np.zeros(x_all.shape[0], np.int32)
    hyper = {"l2": np.zeros(x_all.shape[0], np.float32), "prior_scale": np.zeros(x_all.shape[0], np.float32)}
    keys = np.zeros(x_all.shape[0], np.uint32)
    for i in range(x_all.shape[0]):
        j = min(i, p - 1)
        x = _checks.as_float_array(f"xs[{j}]", xs[j], ndim=2)
        y = _checks.as_labels(f"ys[{j}]", ys[j], 2, ndim=1)
        if x.shape[1] != 2 or x.shape[0] != y.shape[0] or not 1 <= x.shape[0] <= cap:
            raise ValueError(f"xs[{j}] must be [n, 2] and ys[{j}] [n] with n in [1, {cap}], "
                             f"got shapes {x.shape} and {y.shape}")
        t = _checks.temperature(f"temperatures[{j}]", temperatures[j])
        lam = _checks.positive(f"prior_scales[{j}]", prior_scales[j], allow_zero=True)
        n = x.shape[0]
        x_all[i, :n], y_all[i, :n], n_all[i] = x, y, n
        hyper["l2"][i] = reference_l2(ProblemInfo(x.shape[1], 2, n, t), 1.0, settings.num_members)  # λ = 1
        hyper["prior_scale"][i] = lam / np.sqrt(t)
        keys[i] = _checks.integer(f"seeds[{j}]", seeds[j], minimum=0, maximum=2 ** 32 - 1)

    def fit(start: int):
        sl = slice(start, start + CHUNK)
        data = train_lib.Dataset(jnp.asarray(x_all[sl]), jnp.asarray(y_all[sl]), jnp.asarray(n_all[sl]))
        h = {k: jnp.asarray(v[sl]) for k, v in hyper.items()}
        return jax.device_get(train_many(agent, _keys(jnp.asarray(keys[sl])), data, h))

    states = _each_chunk(fit, x_all.shape[0], f"fitting {p} ensembles" if progress else None)
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a)[:p], *states)


def _each_chunk(fn, num_problems: int, progress: str | None = None) -> list:
    """``[fn(start) for start in range(0, num_problems, CHUNK)]``, the chunks side by side on a multi-core CPU.

    Every chunk runs the same compiled program on its own problems (:func:`jtk.executors.map_local`), so the results
    are bit for bit those of one chunk at a time (measured: docs/platforms.md, "Both cores: one chunk per thread").
    ``progress``: the label of a progress bar over the chunks (None: no bar).
    """
    return executors.map_local(fn, range(0, num_problems, CHUNK), desc=progress or "", unit="chunk",
                               progress=progress is not None)


@_compile.jit
def _keys(seeds):
    """One threefry key per seed. (The rbg PRNGs compile faster on CPU but are not batch-invariant:
    a problem's fit would depend on the other problems in its chunk.)"""
    return jax.vmap(jax.random.key)(seeds)


@functools.partial(_compile.jit, static_argnums=0)
def _member_probs(agent: EnsembleAgent, states, x):
    """Class-1 probabilities of every member: states [P, ...], shared x [n, d] → [P, K, n]."""
    logits = jax.vmap(agent.components, (0, None))(states, x)  # [P, K, n, 2]
    return jax.nn.softmax(logits, -1)[..., 1]


@functools.partial(_compile.jit, static_argnums=(0, 4))
def _member_label_logprobs(agent: EnsembleAgent, states, x, y, shared: bool):
    """log p_k(y | x) of every member: x [P, n, d] (or one shared [n, d]), y likewise [P, n] (or [n]) → [P, K, n].

    Two classes: log p(y) = −softplus(−s) with s = ±(logit₁ − logit₀), the log-softmax of the label's class
    without materialising both log-probabilities.
    """
    logits = jax.vmap(agent.components, (0, None if shared else 0))(states, x)  # [P, K, n, 2]
    margin = logits[..., 1] - logits[..., 0]
    y = y[None, None] if shared else y[:, None]
    return -jax.nn.softplus(jnp.where(y == 1, -margin, margin))


def member_probs(states, x, settings: FitSettings = FitSettings()) -> np.ndarray:
    """Class-1 probability of every member of every problem at shared inputs x [n, 2] → [P, K, n]."""
    x = jnp.asarray(_checks.as_float_array("x", x, ndim=2))
    p = jax.tree_util.tree_leaves(states)[0].shape[0]
    out = _each_chunk(lambda s: np.asarray(_member_probs(settings.agent(), _chunk(states, s), x)), p)
    return np.concatenate(out)[:p]


def member_label_logprobs(states, xs, ys, settings: FitSettings = FitSettings()) -> np.ndarray:
    """log p_k(y_i | x_i) of every member of every problem → [P, K, n].

    Args:
      states: ``EnsembleState`` with leaves [P, K, ...] (from :func:`fit_ensembles`).
      xs: one test set per problem [P, n, 2], or one shared by all problems [n, 2]
        (evaluated without copying it P times).
      ys: labels [P, n], or [n] with a shared ``xs``.
      settings: the :class:`FitSettings` the states were trained with.
    """
    p = jax.tree_util.tree_leaves(states)[0].shape[0]
    shared = np.ndim(xs) == 2
    xs = _checks.as_float_array("xs", xs, ndim=2 if shared else 3)
    ys = _checks.as_labels("ys", ys, 2, ndim=1 if shared else 2)
    if xs.shape[:-1] != ys.shape or (not shared and xs.shape[0] != p):
        raise ValueError(f"xs [P, n, 2] or [n, 2] and ys [P, n] or [n] must match each other and P = {p} problems, "
                         f"got {xs.shape} and {ys.shape}")
    if not shared:
        idx = np.minimum(np.arange(p + (-p) % CHUNK), p - 1)
        xs, ys = xs[idx], ys[idx]

    def one(s: int) -> np.ndarray:
        x, y = (xs, ys) if shared else (xs[s:s + CHUNK], ys[s:s + CHUNK])
        return np.asarray(_member_label_logprobs(settings.agent(), _chunk(states, s), jnp.asarray(x), jnp.asarray(y),
                                                 shared))

    return np.concatenate(_each_chunk(one, p))[:p]


def _chunk(states, start: int):
    """CHUNK problems from ``start`` (padded with the last problem), gathered on the host."""
    p = jax.tree_util.tree_leaves(states)[0].shape[0]
    idx = np.minimum(np.arange(start, start + CHUNK), p - 1)
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], states)


def lab_data(seed: int, temperature: float, num_train: int, num_test: int, grid) -> LabData:
    """The ensembles lab's environment and data: :func:`jtk.envs.classification.sample_lab_data` with this lab's key
    schedule (``lab="ensembles"``), the draws lab 03's figures and prose were made with.

    Returns:
      LabData (x_train [n, 2], y_train [n], x_test [m, 2], y_test [m], true log-probabilities [m], grid p(y = 1) [G]).
    """
    return sample_lab_data(seed, temperature, num_train, num_test, grid, lab="ensembles")


def probability_grid(resolution: int = 50, extent: float = EXTENT) -> tuple[np.ndarray, np.ndarray]:
    """A square grid over [-extent, extent]^2: (axis [R], points [R*R, 2], row-major with y the row)."""
    resolution = _checks.integer("resolution", resolution, minimum=2, maximum=400)
    extent = _checks.positive("extent", extent)
    axis = np.linspace(-extent, extent, resolution, dtype=np.float32)
    gx, gy = np.meshgrid(axis, axis)
    return axis, np.stack([gx.ravel(), gy.ravel()], -1)


# ------------------------------------------------------------------ Fig. 12 comparison
@dataclass(frozen=True, eq=False)
class EnsembleComparison:
    """Everything the Fig. 12 app shows, precomputed for every slider position.

    Attributes:
      temperature: ρ of the environment.
      num_train_values: the num_train slider positions.
      prior_scales: the prior-scale slider positions (0 = ensemble).
      num_members: K (the ensemble-size slider goes 1 … K).
      axis: [R] grid coordinates of the maps.
      true_probs: [R, R] environment p(y = 1 | x).
      x_train: [n_max, 2] training inputs (the first n are the set of size n).
      y_train: [n_max] training labels.
      probs: [S, N, K, R, R] class-1 probability of each member, for prior scale
        index s and num_train index j.
      seed: the environment / data seed.
      settings: the training settings.
      state: the fitted ensembles, leading axis S·N (scale-major), reused by
        :func:`kl_vs_num_train`.
    """

    temperature: float
    num_train_values: tuple[int, ...]
    prior_scales: tuple[float, ...]
    num_members: int
    axis: np.ndarray
    true_probs: np.ndarray
    x_train: np.ndarray
    y_train: np.ndarray
    probs: np.ndarray
    seed: int = 0
    settings: FitSettings = FitSettings()
    state: object = None


def make_ensemble_comparison(temperature: float = 0.1, seed: int = 0,
                             num_train_values: Sequence[int] = (1, 3, 10, 30, 100),
                             prior_scales: Sequence[float] = (0.0, 1.0, 3.0, 10.0), resolution: int = 50,
                             settings: FitSettings = FitSettings(), progress: bool = True) -> EnsembleComparison:
    """Fits ensemble(+) for every (prior scale, num_train) slider position in one compiled call.

    Args:
      temperature: environment temperature ρ (Fig. 12: a medium-SNR problem, 0.1).
      seed: picks the environment and the training data.
      num_train_values: slider positions for n (nested training sets: the first n points).
      prior_scales: slider positions of λ_prior (prior networks scaled by λ/sqrt(ρ)); must include 0.
      resolution: grid points per axis of the probability maps.
      settings: :class:`FitSettings`.
      progress: show a progress bar over the fits (:func:`fit_ensembles`).
    """
    temperature = _checks.temperature("temperature", temperature)
    seed = _checks.integer("seed", seed, minimum=0, maximum=(2 ** 32 - 1000) // 1000)  # fit seeds seed·1000 + j
    ns = tuple(_checks.integer("num_train_values", n, minimum=1, maximum=settings.capacity)
               for n in num_train_values)
    scales = tuple(_checks.positive("prior_scales", s, allow_zero=True) for s in prior_scales)
    if not ns or not scales or 0.0 not in scales:
        raise ValueError(f"num_train_values must be non-empty and prior_scales must include 0 (the ensemble), "
                         f"got {ns} and {scales}")
    axis, grid = probability_grid(resolution)
    x, y, _, _, _, true = lab_data(seed, temperature, max(ns), 1, grid)
    problems = [(s, n) for s in scales for n in ns]
    state = fit_ensembles([x[:n] for _, n in problems], [y[:n] for _, n in problems],
                          [temperature] * len(problems), [s for s, _ in problems],
                          [seed * 1000 + j for j in range(len(ns))] * len(scales), settings, progress)
    probs = member_probs(state, grid, settings).reshape(len(scales), len(ns), settings.num_members,
                                                        resolution, resolution)
    true = true.reshape(resolution, resolution)
    return EnsembleComparison(temperature, ns, scales, settings.num_members, axis, true, x, y, probs, seed, settings,
                              state)



# ------------------------------------------------------------------ Fig. 5 analogue
def kl_vs_num_train(temperature: float = 0.1, num_train_values: Sequence[int] = (1, 3, 10, 30, 100),
                    seeds: int = 4, prior_scale: float = 3.0, taus: Sequence[int] = (1, 10), num_test: int = 1000,
                    settings: FitSettings = FitSettings(), comparison: EnsembleComparison | None = None,
                    progress: bool = True) -> pd.DataFrame:
    """d_KL^τ of ensemble and ensemble+ across num_train (Fig. 5 analogue), exact over the K members.

    Per seed: the lab environment of that seed (:func:`jtk.envs.classification.sample_lab_data`), nested
    training sets (the first n of one draw), and one test pool of ``num_test · max(τ)``
    points cut into blocks of τ (so d_KL^10 uses ``num_test`` τ-samples, as the
    testbed). Both agents share environment, data and member initialisations.

    Args:
      temperature: environment temperature ρ.
      num_train_values: training-set sizes (nested: the first n points of one draw).
      seeds: environments 0 … seeds − 1.
      prior_scale: λ of ensemble+ (prior networks scaled by λ / sqrt(ρ)).
      taus: orders τ scored.
      num_test: τ-samples for the largest τ.
      settings: :class:`FitSettings`.
      comparison: an :class:`EnsembleComparison` from :func:`make_ensemble_comparison`
        with the same temperature, num_train_values and settings; its fits of seed
        ``comparison.seed`` (identical problems) are reused instead of retrained.
      progress: show a progress bar over the fits (:func:`fit_ensembles`).

    Returns:
      DataFrame with columns agent, num_train, seed, tau, kl (one row per problem).
    """
    temperature = _checks.temperature("temperature", temperature)
    seeds = _checks.integer("seeds", seeds, minimum=1)
    prior_scale = _checks.positive("prior_scale", prior_scale, allow_zero=True)
    ns = tuple(_checks.integer("num_train_values", n, minimum=1, maximum=settings.capacity)
               for n in num_train_values)
    taus = tuple(_checks.integer("taus", t, minimum=1) for t in taus)
    num_test = _checks.integer("num_test", num_test, minimum=1)
    pool = num_test * max(taus)
    _memory.check_budget(f"kl_vs_num_train: seeds × num_train_values × members × num_test × max(taus) float32 "
                         f"({seeds} × {len(ns)} × {settings.num_members} × {pool})",
                         _memory.nbytes(2, seeds, len(ns) * settings.num_members + 4, pool),
                         "lower num_test, taus or seeds")
    # the comparison's grid shape (its maps are not needed here): the same compiled environment draw
    grid = probability_grid(comparison.axis.size)[1] if isinstance(comparison, EnsembleComparison) else \
        probability_grid()[1]
    data = [lab_data(s, temperature, max(ns), pool, grid) for s in range(seeds)]
    train = [(d[0], d[1]) for d in data]
    test = [(d[2], d[3]) for d in data]
    true_lp = [d[4].astype(np.float64) for d in data]
    problems = [(agent, s, j) for agent in ("ensemble", "ensemble+") for s in range(seeds) for j in range(len(ns))]
    scale_of = {"ensemble": 0.0, "ensemble+": prior_scale}
    reuse = {}  # problem index → index into comparison.state
    if (isinstance(comparison, EnsembleComparison) and comparison.state is not None
            and comparison.temperature == temperature and comparison.settings == settings
            and comparison.num_train_values == ns):
        for i, (a, s, j) in enumerate(problems):
            if s == comparison.seed and scale_of[a] in comparison.prior_scales and ns[j] in comparison.num_train_values:
                reuse[i] = (comparison.prior_scales.index(scale_of[a]) * len(comparison.num_train_values)
                            + comparison.num_train_values.index(ns[j]))
    todo = [i for i in range(len(problems)) if i not in reuse]
    parts, order = [], []
    if todo:
        parts.append(fit_ensembles([train[problems[i][1]][0][:ns[problems[i][2]]] for i in todo],
                                   [train[problems[i][1]][1][:ns[problems[i][2]]] for i in todo],
                                   [temperature] * len(todo), [scale_of[problems[i][0]] for i in todo],
                                   [problems[i][1] * 1000 + problems[i][2] for i in todo], settings, progress))
        order += todo
    if reuse:
        idx = np.asarray(list(reuse.values()))
        parts.append(jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], comparison.state))
        order += list(reuse)
    state = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts)
    state = jax.tree_util.tree_map(lambda a: a[np.argsort(order)], state)  # back to the order of ``problems``
    lp = member_label_logprobs(state, np.stack([test[s][0] for _, s, _ in problems]),
                               np.stack([test[s][1] for _, s, _ in problems]), settings)
    rows = []
    for (agent, s, j), member_lp in zip(problems, lp):
        kls = likelihood.mixture_kl_by_tau(member_lp, true_lp[s], taus)
        rows += [{"agent": agent, "num_train": ns[j], "seed": s, "tau": t, "kl": float(k)} for t, k in zip(taus, kls)]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ Fig. 6 analogue (the joint-predictions lab)
@dataclass(frozen=True, eq=False)
class AgentFits:
    """mlp, ensemble and ensemble+ fitted to one lab environment at every num_train, scored for τ = 1 … max τ.

    Attributes:
      probs: agent → [N, K, G] class-1 probability of each member at the G grid points (mlp: K = 1)
        (the joint-predictions widget reshapes G to [R, R]).
      kl: agent → [N, max τ] exact d_KL^τ for τ = 1 … max τ.
      seconds: wall time of the fit and the precomputation.
    """

    probs: dict
    kl: dict
    seconds: float


def fit_joint_agents(temperature: float, seed: int, num_train_values: Sequence[int], grid, num_test: int,
                     settings: FitSettings = FitSettings(), prior_scale: float = 3.0, max_tau: int = 100
                     ) -> AgentFits:
    """Fits mlp, ensemble and ensemble+ to the lab environment (ρ, seed) at every num_train, in one compiled call.

    The environment, nested training sets and test pool are :func:`jtk.envs.classification.sample_lab_data`
    (ρ, seed); the mlp is member 0 of the plain ensemble (see the module docstring); d_KL^τ is exact over the
    members (:func:`jtk.likelihood.mixture_kl_by_tau`) on the pool cut into blocks of τ.

    Args:
      temperature: ρ.
      seed: the environment / data seed; fit seeds are seed · 1000 + j for num_train index j.
      num_train_values: N training-set sizes (nested: the first n of one draw), each ≤ settings.capacity.
      grid: [G, 2] points of the probability maps.
      num_test: test pool size (⌊num_test / τ⌋ τ-samples for each τ).
      settings: :class:`FitSettings`.
      prior_scale: λ of ensemble+ (prior networks scaled by λ / sqrt(ρ)).
      max_tau: the largest τ scored.

    Returns:
      :class:`AgentFits`.
    """
    start = time.perf_counter()
    ns = tuple(_checks.integer("num_train_values", n, minimum=1, maximum=settings.capacity)
               for n in num_train_values)
    max_tau = _checks.integer("max_tau", max_tau, minimum=1, maximum=num_test)
    data = sample_lab_data(seed, temperature, max(ns), num_test, grid)
    k = settings.num_members
    problems = [(s, j) for s in (0.0, prior_scale) for j in range(len(ns))]
    state = fit_ensembles([data.x_train[:ns[j]] for _, j in problems], [data.y_train[:ns[j]] for _, j in problems],
                          [temperature] * len(problems), [s for s, _ in problems],
                          [seed * 1000 + j for _, j in problems], settings)
    grid_probs = member_probs(state, grid, settings).reshape(2, len(ns), k, -1)
    lp = member_label_logprobs(state, data.x_test, data.y_test, settings).reshape(2, len(ns), k, -1)
    taus = range(1, max_tau + 1)

    def kl(i, members):
        return np.stack([likelihood.mixture_kl_by_tau(lp[i, j, members], data.true_logprobs, taus)
                         for j in range(len(ns))])

    probs = {"mlp": grid_probs[0, :, :1], "ensemble": grid_probs[0], "ensemble+": grid_probs[1]}
    kls = {"mlp": kl(0, slice(0, 1)), "ensemble": kl(0, slice(None)), "ensemble+": kl(1, slice(None))}
    return AgentFits(probs, kls, time.perf_counter() - start)
