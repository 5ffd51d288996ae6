"""The Neural Testbed (Osband et al. 2022): problem grids, evaluation of agents, summary statistics, agent probes,
runs on disk, sweeps, the bandit (§5) and the ensemble study. It owns everything that scores a classification agent
on environments of the MLP prior, and may import the platform (jtk's top-level modules), :mod:`jtk.envs` and
:mod:`jtk.agents`; never :mod:`jtk.regression`, :mod:`jtk.ppc`, :mod:`jtk.course`, :mod:`jtk.plots`,
:mod:`jtk.widgets` or :mod:`jtk.cli` (tests/test_architecture.py). Modules: :mod:`~jtk.testbed.grids` (problems),
:mod:`~jtk.testbed.engine` (data, scoring, chunks, :func:`evaluate`), :mod:`~jtk.testbed.stats` (leaderboards),
:mod:`~jtk.testbed.probes` (:func:`check_agent`), :mod:`~jtk.testbed.runs` (resumable runs, ``jtk verify``),
:mod:`~jtk.testbed.sweep`, :mod:`~jtk.testbed.bandit`, :mod:`~jtk.testbed.ensemble_study`.

The public surface of a study module (:mod:`~jtk.testbed.bandit_study`, :mod:`~jtk.testbed.zoo`,
:mod:`~jtk.testbed.zoo_report`, :mod:`~jtk.testbed.epinet_hypermodel`, :mod:`~jtk.testbed.estimator_table`,
:mod:`~jtk.testbed.known_limits`) is its command, ``main(argv)`` (``argv`` a list of str, or None for the command
line; ``python -m MODULE`` and ``jtk reproduce`` call it), and the few functions that another module, a notebook or
a page calls, named in its ``__all__``; each checks its arguments at entry (tests/test_fuzz_testbed.py holds a
bad-input case for every one). Its other functions are the study's internals: importable (its tests use them), not
documented, and free to change.

The module constants that tune the engine (``MEMBERS_PER_CHUNK``, ``SPLIT_BRANCHES_AHEAD``, ...) are set where they
live, ``jtk.testbed.engine``: the package does not re-export them, so setting one here cannot silently do nothing.
"""

from jtk.results import Interrupted, load_results
from jtk.testbed.engine import (LIKELIHOODS, RESULT_COLUMNS, OracleAgent, agent_seed, compile_ahead, compiles_ahead,
                                evaluate, evaluate_chunk, load_problem, padded_count, prepare_local_run, run_grid,
                                sort_rows)
from jtk.testbed.grids import (GRIDS, GROUP_COLUMNS, PAPER_NUM_TRAIN, PAPER_TAUS, PAPER_TEMPERATURES,
                               PROBLEM_COLUMNS, Problem, check_problems, classification_problems, grid,
                               paper_problems, problems, quick_problems)
from jtk.testbed.probes import AgentReport, Probe, check_agent
from jtk.testbed.stats import (SE_KINDS, SUMMARY_COLUMNS, InfiniteKLWarning, breakdown, paired_difference, seed_se,
                               summarize)

__all__ = [
    # problems
    "Problem", "grid", "paper_problems", "quick_problems", "classification_problems", "problems", "GRIDS",
    "check_problems", "PAPER_TEMPERATURES", "PAPER_NUM_TRAIN", "PAPER_TAUS", "GROUP_COLUMNS", "PROBLEM_COLUMNS",
    # evaluation
    "evaluate", "evaluate_chunk", "load_problem", "agent_seed", "OracleAgent", "sort_rows", "run_grid",
    "compile_ahead", "compiles_ahead", "prepare_local_run", "padded_count", "LIKELIHOODS", "RESULT_COLUMNS",
    "Interrupted", "load_results",
    # statistics
    "summarize", "breakdown", "seed_se", "paired_difference", "InfiniteKLWarning", "SE_KINDS", "SUMMARY_COLUMNS",
    # probes
    "check_agent", "AgentReport", "Probe",
]

_ENGINE_SETTINGS = ("MAX_GROUPS_PER_CHUNK", "MEMBER_ROWS_PER_CHUNK", "COMPONENT_ROWS_PER_BLOCK", "MEMBERS_PER_CHUNK",
                    "SPLIT_BRANCHES_AHEAD", "PAD_STEP", "Chunk")


_SUBMODULES = ("grids", "engine", "stats", "probes", "runs", "sweep", "bandit", "ensemble_study")


def __getattr__(name: str):
    """Submodules load on first use (``jtk.testbed.runs.verify``); the engine's settings are refused here."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"jtk.testbed.{name}")
    if name in _ENGINE_SETTINGS:
        raise AttributeError(f"jtk.testbed.{name} lives in jtk.testbed.engine (jtk.testbed.engine.{name}); read and "
                             f"set it there: a copy here would not change what the engine uses")
    raise AttributeError(f"module 'jtk.testbed' has no attribute {name!r}")
