"""The Neural Testbed: problem grids, evaluation of agents, leaderboards.

Osband et al. (2022), §3–4 and App. B. A problem is (temperature, num_train,
τ, seed): an environment drawn from the MLP prior, a training set, N = 1000
test τ-samples, and the agent's d_KL^τ estimated as in Algorithms 1–3.

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

Compare agents under one estimator: :func:`summarize` refuses a table that
mixes them for one τ unless ``allow_mixed=True``.

:func:`check_agent` probes an agent (coherent samples, seeds, shapes, NaN/inf,
mixture weights, marginal-only sampling) and estimates its paper-grid time
before a long run (``jtk testbed --check``).

Random numbers: every (seed, num_train, temperature) triple has its own
environment and training set, shared by its τ = 1 and τ = 10 problems; the
test set depends on τ as well.

Standard errors (:func:`summarize`, ``se=``): ``"seed"`` (default) is the
reference leaderboard's: average each agent's rows of one seed, then the
population std of those per-seed means over sqrt(number of seeds)
(docs/reference.md, "Statistics"). ``"environment"`` treats every training
group (seed, num_train, temperature, input_dim) as an independent unit
(sample std over sqrt(number of groups)); it is larger on the paper grid
because it counts the spread of d_KL across num_train and temperature as noise.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import itertools
import threading
import time
import warnings
from dataclasses import dataclass
import functools
import numbers
from typing import Any, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks, _compile, _memory, executors, likelihood, nets, train as train_lib
from jtk.agents import base as agents_base
from jtk.envs.classification import ProblemSettings, TestData, problem_key, sample_problem, sample_test
from jtk.results import Interrupted, load_results, run_chunks  # noqa: F401  (load_results: a re-export)

PAPER_TEMPERATURES = (0.01, 0.1, 0.5)
PAPER_NUM_TRAIN = (1, 3, 10, 30, 100, 300, 1000)
PAPER_TAUS = (1, 10)

GROUP_COLUMNS = ["seed", "num_train", "temperature", "input_dim"]  # rows sharing one environment
PROBLEM_COLUMNS = ["agent", "tau", "seed", "num_train", "temperature", "input_dim", "test_inputs"]  # one row each
LIKELIHOODS = ("auto", "exact", "mc")
SE_KINDS = ("seed", "environment")
SUMMARY_COLUMNS = ("agent", "tau", "seed", "kl", "accuracy", "ece")  # what summarize reports; timings are optional
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
        _checks.temperature("temperature", self.temperature)
        _checks.integer("num_train", self.num_train, minimum=1)
        _checks.integer("tau", self.tau, minimum=1)
        _checks.seed_int("seed", self.seed)
        _checks.integer("input_dim", self.input_dim, minimum=1)
        _checks.integer("num_classes", self.num_classes, minimum=2)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden))
        nets.activation_fn(self.activation)
        _checks.integer("num_test", self.num_test, minimum=1)
        _checks.integer("num_samples", self.num_samples, minimum=1)
        _checks.one_of("test_inputs", self.test_inputs, ("iid", "polyadic"))
        _checks.integer("num_anchors", self.num_anchors, minimum=1)
        _memory.check_budget("num_samples × num_test × τ × num_classes float32 logits of one problem",
                             4.0 * self.num_samples * self.num_test * self.tau * self.num_classes,
                             "lower num_samples or num_test")

    @property
    def training_problem(self) -> "Problem":
        """This problem with τ set to 1: problems with the same training problem train one agent and share it."""
        return dataclasses.replace(self, tau=1)

    @property
    def training_key(self) -> "Problem":
        """Deprecated alias of :attr:`training_problem` (it is a Problem, not a PRNG key)."""
        import warnings

        warnings.warn("jtk.testbed.Problem.training_key is deprecated; use jtk.testbed.Problem.training_problem",
                      DeprecationWarning, stacklevel=2)
        return self.training_problem

    def prior(self) -> agents_base.ProblemInfo:
        """What the agent is told about this problem."""
        return agents_base.ProblemInfo(self.input_dim, self.num_classes, self.num_train, self.temperature, self.tau)


def grid(temperatures: Iterable[float] = PAPER_TEMPERATURES, num_train: Iterable[int] = PAPER_NUM_TRAIN,
         taus: Iterable[int] = PAPER_TAUS, seeds: Iterable[int] | int = 10, **problem_kwargs) -> list[Problem]:
    """All combinations τ × num_train × temperature × seed (seeds: an int n means 0..n-1)."""
    seeds = _checks.seeds("seeds", seeds, allow_empty=True, unique=True)
    return [Problem(temperature=t, num_train=n, tau=tau, seed=s, **problem_kwargs)
            for tau, n, t, s in itertools.product(taus, num_train, temperatures, seeds)]


def paper_problems(seeds: int = 10) -> list[Problem]:
    """The paper's 2-D grid: τ ∈ {1, 10} × n ∈ {1, …, 1000} × ρ ∈ {0.01, 0.1, 0.5} × 10 seeds = 420."""
    return grid(seeds=seeds)


def quick_problems(seeds: int = 2) -> list[Problem]:
    """A small grid for notebooks and tests: τ ∈ {1, 10} × n ∈ {10, 100} × ρ ∈ {0.1, 0.5} × 2 seeds = 16."""
    return grid(temperatures=(0.1, 0.5), num_train=(10, 100), seeds=seeds)


def classification_problems(seeds: int = 5) -> list[Problem]:
    """The reference's later "classification" grid (docs/reference.md, "The grid"): d ∈ {2, 10, 100},
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


_make_training_batch = _compile.jit(jax.vmap(_make_training, in_axes=(None, 0, 0, 0)), static_argnums=0)
_make_test_batch = _compile.jit(jax.vmap(_make_test, in_axes=(None, None, None, 0, 0, 0, 0)),
                                static_argnums=(0, 1, 2))


def load_problem(problem: Problem) -> tuple[Any, train_lib.Dataset, TestData]:
    """The environment parameters, padded training set and test data of one problem."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a jtk.testbed.Problem, got {type(problem).__name__}")
    cfg = _data_config(problem)
    params, data = _make_training_batch(cfg, *_group_arrays([problem]))
    test = _make_test_batch(cfg, problem.num_test, problem.tau, params, *_group_arrays([problem]))
    first = lambda tree: jax.tree_util.tree_map(lambda a: a[0], tree)  # noqa: E731
    return first(params), first(data), first(test)


def _data_config(p: Problem) -> ProblemSettings:
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


def _score_numpy(comps, test: TestData, tau: int, log_w=None):
    log_w = None if log_w is None else jnp.asarray(log_w, jnp.float32)
    kl, probs = _score_jit(jnp.asarray(comps), test, tau, log_w)
    return np.asarray(kl), np.asarray(probs)


# ------------------------------------------------------------------ evaluation
def _problem_text(p: Problem) -> str:
    """How messages name a problem: its seed, num_train, temperature and tau (input_dim when not 2)."""
    dim = f" input_dim={p.input_dim}" if p.input_dim != 2 else ""
    return f"seed={p.seed} num_train={p.num_train} temperature={p.temperature} tau={p.tau}{dim}"


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


def _agent_name(agent, name):
    if name is not None:
        return name
    return getattr(agent, "name", type(agent).__name__)


def _rows(group_problems, kl_list, probs_list, tests_y, likelihood_kind, train_s, eval_s, name):
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


@functools.partial(_compile.jit, static_argnums=0, long_running=True)
def _train_states(agents: tuple, index, data: train_lib.Dataset, hyper, agent_seeds):
    """Trains ``agents[index]`` on the P padded training sets ``data`` at once (one program for all ``agents``)."""
    keys = jax.vmap(jax.random.key)(agent_seeds)
    return _one_of(agents, index, lambda a, k, d, h: jax.vmap(a.train)(k, d, h), keys, data, hyper)


@functools.partial(_compile.jit, static_argnums=0)
def _start_states(agent, data: train_lib.Dataset, hyper, agent_seeds):
    """:meth:`~jtk.agents.base.JaxAgent.start_training` on P training sets: compiled once for every minibatch size."""
    return jax.vmap(agent.start_training)(jax.vmap(jax.random.key)(agent_seeds), data, hyper)


@functools.partial(_compile.jit, static_argnums=0, long_running=True)
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


@functools.partial(_compile.jit, static_argnums=(0, 1, 2, 3, 4, 5), long_running=True)
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
    return padded, (agent.specialize(heads[0].prior()), _data_config(heads[0]), seeds, temps, ns, hyper, agent_seeds)


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
        rows += _rows(problems_tau, np.asarray(kl)[:n], np.asarray(probs)[:n], np.asarray(y)[:n], kind,
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
    """Lowers the programs :func:`_evaluate_jax_chunk` would run for ``groups``, running none: their
    ``jax.stages.Lowered`` forms, less those whose program and argument shapes are in ``seen`` (updated)."""
    padded, train_args = _train_inputs(agent, [g[0] for g in groups], getattr(groups, "size", None))
    found = []

    def lower(program, *args):
        leaves, tree = jax.tree_util.tree_flatten(args)  # arrays by shape and dtype, static arguments by value
        key = (program, tree, tuple((tuple(a.shape), str(a.dtype)) if hasattr(a, "shape") else a for a in leaves))
        if key not in seen:
            low = program.lower(*args)
            seen[key] = low.out_info
            found.append(low)
        return seen[key]

    env_params, states = _train_chunk(*train_args, getattr(groups, "programs", None), call=lower)
    for _, _, static, data in _scorings(agent, groups, padded, train_args, name, likelihood_):
        lower(_eval_chunk, *static, env_params, states, *data)
    return found


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
    seen: dict = {}
    lowered = [low for agent, chunk, name, likelihood_ in tasks if isinstance(agent, agents_base.JaxAgent)
               for low in _lower_chunk(agent, chunk, name, likelihood_, seen)]
    if lowered:
        with concurrent.futures.ThreadPoolExecutor(max(1, min(len(lowered), threads or executors.host_cores())),
                                                   thread_name_prefix="jtk-compile") as pool:
            for future in [pool.submit(low.compile) for low in lowered]:
                future.result()
    return len(lowered)


def compiles_ahead(executor=None) -> bool:
    """Whether a grid run in this process compiles its programs first, side by side (:func:`compile_ahead`): with no
    executor, when JAX's default backend is not the CPU."""
    return executor is None and jax.default_backend() != "cpu"


def prepare_local_run(tasks: Sequence[tuple], executor=None, bar=None) -> None:
    """Before a grid's :func:`evaluate_chunk` calls ``tasks`` run: :func:`compile_ahead` where
    :func:`compiles_ahead` says so, saying on the progress bar what it waits for."""
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
# the scores stay bitwise the same. Not measured on a GPU yet, so off: `bash benchmarks/gpu_session.sh split`
# measures it.
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
            kl, probs = _score_numpy(comps, test, p.tau, log_w)
            rows += _rows([p], [kl], [probs], [np.asarray(test.y)], "exact" if exact else f"mc{p.num_samples}",
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


def _chunks(problems_: Sequence[Problem], agent) -> list[Chunk]:
    """Groups problems that share training, then packs groups with equal static shapes into chunks.

    Every chunk of one data shape (capacity, input dimension) holds the same number of groups
    (:func:`_groups_per_chunk`, or fewer when no minibatch size has that many: :func:`padded_count` of the largest),
    and chunks of one problem setting, capacity and size share their training program (:attr:`Chunk.programs`).
    Chunks are returned costliest first, so that chunks running in parallel threads finish together.
    """
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
    problems = list(problems)
    if not problems:
        raise ValueError("problems must hold at least one Problem, got an empty list")
    for i, p in enumerate(problems):
        if not isinstance(p, Problem):
            raise TypeError(f"problems[{i}] must be a jtk.testbed.Problem, got {type(p).__name__}")
    _check_unique_problems(problems)
    name = _agent_name(agent, name)
    if isinstance(agent, agents_base.JaxAgent):
        _use_exact(likelihood, agent.is_mixture, name)  # fail before any training
    chunks = _chunks(problems, agent)
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


def _check_unique_problems(problems_: Sequence[Problem]) -> None:
    """Raises ValueError naming the problems that occur more than once (each would count twice)."""
    seen: dict[Problem, int] = {}
    for p in problems_:
        seen[p] = seen.get(p, 0) + 1
    repeated = [p for p, c in seen.items() if c > 1]
    if repeated:
        shown = "; ".join(_problem_text(p) for p in repeated[:5])
        raise ValueError(f"problems must not repeat: {len(repeated)} problems occur more than once "
                         f"(e.g. {shown}); check for duplicate seeds")


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


class InfiniteKLWarning(UserWarning):
    """Some test τ-samples scored KL = +inf (an observed label got probability 0); ``kl`` clipped them."""


def _warn_infinite_kl(results: pd.DataFrame, stacklevel: int = 3) -> None:
    """Warns (:class:`InfiniteKLWarning`) when a row's ``frac_finite`` is below 1, naming agents and problems.

    The reference's clip rule (:func:`jtk.likelihood.summarize_kl`) replaces a +inf per-τ-sample KL by the
    problem's largest finite one, so a table stays comparable with the reference; but an agent that emits
    -inf (or ±1e300, which float32 turns into ±inf) logits can then read better than the Bayes-optimal agent
    (issue #46). The rows keep the fraction in ``frac_finite``; this makes it loud.
    """
    if "frac_finite" not in results.columns or results.empty:
        return
    frac = pd.to_numeric(results["frac_finite"], errors="coerce")
    bad = frac < 1.0
    if not bad.any():
        return
    agent_col = "agent" if "agent" in results.columns else None
    agents = sorted(map(str, results.loc[bad, agent_col].unique())) if agent_col else []
    worst = results.loc[frac[bad].idxmin()]
    where = ", ".join(f"{c}={worst[c]}" for c in ("seed", "num_train", "temperature", "tau") if c in results.columns)
    warnings.warn(f"{int(bad.sum())} of {len(results)} problems have test τ-samples whose KL is +inf "
                  f"(agents {agents}; worst: {where}, frac_finite = {float(frac[bad].min()):.4f}): the agent gave "
                  f"probability 0 to an observed label (-inf logits, or logits such as ±1e300 that float32 makes "
                  f"±inf). Column 'kl' clips them to the problem's largest finite KL, as the reference does, so "
                  f"these rows understate the true d_KL (+inf) and can read better than the Bayes-optimal agent; "
                  f"see column 'frac_finite', and jtk.testbed.check_agent's 'finite' probe to find such logits",
                  InfiniteKLWarning, stacklevel=stacklevel)


# ------------------------------------------------------------------ leaderboard
NUMERIC_COLUMNS = ("kl", "tau", "seed", "num_train", "temperature", "input_dim", "accuracy", "ece", "train_seconds",
                   "eval_seconds", "frac_finite")  # checked to be numbers wherever present


def _numeric_column(values: pd.Series) -> bool:
    """Numbers: a numeric dtype but bool, or an object column holding only real numbers (and missing values)."""
    if pd.api.types.is_bool_dtype(values):
        return False
    if pd.api.types.is_numeric_dtype(values):
        return True
    return pd.api.types.infer_dtype(values, skipna=True) in ("integer", "floating", "mixed-integer-float", "decimal")


def _check_results(results: pd.DataFrame, required=("agent", "tau", "seed", "kl")) -> pd.DataFrame:
    """Type, required columns, numeric columns, finite ``kl`` and one row per problem; returns a copy with kl
    clipped at 0."""
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame from jtk.testbed.evaluate, got {type(results).__name__}")
    missing = sorted(set(required) - set(results.columns))
    if missing:
        raise ValueError(f"results is missing the required columns {missing} (it has {sorted(results.columns)})")
    if results.empty:
        raise ValueError("results must hold at least one row, got an empty DataFrame")
    for col in NUMERIC_COLUMNS:
        if col in results.columns and not _numeric_column(results[col]):
            values = results[col].dropna()
            example = values[~values.map(lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool))]
            shown = f" (e.g. {example.iloc[0]!r})" if len(example) else ""
            raise TypeError(f"results[{col!r}] must be numeric, got dtype {results[col].dtype}{shown}; "
                            f"convert it with pd.to_numeric")
    kl = results["kl"].astype(float)
    bad = ~np.isfinite(kl.to_numpy())
    if bad.any():
        agents = sorted(map(str, results.loc[bad, "agent"].unique()))
        none_finite = ""
        if "frac_finite" in results.columns and (pd.to_numeric(results.loc[bad, "frac_finite"], errors="coerce") == 0).any():
            none_finite = (" (frac_finite = 0: no test τ-sample had a finite KL, the agent gave probability 0 to an "
                           "observed label in every one; see jtk.testbed.check_agent's 'finite' probe)")
        raise ValueError(f"results column 'kl' must be finite, but {int(bad.sum())} of {len(results)} rows are "
                         f"NaN/inf or not numbers (agents {agents}){none_finite}; drop or rerun those problems first")
    keys = [c for c in PROBLEM_COLUMNS if c in results.columns]
    dup = results.duplicated(subset=keys, keep=False)
    if dup.any():
        first = results.loc[dup, keys].iloc[0].to_dict()
        raise ValueError(f"results must hold one row per problem, but {int(dup.sum())} rows share their "
                         f"{keys} with another row (e.g. {first}); concatenated the same run twice?")
    df = results.copy()
    df["kl"] = kl.clip(lower=0.0)  # negative estimates are Monte Carlo noise: 0, as in the reference
    return df


def _check_one_estimator(df: pd.DataFrame) -> None:
    if "likelihood" not in df.columns:
        return
    for tau, sub in df.groupby("tau"):
        kinds = sub.groupby("likelihood")["agent"].unique()
        if len(kinds) > 1:
            listing = "; ".join(f"{k}: {sorted(map(str, a))}" for k, a in kinds.items())
            raise ValueError(f"results mixes likelihood estimators at tau={tau} ({listing}): exact enumeration and "
                             f"Monte Carlo scores are not comparable; rerun with jtk.testbed.evaluate(..., "
                             f"likelihood='mc') (or 'exact') for every agent, or pass allow_mixed=True")


def seed_se(per_seed_means: pd.Series) -> float:
    """The reference leaderboard's error bar: population std of per-seed means over sqrt(#seeds) (NaN below 2)."""
    values = _checks.as_float_array("per_seed_means", per_seed_means, ndim=1, finite=False, dtype=np.float64)
    return float(np.std(values, ddof=0) / np.sqrt(len(values))) if len(values) > 1 else np.nan


def paired_difference(results: pd.DataFrame, baseline: pd.DataFrame, tau: int) -> tuple[float, float]:
    """Mean d_KL^τ difference results − baseline over the problems both scored, and its seed-mean standard error.

    Negative KL is set to 0 first, as in :func:`summarize`. Problems are matched on the columns of
    ``PROBLEM_COLUMNS`` (but agent) both frames have; the error is :func:`seed_se` of the per-seed mean differences.

    Args:
      results: rows of one agent from :func:`evaluate`.
      baseline: rows of the agent to compare with, on (some of) the same problems.
      tau: the τ to compare.

    Returns:
      (mean difference, standard error); (NaN, NaN) when no problem is shared.
    """
    _checks.frame("results", results, ["tau", "kl"]), _checks.frame("baseline", baseline, ["tau", "kl"])
    _checks.integer("tau", tau, minimum=1)
    keys = [c for c in PROBLEM_COLUMNS if c != "agent" and c in results.columns and c in baseline.columns]
    both = results[results["tau"] == tau].merge(baseline[baseline["tau"] == tau], on=keys, suffixes=("", "_base"))
    if both.empty:
        return np.nan, np.nan
    diff = both["kl"].clip(lower=0.0) - both["kl_base"].clip(lower=0.0)
    return float(diff.mean()), seed_se(diff.groupby(both["seed"]).mean())


def _environment_se(values: pd.Series) -> float:
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else np.nan


def summarize(results: pd.DataFrame, baseline: str | None = None, se: str = "seed",
              allow_mixed: bool = False) -> pd.DataFrame:
    """The leaderboard: mean d_KL^τ per agent with standard errors.

    Negative per-problem KL (Monte Carlo noise) is set to 0 first, as in the
    reference. Two standard errors (``se``; column ``kl_{τ}_se`` either way):

    * ``"seed"`` (default; the reference leaderboard's, docs/reference.md,
      "Statistics"): for each agent and τ, average the rows of each seed
      (over num_train, temperature, input_dim), then
      ``np.std(per-seed means, ddof=0) / sqrt(number of seeds)``. On the
      paper grid the 10 seeds are the reference's 10 seed classes.
    * ``"environment"``: average the rows of each training group (seed,
      num_train, temperature, input_dim), then the sample std (ddof=1) of the
      group means over sqrt(number of groups). It treats the spread of d_KL
      across num_train and temperature as noise, so it is larger.

    Args:
      results: rows from :func:`evaluate` (one or several agents): columns
        agent, tau, seed, kl, accuracy and ece at least (numeric but for
        agent); one row per problem; finite kl.
      baseline: optional agent name in ``results`` (e.g. "mlp" as in Fig. 2, or
        "uniform"); adds columns ``kl_{τ}_rel`` = score / baseline's score.
      se: "seed" or "environment" (above).
      allow_mixed: accept a table in which agents were scored by different
        likelihood estimators (column ``likelihood``) for one τ; by default
        that raises, since exact enumeration reads lower than Monte Carlo.

    Returns:
      DataFrame indexed by agent with columns kl_{τ}, kl_{τ}_se for every τ,
      accuracy, ece, frac_finite (the mean over the agent's problems of the
      fraction of test τ-samples whose KL was finite; below 1, ``kl`` holds
      clipped values and an :class:`InfiniteKLWarning` says so),
      train_seconds, eval_seconds (when ``results`` has them), num_problems;
      NaN standard errors with fewer than two seeds / groups.

    Raises:
      ValueError: missing columns, NaN/inf kl, duplicated problems, mixed
        estimators (unless ``allow_mixed``), an unknown ``se`` or ``baseline``.
      TypeError: ``results`` not a DataFrame, or a column such as kl that is not numeric.
    """
    _checks.one_of("se", se, SE_KINDS)
    df = _check_results(results, required=SUMMARY_COLUMNS)
    _warn_infinite_kl(df)
    if not allow_mixed:
        _check_one_estimator(df)
    if se == "environment":
        unit, se_fn = [c for c in GROUP_COLUMNS if c in df.columns], _environment_se
    else:
        unit, se_fn = ["seed"], seed_se
    out = {}
    for tau, sub in df.groupby("tau"):
        unit_means = sub.groupby(["agent"] + unit)["kl"].mean()
        out[f"kl_{tau}"] = sub.groupby("agent")["kl"].mean()
        out[f"kl_{tau}_se"] = unit_means.groupby("agent").agg(se_fn)
    table = pd.DataFrame(out)
    aggs = {k: v for k, v in dict(accuracy=("accuracy", "mean"), ece=("ece", "mean"),
                                   frac_finite=("frac_finite", "mean"),
                                   train_seconds=("train_seconds", "sum"),
                                   eval_seconds=("eval_seconds", "sum")).items() if v[0] in df.columns}
    extra = df.groupby("agent").agg(**aggs, num_problems=("kl", "size"))
    table = table.join(extra)
    if baseline is not None:
        if baseline not in table.index:
            raise ValueError(f"baseline must be an agent in results ({sorted(table.index)}), got {baseline!r}")
        for tau in sorted(df["tau"].unique()):
            table[f"kl_{tau}_rel"] = table[f"kl_{tau}"] / table.loc[baseline, f"kl_{tau}"]
    return table


def breakdown(results: pd.DataFrame) -> pd.DataFrame:
    """Mean d_KL per agent × τ × temperature × num_train (the Fig. 13/14 breakdown).

    Raises:
      ValueError: columns missing (agent, tau, seed, kl, temperature,
        num_train), NaN/inf kl or duplicated problems.
      TypeError: a column such as kl or temperature that is not numeric.
    """
    df = _check_results(results, required=("agent", "tau", "seed", "kl", "temperature", "num_train"))
    return df.pivot_table(index=["agent", "tau", "temperature"], columns="num_train", values="kl", aggfunc="mean")


# ------------------------------------------------------------------ check_agent
@dataclass(frozen=True)
class Probe:
    """One probe of :func:`check_agent`: its name, verdict, explanation and run time in seconds."""

    name: str
    ok: bool
    message: str
    seconds: float


@dataclass(frozen=True)
class AgentReport:
    """What :func:`check_agent` found: ``ok`` is True when every probe passed.

    Attributes:
      agent: the agent's name.
      probes: one :class:`Probe` per check, in the order run.
      estimated_paper_seconds: estimated wall time of the 420-problem paper grid
        on this machine (None when not estimated or when evaluation failed).
    """

    agent: str
    probes: tuple[Probe, ...]
    estimated_paper_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.probes)

    @property
    def failures(self) -> list[Probe]:
        return [p for p in self.probes if not p.ok]

    def __str__(self) -> str:
        verdict = "OK" if self.ok else f"FAILED ({len(self.failures)} of {len(self.probes)} probes)"
        lines = [f"check_agent({self.agent}): {verdict}"]
        lines += [f"  [{'ok' if p.ok else 'FAIL':>4}] {p.name:<16} {p.seconds:6.2f} s  {p.message}"
                  for p in self.probes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html
        verdict = "OK" if self.ok else f"FAILED ({len(self.failures)} of {len(self.probes)} probes)"
        rows = "".join(
            f"<tr><td>{'✓' if p.ok else '✗'}</td><td>{html.escape(p.name)}</td><td>{p.seconds:.2f} s</td>"
            f"<td style='text-align:left'>{html.escape(p.message)}</td></tr>" for p in self.probes)
        return (f"<b>check_agent({html.escape(self.agent)}): {verdict}</b><table><tr><th></th><th>probe</th>"
                f"<th>time</th><th style='text-align:left'>message</th></tr>{rows}</table>")


def _probe(name: str, fn) -> Probe:
    """Runs ``fn() -> (ok, message)``; an exception is a failed probe carrying its message."""
    t0 = time.perf_counter()
    try:
        ok, message = fn()
    except Exception as err:  # a probe reports; it never crashes the check
        ok, message = False, f"raised {type(err).__name__}: {err}"
    return Probe(name, bool(ok), message, time.perf_counter() - t0)


def _paper_grid_estimate(agent, name: str, prior: agents_base.ProblemInfo, seed: int) -> tuple[bool, str, float]:
    """Times one training group (τ = 1 and 10 at n = 100) twice and extrapolates to the 420 problems."""
    group = [Problem(temperature=prior.temperature, num_train=100, tau=tau, seed=seed, input_dim=prior.input_dim,
                     num_classes=prior.num_classes) for tau in PAPER_TAUS]
    t0 = time.perf_counter()
    evaluate(agent, group, name=name, progress=False)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    evaluate(agent, group, name=name, progress=False)
    run = time.perf_counter() - t0
    paper = paper_problems()
    num_groups = len({p.training_problem for p in paper})
    if isinstance(agent, agents_base.JaxAgent):
        shapes = {(train_lib.capacity_for(c[0][0].num_train), train_lib.batch_bucket(c[0][0].num_train,
                   agent.batch_size), c.size) for c in _chunks(paper, agent)}
        compile_s = max(first - run, 0.0)
        threads = executors.local_threads(len(shapes) + num_groups, [agent])
        total = len(shapes) * compile_s + num_groups * run / threads
        how = (f"{len(shapes)} minibatch sizes × {compile_s:.1f} s of compilation (at most: the sizes compile as "
               f"branches of one program, for less) + {num_groups} training groups × {run:.2f} s / {threads} "
               f"thread{'s' if threads > 1 else ''} (one group at n = 100, timed after compilation; vectorised chunks "
               f"are usually faster per group)")
    else:
        total = num_groups * run
        how = f"{num_groups} training groups × {run:.2f} s (one group at n = 100; the fit time depends on n)"
    return True, f"estimate ≈ {total / 60:.1f} min for the paper grid: {how}", total


def _nonfinite_logits(logits) -> tuple[int, int, int, int]:
    """(NaN, ±inf, finite beyond float32's range, rows with a zero float32 probability) among logits [..., K].

    What the testbed scores is the float32 log-softmax: a logit of ±1e300 is ±inf there, and so is a gap between
    two classes beyond float32's range; either gives an observed label of that class probability exactly 0.
    """
    out = np.asarray(logits)
    if not (np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.integer)):
        return 0, 0, 0, 0
    wide = out.astype(np.float64)
    nan, inf = int(np.isnan(wide).sum()), int(np.isinf(wide).sum())
    huge = int((np.isfinite(wide) & (np.abs(wide) > np.finfo(np.float32).max)).sum())
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # numpy: no compilation in a worker
        z = wide.astype(np.float32)
        z = z - z.max(axis=-1, keepdims=True)  # float32, as scored: a gap beyond float32's range is -inf
        lp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    zero = int((np.isneginf(lp).any(axis=-1) & ~np.isnan(lp).any(axis=-1)).sum()) if lp.ndim else 0
    return nan, inf, huge, zero


def check_agent(agent, prior: agents_base.ProblemInfo | None = None, *, seed: int = 0, num_samples: int = 100,
                estimate_time: bool = True) -> AgentReport:
    """Probes an agent for the mistakes that silently corrupt testbed scores, before a long run.

    Fits the agent once on a testbed training set (from ``prior``: input_dim,
    num_classes, num_train, temperature) and runs these probes:

    * ``fit``: ``fit(x, y, seed, prior)`` returns without error.
    * ``shapes``: ``sample_logits(x, M, seed)`` is a float array [M, n, K]; if
      the posterior has ``components`` / ``num_components``: [C, n, K] with C
      equal to ``num_components``.
    * ``finite``: no NaN/inf among M × 500 sampled logits (inputs ~ N(0, 9 I),
      beyond the training data; the components too for a finite mixture), no
      logit beyond float32's range (±1e300 is ±inf once scored) and no class
      of probability exactly 0 in float32 (-inf logits): a label of that class
      would make its τ-sample's KL +inf, which d_KL clips (issue #46).
    * ``coherence``: a call whose x repeats rows gives identical logits to the
      repeated rows within every sample (``|Δ| ≤ 1e-5 · max(1, |logit|)``). Sample
      m must be *one* function at all inputs; an agent that draws a fresh
      member, dropout mask or weight sample per input row fails here.
    * ``seed``: the same seed gives the same samples (a different seed may or
      may not change them: a deterministic posterior is fine).
    * ``mixture weights``: ``log_weights()``, when present, is [C], has no NaN
      and logsumexp(log_weights) = 0 within 1e-4.
    * ``joint dependence``: the marginal-only check. For 64 anchor inputs x it
      asks for x and x + 1e-4·u (u a random unit direction) in one call and
      correlates, across the M samples, the centred logits at the two. Any
      posterior over functions that are continuous at the scale of 1e-4 gives a
      correlation near 1, so its joint predictions of nearby (and repeated,
      as in polyadic τ-batches) inputs differ from the product of its
      marginals; samples drawn independently per input give a correlation
      near 0, i.e. joint = product of marginals: d_KL^τ of such an agent is
      that of a marginal predictor whatever its marginals. Fails when the
      samples differ at the anchors (probability spread ≥ 1e-3) and the median
      correlation is below 0.5. A posterior whose samples agree is reported,
      not failed: it expresses no epistemic uncertainty, honestly. (Comparing
      joint log-likelihoods of polyadic τ = 10 batches with the product of
      marginals tests the same dependence, but with sampled labels it needs
      thousands of batches to separate the two at realistic spreads; the
      correlation at near-identical inputs sees it directly.)
    * ``paper grid time`` (``estimate_time``): times ``evaluate`` on one
      training group (τ = 1 and 10, n = 100, 1000 test τ-samples) twice —
      compile + run, then run — and extrapolates to the 210 training groups of
      the paper grid, adding one compilation per minibatch size (an upper
      bound: the sizes compile as branches of one program). An estimate, not
      a measurement: n changes the cost of non-JAX agents.

    Args:
      agent: an agent name or any object with ``fit`` (see :func:`evaluate`).
      prior: the problem to probe on (default: d = 2, K = 2, n = 10, ρ = 0.1, τ = 10).
      seed: seed of the problem and of the agent.
      num_samples: M, posterior samples drawn per probe.
      estimate_time: run the ``paper grid time`` probe.

    Returns:
      An :class:`AgentReport`; ``str(report)`` is one line per probe.
    """
    if isinstance(agent, str):
        name, agent = agent, agents_base.make(agent)
    else:
        name = _agent_name(agent, None)
    if not callable(getattr(agent, "fit", None)):
        raise TypeError(f"agent must be an agent name or an object with a fit(x, y, seed, prior) method, "
                        f"got {type(agent).__name__}")
    if prior is None:
        prior = agents_base.ProblemInfo(input_dim=2, num_classes=2, num_train=10, temperature=0.1, tau=10)
    if not isinstance(prior, agents_base.ProblemInfo):
        raise TypeError(f"prior must be a jtk.agents.ProblemInfo or None, got {type(prior).__name__}")
    seed = _checks.seed_int("seed", seed)
    m = _checks.integer("num_samples", num_samples, minimum=2)
    problem = Problem(temperature=prior.temperature, num_train=max(prior.num_train, 1), tau=max(prior.tau, 1),
                      seed=seed, input_dim=prior.input_dim, num_classes=prior.num_classes)
    d, k = problem.input_dim, problem.num_classes
    _, data, _ = load_problem(problem)
    x_train, y_train = np.asarray(data.x[:problem.num_train]), np.asarray(data.y[:problem.num_train])
    rng = np.random.default_rng(seed)
    sample_seed = agent_seed(problem, problem.tau)
    probes = []
    state: dict[str, Any] = {}

    def fit():
        state["posterior"] = agent.fit(x_train, y_train, seed=agent_seed(problem, 0), prior=problem.prior())
        return True, f"fit on n = {problem.num_train} (d = {d}, K = {k}, ρ = {problem.temperature:g})"

    probes.append(_probe("fit", fit))
    post = state.get("posterior")
    if post is None:
        return AgentReport(name, tuple(probes))

    def draw(x, s=sample_seed, num=m):
        return np.asarray(post.sample_logits(np.asarray(x, np.float32), num, s))

    def shapes():
        x = rng.normal(size=(8, d)).astype(np.float32)
        out = draw(x)
        if out.ndim != 3 or out.shape != (m, 8, k) or not np.issubdtype(out.dtype, np.floating):
            return False, (f"sample_logits(x [8, {d}], {m}, seed) gave {out.dtype} {out.shape}; "
                           f"expected float [{m}, 8, {k}]")
        msg = f"sample_logits → {out.dtype} [{m}, 8, {k}]"
        c = _num_components(post)
        if c:
            comps = np.asarray(post.components(x))
            if comps.shape != (c, 8, k):
                return False, f"components(x [8, {d}]) gave {comps.shape}; expected [num_components={c}, 8, {k}]"
            msg += f"; components → [{c}, 8, {k}]"
        return True, msg

    def finite():
        x = 3.0 * rng.normal(size=(500, d))
        found = [("sampled logits", draw(x))]
        if _num_components(post):
            found.append(("components", np.asarray(post.components(np.asarray(x, np.float32)))))
        counts = [_nonfinite_logits(out) for _, out in found]
        nan, inf, huge, zero = (sum(c[i] for c in counts) for i in range(4))
        size = sum(out.size for _, out in found)
        what = " and ".join(w for w, _ in found)
        if nan or inf or huge or zero:
            return False, (f"{nan} NaN and {inf} ±inf of {size} {what} at inputs ~ N(0, 9 I), {huge} beyond "
                           f"float32's range (±1e300-style: ±inf once scored in float32), {zero} rows with a class of "
                           f"probability exactly 0 in float32: one label of that class makes the KL of its τ-sample "
                           f"+inf. jtk.testbed's d_KL clips such values to the largest finite one, as the reference "
                           f"does (frac_finite < 1, an InfiniteKLWarning), which can read better than an honest agent; "
                           f"a class challenge marks the entry invalid. Keep logits finite, e.g. clip probabilities "
                           f"before the log; NaN poisons the score")
        return True, f"all {size} {what} finite, with no zero probability, at inputs ~ N(0, 9 I)"

    def coherence():
        base = rng.normal(size=(6, d)).astype(np.float32)
        order = np.array([0, 1, 2, 3, 4, 5, 0, 3, 0, 5, 2])
        out = draw(base[order])  # [M, 11, K]
        first = {}
        gaps = []
        for row, src in enumerate(order):
            if src in first:
                a, b = out[:, first[src]], out[:, row]
                gaps.append(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a)), axis=-1))  # [M]
            else:
                first[src] = row
        gap = np.max(gaps, axis=0)  # [M] worst relative gap per sample
        bad = int(np.sum(gap > 1e-5))
        if bad:
            return False, (f"identical input rows got different logits within {bad} of {m} samples (max relative "
                           f"|Δ| {gap.max():.3g}): sample m must be one function evaluated at every input, not a "
                           f"fresh member / noise draw per input row")
        return True, f"repeated rows identical within every sample (max relative |Δ| {gap.max():.1e})"

    def seed_probe():
        x = rng.normal(size=(16, d))
        a, b, c = draw(x, sample_seed), draw(x, sample_seed), draw(x, (sample_seed + 1) % 2 ** 31)
        if not np.allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True):
            return False, f"the same seed gave different samples (max |Δ| {np.nanmax(np.abs(a - b)):.3g})"
        other = "changes them" if not np.allclose(a, c) else "gives the same samples (a deterministic posterior)"
        return True, f"the same seed gives identical samples; another seed {other}"

    def weights():
        mixture = agents_base.as_mixture(post)
        if mixture is None:
            return True, "not a finite mixture (no components / num_components): nothing to check"
        c = int(mixture.num_components)
        lw = mixture.log_weights()
        if lw is None:
            return True, f"uniform mixture of {c} component{'s' if c > 1 else ''}"
        lw = np.asarray(lw, np.float64)
        if lw.shape != (c,) or np.any(np.isnan(lw)) or np.any(lw == np.inf):
            return False, f"log_weights() must be [{c}] without NaN/+inf, got shape {lw.shape}"
        total = float(np.logaddexp.reduce(lw))
        if abs(total) > 1e-4:
            return False, f"log_weights() are not normalised: logsumexp = {total:.3g} (must be 0)"
        return True, f"{c} weights, logsumexp = {total:.1e}, Kish ESS {np.exp(-np.logaddexp.reduce(2 * lw)):.1f}"

    def dependence():
        anchors = rng.normal(size=(64, d))
        u = rng.normal(size=(64, d))
        near = anchors + 1e-4 * u / np.linalg.norm(u, axis=1, keepdims=True)
        out = draw(np.concatenate([anchors, near]))  # [M, 128, K]
        z = out - out.mean(-1, keepdims=True)  # logits are defined up to a constant per class vector
        za, zn = z[:, :64], z[:, 64:]
        probs = np.exp(out - out.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        spread = probs[:, :64].std(axis=0).max(-1)  # [64] largest class-probability std over samples
        varying = spread >= 1e-3
        if not varying.any():
            return True, ("samples agree at every anchor (probability spread < 1e-3): joint = product of "
                          "marginals by construction; the agent expresses no epistemic uncertainty here")
        za, zn = za[:, varying] - za[:, varying].mean(0), zn[:, varying] - zn[:, varying].mean(0)
        cov = (za * zn).sum((0, 2))
        corr = cov / np.sqrt((za ** 2).sum((0, 2)) * (zn ** 2).sum((0, 2)) + 1e-30)
        med = float(np.median(corr))
        if med < 0.5:
            return False, (f"samples differ (median probability spread {np.median(spread[varying]):.3g}) but are "
                           f"uncorrelated between inputs 1e-4 apart (median correlation {med:.2f} over "
                           f"{int(varying.sum())} anchors): they behave as independent draws per input, so joint "
                           f"predictions equal the product of marginals (marginal-only)")
        return True, (f"median correlation {med:.3f} between samples at inputs 1e-4 apart over "
                      f"{int(varying.sum())} anchors where samples differ: joint predictions carry the dependence")

    for probe_name, fn in (("shapes", shapes), ("finite", finite), ("coherence", coherence), ("seed", seed_probe),
                           ("mixture weights", weights), ("joint dependence", dependence)):
        probes.append(_probe(probe_name, fn))
    estimate = None
    if estimate_time:
        t0 = time.perf_counter()
        try:
            ok, msg, estimate = _paper_grid_estimate(agent, name, prior, seed)
        except Exception as err:
            ok, msg = False, f"evaluate raised {type(err).__name__}: {err}"
        probes.append(Probe("paper grid time", ok, msg, time.perf_counter() - t0))
    return AgentReport(name, tuple(probes), estimate)
