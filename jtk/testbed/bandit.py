"""The neural bandit of the Neural Testbed with Thompson sampling (Osband et al. 2022, §5, App. E, Alg. 4).

A bandit problem is a testbed environment at temperature 0.1 plus N actions
x_1..x_N ~ N(0, I_d) drawn once; pulling x pays a Bernoulli reward with mean
R̄_x = p(y = 1 | x). Thompson sampling with a jtk agent: at every step draw
*one* function from the agent's posterior, act greedily on it (ties broken by
tiny noise), observe the reward, store it in a uniform replay buffer, then take
``steps_per_obs`` Adam steps on minibatches of 128 from the buffer, with the
agent's regulariser annealed as 1/t (the reference's incremental updates;
docs/reference.md, "Bandit"). The L2 at t = 1 is the agent's L2 scale × 2ρ
(÷ K for ensembles): the reference code's rule, not the paper's App. E formula. Regret per step is max_x R̄_x − R̄_{X_t}.

Everything is one compiled ``lax.scan`` over steps, vectorised (``vmap``) over
problems: no Python loop per step or per seed. Steps run in chunks of
:data:`CHUNK` (a tqdm bar advances per chunk), so a new horizon, temperature
or number of actions of the same shape never recompiles.

>>> import jtk
>>> res = jtk.testbed.bandit.run("ensemble+", input_dim=2, horizon=500, seeds=range(2),
...                      agent_kwargs={"num_members": 10}, progress=False)
>>> res.regret.shape
(2, 500)
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import pathlib
import time
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks, _compile, _memory, train as train_lib
from jtk.agents import base as agents_base
from jtk.envs.classification import bandit_keys, environment_logits, sample_inputs, sample_prior_params

TEMPERATURE = 0.1  # §5: the temperature of every bandit problem
ACTIONS_PER_DIM = 20  # App. E: N = 20 d (the reference code uses 50 d)
CHUNK = 250  # steps per compiled call
BUILTIN = ("oracle", "uniform")  # policies that need no learning agent

# Paper settings (App. E) and a lab preset for notebooks. The paper's agents are
# the reference defaults (ensembles of K = 100); the lab preset uses K = 10.
# num_seeds: bandit problems J (seeds 0..J-1); agent_seeds: initialisation seeds (points per agent);
# runs: the preset whose run CSV a preset shares (a subset's runs count towards the whole).
PRESETS = {
    # App. E: T = 50 000, J = 20 problems, d ∈ {2, 10, 50}; §5: 10 initialisations.
    "paper": {"horizon": 50_000, "num_seeds": 20, "input_dims": (2, 10, 50), "agent_seeds": 10, "agent_kwargs": {}},
    # The part of "paper" that Figs. 8/9 need (d = 50) and that fits a 2-core session: problem 0, seed 0.
    "subset": {"horizon": 50_000, "num_seeds": 1, "input_dims": (50,), "agent_seeds": 1, "agent_kwargs": {},
               "runs": "paper"},
    "lab": {"horizon": 2_000, "num_seeds": 8, "input_dims": (2, 10), "agent_seeds": 5,
            "agent_kwargs": {"ensemble": {"num_members": 10}, "ensemble+": {"num_members": 10}}},
    # Figs. 8/9 as §5 runs them: d = 50, 10 initialisation seeds, each on its own 20 problems
    # (problem_seeds(s, 20, "per-seed")); seed 0's problems are 0-19, so its rows are the paper preset's.
    "figs89": {"horizon": 50_000, "num_seeds": 20, "input_dims": (50,), "agent_seeds": 10, "agent_kwargs": {},
               "runs": "paper", "problem_draw": "per-seed"},
}
PROBLEM_DRAWS = ("fixed", "per-seed")
PAPER_AGENTS = ("mlp", "ensemble", "dropout", "bbb", "ensemble+", "hypermodel")
# Figs. 8/9 (§5): Pearson r of log total regret (d = 50, T = 50 000) with log d_KL^τ of the 2-D testbed, and the
# bootstrap 5th and 95th percentiles, as printed in the figures.
PAPER_CORRELATION = {"kl_1": (-0.12, -0.34, 0.09), "kl_10": (0.69, 0.62, 0.75)}


# ------------------------------------------------------------------ problems
class BanditProblems(NamedTuple):
    """J bandit problems of one shape.

    Attributes:
      actions: [J, N, d] action sets, x ~ N(0, I_d).
      probs: [J, N] mean rewards R̄_x = p(y = 1 | x) of the environment.
      seeds: [J] problem seeds.
      temperature: the environments' temperature ρ.
    """

    actions: jax.Array
    probs: jax.Array
    seeds: tuple[int, ...]
    temperature: float

    @property
    def input_dim(self) -> int:
        return int(self.actions.shape[2])

    @property
    def num_actions(self) -> int:
        return int(self.actions.shape[1])


@functools.partial(_compile.jit, static_argnums=(1, 2))
def _make_problem(seed, input_dim: int, num_actions: int, temperature):
    """Bandit problem ``seed`` (key schedule :func:`jtk.envs.classification.bandit_keys`): N actions x ~ N(0, I)
    and one environment from the testbed prior → actions [N, d], mean rewards p(y = 1 | action) [N]."""
    k_actions, k_env = bandit_keys(seed)
    actions = sample_inputs(k_actions, num_actions, input_dim)
    params = sample_prior_params(k_env, input_dim, (50, 50), 2)
    return actions, jax.nn.softmax(environment_logits(params, actions, temperature), axis=-1)[:, 1]


def problem_seeds(agent_seed: int, num_problems: int, draw: str = "fixed") -> list[int]:
    """The bandit problem seeds that initialisation seed ``agent_seed`` runs on.

    Args:
      agent_seed: the initialisation seed s ≥ 0.
      num_problems: problems per seed J ≥ 1.
      draw: "fixed": every seed runs problems 0..J-1 (the paper and lab presets); "per-seed": seed s runs its own
        problems s·J..s·J + J-1, as §5 varies the problems with the seed (seed 0 keeps 0..J-1).

    Returns:
      J problem seeds.
    """
    agent_seed = _checks.integer("agent_seed", agent_seed, minimum=0)
    num_problems = _checks.integer("num_problems", num_problems, minimum=1)
    _checks.one_of("draw", draw, PROBLEM_DRAWS)
    first = agent_seed * num_problems if draw == "per-seed" else 0
    return list(range(first, first + num_problems))


def make_problems(input_dim: int = 2, seeds: Iterable[int] | int = 5, num_actions: int | None = None,
                  temperature: float = TEMPERATURE) -> BanditProblems:
    """Draws bandit problems from the testbed prior (Alg. 4, step 1).

    Args:
      input_dim: action dimension d ≥ 1.
      seeds: distinct problem seeds (an int J means 0..J-1); each picks an environment and an action set.
      num_actions: N ≥ 2 (default 20 · d, as in App. E).
      temperature: the environment temperature ρ > 0 (0.1 in the paper).

    Returns:
      :class:`BanditProblems` with actions [J, N, d] and mean rewards [J, N].
    """
    input_dim = _checks.integer("input_dim", input_dim, minimum=1)
    num_actions = ACTIONS_PER_DIM * input_dim if num_actions is None else num_actions
    num_actions = _checks.integer("num_actions", num_actions, minimum=2)
    temperature = _checks.temperature("temperature", temperature)
    seeds = _checks.seeds("seeds", seeds, unique=True)
    per_problem = num_actions * (input_dim + 1.0) + _memory.mlp_params((input_dim, 50, 50, 2))
    _memory.check_budget(f"bandit problems: seeds {len(seeds)} × (num_actions {num_actions} × input_dim {input_dim} "
                         f"+ environment parameters) float32 × 2", _memory.nbytes(2, len(seeds), per_problem),
                         "lower num_actions, input_dim or the number of seeds")
    made = [_make_problem(s, input_dim, num_actions, jnp.float32(temperature)) for s in seeds]
    return BanditProblems(jnp.stack([m[0] for m in made]), jnp.stack([m[1] for m in made]), seeds, temperature)


# ------------------------------------------------------------------ policies
class Policy:
    """A bandit policy as three pure functions (vmapped over problems, scanned over steps)."""

    def init(self, key, actions, probs, hyper) -> Any:
        raise NotImplementedError

    def act(self, state, actions, probs, hyper, key) -> jax.Array:
        raise NotImplementedError

    def update(self, state, actions, action, reward, t, hyper, key) -> Any:
        return state

    @property
    def relative_cost(self) -> float:
        """A rough measure of the work per bandit step, for scheduling only: runs side by side start the costliest
        first (:meth:`jtk.widgets.bandit.BanditExplorer.run_all`). 0: no training."""
        return 0.0


def _random_argmax(values: jax.Array, key: jax.Array) -> jax.Array:
    """argmax with ties broken uniformly at random (noise of 1e-7, as the reference)."""
    return jnp.argmax(values + 1e-7 * jax.random.uniform(key, values.shape)).astype(jnp.int32)


@dataclass(frozen=True)
class Oracle(Policy):
    """Knows the environment: always pulls argmax R̄_x (zero regret)."""

    def init(self, key, actions, probs, hyper):
        return jnp.zeros(())

    def act(self, state, actions, probs, hyper, key):
        return _random_argmax(probs, key)


@dataclass(frozen=True)
class UniformPolicy(Policy):
    """Thompson sampling with the uniform agent: every action equally likely, expected regret max R̄ − mean R̄."""

    def init(self, key, actions, probs, hyper):
        return jnp.zeros(())

    def act(self, state, actions, probs, hyper, key):
        return _random_argmax(jnp.zeros(probs.shape), key)


class ThompsonState(NamedTuple):
    trainable: Any
    fixed: Any
    opt_state: Any
    replay_actions: jax.Array  # [capacity] int32 indices of the pulled actions
    replay_rewards: jax.Array  # [capacity] int32 rewards


@dataclass(frozen=True)
class ThompsonSampling(Policy):
    """Thompson sampling with an online jtk agent (Alg. 4 with the reference's incremental updates).

    Args:
      agent: a :class:`jtk.agents.JaxAgent` with ``incremental`` True.
      steps_per_obs: Adam steps after each observation (1).
      batch_size: replay minibatch size (128).
      replay_capacity: replay buffer size; the oldest observation is overwritten (10 000).
    """

    agent: agents_base.JaxAgent
    steps_per_obs: int = 1
    batch_size: int = 128
    replay_capacity: int = 10_000

    def __post_init__(self):
        _checks.instance("agent", self.agent, agents_base.JaxAgent, "a jtk JaxAgent (e.g. jtk.agents.make('ensemble'))")
        _checks.integer("steps_per_obs", self.steps_per_obs, minimum=1)
        _checks.integer("batch_size", self.batch_size, minimum=1)
        _checks.integer("replay_capacity", self.replay_capacity, minimum=1)

    def init(self, key, actions, probs, hyper):
        # The agent sees the action set as its "rows": cached prior outputs and
        # batch.index refer to action indices.
        rows = train_lib.Dataset(actions, jnp.zeros(actions.shape[0], jnp.int32),
                                 jnp.asarray(actions.shape[0], jnp.int32))
        trainable, fixed = self.agent.init(key, rows, hyper)
        return ThompsonState(trainable, fixed, self.agent.optimizer().init(trainable),
                             jnp.zeros(self.replay_capacity, jnp.int32), jnp.zeros(self.replay_capacity, jnp.int32))

    @property
    def relative_cost(self) -> float:
        """Minibatch rows trained per observation, over all the agent's networks."""
        return float(self.steps_per_obs * self.batch_size * self.agent.num_networks)

    def act(self, state: ThompsonState, actions, probs, hyper, key):
        k_sample, k_tie = jax.random.split(key)
        posterior = self.agent.finalize(state.trainable, state.fixed)
        logits = self.agent.sample(posterior, actions, k_sample, 1)[0]  # one sampled environment [N, 2]
        return _random_argmax(jax.nn.softmax(logits, axis=-1)[:, 1], k_tie)

    def update(self, state: ThompsonState, actions, action, reward, t, hyper, key):
        slot = (t - 1) % self.replay_capacity
        replay_a = state.replay_actions.at[slot].set(action)
        replay_r = state.replay_rewards.at[slot].set(reward)
        size = jnp.minimum(t, self.replay_capacity)
        # The agent's regulariser is annealed as 1/t (docs/reference.md, "Bandit"; App. E).
        hyper_t = {k: (v / t if k in self.agent.annealed else v) for k, v in hyper.items()}
        optimizer = self.agent.optimizer()
        grad_fn = jax.grad(self.agent.loss)

        def sgd(carry, k):
            trainable, opt_state = carry
            k_idx, k_loss = jax.random.split(k)
            idx = jax.random.randint(k_idx, (self.batch_size,), 0, size)  # uniform, with replacement
            pulled = replay_a[idx]
            batch = train_lib.Batch(actions[pulled], replay_r[idx], jnp.ones(self.batch_size), pulled)
            grads = grad_fn(trainable, state.fixed, batch, hyper_t, k_loss)
            updates, opt_state = optimizer.update(grads, opt_state, trainable)
            return (optax.apply_updates(trainable, updates), opt_state), None

        (trainable, opt_state), _ = jax.lax.scan(sgd, (state.trainable, state.opt_state),
                                                 jax.random.split(key, self.steps_per_obs))
        return ThompsonState(trainable, state.fixed, opt_state, replay_a, replay_r)


def make_policy(agent, *, steps_per_obs: int = 1, batch_size: int = 128, replay_capacity: int = 10_000,
                **agent_kwargs) -> Policy:
    """A bandit policy from an agent name ("oracle", "uniform" or an online jtk agent) or a JaxAgent.

    Raises:
      ValueError: an unknown name, or an agent that cannot be updated online.
    """
    steps_per_obs = _checks.integer("steps_per_obs", steps_per_obs, minimum=1)
    batch_size = _checks.integer("batch_size", batch_size, minimum=1)
    replay_capacity = _checks.integer("replay_capacity", replay_capacity, minimum=1)
    if isinstance(agent, Policy):
        return agent
    if isinstance(agent, str):
        if agent in BUILTIN and agent_kwargs:
            _checks.keywords(f"agent_kwargs: agent {agent!r}", agent_kwargs, (), what="hyperparameter")
        if agent == "oracle":
            return Oracle()
        if agent == "uniform":
            return UniformPolicy()
        online = online_agents()
        if agent not in online:
            close = difflib.get_close_matches(agent, list(BUILTIN) + online, n=3)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise ValueError(f"agent must be one of {list(BUILTIN) + online} (agents that can be updated "
                             f"online), got {agent!r}{hint}")
        try:
            agent = agents_base.make(agent, **agent_kwargs)
        except TypeError as err:
            raise TypeError(f"agent_kwargs: {err}") from None
    elif agent_kwargs:
        raise TypeError("agent_kwargs only apply when agent is given by name")
    if not isinstance(agent, agents_base.JaxAgent) or not agent.incremental:
        raise ValueError(f"agent must be a jtk agent that can be updated online ({online_agents()}), "
                         f"got {type(agent).__name__}")
    return ThompsonSampling(dataclasses.replace(agent, num_classes=2), steps_per_obs, batch_size, replay_capacity)


def online_agents() -> list[str]:
    """Registered agent names that can be updated online (usable in the bandit)."""
    out = []
    for name in agents_base.names():
        try:
            agent = agents_base.make(name)
        except (TypeError, ValueError):
            continue
        if isinstance(agent, agents_base.JaxAgent) and agent.incremental:
            out.append(name)
    return out


# ------------------------------------------------------------------ runner
@functools.partial(_compile.jit, static_argnums=(0,), keep=True)
def _init(policy: Policy, keys, actions, probs, hyper):
    return jax.vmap(policy.init, (0, 0, 0, None))(keys, actions, probs, hyper)


@functools.partial(_compile.jit, static_argnums=(0,), keep=True)
def _run_chunk(policy: Policy, states, keys, actions, probs, hyper, t0):
    """CHUNK steps of every problem: states and keys [J], t0 the step before the chunk."""

    def one(state, key, actions, probs):
        best = jnp.max(probs)

        def step(state, t):
            k = jax.random.fold_in(key, t)
            k_act, k_reward, k_update = jax.random.split(k, 3)
            action = policy.act(state, actions, probs, hyper, k_act)
            reward = jax.random.bernoulli(k_reward, probs[action]).astype(jnp.int32)
            state = policy.update(state, actions, action, reward, t, hyper, k_update)
            return state, (best - probs[action], action)

        return jax.lax.scan(step, state, t0 + 1 + jnp.arange(CHUNK))

    return jax.vmap(one)(states, keys, actions, probs)


@dataclass(frozen=True)
class BanditResult:
    """Per-step regret of one agent on J problems.

    Attributes:
      agent: the agent's name.
      regret: [J, T] expected regret max R̄ − R̄_{X_t} of each step.
      actions: [J, T] indices of the pulled actions.
      problems: the :class:`BanditProblems`.
      seconds: wall time of the run (compilation included).
    """

    agent: str
    regret: np.ndarray
    actions: np.ndarray
    problems: BanditProblems
    seconds: float

    @property
    def total_regret(self) -> np.ndarray:
        """Total regret per problem: [J]."""
        return self.regret.sum(axis=1)

    def frame(self, every: int = 1) -> pd.DataFrame:
        """Cumulative regret as a long DataFrame (agent, seed, t, regret, cumulative_regret, average_regret)."""
        every = _checks.integer("every", every, minimum=1)
        cum = np.cumsum(self.regret, axis=1)
        steps = np.arange(every, self.regret.shape[1] + 1, every)
        if steps.size == 0 or steps[-1] != self.regret.shape[1]:
            steps = np.append(steps, self.regret.shape[1])
        rows = {"agent": [], "seed": [], "t": [], "regret": [], "cumulative_regret": []}
        for j, seed in enumerate(self.problems.seeds):
            rows["agent"] += [self.agent] * len(steps)
            rows["seed"] += [seed] * len(steps)
            rows["t"] += steps.tolist()
            rows["regret"] += self.regret[j, steps - 1].tolist()
            rows["cumulative_regret"] += cum[j, steps - 1].tolist()
        df = pd.DataFrame(rows)
        df["average_regret"] = df["cumulative_regret"] / df["t"]
        df["input_dim"] = self.problems.input_dim
        return df


def run(agent, input_dim: int = 2, horizon: int = 1000, seeds: Iterable[int] | int = 5, *,
        problems: BanditProblems | None = None, num_actions: int | None = None,
        temperature: float = TEMPERATURE, agent_seed: int = 0, steps_per_obs: int = 1, batch_size: int = 128,
        replay_capacity: int = 10_000, agent_kwargs: dict | None = None, name: str | None = None,
        progress: bool = True, checkpoint=None, checkpoint_seconds: float = 60.0) -> BanditResult:
    """Runs Thompson sampling (Alg. 4) with one agent on J problems at once.

    Args:
      agent: "oracle", "uniform", the name of an online agent (:func:`online_agents`)
        or a :class:`jtk.agents.JaxAgent` with ``incremental`` True.
      input_dim: action dimension d (ignored when ``problems`` is given).
      horizon: number of steps T ≥ 1.
      seeds: distinct problem seeds (an int J means 0..J-1).
      problems: ready-made problems (overrides input_dim, seeds, num_actions, temperature).
      num_actions: N ≥ 2 (default 20 d).
      temperature: environment temperature ρ (0.1); the agent is told it, as in the reference.
      agent_seed: seed (int in [0, 2**32) or JAX PRNG key) of the agent's initialisation and sampling
        (the problems stay the same).
      steps_per_obs: Adam steps per observation (1).
      batch_size: replay minibatch (128).
      replay_capacity: replay buffer size (10 000).
      agent_kwargs: hyperparameters for an agent given by name.
      name: label of the result (default: the agent's name).
      progress: show a tqdm bar over chunks of steps.
      checkpoint: a file path (``.npz``) or None. With a path the run saves its state (agent, optimiser, replay
        buffer, regret so far) there atomically at least every ``checkpoint_seconds`` and at the end, and a run
        with the same agent, problems, agent_seed and settings starts from the chunk saved there instead of
        step 1: a killed run continues where it stopped, with the same numbers as an uninterrupted one (the
        keys of step t depend only on t). A saved run may be continued to a longer horizon. A file saved by a
        different run raises ValueError. The caller deletes the file once the result is stored.
      checkpoint_seconds: the longest time between two saves.

    Returns:
      :class:`BanditResult` with regret [J, T]; ``seconds`` adds the time of the runs that wrote the checkpoint.
    """
    horizon = _checks.integer("horizon", horizon, minimum=1)
    agent_key = _checks.as_key(agent_seed, "agent_seed")
    agent_kwargs = _checks.mapping("agent_kwargs", agent_kwargs)
    replay_capacity = _checks.integer("replay_capacity", replay_capacity, minimum=1)
    if problems is None:
        num_seeds = len(_checks.seeds("seeds", seeds, unique=True))
        dim = _checks.integer("input_dim", input_dim, minimum=1)
    elif not isinstance(problems, BanditProblems):
        raise TypeError(f"problems must be jtk.testbed.bandit.BanditProblems, got {type(problems).__name__}")
    else:
        num_seeds, dim = len(problems.seeds), problems.input_dim
    _check_run_memory(num_seeds, horizon, replay_capacity, dim)
    policy = make_policy(agent, steps_per_obs=steps_per_obs, batch_size=batch_size,
                         replay_capacity=replay_capacity, **agent_kwargs)
    if problems is None:
        problems = make_problems(input_dim, seeds, num_actions, temperature)
    return _simulate(policy, _result_name(agent, policy, name), [problems], [agent_key], horizon, progress,
                     checkpoint, checkpoint_seconds)[0]


def run_seeds(agent, agent_seeds: Iterable[int] | int, problems: BanditProblems | list[BanditProblems],
              horizon: int = 1000, *, steps_per_obs: int = 1, batch_size: int = 128, replay_capacity: int = 10_000,
              agent_kwargs: dict | None = None, name: str | None = None, progress: bool = True, checkpoint=None,
              checkpoint_seconds: float = 60.0) -> list[BanditResult]:
    """Runs Thompson sampling with one agent for several initialisation seeds in one program.

    Every (seed, problem) pair is one row of the same vmapped scan that :func:`run` runs for one seed, so a whole
    study of an agent at one d (the paper's 10 seeds × 20 problems) is one compiled program and one loop over
    chunks of steps, with the state on the device between chunks. Each row's numbers are those of
    ``run(agent, problems=problems_s, agent_seed=s)``: the keys of a row depend only on its seed, its problem
    and the step, and the rows of a vmap do not interact.

    Args:
      agent: as :func:`run`.
      agent_seeds: distinct initialisation seeds S (an int S means 0..S-1).
      problems: the problems of every seed, or a list of one :class:`BanditProblems` per seed (the paper draws the
        problems per seed), all of one input_dim, num_actions and temperature.
      horizon, steps_per_obs, batch_size, replay_capacity, agent_kwargs, name, progress: as :func:`run`.
      checkpoint: as :func:`run`: one file for the whole program (every seed's state).
      checkpoint_seconds: as :func:`run`.

    Returns:
      one :class:`BanditResult` per seed, in the order of ``agent_seeds``; each one's ``seconds`` is the run's wall
      time times its share of the rows (its problems over all), so summed over seeds it is the run's wall time.
    """
    agent_seeds = _checks.seeds("agent_seeds", agent_seeds, unique=True)
    horizon = _checks.integer("horizon", horizon, minimum=1)
    agent_kwargs = _checks.mapping("agent_kwargs", agent_kwargs)
    replay_capacity = _checks.integer("replay_capacity", replay_capacity, minimum=1)
    problems_list = [problems] * len(agent_seeds) if isinstance(problems, BanditProblems) else problems
    if isinstance(problems_list, (str, bytes)) or not isinstance(problems_list, (list, tuple)) or not all(
            isinstance(p, BanditProblems) for p in problems_list):
        raise TypeError(f"problems must be jtk.testbed.bandit.BanditProblems or a list of them (one per seed), got "
                        f"{_checks.describe(problems)}")
    if len(problems_list) != len(agent_seeds):
        raise ValueError(f"problems must hold one BanditProblems per seed: {len(agent_seeds)} agent_seeds, got "
                         f"{len(problems_list)}")
    shapes = {(p.input_dim, p.num_actions, float(p.temperature)) for p in problems_list}
    if len(shapes) > 1:
        raise ValueError(f"problems must share input_dim, num_actions and temperature (one program), got "
                         f"{sorted(shapes)}")
    _check_run_memory(sum(len(p.seeds) for p in problems_list), horizon, replay_capacity, problems_list[0].input_dim)
    policy = make_policy(agent, steps_per_obs=steps_per_obs, batch_size=batch_size,
                         replay_capacity=replay_capacity, **agent_kwargs)
    keys = [_checks.as_key(s, "agent_seeds entries") for s in agent_seeds]
    return _simulate(policy, _result_name(agent, policy, name), list(problems_list), keys, horizon, progress,
                     checkpoint, checkpoint_seconds)


def _result_name(agent, policy: Policy, name: str | None) -> str:
    if name is not None:
        return name
    return agent if isinstance(agent, str) else type(getattr(policy, "agent", policy)).__name__


def _check_run_memory(num_rows: int, horizon: int, replay_capacity: int, dim: int) -> None:
    _memory.check_budget(f"bandit regret and actions: seeds {num_rows} × horizon {horizon} × 8 bytes × 3, plus "
                         f"replay buffers seeds × replay_capacity × (input_dim + 2) float32",
                         _memory.nbytes(3, num_rows, horizon + CHUNK, dtype=np.float64)
                         + _memory.nbytes(num_rows, replay_capacity, dim + 2),
                         "lower horizon, replay_capacity or the number of seeds")


def _simulate(policy: Policy, name: str, problems_list: list[BanditProblems], agent_keys: list, horizon: int,
              progress: bool, checkpoint, checkpoint_seconds: float) -> list[BanditResult]:
    """The runs of ``policy`` with agent key ``agent_keys[i]`` on ``problems_list[i]``, all as the rows of one
    vmapped program (rows: every problem of every key), in chunks of :data:`CHUNK` steps; one result per key."""
    first = problems_list[0]
    hyper = {}
    if isinstance(policy, ThompsonSampling):
        prior = agents_base.ProblemInfo(first.input_dim, 2, 1, first.temperature, 1)
        hyper = {k: jnp.asarray(v, jnp.float32) for k, v in policy.agent.online_hyper(prior).items()}
    row_keys = []
    for agent_key, problems in zip(agent_keys, problems_list):
        base = jax.random.fold_in(agent_key, 0x7A6E7)
        row_keys.append(jax.vmap(lambda s, b=base: jax.random.fold_in(b, s))(jnp.asarray(problems.seeds, jnp.uint32)))
    keys = jnp.concatenate(row_keys)
    actions = jnp.concatenate([p.actions for p in problems_list])
    probs = jnp.concatenate([p.probs for p in problems_list])
    init_keys = jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys)
    step_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    start = time.perf_counter()
    states = _init(policy, init_keys, actions, probs, hyper)
    num_chunks = -(-horizon // CHUNK)
    regrets, pulled = [], []
    done, earlier_seconds = 0, 0.0
    if checkpoint is not None:
        checkpoint = pathlib.Path(checkpoint)
        fingerprint = _fingerprint(policy, problems_list, agent_keys, hyper)
        saved = _load_checkpoint(checkpoint, fingerprint, states)
        if saved is not None:
            states, regrets, pulled, done, earlier_seconds = saved
    pending = []  # chunks dispatched whose outputs are not yet on the host

    def collect(keep: int) -> None:
        while len(pending) > keep:
            r, a = pending.pop(0)
            regrets.append(np.asarray(r))
            pulled.append(np.asarray(a))

    last_save = time.perf_counter()
    dim = first.input_dim
    for c in tqdm(range(done, num_chunks), desc=f"bandit {name} d={dim}", disable=not progress,
                  unit="chunk", initial=min(done, num_chunks), total=num_chunks):
        states, out = _run_chunk(policy, states, step_keys, actions, probs, hyper, jnp.asarray(c * CHUNK, jnp.int32))
        pending.append(out)
        # The next chunk is dispatched before this one's outputs are copied (the device never waits for the host);
        # waiting for the one before keeps the progress bar at most one chunk ahead.
        collect(keep=1)
        if checkpoint is not None and (time.perf_counter() - last_save >= checkpoint_seconds
                                       or c == num_chunks - 1):
            collect(keep=0)
            _save_checkpoint(checkpoint, fingerprint, states, regrets, pulled,
                             earlier_seconds + time.perf_counter() - start)
            last_save = time.perf_counter()
    collect(keep=0)
    regret = np.concatenate(regrets, axis=1)[:, :horizon]
    pulled_all = np.concatenate(pulled, axis=1)[:, :horizon]
    seconds = earlier_seconds + time.perf_counter() - start
    num_rows = regret.shape[0]
    out, row = [], 0
    for problems in problems_list:
        j = len(problems.seeds)
        out.append(BanditResult(name, regret[row:row + j], pulled_all[row:row + j], problems, seconds * j / num_rows))
        row += j
    assert row == num_rows and regret.shape == (num_rows, horizon)
    return out


def _fingerprint(policy: Policy, problems_list: list[BanditProblems], agent_keys: list, hyper) -> str:
    """What a checkpoint must match: the policy (agent and its settings), the problems, the agents' keys and the
    online hyperparameters. One run (one key) hashes as it always has, so its checkpoints stay valid; several
    hash each run's fingerprint in order."""
    if len(problems_list) > 1:
        h = hashlib.sha256(b"runs")
        for problems, key in zip(problems_list, agent_keys):
            h.update(_fingerprint(policy, [problems], [key], hyper).encode())
        return h.hexdigest()
    problems, agent_key = problems_list[0], agent_keys[0]
    h = hashlib.sha256()
    h.update(repr(policy).encode())
    h.update(repr((problems.seeds, problems.input_dim, problems.num_actions, float(problems.temperature))).encode())
    h.update(np.asarray(problems.probs, np.float32).tobytes())
    h.update(np.asarray(jax.random.key_data(agent_key) if jnp.issubdtype(agent_key.dtype, jax.dtypes.prng_key)
                        else agent_key).tobytes())
    h.update(repr(sorted((k, float(v)) for k, v in hyper.items())).encode())
    return h.hexdigest()


def _leaves_to_arrays(states) -> list[np.ndarray]:
    out = []
    for leaf in jax.tree_util.tree_leaves(states):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        out.append(np.asarray(leaf))
    return out


def _save_checkpoint(path: pathlib.Path, fingerprint: str, states, regrets, pulled, seconds: float) -> None:
    from jtk.results import write_checkpoint

    arrays = {f"leaf_{i}": a for i, a in enumerate(_leaves_to_arrays(states))}
    write_checkpoint(path, fingerprint, {"chunks": len(regrets), "seconds": seconds,
                                         "regret": np.concatenate(regrets, axis=1),
                                         "actions": np.concatenate(pulled, axis=1), **arrays})


def _load_checkpoint(path: pathlib.Path, fingerprint: str, template):
    """(states, regrets, pulled, chunks done, seconds) from ``path``, or None when there is no file (or it is torn)."""
    from jtk.results import read_checkpoint

    saved = read_checkpoint(path, fingerprint, mismatch="delete it or pass another path (a different run: its agent, "
                            "problems, agent_seed or settings)")
    if saved is None:
        return None
    f = saved[1]
    leaves, treedef = jax.tree_util.tree_flatten(template)
    restored = []
    for i, like in enumerate(leaves):
        value = f[f"leaf_{i}"]
        if jnp.issubdtype(like.dtype, jax.dtypes.prng_key):
            restored.append(jax.random.wrap_key_data(jnp.asarray(value), impl=jax.random.key_impl(like)))
        else:
            restored.append(jnp.asarray(value, like.dtype))
    chunks, regret, actions = int(f["chunks"]), f["regret"], f["actions"]
    regrets = [regret[:, c * CHUNK:(c + 1) * CHUNK] for c in range(chunks)]
    pulled = [actions[:, c * CHUNK:(c + 1) * CHUNK] for c in range(chunks)]
    return jax.tree_util.tree_unflatten(treedef, restored), regrets, pulled, chunks, float(f["seconds"])


def expected_uniform_regret(problems: BanditProblems, horizon: int) -> np.ndarray:
    """Closed-form expected total regret of uniform random actions: T · (max R̄ − mean R̄), per problem [J]."""
    horizon = _checks.integer("horizon", horizon, minimum=1)
    p = np.asarray(problems.probs, np.float64)
    return horizon * (p.max(axis=1) - p.mean(axis=1))


def regret_correlation(points: pd.DataFrame, metric: str = "kl_10", regret: str = "total_regret", *,
                       log: bool = True, num_bootstrap: int = 2000, seed: int = 0) -> dict[str, float]:
    """Pearson correlation of a testbed score with bandit regret, with a bootstrap 5–95 % interval.

    As in §5 (Fig. 8/9, 16/17): one point per agent and initialisation seed,
    correlation on a log scale, interval from resampling the points.

    Args:
      points: DataFrame with one row per (agent, seed) and columns ``metric`` and ``regret``.
      metric: testbed column, e.g. "kl_1" or "kl_10".
      regret: regret column.
      log: correlate log(metric) with log(regret) (the paper's scale).
      num_bootstrap: bootstrap resamples (≥ 100).
      seed: bootstrap seed.

    Returns:
      dict with r, lo (5th percentile), hi (95th percentile), num_points.
    """
    if not isinstance(points, pd.DataFrame):
        raise TypeError(f"points must be a pandas DataFrame, got {type(points).__name__}")
    for col in (metric, regret):
        if col not in points.columns:
            raise ValueError(f"points has no column {col!r} (columns: {list(points.columns)})")
    num_bootstrap = _checks.integer("num_bootstrap", num_bootstrap, minimum=100)
    x = points[metric].to_numpy(np.float64)
    y = points[regret].to_numpy(np.float64)
    if len(x) < 3:
        raise ValueError(f"points must have at least 3 rows to correlate, got {len(x)}")
    if log:
        if np.any(x <= 0) or np.any(y <= 0):
            raise ValueError(f"log=True needs positive {metric} and {regret}; clip or use log=False")
        x, y = np.log(x), np.log(y)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError(f"{metric} and {regret} must be finite")

    def corr(a, b):
        a, b = a - a.mean(axis=-1, keepdims=True), b - b.mean(axis=-1, keepdims=True)
        den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
        return np.where(den > 0, (a * b).sum(-1) / np.where(den > 0, den, 1.0), np.nan)

    idx = np.random.default_rng(_checks.seed_int("seed", seed)).integers(0, len(x), size=(num_bootstrap, len(x)))
    boot = corr(x[idx], y[idx])
    lo, hi = np.nanpercentile(boot, [5, 95])
    return {"r": float(corr(x, y)), "lo": float(lo), "hi": float(hi), "num_points": int(len(x))}


def paper_verdict(corr: pd.DataFrame, d: int = 50) -> str:
    """Whether measured correlations at ``d`` agree with Figs. 8/9 (§5), in one sentence built from the numbers.

    Agreement means what the paper claims: the d_KL^10 correlation's 5–95 % interval lies above 0, the d_KL^1
    interval includes 0, and r with d_KL^10 exceeds r with d_KL^1.

    Args:
      corr: rows with input_dim, metric ("kl_1", "kl_10"), r, lo, hi (as ``regret_correlation`` gives them).
      d: the input dimension to judge (50 in the paper).
    """
    _checks.frame("corr", corr, ["input_dim", "metric", "r", "lo", "hi"]), _checks.integer("d", d, minimum=1)
    rows = corr[corr.input_dim == d].set_index("metric")
    if len(rows) < 2 or rows[["r", "lo", "hi"]].isna().any().any():
        return f"Too few points at d = {d} to correlate: no verdict."
    m, j = rows.loc["kl_1"], rows.loc["kl_10"]
    joint_sig, marg_sig = j.lo > 0, m.lo > 0 or m.hi < 0
    joint = ("the joint correlation is positive with an interval above 0, as in Fig. 9" if joint_sig else
             f"the joint correlation's interval [{j.lo:.2f}, {j.hi:.2f}] includes 0, where Fig. 9's (0.62, 0.75) does "
             f"not" if j.lo <= 0 <= j.hi else "the joint correlation is negative, against Fig. 9")
    marginal = ("the marginal correlation's interval includes 0, as in Fig. 8" if not marg_sig else
                f"the marginal correlation's interval [{m.lo:.2f}, {m.hi:.2f}] excludes 0, where Fig. 8's does not")
    stronger = j.r > m.r
    agree = joint_sig and not marg_sig and stronger
    return (f"{'Agrees' if agree else 'Does not yet agree'} with the paper at d = {d}: {joint}; {marginal}; "
            f"r with d_KL^10 is {'above' if stronger else 'not above'} r with d_KL^1 "
            f"({j.r:.2f} vs {m.r:.2f}; paper 0.69 vs −0.12).")
