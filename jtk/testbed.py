"""The Neural Testbed: problem grids, evaluation of agents, leaderboards.

Osband et al. (2022), §3–4 and App. B. A problem is (temperature, num_train,
τ, seed): an environment drawn from the MLP prior, a training set, N = 1000
test τ-samples, and the agent's d_KL^τ estimated as in Algorithms 1–3.

How jtk makes the paper grid fast (the reference spends ~60 % of its time
re-jitting an agent for every problem):

* τ = 1 and τ = 10 problems of one seed share environment and training data,
  so each agent is trained once for both (REFERENCE_FACTS).
* Data are generated with fixed shapes (training sets padded to a capacity of
  1024) and the agents' pure ``train`` functions are ``vmap``-ed over whole
  chunks of problems: one compilation per agent configuration and minibatch
  bucket, never one per problem, temperature or seed.
* A posterior that is a finite uniform mixture (ensembles) is scored by exact
  enumeration over its members; any other posterior by M = 1000 sampled
  functions (column ``likelihood``: "exact" or "mc1000").

Random numbers: as in the reference sweep, every (seed, num_train,
temperature) triple has its own environment and training set, shared by its
τ = 1 and τ = 10 problems; the test set depends on τ as well. Standard errors
therefore group the rows of one training group (the reference "groups by
seed", and its seeds are distinct per triple).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
import functools
from typing import Any, Iterable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks, likelihood, nets, train as train_lib
from jtk.agents import base as agents_base
from jtk.envs.classification import sample_labels, sample_prior_params

PAPER_TEMPERATURES = (0.01, 0.1, 0.5)
PAPER_NUM_TRAIN = (1, 3, 10, 30, 100, 300, 1000)
PAPER_TAUS = (1, 10)

GROUP_COLUMNS = ["seed", "num_train", "temperature", "input_dim"]  # rows sharing one environment
RESULT_COLUMNS = ["agent", "temperature", "num_train", "tau", "seed", "input_dim", "test_inputs", "kl", "kl_std",
                  "frac_finite", "accuracy", "ece", "likelihood", "train_seconds", "eval_seconds"]


@dataclass(frozen=True)
class Problem:
    """One testbed problem (App. B). Problems differing only in ``tau`` share data.

    Attributes:
      temperature: temperature ρ of the generative model.
      num_train: number of training pairs n.
      tau: order τ of the joint predictions scored.
      seed: picks the environment and all data.
      input_dim: input dimension d.
      num_classes: number of classes K.
      hidden: hidden widths of the generative MLP.
      activation: hidden activation of the generative MLP (§6).
      num_test: number N of test τ-samples (1000).
      num_samples: posterior samples M for agents that are not finite mixtures (1000).
      test_inputs: "iid" (x ~ N(0, I) for every test point, the paper's 2-D grid) or
        "polyadic" (per τ-sample, draw ``num_anchors`` inputs ~ N(0, I), then the
        τ inputs uniformly with replacement from them; the later "classification"
        grid, which makes τ > 1 far more informative).
      num_anchors: κ, anchors per τ-sample for polyadic test inputs (2).
    """

    temperature: float
    num_train: int
    tau: int
    seed: int
    input_dim: int = 2
    num_classes: int = 2
    hidden: tuple[int, ...] = (50, 50)
    activation: str = "relu"
    num_test: int = 1000
    num_samples: int = 1000
    test_inputs: str = "iid"
    num_anchors: int = 2

    def __post_init__(self):
        _checks.positive("temperature", self.temperature)
        _checks.integer("num_train", self.num_train, minimum=1)
        _checks.integer("tau", self.tau, minimum=1)
        _checks.integer("seed", self.seed, minimum=0)
        _checks.integer("input_dim", self.input_dim, minimum=1)
        _checks.integer("num_classes", self.num_classes, minimum=2)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden))
        nets.activation_fn(self.activation)
        _checks.integer("num_test", self.num_test, minimum=1)
        _checks.integer("num_samples", self.num_samples, minimum=1)
        _checks.one_of("test_inputs", self.test_inputs, ("iid", "polyadic"))
        _checks.integer("num_anchors", self.num_anchors, minimum=1)

    @property
    def training_key(self) -> "Problem":
        """The problem with τ blanked out: problems with equal keys share training."""
        return dataclasses.replace(self, tau=1)

    def prior(self) -> agents_base.Prior:
        """What the agent is told about this problem."""
        return agents_base.Prior(self.input_dim, self.num_classes, self.num_train, self.temperature, self.tau)


def grid(temperatures: Iterable[float] = PAPER_TEMPERATURES, num_train: Iterable[int] = PAPER_NUM_TRAIN,
         taus: Iterable[int] = PAPER_TAUS, seeds: Iterable[int] | int = 10, **problem_kwargs) -> list[Problem]:
    """All combinations τ × num_train × temperature × seed (seeds: an int n means 0..n-1)."""
    seeds = _checks.seeds("seeds", seeds, allow_empty=True)
    return [Problem(temperature=t, num_train=n, tau=tau, seed=s, **problem_kwargs)
            for tau, n, t, s in itertools.product(taus, num_train, temperatures, seeds)]


def paper_problems(seeds: int = 10) -> list[Problem]:
    """The paper's 2-D grid: τ ∈ {1, 10} × n ∈ {1, …, 1000} × ρ ∈ {0.01, 0.1, 0.5} × 10 seeds = 420."""
    return grid(seeds=seeds)


def quick_problems(seeds: int = 2) -> list[Problem]:
    """A small grid for notebooks and tests: τ ∈ {1, 10} × n ∈ {10, 100} × ρ ∈ {0.1, 0.5} × 2 seeds = 16."""
    return grid(temperatures=(0.1, 0.5), num_train=(10, 100), seeds=seeds)


def classification_problems(seeds: int = 5) -> list[Problem]:
    """The reference's later "classification" grid (REFERENCE_FACTS): d ∈ {2, 10, 100},
    num_train = d × {1, 10, 100, 1000}, ρ ∈ {0.01, 0.1, 0.5}, τ ∈ {1, 10}, polyadic
    test inputs with κ = 2 anchors; 5 seeds give 360 problems."""
    return [p for d in (2, 10, 100)
            for p in grid(num_train=tuple(d * k for k in (1, 10, 100, 1000)), seeds=seeds, input_dim=d,
                          test_inputs="polyadic")]


GRIDS = {"paper": paper_problems, "quick": quick_problems, "classification": classification_problems}


def problems(name: str = "paper", seeds: int | None = None) -> list[Problem]:
    """A named grid ("paper", "quick" or "classification"), optionally with another number of seeds."""
    _checks.one_of("name", name, tuple(GRIDS))
    return GRIDS[name]() if seeds is None else GRIDS[name](seeds=seeds)


# ------------------------------------------------------------------ data
class TestData(NamedTuple):
    x: jax.Array  # [N * τ, d]
    y: jax.Array  # [N * τ]
    true_logits: jax.Array  # [N * τ, K] environment logits f(x) / ρ


def agent_seed(problem: Problem, purpose: int) -> int:
    """The integer seed handed to an agent (purpose 0: fit, τ: sampling for that τ).

    Integers, not keys, so a researcher's agent (say, scikit-learn) can use them
    directly; jtk's vectorised path turns the same integers into keys, so a jtk
    agent gives identical results through either path.
    """
    ints = (problem.seed, problem.num_train, round(problem.temperature * 1e6), problem.input_dim, purpose)
    return int(np.random.SeedSequence(ints).generate_state(1)[0] >> 1)


def _keys(seed, temperature, num_train):
    """Environment, training and test keys of one training group (seed, ρ, n)."""
    base = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), num_train),
                              jnp.round(temperature * 1e6).astype(jnp.uint32))
    return jax.random.fold_in(base, 0), jax.random.fold_in(base, 1), jax.random.fold_in(base, 2)


@dataclasses.dataclass(frozen=True)
class _DataConfig:
    input_dim: int
    num_classes: int
    hidden: tuple[int, ...]
    activation: str
    capacity: int
    test_inputs: str = "iid"
    num_anchors: int = 2


def _make_training(cfg: _DataConfig, seed, temperature, num_train):
    k_env, k_train, _ = _keys(seed, temperature, num_train)
    params = sample_prior_params(k_env, cfg.input_dim, cfg.hidden, cfg.num_classes)
    kx, ky = jax.random.split(k_train)
    x = jax.random.normal(kx, (cfg.capacity, cfg.input_dim))
    y = sample_labels(ky, nets.mlp_apply(params, x, cfg.activation) / temperature)
    valid = jnp.arange(cfg.capacity) < num_train
    data = train_lib.Dataset(jnp.where(valid[:, None], x, 0.0), jnp.where(valid, y, 0), num_train)
    return params, data


def _make_test(cfg: _DataConfig, num_test: int, tau: int, params, seed, temperature, num_train):
    _, _, k_test = _keys(seed, temperature, num_train)
    kx, ky, ki = jax.random.split(jax.random.fold_in(k_test, tau), 3)
    if cfg.test_inputs == "polyadic":
        anchors = jax.random.normal(kx, (num_test, cfg.num_anchors, cfg.input_dim))
        pick = jax.random.randint(ki, (num_test, tau), 0, cfg.num_anchors)
        x = jnp.take_along_axis(anchors, pick[..., None], axis=1).reshape(num_test * tau, cfg.input_dim)
    else:
        x = jax.random.normal(kx, (num_test * tau, cfg.input_dim))
    logits = nets.mlp_apply(params, x, cfg.activation) / temperature
    return TestData(x, sample_labels(ky, logits), logits)


_make_training_batch = jax.jit(jax.vmap(_make_training, in_axes=(None, 0, 0, 0)), static_argnums=0)
_make_test_batch = jax.jit(jax.vmap(_make_test, in_axes=(None, None, None, 0, 0, 0, 0)), static_argnums=(0, 1, 2))


def load_problem(problem: Problem) -> tuple[Any, train_lib.Dataset, TestData]:
    """The environment parameters, padded training set and test data of one problem."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a jtk.testbed.Problem, got {type(problem).__name__}")
    cfg = _data_config(problem)
    params, data = _make_training_batch(cfg, *_group_arrays([problem]))
    test = _make_test_batch(cfg, problem.num_test, problem.tau, params, *_group_arrays([problem]))
    first = lambda tree: jax.tree_util.tree_map(lambda a: a[0], tree)  # noqa: E731
    return first(params), first(data), first(test)


def _data_config(p: Problem) -> _DataConfig:
    return _DataConfig(p.input_dim, p.num_classes, p.hidden, p.activation, train_lib.capacity_for(p.num_train),
                       p.test_inputs, p.num_anchors)


def _group_arrays(group: Sequence[Problem]):
    return (jnp.asarray([p.seed for p in group], jnp.uint32),
            jnp.asarray([p.temperature for p in group], jnp.float32),
            jnp.asarray([p.num_train for p in group], jnp.int32))


# ------------------------------------------------------------------ scoring
def _joint_ll_of_components(comps, y, tau, log_w=None):
    """comps [C, N·τ, K], y [N·τ] → [N] log Σ_c w_c Π_t p_c(y_t) (w uniform if log_w is None)."""
    c = comps.shape[0]
    lp = jnp.take_along_axis(jax.nn.log_softmax(comps, -1), y[None, :, None], -1)[..., 0]  # [C, N·τ]
    lp = lp.reshape(c, -1, tau).sum(-1)  # [C, N]
    if log_w is None:
        return jax.nn.logsumexp(lp, axis=0) - jnp.log(c)
    return jax.nn.logsumexp(lp + jax.nn.log_softmax(log_w)[:, None], axis=0)


def _score(comps, test: TestData, tau: int, log_w=None):
    """Per-τ-sample KL [N] and the marginal predictive [N·τ, K] of logits [C, N·τ, K]."""
    true_ll = jnp.take_along_axis(jax.nn.log_softmax(test.true_logits, -1), test.y[:, None], -1)[:, 0]
    true_ll = true_ll.reshape(-1, tau).sum(-1)
    kl = true_ll - _joint_ll_of_components(comps, test.y, tau, log_w)
    probs = jax.nn.softmax(comps, -1)
    w = jnp.full((comps.shape[0],), 1.0 / comps.shape[0]) if log_w is None else jax.nn.softmax(log_w)
    return kl, jnp.einsum("c,cnk->nk", w, probs)


_score_jit = jax.jit(_score, static_argnums=2)


def _score_numpy(comps, test: TestData, tau: int, log_w=None):
    log_w = None if log_w is None else jnp.asarray(log_w, jnp.float32)
    kl, probs = _score_jit(jnp.asarray(comps), test, tau, log_w)
    return np.asarray(kl), np.asarray(probs)


# ------------------------------------------------------------------ evaluation
def _agent_name(agent, name):
    if name is not None:
        return name
    return getattr(agent, "name", type(agent).__name__)


def _rows(group_problems, kl_list, probs_list, tests_y, likelihood_kind, train_s, eval_s, name):
    rows = []
    for p, kl, probs, y in zip(group_problems, kl_list, probs_list, tests_y):
        s = likelihood.summarize_kl(kl)
        rows.append({"agent": name, "temperature": p.temperature, "num_train": p.num_train, "tau": p.tau,
                     "seed": p.seed, "input_dim": p.input_dim, "test_inputs": p.test_inputs, "kl": s.kl, "kl_std": s.kl_std,
                     "frac_finite": s.frac_finite,
                     "accuracy": float(np.mean(np.argmax(probs, -1) == y)),
                     "ece": likelihood.expected_calibration_error(probs, y),
                     "likelihood": likelihood_kind, "train_seconds": train_s, "eval_seconds": eval_s})
    return rows


@functools.partial(jax.jit, static_argnums=(0, 1))
def _train_chunk(agent, cfg: _DataConfig, seeds, temps, ns, hyper, agent_seeds):
    """Generates the data of P training groups and trains the agent on all of them (one compile)."""
    env_params, data = jax.vmap(_make_training, in_axes=(None, 0, 0, 0))(cfg, seeds, temps, ns)
    states = jax.vmap(agent.train)(jax.vmap(jax.random.key)(agent_seeds), data, hyper)
    return env_params, states


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _eval_chunk(agent, cfg: _DataConfig, num_test: int, tau: int, num_samples: int, env_params, states,
                seeds, temps, ns, eval_seeds):
    """Draws the τ test sets of P problems and scores the trained agent on each (lax.map bounds memory)."""
    tests = jax.vmap(_make_test, in_axes=(None, None, None, 0, 0, 0, 0))(cfg, num_test, tau, env_params, seeds,
                                                                         temps, ns)

    def one(args):
        state, test, seed = args
        if agent.mixture:
            return _score(agent.components(state, test.x), test, tau, agent.log_weights(state))
        return _score(agent.sample(state, test.x, jax.random.key(seed), num_samples), test, tau)

    kl, probs = jax.lax.map(one, (states, tests, eval_seeds))
    return kl, probs, tests.y


def _pad(values, size):
    """Pads a list to ``size`` by repeating its last element (padded problems are computed, then dropped)."""
    return list(values) + [values[-1]] * (size - len(values))


def _evaluate_jax_chunk(agent: agents_base.JaxAgent, groups: list[list[Problem]], name: str) -> list[dict]:
    """Trains one agent on a chunk of training groups at once (vmap) and scores every τ.

    The number of groups is padded to a power of two, so a chunk of any size
    reuses the compilation of its power-of-two bucket.
    """
    heads = [g[0] for g in groups]
    size = train_lib.next_pow2(len(heads))
    padded = _pad(heads, size)
    cfg = _data_config(heads[0])
    seeds, temps, ns = _group_arrays(padded)
    hyper_rows = [agent.hyper(p.prior()) for p in padded]
    hyper = {k: jnp.asarray([h[k] for h in hyper_rows], jnp.float32) for k in hyper_rows[0]}
    t0 = time.perf_counter()
    env_params, states = jax.block_until_ready(_train_chunk(
        agent.specialize(heads[0].prior()), cfg, seeds, temps, ns, hyper,
        jnp.asarray([agent_seed(p, 0) for p in padded], jnp.uint32)))
    train_time = time.perf_counter() - t0
    scorer = dataclasses.replace(agent, num_classes=heads[0].num_classes)  # eval does not depend on batch size
    kind = "exact" if agent.mixture else f"mc{heads[0].num_samples}"
    num_rows = sum(len(g) for g in groups)
    rows = []
    for tau in sorted(p.tau for p in groups[0]):  # groups of a chunk share their set of τ
        t0 = time.perf_counter()
        kl, probs, y = jax.block_until_ready(_eval_chunk(
            scorer, cfg, heads[0].num_test, tau, heads[0].num_samples, env_params, states, seeds, temps, ns,
            jnp.asarray([agent_seed(p, tau) for p in padded], jnp.uint32)))
        eval_time = time.perf_counter() - t0
        problems_tau = [next(p for p in g if p.tau == tau) for g in groups]
        n = len(groups)
        rows += _rows(problems_tau, np.asarray(kl[:n]), np.asarray(probs[:n]), np.asarray(y[:n]), kind,
                      train_time / num_rows, eval_time / n, name)
    return rows


def _evaluate_generic_chunk(agent, groups: list[list[Problem]], name: str) -> list[dict]:
    """Scores any object with ``fit`` (a researcher's own agent) problem by problem."""
    rows = []
    for group in groups:
        head = group[0]
        params, data, _ = load_problem(head)
        n = head.num_train
        x, y = np.asarray(data.x[:n]), np.asarray(data.y[:n])
        t0 = time.perf_counter()
        posterior = agent.fit(x, y, seed=agent_seed(head, 0), prior=head.prior())
        train_time = (time.perf_counter() - t0) / len(group)
        for p in group:
            t0 = time.perf_counter()
            _, _, test = load_problem(p)
            comps = _posterior_logits(posterior, np.asarray(test.x), p, agent_seed(p, p.tau))
            log_w = posterior.log_weights() if _num_components(posterior) and hasattr(posterior, "log_weights") \
                else None
            kl, probs = _score_numpy(comps, test, p.tau, log_w)
            rows += _rows([p], [kl], [probs], [np.asarray(test.y)], _kind(posterior, p), train_time,
                          time.perf_counter() - t0, name)
    return rows


def _kind(posterior, p: Problem) -> str:
    return "exact" if _num_components(posterior) else f"mc{p.num_samples}"


def _num_components(posterior) -> int | None:
    n = getattr(posterior, "num_components", None)
    return n if isinstance(n, int) and n > 0 and hasattr(posterior, "components") else None


def _posterior_logits(posterior, x: np.ndarray, p: Problem, key) -> np.ndarray:
    """[C or M, n, K] logits: all components of a finite mixture, else M samples; validated."""
    if _num_components(posterior):
        logits = posterior.components(x)
        want = "[C, n, K]"
    else:
        logits = posterior.sample_logits(x, p.num_samples, key)
        want = f"[{p.num_samples}, n, K]"
    logits = np.asarray(logits)
    if logits.ndim != 3 or logits.shape[1:] != (x.shape[0], p.num_classes) or (
            not _num_components(posterior) and logits.shape[0] != p.num_samples):
        raise ValueError(f"the posterior returned logits of shape {logits.shape}; expected {want} with "
                         f"n={x.shape[0]}, K={p.num_classes}")
    if np.any(np.isnan(logits)):
        raise ValueError("the posterior returned NaN logits")
    return logits


def _chunks(problems_: Sequence[Problem], agent) -> list[list[list[Problem]]]:
    """Groups problems that share training, then packs groups with equal static shapes into chunks."""
    groups: dict[Problem, list[Problem]] = {}
    for p in problems_:
        groups.setdefault(p.training_key, []).append(p)
    if not isinstance(agent, agents_base.JaxAgent):
        return [[g] for g in groups.values()]
    members = int(getattr(agent, "num_members", 1) or 1)
    by_shape: dict[tuple, list[list[Problem]]] = {}
    for key, g in groups.items():
        static = (dataclasses.replace(key, temperature=1.0, num_train=1, seed=0),
                  train_lib.capacity_for(key.num_train), train_lib.batch_bucket(key.num_train, agent.batch_size),
                  tuple(sorted(p.tau for p in g)))
        by_shape.setdefault(static, []).append(g)
    chunks = []
    for (_, capacity, _, _), gs in by_shape.items():
        # ~2048 member trainings per vectorised call and at most 2^26 floats of training data,
        # rounded down to a power of two so that full chunks need no padding.
        data_floats = capacity * (gs[0][0].input_dim + 1)
        limit = max(1, min(2048 // members, 2 ** 26 // data_floats))
        max_groups = 1 << (limit.bit_length() - 1)
        chunks += [gs[i:i + max_groups] for i in range(0, len(gs), max_groups)]
    return chunks


def evaluate_chunk(agent, groups: list[list[Problem]], name: str) -> pd.DataFrame:
    """Scores one chunk (a picklable unit of work for an executor)."""
    if isinstance(agent, agents_base.JaxAgent):
        rows = _evaluate_jax_chunk(agent, groups, name)
    else:
        rows = _evaluate_generic_chunk(agent, groups, name)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def evaluate(agent, problems: Sequence[Problem] | str = "quick", executor=None, *, name: str | None = None,
             progress: bool = True) -> pd.DataFrame:
    """Scores an agent on testbed problems: one DataFrame row per problem.

    Args:
      agent: an agent name (``jtk.agents.names()``) or any object with
        ``fit(x, y, seed, prior) -> posterior`` whose posterior has
        ``sample_logits(x, M, seed) -> [M, n, K]`` (and optionally
        ``components(x) -> [C, n, K]`` with ``num_components`` for exact
        enumeration of a finite mixture, weighted if it has ``log_weights()``).
      problems: a list of :class:`Problem`, or a grid name ("paper", "quick").
      executor: optional ``concurrent.futures.Executor``-like object
        (``submit(fn, *args) -> future``); chunks of problems are submitted to it.
        Default: run in this process.
      name: the value of the ``agent`` column (default: the agent's name).
      progress: show a tqdm progress bar.

    Returns:
      DataFrame with columns agent, temperature, num_train, tau, seed,
      input_dim, kl, kl_std, frac_finite, accuracy, ece, likelihood,
      train_seconds, eval_seconds (seconds amortised per row, so their sums are
      the total time).
    """
    if isinstance(agent, str):
        name = name or agent
        agent = agents_base.make(agent)
    if not callable(getattr(agent, "fit", None)):
        raise TypeError(f"agent must be an agent name or an object with a fit(x, y, seed, prior) method, "
                        f"got {type(agent).__name__}")
    if isinstance(problems, str):
        problems = GRIDS[_checks.one_of("problems", problems, tuple(GRIDS))]()
    problems = list(problems)
    if not problems:
        raise ValueError("problems must hold at least one Problem, got an empty list")
    for i, p in enumerate(problems):
        if not isinstance(p, Problem):
            raise TypeError(f"problems[{i}] must be a jtk.testbed.Problem, got {type(p).__name__}")
    name = _agent_name(agent, name)
    chunks = _chunks(problems, agent)
    bar = tqdm(total=len(problems), desc=f"testbed {name}", disable=not progress, unit="problem")
    frames = []
    if executor is None:
        for chunk in chunks:
            frames.append(evaluate_chunk(agent, chunk, name))
            bar.update(sum(len(g) for g in chunk))
    else:
        futures = [(executor.submit(evaluate_chunk, agent, chunk, name), chunk) for chunk in chunks]
        for future, chunk in futures:
            frames.append(future.result())
            bar.update(sum(len(g) for g in chunk))
    bar.close()
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["tau", "num_train", "temperature", "seed"], kind="stable").reset_index(drop=True)


class OracleAgent:
    """An agent that knows the true environment of every problem it is given (d_KL = 0 exactly).

    The known limit of the leaderboard: its posterior is the environment itself,
    so every d_KL^τ is 0 up to float error. It recognises a problem by its
    training inputs; ``fit`` on other data raises. With ``exact=False`` it is
    scored through 1000 identical posterior samples (the Monte Carlo path).

    Args:
      problems: the problems it will be evaluated on.
      exact: expose ``components`` (exact enumeration) or only ``sample_logits``.
    """

    def __init__(self, problems: Sequence[Problem], exact: bool = True):
        self._envs = {}
        for p in problems:
            params, data, _ = load_problem(p)
            self._envs[np.asarray(data.x[:p.num_train]).tobytes()] = (params, p.temperature, p.activation)
        self.exact = bool(exact)

    def fit(self, x, y, seed=0, prior=None) -> "_OraclePosterior":
        key = np.asarray(x, np.float32).tobytes()
        if key not in self._envs:
            raise ValueError("OracleAgent only knows the problems it was built with; x is not their training set")
        return _OraclePosterior(*self._envs[key], self.exact)


class _OraclePosterior:
    def __init__(self, params, temperature, activation, exact):
        self.params, self.temperature, self.activation = params, temperature, activation
        self.num_components = 1 if exact else None

    def components(self, x):
        return (nets.mlp_apply(self.params, jnp.asarray(x), self.activation) / self.temperature)[None]

    def sample_logits(self, x, num_samples, seed=0):
        return np.repeat(np.asarray(self.components(x)), num_samples, axis=0)


# ------------------------------------------------------------------ leaderboard
def _check_results(results: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame from jtk.testbed.evaluate, got {type(results).__name__}")
    missing = {"agent", "tau", "seed", "kl"} - set(results.columns)
    if missing:
        raise ValueError(f"results is missing the columns {sorted(missing)}")
    return results


def summarize(results: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """The leaderboard: mean d_KL^τ per agent with standard errors over independent problems.

    Negative per-problem KL (Monte Carlo noise) is set to 0 first, as in the
    reference. Rows that share an environment (same seed, num_train,
    temperature, input_dim) are averaged first; the standard error is the std
    of those group means over sqrt(number of groups), as the reference groups
    by its per-problem seeds.

    Args:
      results: rows from :func:`evaluate` (one or several agents).
      baseline: optional agent name in ``results`` (e.g. "mlp" as in Fig. 2, or
        "uniform"); adds columns ``kl_{τ}_rel`` = score / baseline's score.

    Returns:
      DataFrame indexed by agent with columns kl_{τ}, kl_{τ}_se for every τ,
      accuracy, ece, train_seconds, eval_seconds, num_problems.
    """
    df = _check_results(results).copy()
    df["kl"] = df["kl"].clip(lower=0.0)
    out = {}
    for tau, sub in df.groupby("tau"):
        per_seed = sub.groupby(["agent"] + [c for c in GROUP_COLUMNS if c in sub.columns])["kl"].mean()
        mean = sub.groupby("agent")["kl"].mean()
        se = per_seed.groupby("agent").agg(lambda s: s.std(ddof=1) / np.sqrt(len(s)) if len(s) > 1 else np.nan)
        out[f"kl_{tau}"], out[f"kl_{tau}_se"] = mean, se
    table = pd.DataFrame(out)
    extra = df.groupby("agent").agg(accuracy=("accuracy", "mean"), ece=("ece", "mean"),
                                    train_seconds=("train_seconds", "sum"), eval_seconds=("eval_seconds", "sum"),
                                    num_problems=("kl", "size"))
    table = table.join(extra)
    if baseline is not None:
        if baseline not in table.index:
            raise ValueError(f"baseline must be an agent in results ({sorted(table.index)}), got {baseline!r}")
        for tau in sorted(df["tau"].unique()):
            table[f"kl_{tau}_rel"] = table[f"kl_{tau}"] / table.loc[baseline, f"kl_{tau}"]
    return table


def breakdown(results: pd.DataFrame) -> pd.DataFrame:
    """Mean d_KL per agent × τ × temperature × num_train (the Fig. 13/14 breakdown)."""
    df = _check_results(results).copy()
    df["kl"] = df["kl"].clip(lower=0.0)
    return df.pivot_table(index=["agent", "tau", "temperature"], columns="num_train", values="kl", aggfunc="mean")
