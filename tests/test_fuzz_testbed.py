"""Bad inputs to jtk.testbed (grids, evaluation, statistics, sweeps, the bandit and the testbed's studies)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

import jtk
import jtk.testbed.bandit_study as SBANDIT
import jtk.testbed.engine as ENG
import jtk.testbed.epinet_hypermodel as SEPI
import jtk.testbed.estimator_table as SEST
import jtk.testbed.grids as GRIDS
import jtk.testbed.known_limits as SLIMITS
import jtk.testbed.zoo as SZOO
import jtk.testbed.zoo_report as SZOOREP
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (AG, call, case, cases, frame_of, good_problem, refused_clearly, TE, VE)


@functools.lru_cache(None)
def results_frame():
    rows = [dict(agent="a", temperature=0.1, num_train=n, tau=t, seed=s, kl=0.1 * (s + 1), train_seconds=0.0,
                 eval_seconds=0.0, frac_finite=1.0, kl_std=0.0, accuracy=0.5, ece=0.1, input_dim=2,
                 num_classes=2, likelihood="exact")
            for n in (1, 10) for t in (1, 10) for s in range(2)]
    return pd.DataFrame(rows)


def with_col(frame, **cols):
    out = frame.copy()
    for k, v in cols.items():
        out[k] = v
    return out


class UserAgent:
    """A researcher's own agent (an object with ``fit``): its samples are zeros with ``fill`` in class 0, or
    ``fit`` / ``sample_logits`` raise the given exception."""

    name = "student_agent"

    def __init__(self, fill=None, fit_error=None, sample_error=None, all_neg_inf=False):
        self.fill, self.fit_error, self.sample_error, self.all_neg_inf = fill, fit_error, sample_error, all_neg_inf

    def fit(self, x, y, seed=0, prior=None):
        if self.fit_error is not None:
            raise self.fit_error
        return UserPosterior(self)


class UserPosterior:
    def __init__(self, agent):
        self.agent = agent

    def sample_logits(self, x, num_samples, seed=0):
        if self.agent.sample_error is not None:
            raise self.agent.sample_error
        out = np.zeros((num_samples, len(x), 2), np.float32)  # [M, n, K]
        if self.agent.fill is not None:
            out[..., 0] = self.agent.fill
        if self.agent.all_neg_inf:
            out[0, 0] = -np.inf
        return out


PROBLEM_NAMED = "seed=0 num_train=10 temperature=0.1 tau=1"  # how messages name good_problem()


def evaluate_user(agent, **kw):
    return jtk.testbed.evaluate(agent, [good_problem()], progress=False, **kw)

# --- bandit
B = jtk.testbed.bandit
run = lambda **kw: B.run(**{**dict(agent="uniform", horizon=5, seeds=1, progress=False), **kw})  # noqa: E731
case(B.problem_seeds, "agent_seed-neg", call(B.problem_seeds, -1, 20), VE, "agent_seed")
case(B.problem_seeds, "num_problems-0", call(B.problem_seeds, 0, 0), VE, "num_problems")
case(B.problem_seeds, "draw-unknown", call(B.problem_seeds, 0, 20, "random"), VE, "draw fixed per-seed")
run_seeds = lambda **kw: B.run_seeds(**{**dict(agent="uniform", agent_seeds=2, problems=None, horizon=5,  # noqa: E731
                                                 progress=False), **kw})
case(B.run_seeds, "agent_seeds-duplicate", lambda: run_seeds(agent_seeds=[1, 1]), VE, "agent_seeds")
case(B.run_seeds, "horizon-0", lambda: run_seeds(horizon=0), VE, "horizon")
case(B.run_seeds, "problems-none", lambda: run_seeds(), TE, "problems BanditProblems")
case(B.run_seeds, "problems-per-seed-count",
     lambda: run_seeds(problems=[B.make_problems(seeds=1)] * 3), VE, "problems agent_seeds")
case(jtk.testbed.bandit.run, "agent-unknown", lambda: run(agent="ensembel"), VE, "agent")
case(jtk.testbed.bandit.run, "agent-knn", lambda: run(agent="knn"), VE, "agent")
case(jtk.testbed.bandit.run, "agent-int", lambda: run(agent=3), VE, "agent")
for hid, h, e in [("0", 0, VE), ("neg", -5, VE), ("float", 5.0, TE), ("bool", True, TE), ("huge", 10 ** 13, VE)]:
    case(jtk.testbed.bandit.run, f"horizon-{hid}", lambda h=h: run(horizon=h), e, "horizon")
for sid, s, e in [("0", 0, VE), ("neg-entry", [-1], VE), ("2**32", [2 ** 32], VE), ("float", 2.5, TE),
                  ("str", "3", TE), ("empty", [], VE), ("bool", True, TE)]:
    case(jtk.testbed.bandit.run, f"seeds-{sid}", lambda s=s: run(seeds=s), e, "seeds")
case(jtk.testbed.bandit.run, "seeds-duplicate", lambda: run(seeds=[0, 0]), VE, "seeds [0]")
case(jtk.testbed.bandit.run, "seeds-duplicates", lambda: run(seeds=[3, 1, 3, 1, 2]), VE, "seeds [1, 3]")
case(jtk.testbed.bandit.make_problems, "seeds-duplicate", call(jtk.testbed.bandit.make_problems, seeds=[5, 5]), VE, "seeds [5]")
case(jtk.testbed.bandit.run, "input_dim-0", lambda: run(input_dim=0), VE, "input_dim")
case(jtk.testbed.bandit.run, "input_dim-huge", lambda: run(input_dim=10 ** 9), VE, "input_dim")
case(jtk.testbed.bandit.run, "num_actions-1", lambda: run(num_actions=1), VE, "num_actions")
for tid, t in [("0", 0.0), ("1e-45", 1e-45), ("nan", np.nan), ("inf", np.inf)]:
    case(jtk.testbed.bandit.run, f"temperature-{tid}", lambda t=t: run(temperature=t), VE, "temperature")
case(jtk.testbed.bandit.run, "agent_seed-2**32", lambda: run(agent_seed=2 ** 32), VE, "agent_seed")
case(jtk.testbed.bandit.run, "agent_seed-float", lambda: run(agent_seed=1.5), TE, "agent_seed")
case(jtk.testbed.bandit.run, "agent_kwargs-unknown", lambda: run(agent="ensemble", agent_kwargs={"num_member": 3}), TE,
     "num_members")
case(jtk.testbed.bandit.run, "agent_kwargs-for-uniform", lambda: run(agent_kwargs={"num_members": 3}), TE, "num_members")
case(jtk.testbed.bandit.run, "agent_kwargs-list", lambda: run(agent="ensemble", agent_kwargs=[("num_members", 3)]), TE,
     "agent_kwargs")
case(jtk.testbed.bandit.run, "batch_size-0", lambda: run(batch_size=0), VE, "batch_size")
case(jtk.testbed.bandit.run, "replay_capacity-huge", lambda: run(agent="ensemble", replay_capacity=10 ** 13), VE,
     "replay_capacity")
case(jtk.testbed.bandit.run, "problems-wrong-type", lambda: run(problems={"seeds": [0]}), TE, "problems")
case(jtk.testbed.bandit.make_problems, "num_actions-float", call(B.make_problems, num_actions=2.5), TE, "num_actions")
case(jtk.testbed.bandit.expected_uniform_regret, "horizon-0", lambda: B.expected_uniform_regret(B.make_problems(seeds=1), 0),
     VE, "horizon")

POINTS = lambda: pd.DataFrame({"kl_10": [0.5, 1.0, 2.0, 3.0], "total_regret": [10.0, 20.0, 15.0, 40.0]})  # noqa
case(jtk.testbed.bandit.regret_correlation, "seed-2**32", lambda: B.regret_correlation(POINTS(), seed=2 ** 32), VE, "seed")
case(jtk.testbed.bandit.regret_correlation, "metric-unknown", lambda: B.regret_correlation(POINTS(), metric="kl_1"), VE,
     "kl_1")
case(jtk.testbed.bandit.regret_correlation, "num_bootstrap-10", lambda: B.regret_correlation(POINTS(), num_bootstrap=10), VE,
     "num_bootstrap")
ES = jtk.testbed.ensemble_study
MAKE_COMP = ES.make_ensemble_comparison
case(jtk.testbed.ensemble_study.make_ensemble_comparison, "temperature-neg", call(MAKE_COMP, temperature=-1.0), VE, "temperature")
case(jtk.testbed.ensemble_study.make_ensemble_comparison, "seed-2**32", call(MAKE_COMP, seed=2 ** 32), VE, "seed")
case(jtk.testbed.ensemble_study.make_ensemble_comparison, "prior_scales-no-0", call(MAKE_COMP, prior_scales=(1.0,)), VE, "prior_scales")
case(jtk.testbed.ensemble_study.make_ensemble_comparison, "resolution-huge", call(MAKE_COMP, resolution=10 ** 6), VE, "resolution")
case(jtk.testbed.ensemble_study.kl_vs_num_train, "seeds-0", call(ES.kl_vs_num_train, seeds=0), VE, "seeds")
case(jtk.testbed.ensemble_study.kl_vs_num_train, "num_test-huge", call(ES.kl_vs_num_train, num_test=10 ** 9), VE, "num_test")
case(jtk.testbed.ensemble_study.kl_vs_num_train, "temperature-1e-45", call(ES.kl_vs_num_train, temperature=1e-45), VE, "temperature")

# --- jtk.testbed
T = jtk.testbed
case(jtk.testbed.Problem, "temperature-0", lambda: good_problem(temperature=0.0), VE, "temperature")
case(jtk.testbed.Problem, "temperature-1e-45", lambda: good_problem(temperature=1e-45), VE, "temperature")
case(jtk.testbed.Problem, "num_train-0", lambda: good_problem(num_train=0), VE, "num_train")
case(jtk.testbed.Problem, "tau-0", lambda: good_problem(tau=0), VE, "tau")
case(jtk.testbed.Problem, "seed-2**32", lambda: good_problem(seed=2 ** 32), VE, "seed")
case(jtk.testbed.Problem, "seed-bool", lambda: good_problem(seed=True), TE, "seed")
case(jtk.testbed.Problem, "num_test-0", lambda: good_problem(num_test=0), VE, "num_test")
case(jtk.testbed.Problem, "num_samples-huge", lambda: good_problem(num_samples=10 ** 12), VE, "num_samples")
case(jtk.testbed.Problem, "test_inputs-unknown", lambda: good_problem(test_inputs="grid"), VE, "test_inputs")
case(jtk.testbed.problems, "name-unknown", call(T.problems, "nope"), VE, "name")
case(jtk.testbed.problems, "seeds-0", call(T.problems, "quick", seeds=0), VE, "seeds")
case(jtk.testbed.problems, "seeds-float", call(T.problems, "quick", seeds=2.0), TE, "seeds")
case(jtk.testbed.evaluate, "agent-none", lambda: T.evaluate(None, [good_problem()], progress=False), TE, "agent")
case(jtk.testbed.evaluate, "problems-unknown", lambda: T.evaluate(jtk.agents.make("uniform"), "nope", progress=False),
     VE, "problems")
case(jtk.testbed.evaluate, "likelihood-unknown",
     lambda: T.evaluate(jtk.agents.make("uniform"), [good_problem()], likelihood="exactly", progress=False), VE,
     "likelihood")
case(jtk.testbed.evaluate, "problems-empty", lambda: T.evaluate(jtk.agents.make("uniform"), [], progress=False), VE,
     "problems")
case(jtk.testbed.evaluate, "duplicate-problems",
     lambda: T.evaluate(jtk.agents.make("uniform"), [good_problem(), good_problem()], progress=False), VE, "problems")
case(jtk.testbed.grid, "seeds-duplicate", call(T.grid, seeds=[2, 2]), VE, "seeds [2]")
for eid, ex in [("str-dask", "dask"), ("str-tcp", "tcp://127.0.0.1:8786"), ("str-local", "local"), ("int", 2),
                ("object", object())]:
    case(jtk.testbed.evaluate, f"executor-{eid}", lambda ex=ex: evaluate_user(jtk.agents.make("uniform"), executor=ex),
         TE, "executor submit Client")
case(jtk.testbed.evaluate, "executor-dask-hint", lambda: evaluate_user(jtk.agents.make("uniform"), executor="dask"), TE,
     "executor 'dask' jtk.executors.executor('dask') --scheduler")
case(jtk.testbed.runs.evaluate_to_file, "executor-str",
     lambda: jtk.testbed.runs.evaluate_to_file("uniform", [good_problem()], "unused.csv", executor="dask", progress=False),
     TE, "executor 'dask'")
case(jtk.testbed.sweep.run, "executor-str",
     lambda: jtk.testbed.sweep.run([jtk.testbed.sweep.Config("uniform")], [good_problem()], "unused", executor="dask", progress=False),
     TE, "executor 'dask'")
# the agent's own faults, named with the agent and the problem (message and __cause__: tests below)
for fid, fill in [("inf", np.inf), ("nan", np.nan)]:
    case(jtk.testbed.evaluate, f"logits-{fid}", lambda fill=fill: evaluate_user(UserAgent(fill=fill)), VE,
         f"student_agent {PROBLEM_NAMED} not finite")
case(jtk.testbed.evaluate, "logits-row-all--inf", lambda: evaluate_user(UserAgent(fill=-np.inf, all_neg_inf=True)), VE,
     f"student_agent {PROBLEM_NAMED} not finite -inf")
case(jtk.testbed.evaluate, "logits--inf-valid", lambda: evaluate_user(UserAgent(fill=-np.inf)), None, "")  # probability 0
case(jtk.testbed.evaluate, "fit-raises", lambda: evaluate_user(UserAgent(fit_error=ZeroDivisionError("boom"))),
     ZeroDivisionError, f"student_agent fit {PROBLEM_NAMED} boom")
case(jtk.testbed.evaluate, "sample_logits-raises",
     lambda: evaluate_user(UserAgent(sample_error=ValueError("bad shapes"))), VE,
     f"student_agent sample_logits {PROBLEM_NAMED} bad shapes")
case(jtk.testbed.summarize, "not-a-frame", call(T.summarize, [1, 2]), TE, "results")
case(jtk.testbed.summarize, "kl-str", lambda: T.summarize(with_col(results_frame(), kl="0.1")), TE,
     "results['kl'] numeric '0.1'")
case(jtk.testbed.summarize, "kl-bool", lambda: T.summarize(with_col(results_frame(), kl=True)), TE, "results['kl']")
case(jtk.testbed.summarize, "accuracy-str", lambda: T.summarize(with_col(results_frame(), accuracy="high")), TE,
     "results['accuracy'] numeric")
case(jtk.testbed.summarize, "missing-accuracy", lambda: T.summarize(results_frame().drop(columns=["accuracy"])), VE,
     "required ['accuracy']")
case(jtk.testbed.summarize, "missing-accuracy-and-ece",
     lambda: T.summarize(results_frame().drop(columns=["accuracy", "ece"])), VE, "['accuracy', 'ece']")
case(jtk.testbed.summarize, "no-timings-valid",  # optional columns may be left out
     lambda: T.summarize(results_frame().drop(columns=["train_seconds", "eval_seconds", "likelihood"])), None, "")
case(jtk.testbed.summarize, "se-unknown", lambda: T.summarize(results_frame(), se="bootstrap"), VE, "se")
case(jtk.testbed.summarize, "kl-nan", lambda: T.summarize(with_col(results_frame(), kl=np.nan)), VE, "kl")
case(jtk.testbed.summarize, "duplicated-rows",
     lambda: T.summarize(pd.concat([results_frame(), results_frame()], ignore_index=True)), VE, "results")
case(jtk.testbed.summarize, "missing-column", lambda: T.summarize(results_frame().drop(columns=["kl"])), VE, "kl")
case(jtk.testbed.breakdown, "missing-num_train", lambda: T.breakdown(results_frame().drop(columns=["num_train"])), VE,
     "num_train")
case(jtk.testbed.breakdown, "temperature-str", lambda: T.breakdown(with_col(results_frame(), temperature="0.1")), TE,
     "results['temperature']")
SWEEP_ROWS = lambda taus: with_col(results_frame()[results_frame()["tau"].isin(taus)], config="mlp__l2_scale=1")  # noqa
case(jtk.testbed.sweep.best_configs, "tau-1-only", lambda: jtk.testbed.sweep.best_configs(SWEEP_ROWS([1])), VE, "tau 10 [1]")
case(jtk.testbed.sweep.best_configs, "tau-10-only", lambda: jtk.testbed.sweep.best_configs(SWEEP_ROWS([10])), VE, "tau [10]")

# testbed helpers
for fn in (T.paper_problems, T.quick_problems, T.classification_problems):
    case(fn, "seeds-0", call(fn, 0), VE, "seeds")
    case(fn, "seeds-str", call(fn, "2"), TE, "seeds")
case(T.check_agent, "agent-none", call(T.check_agent, None), TE, "agent")
case(T.check_agent, "num_samples-0", lambda: T.check_agent(jtk.agents.make("uniform"), num_samples=0), VE,
     "num_samples")
case(T.check_agent, "seed-2**32", lambda: T.check_agent(jtk.agents.make("uniform"), seed=2 ** 32), VE, "seed")
case(T.check_agent, "prior-dict", lambda: T.check_agent(jtk.agents.make("uniform"), prior={"input_dim": 2}), TE,
     "prior")
case(T.seed_se, "not-a-series", call(T.seed_se, "abc"), TE, "per_seed_means")
case(T.seed_se, "2-d", call(T.seed_se, np.zeros((2, 2))), VE, "per_seed_means")
case(T.paired_difference, "tau-0", lambda: T.paired_difference(results_frame(), results_frame(), 0), VE, "tau")
case(T.paired_difference, "baseline-list", lambda: T.paired_difference(results_frame(), [1], 1), TE, "baseline")
case(T.agent_seed, "problem-wrong", call(T.agent_seed, "p", 0), TE, "problem")
case(T.agent_seed, "purpose-float", lambda: T.agent_seed(good_problem(), 1.5), TE, "purpose")
case(T.load_problem, "problem-wrong", call(T.load_problem, {"seed": 0}), TE, "problem")
case(T.padded_count, "0", call(T.padded_count, 0), VE, "num_groups")
case(T.padded_count, "float", call(T.padded_count, 2.5), TE, "num_groups")
case(T.sort_rows, "not-a-frame", call(T.sort_rows, [1, 2]), TE, "results")
case(T.sort_rows, "missing-seed", lambda: T.sort_rows(results_frame().drop(columns=["seed"])), VE, "seed")
case(jtk.testbed.sweep.Config, "agent-int", call(jtk.testbed.sweep.Config, 3), TE, "agent")
case(jtk.testbed.sweep.Config, "hyperparameters-dict", call(jtk.testbed.sweep.Config, "mlp", {"l2_scale": 1.0}), TE, "hyperparameters")
case(jtk.testbed.sweep.configs, "not-a-mapping", call(jtk.testbed.sweep.configs, ["mlp"]), TE, "sweeps")
case(jtk.testbed.sweep.configs, "agents-unknown", call(jtk.testbed.sweep.configs, {"mlp": {"l2_scale": [1.0]}}, agents=["nope"]), VE,
     "agents")
case(jtk.testbed.sweep.load, "dir-missing", call(jtk.testbed.sweep.load, "/nonexistent/jtk-sweep"), VE, "results_dir")
case(jtk.testbed.sweep.sweep_by_name, "unknown", call(jtk.testbed.sweep.sweep_by_name, "nope"), VE, "name")

# bandit
case(B.make_policy, "agent-unknown", call(B.make_policy, "ensembel"), VE, "agent")
case(B.make_policy, "batch_size-0", call(B.make_policy, "ensemble", batch_size=0), VE, "batch_size")
case(B.ThompsonSampling, "agent-str", call(B.ThompsonSampling, "ensemble"), TE, "agent")
case(B.ThompsonSampling, "steps_per_obs-0", lambda: B.ThompsonSampling(AG.make("ensemble"), steps_per_obs=0), VE,
     "steps_per_obs")
case(B.paper_verdict, "not-a-frame", call(B.paper_verdict, [1, 2]), TE, "corr")
case(B.paper_verdict, "d-0", lambda: B.paper_verdict(pd.DataFrame({"metric": ["kl_10"]}), d=0), VE, "d")
case(ES.FitSettings, "num_members-0", call(ES.FitSettings, num_members=0), VE, "num_members")
case(ES.FitSettings, "learning_rate-nan", call(ES.FitSettings, learning_rate=np.nan), VE, "learning_rate")
case(ES.probability_grid, "resolution-0", call(ES.probability_grid, 0), VE, "resolution")
case(ES.probability_grid, "extent-neg", call(ES.probability_grid, 10, -1.0), VE, "extent")
case(ES.lab_data, "temperature-0", call(ES.lab_data, 0, 0.0, 10, 10, np.zeros((4, 2))), VE, "temperature")

# testbed: the oracle agent and chunks
case(T.OracleAgent, "problems-empty", call(T.OracleAgent, []), VE, "problems")
case(T.OracleAgent, "problems-wrong", call(T.OracleAgent, [1, 2]), TE, "problems")
case(jtk.testbed.runs.verify, "sample-0", call(jtk.testbed.runs.verify, "/nonexistent/rows.csv", sample=0), VE, "sample")
case(jtk.testbed.runs.problems_from_record, "not-a-list", call(jtk.testbed.runs.problems_from_record, "abc"), TE, "record")

for mod in (SBANDIT, SZOO, SZOOREP, SEPI, SEST, SLIMITS):  # every study's command: argv is a list of str or None
    short = mod.__name__.rsplit(".", 1)[1]
    case(mod.main, f"{short}-argv-str", call(mod.main, "--preset quick"), TE, "argv")
    case(mod.main, f"{short}-argv-int", call(mod.main, ["--seeds", 3]), TE, "argv")


MC_ROWS = frame_of(likelihood=["mc"], tau=[1], kl=[0.1])

# --- jtk.testbed.bandit_study
case(SBANDIT.import_log, "path-int", call(SBANDIT.import_log, 3, "regret.csv"), TE, "path")
case(SBANDIT.import_log, "path-missing", call(SBANDIT.import_log, "/nonexistent/run.log", "regret.csv"), VE, "path")
case(SBANDIT.import_log, "regret_csv-none", call(SBANDIT.import_log, "run.log", None), TE, "regret_csv")
case(SBANDIT.per_dim_correlations, "points-list", call(SBANDIT.per_dim_correlations, [1, 2]), TE, "points")
case(SBANDIT.per_dim_correlations, "points-columns", call(SBANDIT.per_dim_correlations, frame_of(input_dim=[2])), VE,
     "points total_regret")
case(SBANDIT.per_dim_correlations, "metrics-str", call(SBANDIT.per_dim_correlations, frame_of(input_dim=[2]), "kl_1"),
     TE, "metrics")
case(SBANDIT.per_dim_correlations, "metrics-empty", call(SBANDIT.per_dim_correlations, frame_of(input_dim=[2]), ()), VE,
     "metrics")
# --- jtk.testbed.zoo
case(SZOO.run, "name-int", call(SZOO.run, 3, [good_problem()]), TE, "name")
case(SZOO.run, "problems-empty", call(SZOO.run, "mlp", []), VE, "problems")
case(SZOO.run, "problems-str", lambda: SZOO.run("mlp", ["seed=0"]), TE, "Problem")
case(SZOO.run, "agent-no-fit", call(SZOO.run, "mlp", [good_problem()], agent=3), TE, "agent")
# --- jtk.testbed.estimator_table
case(SEST.table, "frames-list", call(SEST.table, [MC_ROWS]), TE, "frames")
case(SEST.table, "frames-empty", call(SEST.table, {}), VE, "frames")
case(SEST.table, "frames-columns", call(SEST.table, {"mlp": frame_of(tau=[1])}), VE, "frames['mlp'] likelihood")
case(SEST.table, "frames-no-mc", call(SEST.table, {"mlp": MC_ROWS.assign(likelihood="exact")}), VE, "frames['mlp']")
case(SEST.table, "mlp_name-int", call(SEST.table, {"mlp": MC_ROWS}, mlp_name=0), TE, "mlp_name")
# testbed: the grid-run entry points
case(GRIDS.check_problems, "empty", call(GRIDS.check_problems, []), VE, "problems")
case(GRIDS.check_problems, "not-problems", call(GRIDS.check_problems, [1]), TE, "problems")
case(GRIDS.check_problems, "repeated", lambda: GRIDS.check_problems([good_problem(), good_problem()]), VE, "problems")
case(ENG.make_chunks, "problems-str", call(ENG.make_chunks, "quick", None), TE, "problems_")
case(ENG.make_chunks, "problems-ints", call(ENG.make_chunks, [1, 2], None), TE, "problems_")
case(ENG.evaluate_chunk, "likelihood-unknown", lambda: ENG.evaluate_chunk(UserAgent(), [[good_problem()]], "a",
                                                                           "exactly"), VE, "likelihood")
case(ENG.evaluate_chunk, "groups-flat", lambda: ENG.evaluate_chunk(UserAgent(), [good_problem()], "a"), TE, "groups")
case(ENG.evaluate_chunk, "groups-empty", lambda: ENG.evaluate_chunk(UserAgent(), [], "a"), TE, "groups")
case(ENG.evaluate_chunk, "name-int", lambda: ENG.evaluate_chunk(UserAgent(), [[good_problem()]], 3), TE, "name")
case(ENG.compile_ahead, "threads-0", call(ENG.compile_ahead, [], threads=0), VE, "threads")
case(ENG.compile_ahead, "tasks-not-tuples", call(ENG.compile_ahead, [1]), TE, "tasks")
case(ENG.prepare_local_run, "tasks-str", call(ENG.prepare_local_run, "abc"), TE, "tasks")
case(ENG.run_grid, "chunk_args-none", call(ENG.run_grid, [1], None, print, stop=RuntimeError), TE, "chunk_args")
case(ENG.run_grid, "save-none", call(ENG.run_grid, [1], print, None, stop=RuntimeError), TE, "save")
case(ENG.run_grid, "tasks-int", call(ENG.run_grid, 3, print, print, stop=RuntimeError), TE, "tasks")
# the ensemble study (the labs' widgets call these)
case(ES.fit_ensembles, "lengths-differ", call(ES.fit_ensembles, [np.zeros((3, 2))], [np.zeros(3)], [0.1], [], [0]), VE,
     "seeds")
case(ES.fit_ensembles, "empty", call(ES.fit_ensembles, [], [], [], [], []), VE, "xs")
case(ES.fit_joint_agents, "num_train-0", call(ES.fit_joint_agents, 0.1, 0, [0], np.zeros((4, 2)), 10), VE,
     "num_train_values")
case(ES.fit_joint_agents, "max_tau-above-num_test", call(ES.fit_joint_agents, 0.1, 0, [5], np.zeros((4, 2)), 10,
                                                          max_tau=20), VE, "max_tau")
case(ES.member_probs, "x-1d", call(ES.member_probs, None, np.zeros(4)), VE, "x")
case(ES.member_label_logprobs, "xs-1d", call(ES.member_label_logprobs, [np.zeros((1, 1))], np.zeros(4), np.zeros(4)),
     VE, "xs")
case(ES.member_label_logprobs, "ys-label-2", call(ES.member_label_logprobs, [np.zeros((1, 1))], np.zeros((4, 2)),
                                                  np.full(4, 2)), VE, "ys")


# ------------------------------------------------------------------ the agent's own faults name agent and problem
@pytest.mark.parametrize("where", ["fit_error", "sample_error"])
def test_agent_exception_names_agent_and_problem_and_chains_the_original(where):
    original = ZeroDivisionError("division by zero in the student's code")
    with pytest.raises(ZeroDivisionError) as info:  # the same type: `except ZeroDivisionError` still catches it
        evaluate_user(UserAgent(**{where: original}))
    message = str(info.value)
    call_name = "fit" if where == "fit_error" else "sample_logits"
    assert f"agent 'student_agent' raised ZeroDivisionError in {call_name} on problem {PROBLEM_NAMED}" in message
    assert str(original) in message
    assert info.value.__cause__ is original


def test_agent_exception_of_another_shape_becomes_runtime_error():
    original = KeyError("weights")  # KeyError quotes its message: re-raised as RuntimeError, chained
    with pytest.raises(RuntimeError, match=f"student_agent.*fit.*{PROBLEM_NAMED}") as info:
        evaluate_user(UserAgent(fit_error=original))
    assert info.value.__cause__ is original


def test_agent_keyboard_interrupt_is_the_testbeds_interruption():
    with pytest.raises(jtk.testbed.Interrupted) as info:  # run_chunks' own handling, not a wrapped exception
        evaluate_user(UserAgent(fit_error=KeyboardInterrupt()))
    assert info.value.__cause__ is None


def test_own_validation_messages_are_unchanged_by_the_agent_context():
    with pytest.raises(ValueError) as info:
        evaluate_user(UserAgent(), likelihood="exact")  # jtk's check: the user posterior is no finite mixture
    assert str(info.value).startswith("likelihood='exact' needs a finite-mixture posterior")
    assert info.value.__cause__ is None
    with pytest.raises(ValueError, match="^problems must hold at least one Problem"):
        jtk.testbed.evaluate(UserAgent(), [], progress=False)


@pytest.mark.parametrize("fill, found", [(np.inf, "100 +inf"), (np.nan, "100 NaN")])
def test_non_finite_logits_name_agent_and_problem(fill, found):
    with pytest.raises(ValueError) as info:
        evaluate_user(UserAgent(fill=fill))
    message = str(info.value)
    assert message.startswith(f"agent 'student_agent' returned sampled logits that are not finite on problem "
                              f"{PROBLEM_NAMED}: sample_logits gave {found}"), message
    assert "kl_values" not in message and info.value.__cause__ is None


def test_nan_scores_of_a_vectorised_agent_name_agent_and_problem():
    """The vectorised path scores inside XLA: NaN KL values are reported with the agent and the problem."""
    p = good_problem(tau=10)
    kl = np.array([0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="agent 'mlp' gave sampled logits that are not finite on problem "
                                         "seed=0 num_train=10 temperature=0.1 tau=10: 1 of 3"):
        jtk.testbed.engine.result_rows([p], [kl], [np.full((3, 2), 0.5)], [np.zeros(3, int)], "exact", 0.0, 0.0, "mlp")


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
