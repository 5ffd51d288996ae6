"""Every public callable of jtk has a bad-input case (in tests/test_fuzz_<package>.py) or an exemption with its
reason, and the cases' ids are unique; benchmarks/fuzz_inventory.py prints the inventory."""

from __future__ import annotations

import functools
import importlib

import jtk
import jtk.agents.nonparametric
from _fuzz import COVERED, all_cases, key

# Importing a package's test file declares its cases (tests/_fuzz.py: case).
PACKAGE_TESTS = ("test_fuzz_envs", "test_fuzz_agents", "test_fuzz_regression", "test_fuzz_testbed", "test_fuzz_ppc",
                 "test_fuzz_plots", "test_fuzz_widgets", "test_fuzz_course", "test_fuzz_platform")
for _name in PACKAGE_TESTS:
    importlib.import_module(_name)

# Exempt: each with its reason. The rule: a name users call (documented, used by the labs, notebooks, exercises or
# benchmarks, or an entry point a user calls) validates its arguments on the host, before any tracing, and has cases;
# a helper only jtk calls (jitted internals) is left out of its module's ``__all__`` and so out of the inventory; a
# record type jtk builds and returns (often inside jit, where nothing may be checked) is exempt with its reason.
EXEMPT_STUDIES: dict[str, str] = {
    "jtk.reproduce.Step": "a record the registry builds (steps() returns them); command / parse check a Step given",
    "jtk.reproduce.Study": "a record of the registry (STUDIES); a user gets one from get(name), which has cases",
    "jtk.reproduce.Timing": "a record quick_time reads from a study's own CSV; never built from a user's input",
}
EXEMPT_A: dict[str, str] = {
    "jtk.results.timestamp": "no arguments: the current time as ISO text",
    "jtk.envs.uci.UCIInfo": "a record of the table UCI_DATASETS (a shipped copy's sums and shape); never built from "
                            "user input (uci_path / verify_uci / load_uci check the name that picks one)",
    # records jtk builds and returns; the functions that build them validate the inputs they come from
    **{k: "a record jtk returns (from the call named); never built from user input" for k in (
        "jtk.course.challenge.Board",  # score / practice
        "jtk.course.challenge.Entry",  # score / practice: a line of the board
        "jtk.course.exercises.Source",  # load_source
        "jtk.course.exercises.SourceCheck",  # load_source: a check cell of a Source
        "jtk.course.exercises.Call",  # check_plan
        "jtk.course.exercises.Prepared",  # prepare
        "jtk.course.exercises.Execution",  # execute
        "jtk.course.export.PageResult",  # export_notebook
        "jtk.envs.classification.LabData",  # sample_lab_data
        "jtk.envs.classification.ProblemKeys",  # problem_keys (the testbed's key schedule)
        "jtk.envs.classification.TestData",  # sample_test
        "jtk.envs.gp.GPSplit",  # toy_split_1d (and the PPC benchmark's own splits)
        "jtk.likelihood.KLSummary",  # summarize_kl
        "jtk.train.Batch",  # sample_batch (and the agents' own minibatches)
        "jtk.train.Dataset",  # pad_dataset (it has the cases; train / sample_batch check they get a Dataset)
    )},
}


EXEMPT_B: dict[str, str] = {
    # protocols and mixins: no constructor arguments of their own
    "jtk.agents.base.Agent": "a Protocol (fit(x, y, seed, prior)); every registered agent's fit has cases",
    "jtk.agents.base.Posterior": "a Protocol (sample_logits); the agents' posteriors have cases",
    "jtk.agents.base.MixturePosterior": "a Protocol (components, log_weights); as_mixture checks an object against it",
    "jtk.regression.base.RegressionPosterior": "an abstract base class; every model's posterior methods have cases",
    "jtk.testbed.engine.compiles_ahead": "a yes/no about this process (any executor but None means no: tests pass object())",
    # records jtk builds and returns (often inside jit, where nothing may be checked); their builders have cases
    "jtk.agents.base.JaxPosterior":
        "built by JaxAgent.fit from the trained state, never by users; its sample_logits has cases",
    "jtk.agents.base.JaxMixturePosterior":
        "built by JaxAgent.fit from the trained state, never by users; its methods have cases",
    "jtk.agents.nonparametric.ClassifierPosterior":
        "built by knn / random_forest fit from the fitted scikit-learn model; probs / components have cases",
    "jtk.agents.bayes_optimal.BayesOptimalState":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.bbb.BBBState": "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.deep_kernel.DeepKernelState":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.ensemble.EnsembleFixed":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.ensemble.EnsembleState":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.epinet.EpinetFixed":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.epinet.EpinetState":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.agents.hypermodel.HypermodelState":
        "training state built inside the agent's jitted training step; never from user input",
    "jtk.regression.deep.Member":
        "a trained network's parameters, built inside the jitted training; never from user input",
    "jtk.regression.deep.NoiseLayer":
        "a trained network's noise rate, built inside the jitted training; never from user input",
    "jtk.regression.fbnn.FBNNParams":
        "variational parameters built inside the jitted training (init_params has cases)",
    "jtk.regression.hmc.HMCResult":
        "the record hmc_chain returns, built inside the traced chain (hmc_chain has cases)",
    "jtk.regression.hmc.EMHMCResult":
        "the record em_hmc_chain returns, built inside the traced chain (em_hmc_chain has cases)",
    "jtk.regression.nng.KFACPosterior":
        "the record noisy_kfac returns, built inside the traced fit (noisy_kfac has cases)",
    "jtk.regression.blr.BLRPosterior":
        "built by BayesianLinearRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.bnn.GaussianWeightPosterior":
        "built by BBBRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.bnn.ParticlePosterior":
        "built by SGLDRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.deep.DeepRegressionPosterior":
        "built by DeepRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.fbnn.FBNNPosterior":
        "built by FBNNRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.gp.GaussianProcessPosterior":
        "built by GPRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.gp.SampledGPPosterior":
        "built by MonteCarloGP.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.hmc.HMCPosterior":
        "built by HMCRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.nng.KFACWeightPosterior":
        "built by NNGRegression.fit 's fitted state, never by users; its methods have cases",
    "jtk.regression.coverage.CoverageResult": "the record coverage_study returns (coverage_study has cases)",
    "jtk.ppc.active.DataSplit":
        "the NamedTuple split_data returns; run_tal checks a split's fields (split_data, run_tal have cases)",
    "jtk.ppc.active.TALResult": "the record run_tal returns (run_tal has cases)",
    "jtk.ppc.active.ToyState":
        "the record make_toy_state builds for the query widget (make_toy_state, toy_view have cases)",
    "jtk.ppc.ppc.Metacorrelation": "the record metacorrelation returns (metacorrelation has cases)",
    "jtk.ppc.ppc.SplitMeanCorrelation": "the record split_mean_correlation returns (it has cases)",
    "jtk.testbed.bandit.BanditProblems": "the record make_problems returns (make_problems has cases)",
    "jtk.testbed.bandit.BanditResult": "the record the bandit's run returns (run has cases)",
    "jtk.testbed.bandit.ThompsonState": "the Thompson policy's state, built inside the bandit's jitted scan",
    "jtk.testbed.ensemble_study.AgentFits": "the record fit_joint_agents returns (fit_joint_agents has cases)",
    "jtk.testbed.ensemble_study.EnsembleComparison": "the record make_ensemble_comparison returns (it has cases)",
    "jtk.testbed.probes.AgentReport": "the record check_agent returns (check_agent has cases)",
    "jtk.testbed.probes.Probe": "one probe's verdict in the AgentReport check_agent builds",
    "jtk.testbed.engine.Chunk": "built by make_chunks (it has cases); evaluate_chunk checks the groups a chunk holds",
}


# ------------------------------------------------------------------ inventory: every public callable has a case
# What counts as public: every module under jtk (pkgutil.walk_packages), less private modules (a dotted part starting
# with "_"); in each, the names of ``__all__`` or else every name not starting with "_", kept when the
# object is a function or a class defined in that very module. Keys are ``module.qualname`` read from the objects, so
# the table follows a function when the layout refactor moves it (tests import through module names only).
# Plus the data-taking methods of the classes DESIGN.md names as public API (and every registered agent's class).
DATA_METHODS = ("fit", "sample_logits", "components", "predict", "covariance", "sample_functions", "evaluate",
                "logits", "probs", "function", "sample", "sample_inputs", "joint", "posterior", "features", "mean",
                "sample_train", "sample_targets", "sample_split")
AGENT_METHODS = ("fit",)  # an agent's other methods (sample, function, ...) are its network's internals


def api_classes() -> list[type]:
    import jtk.regression.bnn
    import jtk.regression.deep
    import jtk.regression.fbnn
    import jtk.regression.hmc
    import jtk.regression.nng
    R = jtk.regression
    return [jtk.envs.Coin, jtk.envs.MLPClassification, jtk.envs.SinusoidRegression, jtk.envs.StyblinskiTangRegression,
            jtk.envs.PolynomialRegression, jtk.envs.ReLUKernelGP,
            jtk.agents.JaxPosterior, jtk.agents.JaxMixturePosterior, jtk.agents.nonparametric.ClassifierPosterior,
            R.BayesianLinearRegression, R.blr.BLRPosterior, R.GPRegression, R.gp.GaussianProcessPosterior,
            R.gp.SampledGPPosterior, R.MonteCarloGP, R.DeepRegression, R.deep.DeepRegressionPosterior,
            R.BBBRegression, R.SGLDRegression, R.bnn.WeightSamplingPosterior, R.bnn.ParticlePosterior,
            R.bnn.GaussianWeightPosterior, R.hmc.HMCRegression, R.hmc.HMCPosterior, R.nng.NNGRegression,
            R.nng.KFACWeightPosterior, R.fbnn.FBNNRegression, R.fbnn.FBNNPosterior]


@functools.lru_cache(None)
def public_callables() -> dict:
    """key -> object for every public function and class of every jtk module, and the API classes' data methods."""
    import importlib
    import inspect
    import pkgutil
    found = {}
    for info in pkgutil.walk_packages(jtk.__path__, "jtk."):
        name = info.name
        if any(part.startswith("_") for part in name.split(".")[1:]):
            continue
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None)
        names = names if names is not None else [n for n in vars(module) if not n.startswith("_")]
        for n in names:
            obj = getattr(module, n)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == name:
                found[key(obj)] = obj
    agent_classes = sorted({type(jtk.agents.make(n)) for n in jtk.agents.names()}, key=key)
    for cls, methods in [*((c, AGENT_METHODS) for c in agent_classes), *((c, DATA_METHODS) for c in api_classes())]:
        for m in methods:
            fn = inspect.getattr_static(cls, m, None)
            fn = getattr(fn, "__func__", fn)
            if inspect.isfunction(fn) and fn.__module__.startswith("jtk.") and not getattr(
                    fn, "__isabstractmethod__", False):
                found[key(fn)] = fn
    return found


# Callables that take no user input at all: each with its reason. (Keys, so the table survives a module move only
# where the object moves with its name; a stale key fails the test below.)
EXEMPT = {
    "jtk.agents.base.names": "no arguments: lists the registry",
    "jtk.agents.baseline.uniform": "no arguments: the uniform agent's factory (make('uniform', x=1) is a case)",
    "jtk.testbed.bandit.online_agents": "no arguments: lists registered agents",
    "jtk.testbed.bandit.Policy": "no arguments: the interface the bandit policies implement",
    "jtk.testbed.bandit.Oracle": "no arguments: a policy whose methods run inside the bandit's jitted scan",
    "jtk.testbed.bandit.UniformPolicy": "no arguments: a policy whose methods run inside the bandit's jitted scan",
    "jtk.cli.build_parser": "no arguments: builds the argparse parser (jtk.cli.main has the cases)",
    "jtk.envs.coin.paper_coins": "no arguments: the paper's two coins",
    "jtk.envs.regression.LinearFeatureRegression": "no arguments: the base class of the E.1-E.3 problems",
    "jtk.executors.host_cores": "no arguments: reads the machine's core count",
    "jtk.course.labs.labs_root": "no arguments: the installed labs folder",
    "jtk.course.sandbox.launcher": "no arguments: the path of the kernel launcher",
    "jtk.course.sandbox.runtime_paths": "no arguments: the paths a sandbox mounts",
    "jtk.agents.nonparametric.SklearnAgent": "no arguments: the base of knn / random_forest (they have cases)",
    "jtk.regression.base.SampledRegressionPosterior": "no arguments: a mixin (its predict / covariance have cases)",
    "jtk.regression.bnn.WeightSamplingPosterior": "no arguments: a mixin (its sample_functions is listed)",
    "jtk.plots.layout.LiveFigure": "no arguments: the base of the redrawn figures",
    # exception and warning types: jtk raises them with its own arguments; no user calls them
    **{k: "an exception / warning type jtk raises, not an entry point" for k in (
        "jtk.course.checks.CheckFailed", "jtk.course.exercises.GraderFault", "jtk.course.exercises.Rejected",
        "jtk.course.gradebook.UnmatchedStudents", "jtk.results.ConfigMismatch", "jtk.results.Interrupted",
        "jtk.results.LockedError", "jtk.results.ManifestMismatch", "jtk.results.OutputError",
        "jtk.results.ResultsWarning", "jtk.course.sandbox.WorkerError", "jtk.testbed.stats.InfiniteKLWarning",
        "jtk.envs.uci.UCIChecksumError")},
}
EXEMPT.update(EXEMPT_STUDIES)
EXEMPT.update(EXEMPT_A)
EXEMPT.update(EXEMPT_B)

def test_every_public_function_has_a_bad_input_case():
    """Every public callable has a case or an exemption with its reason (issue #48 item 5: the backlog is empty and
    gone, so a new public function without a case fails here)."""
    found = public_callables()
    missing = sorted(k for k in found if k not in COVERED and k not in EXEMPT)
    stale = sorted(k for k in EXEMPT if k not in found or k in COVERED)
    assert not stale, f"EXEMPT lists callables that are gone or now have cases: {stale}"
    assert not missing, (f"{len(missing)} of {len(found)} public callables have no bad-input case "
                         f"(add one with case(), or to EXEMPT with a reason):\n" + "\n".join(missing))


def inventory_table() -> str:
    """'cases per public callable' as text (benchmarks/fuzz_inventory.py prints it)."""
    found = public_callables()
    lines = [f"{'public callable':70s} cases"]
    for k in sorted(found):
        lines.append(f"{k:70s} {'exempt' if k in EXEMPT else COVERED.get(k, 0)}")
    covered = sum(1 for k in found if COVERED.get(k))
    lines.append(f"{len(found)} public callables, {covered} with cases, {len(EXEMPT)} exempt, "
                 f"{len(found) - covered - len(EXEMPT)} without; {len(all_cases())} cases")
    return "\n".join(lines)


def test_case_table_counts():
    """Every entry point group has cases, and all ids are unique (readable parametrisation)."""
    ids = [p.id for p in all_cases()]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    assert len(all_cases()) >= 250
