"""ensemble vs ensemble+ (Osband et al. 2022, App. D.1 / Fig. 12 and §4.2 / Fig. 5), as widgets.

Both agents are jtk's :class:`~jtk.agents.EnsembleAgent`. ensemble+ adds to
each member a fixed random prior network scaled by ``prior_scale / sqrt(ρ)``
(reference: 3 / sqrt(ρ)); with prior scale 0 it *is* the plain ensemble, so one
compiled training function fits both (the scale is a traced hyperparameter).

How the notebooks stay fast (every slider position is precomputed at build
time, so a slider move is numpy indexing plus one PNG render):

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
  (λ·sqrt(ρ)·d/n each, the ``l2 · K`` of the summed loss), so the first k
  members are a k-member ensemble; the same argument makes member 0 an ``mlp``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

import ipywidgets as widgets
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from jtk import _checks, _memory, nets, train as train_lib
from jtk.agents.base import train_many
from jtk.agents.ensemble import EnsembleAgent
from jtk.envs.classification import sample_prior_params
from jtk.plots import testbed as tb_plots
from jtk.widgets._app import LABEL_STYLE, App, image_widget, show_png, significant_frame

CHUNK = 10  # problems trained per vmapped call (fixed, so the compiled shape never changes)
NUM_MEMBERS, NUM_STEPS, BATCH_SIZE = 10, 500, 32
EXTENT = 3.0  # probability maps cover [-3, 3]^2 (inputs are N(0, I))
TEST_POOL = 10_000  # test points drawn per environment (then cut): one compiled environment draw for all callers


@dataclass(frozen=True)
class FitSettings:
    """Training settings shared by the widget notebooks (see the module docstring).

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
                  seeds: Sequence[int], settings: FitSettings = FitSettings()):
    """Trains one ensemble(+) per problem, all with one compiled function.

    Args:
      xs: P training inputs, each [n_p, 2] (n_p ≤ settings.capacity).
      ys: P label arrays, each [n_p].
      temperatures: [P] temperatures ρ (set the L2 scale and the prior scaling).
      prior_scales: [P] prior scales λ_prior ≥ 0; the prior networks are scaled
        by λ_prior / sqrt(ρ); 0 gives the plain ensemble.
      seeds: [P] ints: member initialisation, prior networks and minibatches.
      settings: :class:`FitSettings`.

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
        hyper["l2"][i] = np.sqrt(t) * x.shape[1] / (settings.num_members * n)  # λ·sqrt(ρ)·d/(K·n), λ = 1
        hyper["prior_scale"][i] = lam / np.sqrt(t)
        keys[i] = _checks.integer(f"seeds[{j}]", seeds[j], minimum=0, maximum=2 ** 32 - 1)
    states = []
    for start in range(0, x_all.shape[0], CHUNK):
        sl = slice(start, start + CHUNK)
        data = train_lib.Dataset(jnp.asarray(x_all[sl]), jnp.asarray(y_all[sl]), jnp.asarray(n_all[sl]))
        h = {k: jnp.asarray(v[sl]) for k, v in hyper.items()}
        states.append(jax.device_get(train_many(agent, _keys(jnp.asarray(keys[sl])), data, h)))
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a)[:p], *states)


@jax.jit
def _keys(seeds):
    """One threefry key per seed. (The rbg PRNGs compile ~3x faster on CPU but are not batch-invariant:
    a problem's fit would depend on the other problems in its chunk.)"""
    return jax.vmap(jax.random.key)(seeds)


@functools.partial(jax.jit, static_argnums=0)
def _member_probs(agent: EnsembleAgent, states, x):
    """Class-1 probabilities of every member: states [P, ...], shared x [n, d] → [P, K, n]."""
    logits = jax.vmap(agent.components, (0, None))(states, x)  # [P, K, n, 2]
    return jax.nn.softmax(logits, -1)[..., 1]


@functools.partial(jax.jit, static_argnums=(0, 4))
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
    out = [np.asarray(_member_probs(settings.agent(), _chunk(states, s), x)) for s in range(0, p, CHUNK)]
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
    out = []
    for s in range(0, p, CHUNK):
        x, y = (xs, ys) if shared else (xs[s:s + CHUNK], ys[s:s + CHUNK])
        out.append(np.asarray(_member_label_logprobs(settings.agent(), _chunk(states, s), jnp.asarray(x),
                                                     jnp.asarray(y), shared)))
    return np.concatenate(out)[:p]


def _chunk(states, start: int):
    """CHUNK problems from ``start`` (padded with the last problem), gathered on the host."""
    p = jax.tree_util.tree_leaves(states)[0].shape[0]
    idx = np.minimum(np.arange(start, start + CHUNK), p - 1)
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], states)


def kl_by_tau(member_logprobs, true_logprobs, taus) -> np.ndarray:
    """d_KL^τ of an equally weighted ensemble from per-point log-probabilities, for many τ at once.

    The test points are cut into consecutive blocks of τ (⌊N/τ⌋ τ-samples);
    a block's KL is Σ_t log p(y_t) − log (1/K) Σ_k Π_t p_k(y_t) (App. B,
    Algorithms 1–3, exact over the K members); d_KL^τ is the mean over blocks.

    Args:
      member_logprobs: [K, N] log p_k(y_i | x_i) of each member at each test point.
      true_logprobs: [N] log p(y_i | x_i) under the environment.
      taus: iterable of τ values in [1, N].

    Returns:
      [len(taus)] d_KL^τ (float64).
    """
    lp = _checks.as_float_array("member_logprobs", member_logprobs, ndim=2).astype(np.float64)
    true = _checks.as_float_array("true_logprobs", true_logprobs, ndim=1).astype(np.float64)
    k, n = lp.shape
    if true.shape[0] != n:
        raise ValueError(f"true_logprobs must have {n} entries to match member_logprobs {lp.shape}, got {true.shape}")
    cum = np.concatenate([np.zeros((k, 1)), np.cumsum(lp, axis=1)], axis=1)  # [K, N+1]
    cum_true = np.concatenate([[0.0], np.cumsum(true)])
    out = []
    for tau in taus:
        tau = _checks.integer("tau", tau, minimum=1, maximum=n)
        ends = np.arange(tau, n + 1, tau)
        agent_ll = cum[:, ends] - cum[:, ends - tau]  # [K, blocks]
        mx = agent_ll.max(0)
        joint = mx + np.log(np.mean(np.exp(agent_ll - mx), axis=0))
        out.append(float(np.mean(cum_true[ends] - cum_true[ends - tau] - joint)))
    return np.asarray(out)


def probability_grid(resolution: int = 50, extent: float = EXTENT) -> tuple[np.ndarray, np.ndarray]:
    """A square grid over [-extent, extent]^2: (axis [R], points [R*R, 2], row-major with y the row)."""
    resolution = _checks.integer("resolution", resolution, minimum=2, maximum=400)
    axis = np.linspace(-extent, extent, resolution, dtype=np.float32)
    gx, gy = np.meshgrid(axis, axis)
    return axis, np.stack([gx.ravel(), gy.ravel()], -1)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _environment_data(seed, temperature, num_train: int, num_test: int, grid):
    """One environment and its data in one compiled call (eager sampling would compile ~70 small ops).

    Equal to ``env = MLPClassification(ρ, seed=seed)``, ``env.sample(num_train, seed=seed + 10000)``
    and ``env.sample(num_test, seed=seed + 20000)``, plus the environment's p(y = 1) on the grid.

    Returns:
      x_train [n, 2], y_train [n], x_test [m, 2], y_test [m], log p(y_test | x_test) [m], grid p(y = 1) [G].
    """
    params = sample_prior_params(jax.random.key(seed))

    def draw(key, n):
        kx, ky = jax.random.split(key)
        x = jax.random.normal(kx, (n, 2))
        logits = nets.mlp_apply(params, x) / temperature
        return x, jax.random.categorical(ky, logits, axis=-1).astype(jnp.int32), logits

    x_tr, y_tr, _ = draw(jax.random.key(seed + 10_000), num_train)
    x_te, y_te, logits = draw(jax.random.key(seed + 20_000), num_test)
    true_lp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), y_te[:, None], -1)[:, 0]
    grid_probs = jax.nn.softmax(nets.mlp_apply(params, grid) / temperature, -1)[:, 1]
    return x_tr, y_tr, x_te, y_te, true_lp, grid_probs


def environment_data(seed: int, temperature: float, num_train: int, num_test: int, grid) -> tuple[np.ndarray, ...]:
    """Numpy version of the jitted environment draw (see ``_environment_data``).

    The test pool is drawn at a fixed size (at least :data:`TEST_POOL` points) and cut to ``num_test``: the draws
    are prefix-stable (threefry keys per element), so the first ``num_test`` points are exactly those of a draw of
    ``num_test``, and :func:`build_comparison` and :func:`kl_vs_num_train` share one compiled program (a cold start
    compiles it once, not once per test-pool size).
    """
    seed = _checks.integer("seed", seed, minimum=0, maximum=2 ** 31 - 30_000)
    num_test = _checks.integer("num_test", num_test, minimum=1)
    out = _environment_data(jnp.uint32(seed), jnp.float32(_checks.temperature("temperature", temperature)),
                            _checks.integer("num_train", num_train, minimum=1), max(num_test, TEST_POOL),
                            jnp.asarray(grid, jnp.float32))
    x_tr, y_tr, x_te, y_te, true_lp, grid_probs = (np.asarray(a) for a in out)
    return x_tr, y_tr, x_te[:num_test], y_te[:num_test], true_lp[:num_test], grid_probs


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


def build_comparison(temperature: float = 0.1, seed: int = 0, num_train_values: Sequence[int] = (1, 3, 10, 30, 100),
                     prior_scales: Sequence[float] = (0.0, 1.0, 3.0, 10.0), resolution: int = 50,
                     settings: FitSettings = FitSettings()) -> EnsembleComparison:
    """Fits ensemble(+) for every (prior scale, num_train) slider position in one compiled call.

    Args:
      temperature: environment temperature ρ (Fig. 12: a medium-SNR problem, 0.1).
      seed: picks the environment and the training data.
      num_train_values: slider positions for n (nested training sets: the first n points).
      prior_scales: slider positions of λ_prior (prior networks scaled by λ/sqrt(ρ)); must include 0.
      resolution: grid points per axis of the probability maps.
      settings: :class:`FitSettings`.
    """
    temperature = _checks.temperature("temperature", temperature)
    seed = _checks.integer("seed", seed, minimum=0, maximum=(2 ** 32 - 1000) // 1000)  # seeds seed·1000 + j
    ns = tuple(_checks.integer("num_train_values", n, minimum=1, maximum=settings.capacity)
               for n in num_train_values)
    scales = tuple(_checks.positive("prior_scales", s, allow_zero=True) for s in prior_scales)
    if not ns or not scales or 0.0 not in scales:
        raise ValueError(f"num_train_values must be non-empty and prior_scales must include 0 (the ensemble), "
                         f"got {ns} and {scales}")
    axis, grid = probability_grid(resolution)
    x, y, _, _, _, true = environment_data(seed, temperature, max(ns), 1, grid)
    problems = [(s, n) for s in scales for n in ns]
    state = fit_ensembles([x[:n] for _, n in problems], [y[:n] for _, n in problems],
                          [temperature] * len(problems), [s for s, _ in problems],
                          [seed * 1000 + j for j in range(len(ns))] * len(scales), settings)
    probs = member_probs(state, grid, settings).reshape(len(scales), len(ns), settings.num_members,
                                                        resolution, resolution)
    true = true.reshape(resolution, resolution)
    return EnsembleComparison(temperature, ns, scales, settings.num_members, axis, true, x, y, probs, seed, settings,
                              state)


def comparison_update(comp: EnsembleComparison, prior_scale: float, num_members: int, num_train: int,
                      num_samples: int = 4) -> dict:
    """The data of the Fig. 12 figure for one slider position (pure numpy indexing).

    Args:
      comp: from :func:`build_comparison`.
      prior_scale: one of ``comp.prior_scales`` (the ensemble+ row).
      num_members: ensemble size k in 1 … K (mean over the first k members).
      num_train: one of ``comp.num_train_values``.
      num_samples: member maps shown per agent (the first min(num_samples, k)).

    Returns:
      dict: axis, true_probs [R, R], x_train [n, 2], y_train [n], and rows:
      agent name → {"mean": [R, R], "samples": [m, R, R]} for "ensemble" and
      "ensemble+".
    """
    if not isinstance(comp, EnsembleComparison):
        raise TypeError(f"comp must be an EnsembleComparison from build_comparison, got {type(comp).__name__}")
    scale = _checks.positive("prior_scale", prior_scale, allow_zero=True)
    if scale not in comp.prior_scales:
        raise ValueError(f"prior_scale must be one of {comp.prior_scales}, got {prior_scale!r}")
    num_members = _checks.integer("num_members", num_members, minimum=1, maximum=comp.num_members)
    num_train = _checks.integer("num_train", num_train)
    if num_train not in comp.num_train_values:
        raise ValueError(f"num_train must be one of {comp.num_train_values}, got {num_train}")
    num_samples = _checks.integer("num_samples", num_samples, minimum=1)
    j = comp.num_train_values.index(num_train)
    m = min(num_samples, num_members)
    rows = {}
    for name, s in (("ensemble", 0.0), ("ensemble+", scale)):
        members = comp.probs[comp.prior_scales.index(s), j, :num_members]  # [k, R, R]
        rows[name] = {"mean": members.mean(0), "samples": members[:m]}
    return {"axis": comp.axis, "true_probs": comp.true_probs, "x_train": comp.x_train[:num_train],
            "y_train": comp.y_train[:num_train], "rows": rows, "prior_scale": scale,
            "num_members": num_members, "temperature": comp.temperature}


def comparison_figure(comp: EnsembleComparison, prior_scale: float, num_members: int, num_train: int):
    """Fig. 12 analogue: true model (left), mean and 4 members of ensemble (top) and ensemble+ (bottom)."""
    return tb_plots.plot_ensemble_comparison(comparison_update(comp, prior_scale, num_members, num_train))


def ensemble_app(comp: EnsembleComparison, prior_scale: float | None = None, num_members: int | None = None,
                 num_train: int | None = None) -> App:
    """Sliders for prior scale, ensemble size and num_train → the Fig. 12 figure (precomputed; no training).

    Returns:
      :class:`~jtk.widgets._app.App` (a VBox); ``.controls`` (dict: prior_scale, num_members, num_train) and
      ``.image`` for tests.
    """
    if not isinstance(comp, EnsembleComparison):
        raise TypeError(f"comp must be an EnsembleComparison from build_comparison, got {type(comp).__name__}")
    scales = [s for s in comp.prior_scales]
    default_scale = 3.0 if 3.0 in scales else max(scales)
    controls = {
        "prior_scale": widgets.SelectionSlider(options=scales, value=default_scale if prior_scale is None
                                               else prior_scale, description="prior scale λ", style=LABEL_STYLE),
        "num_members": widgets.IntSlider(value=comp.num_members if num_members is None else num_members, min=1,
                                         max=comp.num_members, description="ensemble size", style=LABEL_STYLE),
        "num_train": widgets.SelectionSlider(options=list(comp.num_train_values),
                                             value=(10 if 10 in comp.num_train_values else comp.num_train_values[0])
                                             if num_train is None else num_train, description="num_train",
                                             style=LABEL_STYLE),
    }
    image = image_widget()
    live: list[tb_plots.ComparisonFigure] = []

    def refresh(_=None):
        view = comparison_update(comp, controls["prior_scale"].value, controls["num_members"].value,
                                 controls["num_train"].value)
        if not live:
            live.append(tb_plots.ComparisonFigure(view))
        else:
            live[0].update(view)
        show_png(image, live[0].png(dpi=80))  # 912 px wide: the maps at their natural size in a 1366-px lab

    for c in controls.values():
        c.observe(refresh, "value")
    refresh()
    box = App([widgets.HBox(list(controls.values())), image], title="ensemble vs ensemble+ app")
    box.controls, box.image, box.comparison = controls, image, comp
    return box


# ------------------------------------------------------------------ Fig. 5 analogue
def kl_vs_num_train(temperature: float = 0.1, num_train_values: Sequence[int] = (1, 3, 10, 30, 100),
                    seeds: int = 4, prior_scale: float = 3.0, taus: Sequence[int] = (1, 10), num_test: int = 1000,
                    settings: FitSettings = FitSettings(), comparison: EnsembleComparison | None = None
                    ) -> pd.DataFrame:
    """d_KL^τ of ensemble and ensemble+ across num_train (Fig. 5 analogue), exact over the K members.

    Per seed: an environment MLPClassification(ρ, seed), nested training sets
    (the first n of one draw), and one test pool of ``num_test · max(τ)``
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
      comparison: an :class:`EnsembleComparison` from :func:`build_comparison`
        with the same temperature, num_train_values and settings; its fits of seed
        ``comparison.seed`` (identical problems) are reused instead of retrained.

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
    data = [environment_data(s, temperature, max(ns), pool, grid) for s in range(seeds)]
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
                                   [problems[i][1] * 1000 + problems[i][2] for i in todo], settings))
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
        kls = kl_by_tau(member_lp, true_lp[s], taus)
        rows += [{"agent": agent, "num_train": ns[j], "seed": s, "tau": t, "kl": float(k)} for t, k in zip(taus, kls)]
    return pd.DataFrame(rows)


def kl_vs_num_train_figure(results: pd.DataFrame):
    """Fig. 5 analogue: mean d_KL^τ (± standard error over seeds) vs num_train, one panel per τ."""
    return tb_plots.plot_kl_vs_num_train(results)


def kl_summary(results: pd.DataFrame, digits: int | None = None) -> pd.DataFrame:
    """Mean d_KL^τ over seeds: rows (tau, agent), columns num_train (the Fig. 5 numbers).

    Args:
      results: from :func:`kl_vs_num_train`.
      digits: None for floats; else strings with this many significant digits (what a notebook prints under a
        ``nbval-check-output`` tag and quotes in its prose: stable across CPUs, unlike float32's last digits).
    """
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame, got {type(results).__name__}")
    table = results.pivot_table(index=["tau", "agent"], columns="num_train", values="kl", aggfunc="mean")
    if digits is None:
        return table
    return significant_frame(table, _checks.integer("digits", digits, minimum=1))


def kl_wins(results: pd.DataFrame, tau: int = 10) -> pd.Series:
    """For each num_train, in how many seeds ensemble+ has a lower d_KL^τ than the ensemble (same environment,
    data and initialisations)."""
    tau = _checks.integer("tau", tau, minimum=1)
    sub = results[results["tau"] == tau]
    if sub.empty:
        raise ValueError(f"results hold no rows with tau = {tau} (taus: {sorted(results['tau'].unique())})")
    wide = sub.pivot_table(index=["num_train", "seed"], columns="agent", values="kl")
    wins = (wide["ensemble+"] < wide["ensemble"]).groupby(level="num_train").sum().astype(int)
    wins.name = f"seeds where ensemble+ has the lower d_KL^{tau} (of {sub['seed'].nunique()})"
    return wins
