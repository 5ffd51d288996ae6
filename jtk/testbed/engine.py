"""The testbed's engine: data of a problem, scoring, chunks of problems sharing compiled code, and :func:`evaluate`.

Osband et al. (2022), §3–4 and App. B: the agent's d_KL^τ estimated as in Algorithms 1–3.

How jtk makes the paper grid fast (the reference re-jits an agent for every
problem):

* τ = 1 and τ = 10 problems of one seed share environment and training data,
  so each agent is trained once for both (docs/reference.md, "The grid").
* Data are generated with fixed shapes (training sets padded to a capacity of
  1024) and the agents' pure ``train`` functions are ``vmap``-ed over whole
  chunks of problems: one compilation per agent configuration and minibatch
  bucket, never one per problem, temperature or seed.

Two estimators of an agent's joint log-likelihood (``evaluate(likelihood=...)``,
column ``likelihood``; docs/reference.md, "Estimators"):

* ``"mc"``: M = 1000 sampled functions for every agent, finite mixtures
  included (their samples draw members uniformly with replacement, or by their
  weights) — the reference's estimator (column value ``mc1000``);
* ``"exact"``: enumerate the C components of a finite mixture (ensembles,
  SG-MCMC samples, k-NN): no Monte Carlo noise and no downward Jensen bias of
  log-mean-exp over M samples, so it reads lower than ``"mc"``;
* ``"auto"`` (default): exact where the posterior is a finite mixture, else mc.

Compare agents under one estimator: :func:`~jtk.testbed.stats.summarize` refuses a table that
mixes them for one τ unless ``allow_mixed=True``.

Random numbers: every (seed, num_train, temperature) triple has its own
environment and training set, shared by its τ = 1 and τ = 10 problems; the
test set depends on τ as well.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import itertools
import threading
import time
import functools
from typing import Any, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks, _compile, executors, likelihood, nets, train as train_lib
from jtk.agents import base as agents_base
from jtk.envs.classification import ProblemSettings, TestData, problem_key, sample_problem, sample_test
from jtk.results import Interrupted, run_chunks
from jtk.testbed.grids import GRIDS, Problem, check_problems, problem_text as _problem_text
from jtk.testbed.stats import InfiniteKLWarning, _warn_infinite_kl

__all__ = ["LIKELIHOODS", "RESULT_COLUMNS", "agent_seed", "load_problem", "padded_count", "PAD_STEP",
           "compile_ahead", "compiles_ahead", "prepare_local_run", "run_grid", "SPLIT_BRANCHES_AHEAD",
           "MAX_GROUPS_PER_CHUNK", "MEMBER_ROWS_PER_CHUNK", "COMPONENT_ROWS_PER_BLOCK", "MEMBERS_PER_CHUNK", "Chunk",
           "make_chunks", "evaluate_chunk", "evaluate", "sort_rows", "OracleAgent", "InfiniteKLWarning"]

LIKELIHOODS = ("auto", "exact", "mc")
RESULT_COLUMNS = ["agent", "temperature", "num_train", "tau", "seed", "input_dim", "test_inputs", "kl", "kl_std",
                  "frac_finite", "accuracy", "ece", "likelihood", "train_seconds", "eval_seconds"]


# ------------------------------------------------------------------ data
def agent_seed(problem: Problem, purpose: int) -> int:
    """The integer seed handed to an agent (purpose 0: fit, τ: sampling for that τ).

    Integers, not keys, so a researcher's agent (say, scikit-learn) can use them
    directly; jtk's vectorised path turns the same integers into keys, so a jtk
    agent gives identical results through either path.
    """
    if not all(hasattr(problem, a) for a in ("seed", "num_train", "temperature", "input_dim")):  # a Problem or alike
        raise TypeError(f"problem must be a jtk.testbed.Problem, got {type(problem).__name__}")
    _checks.integer("purpose", purpose, minimum=0)
    ints = (problem.seed, problem.num_train, round(problem.temperature * 1e6), problem.input_dim, purpose)
    return int(np.random.SeedSequence(ints).generate_state(1)[0] >> 1)


def _make_training(cfg: ProblemSettings, seed, temperature, num_train):
    """The environment and padded training set of group (seed, ρ, n): the one draw, keyed the testbed's way."""
    return sample_problem(cfg, problem_key(seed, temperature, num_train), temperature, num_train)


def _make_test(cfg: ProblemSettings, num_test: int, tau: int, params, seed, temperature, num_train):
    """The τ test set of group (seed, ρ, n)."""
    return sample_test(cfg, num_test, tau, params, problem_key(seed, temperature, num_train), temperature)


_make_training_batch = _compile.jit(jax.vmap(_make_training, in_axes=(None, 0, 0, 0)), static_argnums=0,
                                   keep="jtk.testbed.engine._make_training_batch")
_make_test_batch = _compile.jit(jax.vmap(_make_test, in_axes=(None, None, None, 0, 0, 0, 0)),
                                static_argnums=(0, 1, 2), keep="jtk.testbed.engine._make_test_batch")


def load_problem(problem: Problem) -> tuple[Any, train_lib.Dataset, TestData]:
    """The environment parameters, padded training set and test data of one problem."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a jtk.testbed.Problem, got {type(problem).__name__}")
    cfg = data_config(problem)
    params, data = _make_training_batch(cfg, *_group_arrays([problem]))
    test = _make_test_batch(cfg, problem.num_test, problem.tau, params, *_group_arrays([problem]))
    first = lambda tree: jax.tree_util.tree_map(lambda a: a[0], tree)  # noqa: E731
    return first(params), first(data), first(test)


def data_config(p: Problem) -> ProblemSettings:
    """The static data settings of a problem (dimensions, generative MLP, training capacity, test inputs)."""
    return ProblemSettings(p.input_dim, p.num_classes, p.hidden, p.activation, train_lib.capacity_for(p.num_train),
                       p.test_inputs, p.num_anchors)


def _group_arrays(group: Sequence[Problem]):
    return (jnp.asarray([p.seed for p in group], jnp.uint32),
            jnp.asarray([p.temperature for p in group], jnp.float32),
            jnp.asarray([p.num_train for p in group], jnp.int32))


# ------------------------------------------------------------------ scoring
def _score(comps, test: TestData, tau: int, log_w=None):
    """Per-τ-sample KL [N] (exact over the C components, :func:`jtk.likelihood.mixture_kl`) and the marginal
    predictive [N·τ, K] of logits [C, N·τ, K]."""
    true_lp = jnp.take_along_axis(jax.nn.log_softmax(test.true_logits, -1), test.y[:, None], -1)[:, 0]  # [N·τ]
    comp_lp = jnp.take_along_axis(jax.nn.log_softmax(comps, -1), test.y[None, :, None], -1)[..., 0]  # [C, N·τ]
    kl = likelihood.mixture_kl(comp_lp, true_lp, tau, log_w)
    probs = jax.nn.softmax(comps, -1)
    w = jnp.full((comps.shape[0],), 1.0 / comps.shape[0]) if log_w is None else jax.nn.softmax(log_w)
    return kl, jnp.einsum("c,cnk->nk", w, probs)


_score_jit = _compile.jit(_score, static_argnums=2)


def score_numpy(comps, test: TestData, tau: int, log_w=None):
    """Per-τ-sample KL [N] and marginal predictive [N·τ, K] of component logits [C, N·τ, K], as numpy arrays."""
    log_w = None if log_w is None else jnp.asarray(log_w, jnp.float32)
    kl, probs = _score_jit(jnp.asarray(comps), test, tau, log_w)
    return np.asarray(kl), np.asarray(probs)


# ------------------------------------------------------------------ evaluation
@contextlib.contextmanager
def _blame(name: str, call: str, p: Problem):
    """Re-raises an exception from the agent's own code naming the agent and the problem, chained to it.

    The same exception type when it can be built from one message (else RuntimeError), so ``except ValueError``
    still catches it; KeyboardInterrupt and other BaseExceptions pass unchanged.
    """
    try:
        yield
    except Exception as err:
        message = f"agent {name!r} raised {type(err).__name__} in {call} on problem {_problem_text(p)}: {err}"
        try:
            wrapped = type(err)(message)
        except Exception:  # an exception type with another constructor
            wrapped = RuntimeError(message)
        if str(wrapped) != message:  # a type that formats its own message (KeyError quotes it)
            wrapped = RuntimeError(message)
        raise wrapped from err


def agent_name(agent, name):
    """The ``agent`` column's value: ``name`` if given, else the agent's ``name`` attribute or class name."""
    if name is not None:
        return name
    return getattr(agent, "name", type(agent).__name__)


def result_rows(group_problems, kl_list, probs_list, tests_y, likelihood_kind, train_s, eval_s, name):
    """The result rows (dicts of the columns ``RESULT_COLUMNS``) of scored problems: KL clipped as the reference does."""
    rows = []
    for p, kl, probs, y in zip(group_problems, kl_list, probs_list, tests_y):
        bad = int(np.count_nonzero(np.isnan(kl)))
        if bad:
            raise ValueError(f"agent {name!r} gave sampled logits that are not finite on problem {_problem_text(p)}: "
                             f"{bad} of {np.size(kl)} test τ-samples scored NaN (NaN or +inf logits, or a row of "
                             f"all -inf logits, make the predictive probabilities NaN); jtk.testbed.check_agent "
                             f"finds such logits")
        s = likelihood.summarize_kl(kl)
        rows.append({"agent": name, "temperature": p.temperature, "num_train": p.num_train, "tau": p.tau,
                     "seed": p.seed, "input_dim": p.input_dim, "test_inputs": p.test_inputs, "kl": s.kl, "kl_std": s.kl_std,
                     "frac_finite": s.frac_finite,
                     "accuracy": float(np.mean(np.argmax(probs, -1) == y)),
                     "ece": likelihood.expected_calibration_error(probs, y),
                     "likelihood": likelihood_kind, "train_seconds": train_s, "eval_seconds": eval_s})
    return rows


def _one_of(agents: tuple, index, run, *operands):
    """``run(agents[index], *operands)``, one branch per agent in a single compiled program.

    ``agents`` are one agent specialised to each minibatch size of a grid (:meth:`~jtk.agents.base.JaxAgent.
    specialize`); ``index`` is a traced scalar, the same for every problem of a chunk, so ``lax.switch`` stays a real
    branch under ``vmap`` (only the chosen minibatch size runs) and one program serves every minibatch size, compiled
    for less than its branches would cost one by one (docs/platforms.md, "Compile once per agent configuration").
    Each branch is the program it replaces: the scores are bit-identical.
    """
    if len(agents) == 1:
        return run(agents[0], *operands)
    return jax.lax.switch(index, [functools.partial(run, a) for a in agents], *operands)


@functools.partial(_compile.jit, static_argnums=0, long_running=True, keep=True)
def _train_states(agents: tuple, index, data: train_lib.Dataset, hyper, agent_seeds):
    """Trains ``agents[index]`` on the P padded training sets ``data`` at once (one program for all ``agents``)."""
    keys = jax.vmap(jax.random.key)(agent_seeds)
    return _one_of(agents, index, lambda a, k, d, h: jax.vmap(a.train)(k, d, h), keys, data, hyper)


@functools.partial(_compile.jit, static_argnums=0, keep=True)
def _start_states(agent, data: train_lib.Dataset, hyper, agent_seeds):
    """:meth:`~jtk.agents.base.JaxAgent.start_training` on P training sets: compiled once for every minibatch size."""
    return jax.vmap(agent.start_training)(jax.vmap(jax.random.key)(agent_seeds), data, hyper)


@functools.partial(_compile.jit, static_argnums=0, long_running=True, keep=True)
def _finish_states(agents: tuple, index, started, data: train_lib.Dataset, hyper):
    """:meth:`~jtk.agents.base.JaxAgent.finish_training` of ``agents[index]`` on P training sets (one program for all
    ``agents``)."""
    return _one_of(agents, index, lambda a, s, d, h: jax.vmap(a.finish_training)(s, d, h), started, data, hyper)


def _run(program, *args):
    """Calls a compiled program: how a chunk's programs run (the other way is :func:`_lower_chunk`'s)."""
    return program(*args)


def _train_chunk(agent, cfg: ProblemSettings, seeds, temps, ns, hyper, agent_seeds, programs: tuple | None = None,
                 call=_run):
    """Generates the data of P training groups and trains the agent on all of them.

    Separate compiled programs, each compiled once for all the chunks it can serve (docs/platforms.md, "Where the
    compile time goes on the CPU", and docs/platforms.md, "Compile once per agent configuration"): the data program
    depends only on the data shapes; an agent trained by the shared loop (``init`` / ``loss``) initialises in a
    program that does not depend on the minibatch size; the training program has a branch for each minibatch size in
    ``programs`` (the specialised agents of a grid, :attr:`Chunk.programs`; default: ``agent``'s own), of which
    ``agent`` is one, so it is compiled once for the paper grid's num_train 1, 3, 10, 30 and ≥ 100. Each program
    runs as ``call(program, *args)`` (:func:`_lower_chunk` lowers them instead).
    """
    programs = (agent,) if programs is None else tuple(programs)
    index = jnp.int32(programs.index(agent))
    env_params, data = call(_make_training_batch, cfg, seeds, temps, ns)
    if not agent.incremental:
        return env_params, call(_train_states, programs, index, data, hyper, agent_seeds)
    starter = dataclasses.replace(agent, batch_size=1)  # initialisation ignores the minibatch size: one program
    started = call(_start_states, starter, data, hyper, agent_seeds)
    return env_params, call(_finish_states, programs, index, started, data, hyper)


@functools.partial(_compile.jit, static_argnums=(0, 1, 2, 3, 4, 5), long_running=True, keep=True)
def _eval_chunk(agent, cfg: ProblemSettings, num_test: int, tau: int, num_samples: int, exact: bool, env_params, states,
                seeds, temps, ns, eval_seeds):
    """Draws the τ test sets of P problems and scores the trained agent on each (lax.map bounds memory)."""
    tests = jax.vmap(_make_test, in_axes=(None, None, None, 0, 0, 0, 0))(cfg, num_test, tau, env_params, seeds,
                                                                         temps, ns)

    def one(args):
        state, test, seed = args
        if exact:
            return _score(_blocked_components(agent, state, test.x), test, tau, agent.log_weights(state))
        return _score(agent.sample(state, test.x, jax.random.key(seed), num_samples), test, tau)

    kl, probs = jax.lax.map(one, (states, tests, eval_seeds))
    return kl, probs, tests.y


def _blocked_components(agent, state, x):
    """``agent.components(state, x)`` [C, n, K], computed on blocks of inputs (``lax.map`` over the blocks) on the CPU.

    Every component is a function, evaluated input by input, so blocks give the same logits up to rounding. A block
    holds at most COMPONENT_ROWS_PER_BLOCK // C inputs: evaluating 100 members (and their prior networks) on all
    10 000 inputs of a τ = 10 test set at once streamed activations far larger than the cache and was about twice
    as slow (docs/platforms.md, "What the testbed does about it").
    """
    block = max(1, COMPONENT_ROWS_PER_BLOCK // int(agent.num_networks))  # num_networks: components side by side
    n = x.shape[0]
    if n <= block or jax.default_backend() != "cpu":
        return agent.components(state, x)
    blocks = -(-n // block)
    padded = jnp.concatenate([x, x[:blocks * block - n]]) if blocks * block > n else x  # padding rows: dropped
    per_block = jax.lax.map(lambda xb: agent.components(state, xb), padded.reshape(blocks, block, x.shape[1]))
    return jnp.moveaxis(per_block, 0, 1).reshape(per_block.shape[1], blocks * block, -1)[:, :n]  # [C, n, K]


def _pad(values, size):
    """Pads a list to ``size`` by repeating its last element (padded problems are computed, then dropped)."""
    return list(values) + [values[-1]] * (size - len(values))


PAD_STEP = 32


def padded_count(num_groups: int) -> int:
    """How many training groups a chunk of ``num_groups`` is padded to: a power of two up to 32, then a multiple of 32.

    Padding lets chunks of nearby sizes share one compiled program; padded groups are computed and dropped. Powers of
    two all the way up wasted up to half a chunk (the paper grid's 90 groups with n ≥ 100 trained 128), multiples of
    32 waste less than 32 (96), at the price of one more compiled shape for every further 32 groups.
    """
    _checks.integer("num_groups", num_groups, minimum=1)
    return train_lib.next_pow2(num_groups) if num_groups <= PAD_STEP else -(-num_groups // PAD_STEP) * PAD_STEP


def _use_exact(likelihood_: str, is_mixture: bool, name: str) -> bool:
    """Whether to enumerate components; raises for ``"exact"`` on an agent that is not a finite mixture."""
    if likelihood_ == "exact" and not is_mixture:
        raise ValueError(f"likelihood='exact' needs a finite-mixture posterior (components(x) and num_components), "
                         f"but agent {name!r} has none; use likelihood='mc' or 'auto'")
    return is_mixture and likelihood_ != "mc"


def _train_inputs(agent: agents_base.JaxAgent, heads: Sequence[Problem], size: int | None = None
                  ) -> tuple[list[Problem], tuple]:
    """The training groups padded to ``size`` (default :func:`padded_count`), and the arguments of
    :func:`_train_chunk` for them."""
    padded = _pad(list(heads), padded_count(len(heads)) if size is None else size)
    seeds, temps, ns = _group_arrays(padded)
    hyper_rows = [agent.hyper(p.prior()) for p in padded]
    hyper = {k: jnp.asarray([h[k] for h in hyper_rows], jnp.float32) for k in hyper_rows[0]}
    agent_seeds = jnp.asarray([agent_seed(p, 0) for p in padded], jnp.uint32)
    return padded, (agent.specialize(heads[0].prior()), data_config(heads[0]), seeds, temps, ns, hyper, agent_seeds)


def _evaluate_jax_chunk(agent: agents_base.JaxAgent, groups: list[list[Problem]], name: str,
                        likelihood_: str | tuple[str, ...] = "auto") -> list[dict]:
    """Trains one agent on a chunk of training groups at once (vmap) and scores every τ.

    The groups are padded to the chunk's ``size`` (:class:`Chunk`; :func:`padded_count` for a plain list), so
    every chunk of a grid reuses one compilation. ``likelihood_`` may be a
    tuple of estimators: rows for each, from one training (benchmarks compare them).
    """
    padded, train_args = _train_inputs(agent, [g[0] for g in groups], getattr(groups, "size", None))
    t0 = time.perf_counter()
    env_params, states = jax.block_until_ready(_train_chunk(*train_args, getattr(groups, "programs", None)))
    train_time = time.perf_counter() - t0
    num_rows = sum(len(g) for g in groups)
    rows = []
    for kind, tau, static, data in _scorings(agent, groups, padded, train_args, name, likelihood_):
        t0 = time.perf_counter()
        kl, probs, y = jax.block_until_ready(_eval_chunk(*static, env_params, states, *data))
        eval_time = time.perf_counter() - t0
        problems_tau = [next(p for p in g if p.tau == tau) for g in groups]
        n = len(groups)
        rows += result_rows(problems_tau, np.asarray(kl)[:n], np.asarray(probs)[:n], np.asarray(y)[:n], kind,
                      train_time / num_rows, eval_time / n, name)
    return rows


def _scorings(agent, groups, padded, train_args: tuple, name: str, likelihood_):
    """Each scoring program of a chunk: (estimator column value, τ, the arguments of :func:`_eval_chunk` before the
    trained states, those after them); ``padded`` and ``train_args`` as :func:`_train_inputs` gives them."""
    head = groups[0][0]
    _, cfg, seeds, temps, ns, _, _ = train_args
    scorer = dataclasses.replace(agent, num_classes=head.num_classes)  # eval does not depend on batch size
    modes = (likelihood_,) if isinstance(likelihood_, str) else tuple(likelihood_)
    for mode, tau in itertools.product(modes, sorted(p.tau for p in groups[0])):  # a chunk's groups share their τ
        exact = _use_exact(mode, agent.is_mixture, name)
        eval_seeds = jnp.asarray([agent_seed(p, tau) for p in padded], jnp.uint32)
        yield ("exact" if exact else f"mc{head.num_samples}", tau,
               (scorer, cfg, head.num_test, tau, head.num_samples, exact), (seeds, temps, ns, eval_seeds))


def _lower_chunk(agent: agents_base.JaxAgent, groups, name: str, likelihood_, seen: dict) -> list:
    """Lowers the programs :func:`_evaluate_jax_chunk` would run for ``groups``, running none: (program, its key
    in jtk's store of compiled programs or None, ``jax.stages.Lowered``) for each, less those whose program and
    argument shapes are in ``seen`` (updated) and those already compiled and kept (``_compile``'s store: they are
    loaded, not lowered)."""
    padded, train_args = _train_inputs(agent, [g[0] for g in groups], getattr(groups, "size", None))
    found = []

    def lower(program, *args):
        leaves, tree = jax.tree_util.tree_flatten(args)  # arrays by shape and dtype, static arguments by value
        key = (program, tree, tuple((tuple(a.shape), str(a.dtype)) if hasattr(a, "shape") else a for a in leaves))
        if key not in seen:
            kept_key = program.program_key(*args) if hasattr(program, "program_key") else None  # a kept program
            kept = program.lookup(kept_key[0]) if kept_key is not None else None
            if kept is not None:
                seen[key] = kept.out_info
            else:
                low = program.lower(*args)
                seen[key] = low.out_info
                found.append((program, kept_key and kept_key[0], low))
        return seen[key]

    env_params, states = _train_chunk(*train_args, getattr(groups, "programs", None), call=lower)
    for _, _, static, data in _scorings(agent, groups, padded, train_args, name, likelihood_):
        lower(_eval_chunk, *static, env_params, states, *data)
    return found


# The grid-run entry points (compile_ahead, prepare_local_run, run_grid, evaluate_chunk, make_chunks) check their
# arguments on the host before any tracing or compiling: a wrong object is named with the argument that took it.
def _check_tasks(name: str, tasks) -> list:
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Sequence):
        raise TypeError(f"{name} must be a list of (agent, chunk, name, likelihood) tuples, got {_checks.describe(tasks)}")
    for i, task in enumerate(tasks):
        if not isinstance(task, tuple) or len(task) != 4:
            raise TypeError(f"{name}[{i}] must be an (agent, chunk, name, likelihood) tuple, "
                            f"got {_checks.describe(task)}")
    return list(tasks)


def _check_groups(name: str, groups) -> None:
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or not groups:
        raise TypeError(f"{name} must be a non-empty list of lists of jtk.testbed.Problem, got {_checks.describe(groups)}")
    for i, group in enumerate(groups):
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or not group:
            raise TypeError(f"{name}[{i}] must be a non-empty list of jtk.testbed.Problem, got {_checks.describe(group)}")
        for j, p in enumerate(group):
            if not isinstance(p, Problem):
                raise TypeError(f"{name}[{i}][{j}] must be a jtk.testbed.Problem, got {_checks.describe(p)}")


def compile_ahead(tasks: Sequence[tuple], threads: int | None = None) -> int:
    """Compiles every program that the :func:`evaluate_chunk` calls ``tasks`` will run, side by side in ``threads``
    threads; returns how many programs it compiled.

    JAX traces and lowers the programs one after another (Python work), then XLA compiles them at once, one per
    thread (XLA releases the interpreter lock): the calls that follow find them compiled and compile nothing, and
    their scores are those of a run without it. A cold run then waits for the costliest program instead of the sum of
    them all. This pays where XLA compiles a program on one host core while the others idle: on a GPU
    (docs/platforms.md, "The paper grid on a GPU"). On the CPU XLA's compiles already share the cores, and jtk does
    not call it there (:func:`compiles_ahead`).

    Args:
      tasks: ``(agent, chunk, name, likelihood)``, the arguments of :func:`evaluate_chunk`; chunks of an agent that
        is not one of jtk's (:class:`jtk.agents.JaxAgent`) compile nothing here.
      threads: compile threads (default: one per host core, at most one per program).
    """
    tasks = _check_tasks("tasks", tasks)
    if threads is not None:
        threads = _checks.integer("threads", threads, minimum=1)
    seen: dict = {}
    lowered = [low for agent, chunk, name, likelihood_ in tasks if isinstance(agent, agents_base.JaxAgent)
               for low in _lower_chunk(agent, chunk, name, likelihood_, seen)]
    def compile_and_keep(program, key, low):
        if key is None:
            low.compile()
        else:
            program.build(key, low)  # the run's calls, and later runs, find it

    if lowered:
        with concurrent.futures.ThreadPoolExecutor(max(1, min(len(lowered), threads or executors.host_cores())),
                                                   thread_name_prefix="jtk-compile") as pool:
            for future in [pool.submit(compile_and_keep, *item) for item in lowered]:
                future.result()
    return len(lowered)


def compiles_ahead(executor=None) -> bool:
    """Whether a grid run in this process compiles its programs first, side by side (:func:`compile_ahead`): with no
    executor, when JAX's default backend is not the CPU."""
    return executor is None and jax.default_backend() != "cpu"


def prepare_local_run(tasks: Sequence[tuple], executor=None, bar=None) -> None:
    """Before a grid's :func:`evaluate_chunk` calls ``tasks`` run: :func:`compile_ahead` where
    :func:`compiles_ahead` says so, saying on the progress bar what it waits for."""
    tasks = _check_tasks("tasks", tasks)
    if not tasks or not compiles_ahead(executor):
        return
    shown = bar is not None and not bar.disable
    if shown:
        desc = bar.desc
        bar.set_description(f"{desc} (compiling)")
    compile_ahead(tasks)
    if shown:
        bar.set_description(desc)


# Where the grid's programs compile side by side before the run (compile_ahead: off the CPU), the training program's
# branches, one per minibatch size (Chunk.programs), could instead be one program each, compiled in parallel threads:
# the run would wait for the costliest size's compile rather than for one program of all five (docs/platforms.md,
# "The paper grid on a GPU" and "Compile once per agent configuration"). Each branch is the program it replaces, so
# the scores stay bitwise the same. Off by default: `bash benchmarks/gpu_session.sh split` measures whether it pays
# on a GPU.
SPLIT_BRANCHES_AHEAD = False


def run_grid(tasks: Sequence[Any], chunk_args, save, *, executor=None, interrupt=None, stop, bar=None) -> None:
    """Scores the chunks of a grid run as :func:`evaluate`, ``jtk testbed --out`` and ``jtk sweep`` run them.

    Without ``executor``: one chunk per :func:`jtk.executors.local_threads` thread, after :func:`prepare_local_run`
    (compile-ahead off the CPU). Then :func:`jtk.results.run_chunks` with ``evaluate_chunk(*chunk_args(task))`` as
    each task's job.

    Args:
      tasks: the caller's work items, handed back to ``save``.
      chunk_args: ``chunk_args(task) -> (agent, chunk, name, likelihood)``, the arguments of :func:`evaluate_chunk`.
      save, interrupt, stop: as :func:`jtk.results.run_chunks` takes them.
      executor: optional ``submit`` object (Dask); None runs in this process.
      bar: the run's tqdm progress bar, which says when it waits for compilation.
    """
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Sequence):
        raise TypeError(f"tasks must be a list of work items, got {_checks.describe(tasks)}")
    _checks.function("chunk_args", chunk_args)
    _checks.function("save", save)
    _checks.function("stop", stop)
    tasks = list(tasks)
    calls = [tuple(chunk_args(task)) for task in tasks]
    if SPLIT_BRANCHES_AHEAD and compiles_ahead(executor):  # one training program per minibatch size (same scores)
        calls = [(a, Chunk(c, c.size) if isinstance(c, Chunk) else c, *rest) for a, c, *rest in calls]
    threads = executors.local_threads(len(tasks), [call[0] for call in calls]) if executor is None else 1
    prepare_local_run(calls, executor, bar)
    run_chunks(range(len(tasks)), lambda i: (evaluate_chunk, calls[i], {}), lambda i, frame: save(tasks[i], frame),
               executor=executor, threads=threads, interrupt=interrupt, stop=stop)


def _evaluate_generic_chunk(agent, groups: list[list[Problem]], name: str, likelihood_: str = "auto") -> list[dict]:
    """Scores any object with ``fit`` (a researcher's own agent) problem by problem."""
    rows = []
    for group in groups:
        head = group[0]
        params, data, _ = load_problem(head)
        n = head.num_train
        x, y = np.asarray(data.x)[:n], np.asarray(data.y)[:n]
        t0 = time.perf_counter()
        with _blame(name, "fit", head):
            posterior = agent.fit(x, y, seed=agent_seed(head, 0), prior=head.prior())
        train_time = (time.perf_counter() - t0) / len(group)
        with _blame(name, "num_components", head):
            mixture = agents_base.as_mixture(posterior)
        exact = _use_exact(likelihood_, mixture is not None, name)
        for p in group:
            t0 = time.perf_counter()
            _, _, test = load_problem(p)
            comps = _posterior_logits(mixture if exact else posterior, np.asarray(test.x), p, agent_seed(p, p.tau),
                                      exact, name)
            with _blame(name, "log_weights", p):
                log_w = mixture.log_weights() if exact else None
            kl, probs = score_numpy(comps, test, p.tau, log_w)
            rows += result_rows([p], [kl], [probs], [np.asarray(test.y)], "exact" if exact else f"mc{p.num_samples}",
                          train_time, time.perf_counter() - t0, name)
    return rows


def _num_components(posterior) -> int | None:
    mixture = agents_base.as_mixture(posterior)
    return None if mixture is None else int(mixture.num_components)


def _posterior_logits(posterior, x: np.ndarray, p: Problem, key, exact: bool, name: str = "agent") -> np.ndarray:
    """[C or M, n, K] logits: all components of a finite mixture (exact), else M samples; validated.

    -inf logits are allowed (probability 0: a label of that class scores +inf KL, clipped and counted in
    ``frac_finite``); NaN, +inf and rows of all -inf make the probabilities NaN and are refused.
    """
    call = "components" if exact else "sample_logits"
    with _blame(name, call, p):
        logits = np.asarray(posterior.components(x) if exact else posterior.sample_logits(x, p.num_samples, key))
    want = "[C, n, K]" if exact else f"[{p.num_samples}, n, K]"
    if logits.ndim != 3 or logits.shape[1:] != (x.shape[0], p.num_classes) or (
            not exact and logits.shape[0] != p.num_samples):
        raise ValueError(f"agent {name!r}: {call} returned logits of shape {logits.shape} on problem "
                         f"{_problem_text(p)}; expected {want} with n={x.shape[0]}, K={p.num_classes}")
    if not (np.issubdtype(logits.dtype, np.floating) or np.issubdtype(logits.dtype, np.integer)):
        raise TypeError(f"agent {name!r}: {call} must return real-valued logits, got dtype {logits.dtype} on "
                        f"problem {_problem_text(p)}")
    nan, pos_inf = int(np.count_nonzero(np.isnan(logits))), int(np.count_nonzero(np.isposinf(logits)))
    all_neg = int(np.count_nonzero(np.all(np.isneginf(logits), axis=-1)))
    if nan or pos_inf or all_neg:
        found = [f"{count} {what}" for count, what in ((nan, "NaN"), (pos_inf, "+inf"), (all_neg, "rows of all -inf"))
                 if count]
        raise ValueError(f"agent {name!r} returned sampled logits that are not finite on problem {_problem_text(p)}: "
                         f"{call} gave {' and '.join(found)} among its logits of shape {logits.shape} (each makes the "
                         f"predictive probabilities NaN); jtk.testbed.check_agent finds such logits")
    return logits


# How many problems one compiled training call vectorises. XLA's CPU backend runs a program on one core, and the
# batched small matrix products of training run fastest per problem when one step's activations stay near the
# core's cache, not in the largest vmap (docs/platforms.md, "Chunk size", has the measurements). Smaller chunks also
# give the threads of jtk.executors.local_threads work to share. A GPU wants the widest vmap that fits. On both, a
# chunk holds at most MEMBERS_PER_CHUNK member trainings: ensemble+ evaluates its prior networks at all 1024 rows of
# every training set once, and with 100 members that bounds the memory of a chunk of small minibatches.
MAX_GROUPS_PER_CHUNK = 32
MEMBER_ROWS_PER_CHUNK = 6_400  # problems × members × minibatch rows in one step of one call (CPU)
COMPONENT_ROWS_PER_BLOCK = 25_600  # components × test inputs evaluated at once when scoring (CPU)
MEMBERS_PER_CHUNK = 2048  # problems × members in one call (CPU and GPU)


class Chunk(list):
    """The training groups (each a list of problems sharing training) that one compiled call trains and scores.

    Attributes:
      size: the number of groups its arrays hold; the groups are padded to it (the padding is computed and dropped).
        All chunks of one agent on one grid share a size, so each compiled program has a single shape.
      programs: the agent specialised to every minibatch size among the chunks of its grid that share this chunk's
        data shapes, smallest first (None: the chunk's own only). The training program has one branch for each, so
        all those chunks run one compiled program (``jtk.testbed._train_chunk``).
    """

    def __init__(self, groups: Iterable[list[Problem]], size: int, programs: tuple | None = None):
        super().__init__(groups)
        self.size = int(size)
        self.programs = None if programs is None else tuple(programs)

    def __reduce__(self):  # pickled for executors (Dask) with its size and programs
        return (Chunk, (list(self), self.size, self.programs))


def _groups_per_chunk(agent: agents_base.JaxAgent, capacity: int, input_dim: int) -> int:
    """How many training groups a chunk may hold, a power of two; the agent's costliest minibatch size decides.

    At most MEMBERS_PER_CHUNK member trainings and 2^26 floats of training data. On the CPU also at most
    MAX_GROUPS_PER_CHUNK groups and a cache-sized block of networks per step: an ensemble trains blocks of its members
    (``members_per_block``) and its chunk holds as many problems as fill :func:`jtk.train.cpu_block_size` with such
    blocks; other agents hold at most MEMBER_ROWS_PER_CHUNK minibatch rows (all members) per step. One size for all
    minibatch sizes keeps each program to one shape, so it compiles once (docs/platforms.md, "Compile once per agent
    configuration").
    """
    members = int(agent.num_networks)
    limit = min(MEMBERS_PER_CHUNK // members, 2 ** 26 // (capacity * (input_dim + 1)))
    if jax.default_backend() == "cpu":
        batch = agent.batch_size  # the largest minibatch, where the time goes
        if hasattr(agent, "members_per_block"):
            limit = min(limit, MAX_GROUPS_PER_CHUNK, train_lib.cpu_block_size(batch, MAX_GROUPS_PER_CHUNK * members)
                        // agent.members_per_block())
        else:
            limit = min(limit, MAX_GROUPS_PER_CHUNK, MEMBER_ROWS_PER_CHUNK // (members * batch))
    return 1 << (max(1, limit).bit_length() - 1)


_PROGRAMS: dict[tuple, tuple] = {}  # (agent, problem settings, capacity, size) -> the branches of its widest program
_PROGRAMS_LOCK = threading.Lock()


def _programs_for(agent, family: tuple, wanted: set) -> tuple:
    """The branches of the training program for ``wanted`` specialisations of ``agent`` (:attr:`Chunk.programs`).

    ``family`` is (problem settings, capacity, chunk size): what fixes the program's shapes. The program that served
    an earlier grid of this process serves every grid of those shapes whose minibatch sizes it has: after the paper
    grid, a grid of new num_train values ≥ 100 compiles nothing. A grid with a new minibatch size compiles
    one program with the sizes of both. Which program trains a chunk does not change its scores: each branch is the
    program it replaces, bit for bit (tests/test_testbed.py).
    """
    with _PROGRAMS_LOCK:
        known = _PROGRAMS.get((agent, *family), ())
        if not wanted <= set(known):
            known = tuple(sorted(wanted | set(known), key=lambda a: (a.batch_size, a.whole_set, repr(a))))
            _PROGRAMS[(agent, *family)] = known
        return known


def make_chunks(problems_: Sequence[Problem], agent) -> list[Chunk]:
    """Groups problems that share training, then packs groups with equal static shapes into chunks.

    Every chunk of one data shape (capacity, input dimension) holds the same number of groups
    (``_groups_per_chunk``, or fewer when no minibatch size has that many: :func:`padded_count` of the largest),
    and chunks of one problem setting, capacity and size share their training program (:attr:`Chunk.programs`).
    Chunks are returned costliest first, so that chunks running in parallel threads finish together.
    """
    if isinstance(problems_, (str, bytes)) or not isinstance(problems_, Sequence):
        raise TypeError(f"problems_ must be a list of jtk.testbed.Problem, got {_checks.describe(problems_)}")
    for i, p in enumerate(problems_):
        if not isinstance(p, Problem):
            raise TypeError(f"problems_[{i}] must be a jtk.testbed.Problem, got {_checks.describe(p)}")
    groups: dict[Problem, list[Problem]] = {}
    for p in problems_:
        groups.setdefault(p.training_problem, []).append(p)
    if not isinstance(agent, agents_base.JaxAgent):
        return [Chunk([g], 1) for g in groups.values()]
    by_shape: dict[tuple, list[list[Problem]]] = {}
    for key, g in groups.items():
        static = (dataclasses.replace(key, temperature=1.0, num_train=1, seed=0),
                  train_lib.capacity_for(key.num_train), train_lib.batch_bucket(key.num_train, agent.batch_size),
                  tuple(sorted(p.tau for p in g)), agent.specialize(key.prior()))  # static agent fields too
        by_shape.setdefault(static, []).append(g)
    largest: dict[tuple, int] = {}  # (capacity, input_dim) -> most groups of one minibatch size
    for (key, capacity, *_), gs in by_shape.items():
        largest[capacity, key.input_dim] = max(largest.get((capacity, key.input_dim), 0), len(gs))
    sizes = {shape: min(_groups_per_chunk(agent, shape[0], shape[1]), padded_count(most))
             for shape, most in largest.items()}
    needed: dict[tuple, set] = {}  # (problem settings, capacity, size) -> the agent specialised to each minibatch size
    for (key, capacity, *_, specialised) in by_shape:
        needed.setdefault((key, capacity, sizes[capacity, key.input_dim]), set()).add(specialised)
    programs = {family: _programs_for(agent, family, wanted) for family, wanted in needed.items()}
    costed = []  # (padded groups × minibatch, chunk)
    for (key, capacity, batch, *_), gs in by_shape.items():
        size = sizes[capacity, key.input_dim]
        branches = programs[key, capacity, size]
        costed += [(size * batch, Chunk(gs[i:i + size], size, branches)) for i in range(0, len(gs), size)]
    return [c for _, c in sorted(costed, key=lambda pair: -pair[0])]


def evaluate_chunk(agent, groups: list[list[Problem]], name: str, likelihood: str = "auto") -> pd.DataFrame:
    """Scores one chunk (a picklable unit of work for an executor)."""
    _check_groups("groups", groups)
    _checks.instance("name", name, str, "a string (the agent's name in the results)")
    _checks.one_of("likelihood", likelihood, LIKELIHOODS)
    if isinstance(agent, agents_base.JaxAgent):
        rows = _evaluate_jax_chunk(agent, groups, name, likelihood)
    else:
        rows = _evaluate_generic_chunk(agent, groups, name, likelihood)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def evaluate(agent, problems: Sequence[Problem] | str = "quick", executor=None, *, name: str | None = None,
             progress: bool = True, likelihood: str = "auto", interrupt=None) -> pd.DataFrame:
    """Scores an agent on testbed problems: one DataFrame row per problem.

    Args:
      agent: an agent name (``jtk.agents.names()``) or any object with
        ``fit(x, y, seed, prior) -> posterior`` whose posterior has
        ``sample_logits(x, M, seed) -> [M, n, K]`` (and optionally
        ``components(x) -> [C, n, K]`` with ``num_components`` for exact
        enumeration of a finite mixture, weighted if it has ``log_weights()``).
      problems: a list of :class:`Problem`, or a grid name ("paper", "quick").
      executor: optional ``concurrent.futures.Executor``-like object
        (``submit(fn, *args) -> future``, e.g. a ``dask.distributed.Client``;
        not a scheduler name: see :func:`jtk.executors.executor`); chunks of
        problems are submitted to it. Default: run in this process.
      name: the value of the ``agent`` column (default: the agent's name).
      progress: show a tqdm progress bar.
      likelihood: the estimator of the agent's joint log-likelihood (module
        docstring): "mc" (M = ``Problem.num_samples`` sampled functions for
        every agent, the reference's), "exact" (enumerate the components of a
        finite mixture; ValueError for an agent without them) or "auto"
        (exact where possible, else mc).
      interrupt: optional object whose ``requested`` turns true on Ctrl-C
        (:class:`jtk.results.DeferredInterrupt`); checked between chunks, then
        :class:`jtk.results.Interrupted` is raised (nothing is kept: use
        ``jtk testbed --out`` for resumable runs).

    Returns:
      DataFrame with columns agent, temperature, num_train, tau, seed,
      input_dim, kl, kl_std, frac_finite, accuracy, ece, likelihood ("exact"
      or "mc<M>": the estimator used), train_seconds, eval_seconds (seconds
      amortised per row, so their sums are the total time). ``kl`` follows
      the reference: a test τ-sample whose KL is +inf (an observed label of
      probability 0) is clipped to the problem's largest finite KL;
      ``frac_finite`` is the fraction of τ-samples that were finite, and an
      :class:`InfiniteKLWarning` is issued when it is below 1 for any row.

    Raises:
      ValueError: an empty or duplicated problem list, an unknown
        ``likelihood``, ``likelihood="exact"`` for an agent that is not a
        finite mixture, or sampled logits that are NaN or +inf (named with the
        agent and the problem).
      TypeError: an ``agent`` without ``fit`` or an ``executor`` without ``submit``.
      Exception: an error raised by the agent's own ``fit`` / ``sample_logits`` /
        ``components`` / ``log_weights`` is raised again as the same type (else
        RuntimeError) naming the agent and the problem, chained to the original.
    """
    _checks.one_of("likelihood", likelihood, LIKELIHOODS)
    executors.check_executor(executor)
    if isinstance(agent, str):
        name = name or agent
        agent = agents_base.make(agent)
    if not callable(getattr(agent, "fit", None)):
        raise TypeError(f"agent must be an agent name or an object with a fit(x, y, seed, prior) method, "
                        f"got {type(agent).__name__}")
    if isinstance(problems, str):
        problems = GRIDS[_checks.one_of("problems", problems, tuple(GRIDS))]()
    problems = check_problems(problems)
    name = agent_name(agent, name)
    if isinstance(agent, agents_base.JaxAgent):
        _use_exact(likelihood, agent.is_mixture, name)  # fail before any training
    chunks = make_chunks(problems, agent)
    bar = tqdm(total=len(problems), desc=f"testbed {name}", disable=not progress, unit="problem")
    frames: dict[int, pd.DataFrame] = {}

    def save(i, frame):
        frames[i] = frame
        bar.update(sum(len(g) for g in chunks[i]))

    def stop():
        bar.close()
        done = sum(len(f) for f in frames.values())
        return Interrupted(f"interrupted after {done} of {len(problems)} problems", done, len(problems), None)

    run_grid(range(len(chunks)), lambda i: (agent, chunks[i], name, likelihood), save, executor=executor,
             interrupt=interrupt, stop=stop, bar=bar)
    bar.close()
    results = sort_rows(pd.concat([frames[i] for i in sorted(frames)], ignore_index=True))
    _warn_infinite_kl(results)
    return results


def sort_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Results rows in the testbed's order: by τ, num_train, temperature, seed (stable)."""
    _checks.frame("results", results, ["tau", "num_train", "temperature", "seed"])
    return results.sort_values(["tau", "num_train", "temperature", "seed"], kind="stable").reset_index(drop=True)


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
        for i, p in enumerate(_checks.nonempty("problems", problems, "Problem")):
            _checks.instance(f"problems[{i}]", p, Problem, "a jtk.testbed.Problem")
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

