"""The testbed's problems: :class:`Problem` (one problem of App. B) and the grids of them.

A problem is (temperature, num_train, τ, seed, ...): an environment drawn from the MLP prior, a training set, N test
τ-samples. Problems differing only in τ share environment and training data. :func:`check_problems` is the one
check of a problems list (non-empty, Problems only, no repeats) that every runner (``evaluate``, ``jtk testbed
--out``, ``jtk sweep``) applies.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from jtk import _checks, _memory, nets
from jtk.agents import base as agents_base

__all__ = ["PAPER_TEMPERATURES", "PAPER_NUM_TRAIN", "PAPER_TAUS", "GROUP_COLUMNS", "PROBLEM_COLUMNS", "Problem",
           "grid", "paper_problems", "quick_problems", "classification_problems", "GRIDS", "problems",
           "check_problems"]

PAPER_TEMPERATURES = (0.01, 0.1, 0.5)
PAPER_NUM_TRAIN = (1, 3, 10, 30, 100, 300, 1000)
PAPER_TAUS = (1, 10)

GROUP_COLUMNS = ["seed", "num_train", "temperature", "input_dim"]  # rows sharing one environment
PROBLEM_COLUMNS = ["agent", "tau", "seed", "num_train", "temperature", "input_dim", "test_inputs"]  # one row each


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



def problem_text(p: Problem) -> str:
    """How messages name a problem: its seed, num_train, temperature and tau (input_dim when not 2)."""
    dim = f" input_dim={p.input_dim}" if p.input_dim != 2 else ""
    return f"seed={p.seed} num_train={p.num_train} temperature={p.temperature} tau={p.tau}{dim}"




def check_problems(problems_: Iterable[Any], what: str = "problems") -> list[Problem]:
    """The one check of a problems list: at least one, every item a :class:`Problem`, none repeated.

    Returns:
      The problems as a list.

    Raises:
      ValueError: an empty list, or problems that occur more than once (each would count twice).
      TypeError: an item that is not a Problem.
    """
    problems_ = list(problems_)
    if not problems_:
        raise ValueError(f"{what} must hold at least one Problem, got an empty list")
    for i, p in enumerate(problems_):
        if not isinstance(p, Problem):
            raise TypeError(f"{what}[{i}] must be a jtk.testbed.Problem, got {type(p).__name__}")
    seen: dict[Problem, int] = {}
    for p in problems_:
        seen[p] = seen.get(p, 0) + 1
    repeated = [p for p, c in seen.items() if c > 1]
    if repeated:
        shown = "; ".join(problem_text(p) for p in repeated[:5])
        raise ValueError(f"{what} must not repeat: {len(repeated)} problems occur more than once "
                         f"(e.g. {shown}); check for duplicate seeds")
    return problems_

