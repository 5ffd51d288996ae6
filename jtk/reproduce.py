"""``jtk reproduce``: every figure and table of the three papers that jtk regenerates, and the command for each.

The papers' studies are library modules of the package that owns them (:mod:`jtk.testbed.bandit_study`,
:mod:`jtk.regression.coverage_study`, :mod:`jtk.ppc.synthetic_study`, ...), each with ``main(argv)`` taking the
study's command-line options; this registry says which figure or table each one makes, with which arguments per
preset, which CSVs it writes, which page section it rewrites, and how long its quick preset took — read from a
record the study wrote itself (a CSV column), never typed in: where the study kept none, :func:`quick_time` says so.

    jtk reproduce list                                   # the table below, with each quick preset's time
    jtk reproduce NAME [--preset quick|paper|report] [--out-dir DIR] [--dry-run] [-- EXTRA STUDY ARGS]

Presets: ``quick`` fits a laptop (minutes to an hour on 2 cores; some rows are resumed, see each study),
``paper`` is the paper's protocol (hours to days on 2 cores; a GPU helps where the study says so), ``report``
rebuilds the tables, figures and the page section from the stored CSVs without training anything (seconds).
Without ``--out-dir`` a checkout's ``benchmarks/results`` and ``docs/`` are read and written (as the committed
results were made); an installed jtk without a checkout writes to ``./jtk-results`` (:mod:`jtk._paths`).

This module is the command layer: it imports no study until one is run (``import jtk`` stays fast).

Its public surface (``__all__``): :func:`get`, :func:`steps`, :func:`run`, :func:`command`, :func:`parse`,
:func:`listing`, :func:`quick_time`, each checking its arguments at entry, and the records they hand out (:class:`Step`,
:class:`Study`, :class:`Timing`: built by the registry, never from a user's input) and the tables ``STUDIES``,
``PAPERS`` and ``PRESETS``.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import importlib
import os
import shlex
import time
from pathlib import Path
from typing import Callable, NamedTuple

from jtk import _checks

__all__ = ["get", "steps", "run", "command", "parse", "listing", "quick_time", "Step", "Study", "Timing", "STUDIES",
           "PAPERS", "PRESETS", "TIMES_CSV"]

PAPERS = {
    "testbed": "Osband et al. (2022), The Neural Testbed: Evaluating Joint Predictions (NeurIPS 2022)",
    "coverage": "Schmähling, Martin & Elster (2023), A framework for benchmarking uncertainty in deep regression",
    "ppc": "Wang, Sun & Grosse (2021), Beyond Marginal Uncertainty: How Accurately can Bayesian Regression Models "
           "Estimate Posterior Predictive Correlations? (AISTATS 2021)",
}
# quick and paper: jtk's presets; report: the page from the stored CSVs; authors: a paper's protocol as its authors'
# public code ran it (the studies that have one).
PRESETS = ("quick", "paper", "report", "authors")


class Step(NamedTuple):
    """One call of a study: ``importlib.import_module(module).main(argv)``. In ``argv``, ``{results}`` stands for
    the results folder (``--out-dir`` or the checkout's ``benchmarks/results``)."""
    module: str
    argv: tuple[str, ...] = ()


class Timing(NamedTuple):
    seconds: float
    source: str  # the record it was read from and what it covers


@dataclasses.dataclass(frozen=True)
class Study:
    """One figure or table of a paper, and how jtk regenerates it."""
    name: str
    paper: str  # a key of PAPERS
    target: str  # the paper's figure or table (and what jtk's version of it is)
    presets: dict[str, tuple[Step, ...]]
    csvs: tuple[str, ...]  # what it writes into the results folder (glob patterns)
    page: str  # the page and its section: docs/PAGE.md#section (a heading's anchor or a generated section's marker)
    timing: Callable[[Path], Timing | None] | None = None  # reads the quick preset's time from a stored record
    note: str = ""

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(step.module for steps in self.presets.values() for step in steps))


# ------------------------------------------------------------------ the quick presets' times, from the stored records
def _sum_csv(pattern: str, columns: tuple[str, ...], what: str, where: Callable | None = None):
    """Σ of ``columns`` over the rows of the CSVs matching ``pattern`` that have them (optionally only the rows
    ``where(frame)`` selects); None if no file has them."""

    def read(results: Path) -> Timing | None:
        import pandas as pd

        total, used = 0.0, 0
        for f in sorted(glob.glob(str(results / pattern))):
            df = pd.read_csv(f)
            if not set(columns) <= set(df.columns):
                continue  # e.g. a summary beside the rows
            if where is not None:
                df = df[where(df)]
            total, used = total + float(df[list(columns)].to_numpy().sum()), used + len(df)
        if not used:
            return None
        return Timing(total, f"Σ {' + '.join(columns)} in {pattern}" + (f": {what}" if what else ""))

    return read


def _zoo_quick(results: Path) -> Timing | None:
    return _sum_csv("zoo_*_quick.csv", ("train_seconds", "eval_seconds"), "every agent, 16 problems each")(results)


def _ppc_stage(stage: str | None):
    def read(results: Path) -> Timing | None:
        import pandas as pd

        path = results / f"ppc_{PPC_QUICK_TAG}_stages.csv"
        if not path.exists():
            return None
        stages = pd.read_csv(path).set_index("stage")["seconds"]
        total = float(stages["total (this run)"])
        named = [name for name in stages.index if stage and name.startswith(stage)]  # "Figs. 5-6 (XLL, 34 settings)"
        part = f"; stage {named[0]!r}: {float(stages[named[0]]):.0f} s" if named else ""
        return Timing(total, f"{path.name}, 'total (this run)': the whole study{part}")

    return read


def _ppc_real(results: Path) -> Timing | None:
    import pandas as pd

    path = results / "ppc_real_quick_meta.csv"
    if not path.exists():
        return None
    meta = pd.read_csv(path).iloc[0]
    return Timing(float(meta["wall"]), f"ppc_real_quick_meta.csv, column wall ({int(meta['seeds'])} seeds)")


def _estimators(results: Path) -> Timing | None:
    files = sorted(glob.glob(str(results / "estimator_*_quick.seconds")))
    if not files:
        return None
    return Timing(sum(float(Path(f).read_text()) for f in files), "Σ of estimator_<agent>_quick.seconds")


# ------------------------------------------------------------------ the registry
_ZOO_QUICK = ("mlp", "ensemble+", "dropout", "bbb", "hypermodel", "sgmcmc", "knn", "random_forest", "deep_kernel",
              "bayes_optimal", "sgmcmc_reference")
_ZOO = {"quick": (Step("jtk.testbed.zoo", ("--grid", "quick", "--agents", *_ZOO_QUICK)),
                  Step("jtk.testbed.zoo_report")),
        "paper": (Step("jtk.testbed.zoo", ("--grid", "paper")), Step("jtk.testbed.zoo_report")),
        "report": (Step("jtk.testbed.zoo_report"),)}
_ZOO_NOTE = ("mlp and ensemble+ paper-grid rows come from `jtk testbed` (benchmarks/testbed_speed.py); "
             "zoo_report rebuilds every grid it finds")
_BANDIT = {"quick": (Step("jtk.testbed.bandit_study", ("--preset", "subset")),),
           "paper": (Step("jtk.testbed.bandit_study", ("--preset", "paper")),),
           "report": (Step("jtk.testbed.bandit_study", ("--preset", "subset", "--report-only")),)}
_COVERAGE = "jtk.regression.coverage_study"
_COVERAGE_REPORT = (Step(_COVERAGE, ("--docs",)),)
# The quick preset with all seven families is stored under the tag quick_all (docs/ppc.md keeps the earlier
# five-family run, tag quick, beside it); ppc-table1 derives its settings from ppc_quick_all_runs.csv.
PPC_QUICK_TAG = "quick_all"
_PPC = {"quick": (Step("jtk.ppc.synthetic_study", ("--preset", "quick", "--tag", PPC_QUICK_TAG)),),
        "paper": (Step("jtk.ppc.synthetic_study", ("--preset", "paper")),),
        "report": (Step("jtk.ppc.synthetic_study", ("--preset", "quick", "--tag", PPC_QUICK_TAG, "--report-only")),),
        # the authors' scripts: their data, grid and EM-HMC, at their sizes (500 pool, 200 test) and the text's
        "authors": (Step("jtk.ppc.synthetic_study", ("--preset", "authors", "--protocol", "code")),
                    Step("jtk.ppc.synthetic_study", ("--preset", "authors", "--protocol", "text")))}
_PPC_CSVS = (f"ppc_{PPC_QUICK_TAG}_*.csv", "ppc_paper_*.csv", "ppc_authors_code_*.csv", "ppc_authors_*.csv",
             "ppc_<tag>_xll.csv.gz")

STUDIES: tuple[Study, ...] = (
    # --- Osband et al. (2022)
    Study("testbed-table2", "testbed", "Table 2: accuracy, ECE, d_KL^1, d_KL^10 of every agent (the agent zoo)", _ZOO,
          ("zoo_<agent>_<grid>.csv",), "docs/results.md#table-2-analogue", _zoo_quick, _ZOO_NOTE),
    Study("testbed-fig2", "testbed", "Fig. 2: d_KL^1 / d_KL^10 per agent, normalised to mlp", _ZOO,
          ("zoo_<agent>_<grid>.csv",), "docs/results.md#fig-2-analogue-normalised-to-mlp-error-bars-2-stderr "
          "(zoo_fig2_<grid>.png)", _zoo_quick),
    Study("testbed-fig13-14", "testbed", "Figs. 13/14: d_KL^τ per setting (n, ρ, τ)", _ZOO, ("zoo_<agent>_<grid>.csv",),
          "docs/results.md#per-setting-breakdown-fig-1314-analogue", _zoo_quick),
    Study("testbed-fig15", "testbed", "Fig. 15: d_KL^10 against training time", _ZOO, ("zoo_<agent>_<grid>.csv",),
          "docs/results.md#d_kl10-vs-training-time-fig-15-analogue (zoo_time_<grid>.png)", _zoo_quick),
    Study("testbed-robustness", "testbed", "§6: robustness to the generative model (activations, widths)",
          {"quick": (Step("jtk.testbed.zoo", ("--robustness", "--agents", "mlp", "dropout")),
                     Step("jtk.testbed.zoo_report")),
           "paper": (Step("jtk.testbed.zoo", ("--robustness", "--agents", "mlp", "ensemble+_K10", "dropout", "bbb",
                                              "hypermodel", "knn", "random_forest", "deep_kernel")),
                     Step("jtk.testbed.zoo_report")),
           "report": (Step("jtk.testbed.zoo_report"),)},
          ("zoo_robustness_<agent>.csv",), "docs/results.md#6-robustness-generative-activations-and-widths "
          "(zoo_robustness.png)",
          note="the reduced grid of §6 per setting; the quick preset runs two agents"),
    Study("testbed-table2-mc", "testbed", "Table 2 with one estimator: every agent scored by Monte Carlo (M = 1000)",
          {"quick": (Step("jtk.testbed.estimator_table", ("--grid", "quick")),),
           "paper": (Step("jtk.testbed.estimator_table", ("--grid", "paper", "--agents", "mlp", "ensemble",
                                                          "ensemble+", "sgmcmc")),),
           # the stored rows' machines, as the page states them (--load)
           "report": (Step("jtk.testbed.estimator_table", ("--grid", "quick", "--report-only", "--load",
                                                           "some agents on an NVIDIA H100 (ensemble, dropout, bbb, "
                                                           "hypermodel), the others on the 2 shared CPU cores under "
                                                           "load; not comparable across agents")),
                      Step("jtk.testbed.estimator_table", ("--grid", "paper", "--report-only", "--agents", "mlp",
                                                           "ensemble", "ensemble+", "sgmcmc", "--load",
                                                           "NVIDIA H100, JAX 0.11.2")))},
          ("estimator_<agent>_<grid>.csv", "estimator_<agent>_<grid>.seconds"),
          "docs/results.md#estimator-table-quick, #estimator-table-paper", _estimators,
          "an existing CSV is reused: delete it to rerun that agent"),
    Study("testbed-epinet", "testbed", "Table 2 rows of the reference-form hypermodel and the epinet (App. C.7)",
          {"quick": (Step("jtk.testbed.epinet_hypermodel", ("quick",)),),
           "paper": (Step("jtk.testbed.epinet_hypermodel", ("paper",)),),
           "report": (Step("jtk.testbed.epinet_hypermodel", ("paper", "--report-only", "--docs", "--out",
                                                             "{results}/epinet_hypermodel/h100", "--docs-label",
                                                             "NVIDIA H100, jax 0.11.2")),)},
          ("epinet_hypermodel/<agent>_<grid>.csv", "epinet_hypermodel/summary_<grid>.csv"),
          "docs/results.md#epinet_hypermodel:paper",
          _sum_csv("epinet_hypermodel/*_quick.csv", ("train_seconds", "eval_seconds"), "mlp, hypermodel, epinet"),
          "the paper preset's stored rows were computed on an H100 (epinet_hypermodel/h100/)"),
    Study("testbed-known-limits", "testbed", "§3 leaderboard checks: the oracle scores 0, uniform its closed form",
          {"quick": (Step("jtk.testbed.known_limits", ("--grid", "quick")),),
           "paper": (Step("jtk.testbed.known_limits", ("--grid", "paper")),)},
          ("known_limits_<grid>.csv",), "docs/researchers.md (known limits)"),
    Study("bandit-fig89", "testbed", "§5 Figs. 8/9: bandit regret against d_KL^1 / d_KL^10 at d = 50", _BANDIT,
          ("bandit_paper_regret.csv", "bandit_paper_curve_runs.csv.gz", "bandit_testbed_2d.csv",
           "bandit_<preset>_{points,correlation,summary}.csv"), "docs/bandit.md#bandit-fig89",
          _sum_csv("bandit_paper_regret.csv", ("seconds",), "the subset's runs: d = 50, problem 0, seed 0, "
                   "6 agents, T = 50 000",
                   where=lambda df: (df["input_dim"] == 50) & (df["seed"] == 0) & (df["agent_seed"] == 0)),
          "runs resume: rows already in bandit_paper_regret.csv are not rerun (-- --fresh starts over)"),
    Study("bandit-lab", "testbed", "§5 in the lab's size: regret against d_KL^τ at ρ = 0.1 (K = 10, T = 2000)",
          {"quick": (Step("jtk.testbed.bandit_study", ("--preset", "lab")),),
           "report": (Step("jtk.testbed.bandit_study", ("--preset", "lab", "--report-only")),)},
          ("bandit_lab_{regret,curves,points,correlation,summary,testbed}.csv",),
          "docs/bandit.md#total-regret-lab-preset-t-2000-mean-s-e-over-40-runs",
          _sum_csv("bandit_lab_regret.csv", ("seconds",), "the bandit runs; the testbed scores not included"),
          "runs resume: rows already in bandit_lab_regret.csv are not rerun (-- --fresh starts over)"),
    # --- Schmähling, Martin & Elster (2023)
    Study("coverage-fig3", "coverage", "Fig. 3 (E.1, sinusoids): coverage, deviation and uncertainty against "
          "f_main, and the Lemma 1 check",
          {"quick": (Step(_COVERAGE, ("--skip", "truth", "timing", "paper", "e2", "e3")),),
           "paper": (Step(_COVERAGE, ("--skip", "timing", "sweep", "e2", "e3", "--input-scale", "8", "--k", "20",
                                      "--paper-ens-k", "20", "--paper-methods", "BLR", "BD", "EnsBS", "EnsAdvA",
                                      "--cold-only")),),
           "report": _COVERAGE_REPORT},
          ("coverage_e1_<preset>[_scale8]_{per_input,summary,lemma1,at_inputs}.csv", "coverage_e1_truth.csv"),
          "docs/coverage.md#coverage-e1-literal-coverage, #coverage-e1-scale8-coverage, #coverage-e1-paper-scale8",
          None, "input_scale 8 (the reading of Fig. 1): -- --input-scale 8 --bootstrap-size 0.5 "
          "--f-mains 1 2 3 4 5"),
    Study("coverage-fig6", "coverage", "Fig. 6 (E.2, Styblinski–Tang): coverage against the input dimension d",
          {"quick": (Step(_COVERAGE, ("--skip", "truth", "timing", "sweep", "e3", "paper", "--dims", "1", "2",
                                      "--bootstrap-size", "0.5")),),  # EnsBS(0.5) beside EnsBS, as the page shows
           "paper": (Step(_COVERAGE, ("--skip", "truth", "timing", "sweep", "e3", "paper", "--e2-preset", "paper",
                                      "--dims", "1", "--k", "20", "--e2-methods", "BLR", "BD", "EnsBS")),),
           "report": _COVERAGE_REPORT},
          ("coverage_e2_<preset>_{per_input,summary,lemma1,at_inputs}.csv",),
          "docs/coverage.md#coverage-e2-summary, #coverage-e2-paper-summary"),
    Study("coverage-e3", "coverage", "§3 E.3 (polynomial): coverage of BLR, BD, VD, EnsBS",
          {"quick": (Step(_COVERAGE, ("--skip", "truth", "timing", "sweep", "e2", "paper")),)},
          ("coverage_e3_lab_{per_input,summary}.csv",), "docs/coverage.md#agreement-with-the-paper"),
    Study("coverage-readings", "coverage", "Fig. 3's open settings: which reading brings EnsAdvA and the ensembles "
          "closest to the paper",
          {"quick": (Step("jtk.regression.coverage_readings"),),
           "report": (Step("jtk.regression.coverage_readings", ("--report-only",)),)},
          ("coverage_readings.csv",), "docs/coverage.md#coverage-readings, #coverage-readings-fgsm",
          _sum_csv("coverage_readings.csv", ("seconds",), "every cell's study")),
    # --- Wang, Sun & Grosse (2021)
    Study("ppc-fig3", "ppc", "Fig. 3: TAL with the oracle's covariances (BatchMIG, MIG, TIG, random)", _PPC,
          _PPC_CSVS, "docs/ppc.md#ppc-quick_all, #ppc-paper (ppc_fig3_<tag>.png)", _ppc_stage("Fig. 3"),
          "the study regenerates Figs. 3–6 together"),
    Study("ppc-fig4", "ppc", "Fig. 4: metacorrelation against TAL performance across models", _PPC, _PPC_CSVS,
          "docs/ppc.md#ppc-quick_all, #ppc-paper (ppc_fig4_<tag>.png)", _ppc_stage("Fig. 4 (train + score)"),
          "the study regenerates Figs. 3–6 together"),
    Study("ppc-fig5", "ppc", "Fig. 5: XLL against metacorrelation", _PPC, _PPC_CSVS,
          "docs/ppc.md#ppc-quick_all, #ppc-paper (ppc_fig5_<tag>.png)", _ppc_stage("Figs. 5-6"),
          "the study regenerates Figs. 3–6 together"),
    Study("ppc-fig6", "ppc", "Fig. 6: XLLR per reference model family", _PPC, _PPC_CSVS,
          "docs/ppc.md#ppc-quick_all, #ppc-paper (ppc_fig6_<tag>.png)", _ppc_stage("Figs. 5-6"),
          "the study regenerates Figs. 3–6 together"),
    Study("ppc-table1", "ppc", "Table 1 and §5.4: XLLR and TAL gain on real regression data",
          {"quick": (Step("jtk.ppc.real_study", ("--preset", "quick")),),
           "paper": (Step("jtk.ppc.real_study", ("--preset", "paper")),),
           "report": (Step("jtk.ppc.real_study", ("--preset", "quick", "--report-only")),),
           "authors": (Step("jtk.ppc.real_study", ("--preset", "authors")),)},
          ("ppc_real_<preset>_{tal,xll,data,meta,settings,table,checks}.csv",), "docs/ppc.md#ppc-real-quick, #ppc-real-paper",
          _ppc_real, "the paper's eight UCI tables ship with jtk; quick and paper derive their settings from "
          "ppc_quick_all_runs.csv (ppc-fig4's quick run, all seven families), authors uses the authors' own"),
    Study("tal-oracle", "ppc", "Figs. 3–5 with 12 hand-picked models (jtk's earlier study, d = 9, 25 splits)",
          {"quick": (Step("jtk.ppc.tal_oracle", ("--no-bnn", "--suffix", "_quick")),),
           "paper": (Step("jtk.ppc.tal_oracle"),)},
          ("tal_{criteria,models,xll,per_model,summary}<suffix>.csv",), "docs/ppc.md#why-the-coefficient-differs-"
          "from-0762-ablations", note="the quick preset: GP-based models only, files tal_*_quick.csv"),
)
BY_NAME = {s.name: s for s in STUDIES}


# ------------------------------------------------------------------ commands
def get(name: str) -> Study:
    """The study named ``name``; a ValueError names the known ones."""
    _checks.instance("name", name, str, "a study's name (str)")
    if name not in BY_NAME:
        raise ValueError(f"name must be a study's name: unknown study {name!r}; known: {', '.join(BY_NAME)} "
                         "(jtk reproduce list)")
    return BY_NAME[name]


def steps(name: str, preset: str = "quick", out_dir: str | Path | None = None,
          extra: tuple[str, ...] | list[str] = ()) -> list[Step]:
    """The calls ``jtk reproduce NAME --preset PRESET [--out-dir DIR] [-- EXTRA]`` makes, ``{results}`` filled in:
    ``--out-dir DIR`` and ``extra`` are appended to every call."""
    study = get(name)
    _checks.one_of("preset", preset, PRESETS)
    out_dir = None if out_dir is None else _checks.path("out_dir", out_dir)
    extra = _checks.argv(extra, "['--fresh']", name="extra", allow_none=False)
    if preset not in study.presets:
        raise ValueError(f"{name} has no preset {preset!r}; its presets: {', '.join(study.presets)}")
    results = Path(out_dir) if out_dir is not None else _results()
    shown = os.path.relpath(results) if not os.path.relpath(results).startswith("..") else str(results)
    tail = (("--out-dir", str(out_dir)) if out_dir is not None else ()) + tuple(extra)
    return [Step(s.module, tuple(a.replace("{results}", shown) for a in s.argv) + tail) for s in study.presets[preset]]


def _results() -> Path:
    from jtk import _paths

    return _paths.RESULTS


TIMES_CSV = "reproduce_times.csv"
"""The registry's own record of finished runs (one row per ``jtk reproduce NAME`` that completed: study, preset,
wall seconds, when, CPU cores, load average before and after), kept in the results folder. It gives the quick
time of a study that keeps no timing of its own."""


def quick_time(study: Study, results: Path | None = None) -> Timing | None:
    """The quick preset's wall time as the study recorded it in ``results``, else as ``jtk reproduce`` recorded its
    last completed quick run (:data:`TIMES_CSV`); None: not recorded."""
    _checks.instance("study", study, Study, "a Study (jtk.reproduce.get(name))")
    results = _results_dir(results)
    folder = results if results is not None else _results()
    if study.timing is not None:
        try:
            found = study.timing(folder)
        except (OSError, KeyError, ValueError):  # a record of another shape: not a time to show
            found = None
        if found is not None:
            return found
    return _recorded_run(study.name, "quick", folder)


def _recorded_run(name: str, preset: str, folder: Path) -> Timing | None:
    import pandas as pd

    try:
        runs = pd.read_csv(folder / TIMES_CSV)
        mine = runs[(runs["study"] == name) & (runs["preset"] == preset)]
    except (OSError, KeyError, ValueError):
        return None
    if mine.empty:
        return None
    last = mine.iloc[-1]
    return Timing(float(last["seconds"]), f"{TIMES_CSV}: `jtk reproduce {name}` on {last['finished'][:10]}, "
                                          f"{int(last['cpus'])} CPU cores, load {last['load_before']:.1f} before, "
                                          f"{last['load_after']:.1f} after")


def _record_run(name: str, preset: str, folder: Path, seconds: float, load_before: float) -> None:
    """Appends one finished run to :data:`TIMES_CSV` in ``folder`` (written whole, atomically)."""
    import pandas as pd

    from jtk import results as results_lib

    path = folder / TIMES_CSV
    row = pd.DataFrame([{"study": name, "preset": preset, "seconds": round(seconds, 1),
                         "finished": results_lib.timestamp(), "cpus": os.cpu_count(),
                         "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}])
    try:
        old = pd.read_csv(path)
    except (OSError, ValueError):
        old = None
    table = row if old is None else pd.concat([old, row], ignore_index=True)
    results_lib.write_atomic(path, results_lib.csv_bytes(table))


def _results_dir(results) -> Path | None:
    return None if results is None else _checks.path("results", results)


def _step(step) -> Step:
    """Checks a Step of the registry: a Step of a study module, its ``argv`` a tuple of str."""
    _checks.instance("step", step, Step, "a Step (from jtk.reproduce.steps)")
    modules = sorted({m for s in STUDIES for m in s.modules})
    if step.module not in modules:
        raise ValueError(f"step.module must be a study module, one of {modules}, got {step.module!r}")
    _checks.argv(step.argv, "('--preset', 'quick')", name="step.argv", allow_none=False)
    return step


def command(step: Step) -> str:
    """The shell command of ``step``: ``python -m MODULE ARGV...``."""
    step = _step(step)
    return shlex.join(["python", "-m", step.module, *step.argv])


def listing(results: Path | None = None) -> str:
    """What ``jtk reproduce list`` prints: every study, by paper."""
    results = _results_dir(results)
    lines = []
    for key, paper in PAPERS.items():
        lines += [paper, ""]
        for s in (s for s in STUDIES if s.paper == key):
            t = quick_time(s, results)
            if "quick" not in s.presets:
                when = "no quick preset"
            elif t is None:
                when = "not recorded"
            else:
                when = f"{t.seconds:,.0f} s ({t.source})"
            lines += [f"  {s.name}: {s.target}",
                      f"      module   {' → '.join(s.modules)}",
                      f"      CSVs     {', '.join(s.csvs)}",
                      f"      page     {s.page}",
                      f"      presets  {', '.join(s.presets)}",
                      f"      quick    {when}"]
            if s.note:
                lines.append(f"      note     {s.note}")
        lines.append("")
    return "\n".join(lines)


class _Parsed(Exception):
    def __init__(self, namespace: argparse.Namespace):
        self.namespace = namespace


def parse(step: Step) -> argparse.Namespace:
    """The study's own argparse result for ``step.argv``, without running it (its ``main`` stops right after
    parsing). A SystemExit means the study rejects the arguments."""
    from unittest import mock

    step = _step(step)
    module = importlib.import_module(step.module)
    original = argparse.ArgumentParser.parse_args

    def parse_args(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_args):
        try:
            module.main(list(step.argv))
        except _Parsed as parsed:
            return parsed.namespace
    raise RuntimeError(f"{step.module}.main returned without parsing its arguments")


def run(name: str, preset: str = "quick", out_dir: str | Path | None = None, extra=(), dry_run: bool = False) -> int:
    """Runs (or, with ``dry_run``, only parses) the study's calls for ``preset``; → the exit status."""
    from jtk import _paths

    get(name)
    _checks.one_of("preset", preset, PRESETS)
    out_dir = None if out_dir is None else _checks.path("out_dir", out_dir)
    extra = _checks.argv(extra, "['--fresh']", name="extra", allow_none=False)
    _checks.instance("dry_run", dry_run, bool)
    if out_dir is None and _paths.checkout_root() is None:
        out_dir = _paths.DEFAULT_OUT_DIR  # no checkout: the results and the pages go to ./jtk-results
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    start, load_before = time.perf_counter(), os.getloadavg()[0]
    for step in steps(name, preset, out_dir, extra):
        print(f"jtk reproduce {name}: {command(step)}", flush=True)
        if dry_run:
            parse(step)
            continue
        status = importlib.import_module(step.module).main(list(step.argv))
        if status:
            return int(status)
    if not dry_run and not extra:  # a run with extra arguments is not the preset as listed: not its time
        seconds = time.perf_counter() - start
        _record_run(name, preset, Path(out_dir) if out_dir is not None else _results(), seconds, load_before)
        print(f"jtk reproduce {name}: {preset} preset done in {seconds:,.0f} s (recorded in {TIMES_CSV})")
    return 0
