"""The ``jtk`` command::

    jtk sweep --agents mlp ensemble ensemble+ --results DIR [--sweep small|paper] [--grid quick|paper]
    jtk exercises build|check | autograder --out autograder.zip --salt-file F [--force]
    jtk exercises nbgrader --course DIR [--assignment NAME] [--force]
    jtk grade SUBMISSION [...] [--source DIR] [--json] [--csv FILE] [--feedback DIR] [--workers N] [--timeout S] [--only S]
              [--gradescope RESULTS.json [--hidden-visibility V]]
              [--memory BYTES] [--sandbox auto|none|user|bwrap] [--seed N] [--salt-file F]
    jtk gradebook GRADES.csv --roster ROSTER.csv --format canvas|moodle --out FILE [--force] [--roster-key COLUMN]
                  [--moodle-key idnumber|email] [--title NOTEBOOK=TITLE ...] [--allow-unmatched]
                  [--deadline ISO-8601 --submitted TIMES.csv [--penalty-per-day FRACTION]]
    jtk info
    jtk reproduce list | NAME [--preset quick|paper|report|authors] [--out-dir DIR] [--dry-run] [-- EXTRA STUDY ARGS]
    jtk labs --out DIR [--exercises-only] [--force]
    jtk bandit --agent NAME [--input-dim D] [--horizon T] [--seeds J] [--set KEY=VALUE ...] [--out FILE.csv] [--force]
    jtk verify ROWS.csv [--sample N] [--seed S]
    jtk verify BOARD [--key PUBKEY | --fingerprint FP] [--config CHALLENGE.toml --submissions DIR]
                     [--sample N|all] [--seed S] [--workers N]
    jtk challenge new CHALLENGE.toml | score SUBMISSIONS_DIR --config CHALLENGE.toml --out BOARD [--workers N] [--key PEM] |
                  practice AGENT.py [--config PRACTICE.toml]

    jtk testbed --agent NAME [--grid paper|quick|classification] [--seeds N] [--out FILE.csv [--force|--resume]]
                [--set KEY=VALUE ...] [--scheduler local|dask|tcp://HOST:PORT]

prints the leaderboard row (mean d_KL^1 and d_KL^10 with standard errors over
seeds, accuracy, ECE, seconds) and writes one CSV row per problem.

Results files (see jtk.results): output paths are checked before any
computation; files are written atomically with a FILE.manifest.json beside
them (provenance, row count, SHA-256); a FILE.lock keeps a second writer out;
``jtk testbed --out`` keeps finished chunks in FILE.parts/ so Ctrl-C (exit 130)
or a kill loses at most the running chunk and ``--resume`` continues;
``jtk verify`` recomputes a sample of rows and compares.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import pandas as pd




def _int_at_least(minimum: int):
    """An argparse type: an integer ≥ minimum, with a message that says so."""
    want = "a positive integer" if minimum == 1 else f"an integer ≥ {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {want}, got {value}")
        return value

    return parse


_positive_int, _nonnegative_int = _int_at_least(1), _int_at_least(0)


def _sample_arg(text: str):
    """``jtk verify --sample``: a positive integer, or ``all``."""
    return text if text == "all" else _positive_int(text)


def _bytes(text: str) -> int:
    units = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    try:
        value = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"expected a size in bytes such as 4G, 512M or 2000000000, got {text!r}") from None
    if value < 256 * 2 ** 20:
        raise argparse.ArgumentTypeError(f"expected at least 256M (a kernel with jtk needs more), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from jtk import _checks, agents, testbed

    parser = argparse.ArgumentParser(prog="jtk", description="jtk: joint predictive uncertainty toolkit")
    sub = parser.add_subparsers(dest="command", required=True)
    tb = sub.add_parser("testbed", help="score an agent on the Neural Testbed")
    tb.add_argument("--agent", required=True, choices=agents.names(), help="agent name")
    tb.add_argument("--grid", default="quick", choices=sorted(testbed.GRIDS), help="problem grid (default quick)")
    tb.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: the grid's)")
    tb.add_argument("--out", default=None,
                    help="CSV file for the per-problem rows (with FILE.manifest.json; finished chunks are kept in "
                         "FILE.parts/ until the run completes)")
    tb.add_argument("--force", action="store_true", help="overwrite an existing --out file (and discard its parts)")
    tb.add_argument("--resume", action="store_true",
                    help="continue an interrupted run of the same configuration from FILE.parts/")
    tb.add_argument("--set", dest="hyperparameters", type=_checks.key_value_arg, action="append", default=[],
                    metavar="KEY=VALUE", help="agent hyperparameter, e.g. --set num_members=10")
    tb.add_argument("--scheduler", default="local",
                    help="local (in-process, default), dask (embedded 2-worker LocalCluster on loopback) "
                         "or tcp://HOST:PORT of a running Dask scheduler")
    tb.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    tb.add_argument("--likelihood", default="auto", choices=list(testbed.LIKELIHOODS),
                    help="estimator: auto (exact for finite mixtures, default), exact, or mc (1000 sampled "
                         "functions for every agent, the reference's)")
    tb.add_argument("--check", action="store_true",
                    help="run jtk.testbed.check_agent first; stop with exit status 2 if a probe fails")

    ex = sub.add_parser("exercises", help="build exercises/ from solutions/, check it is up to date, or write "
                                          "Gradescope's autograder bundle or an nbgrader course")
    ex.add_argument("action", choices=["build", "check", "autograder", "nbgrader"])
    ex.add_argument("--solutions", default="solutions", help="directory of solution notebooks")
    ex.add_argument("--exercises", default="exercises", help="directory of generated exercise notebooks")
    ex.add_argument("--out", default=None, help="autograder: the zip to write (e.g. autograder.zip)")
    ex.add_argument("--salt", default=None, help="autograder: the secret that seeds each student's hidden cases "
                                                 "(deprecated: ps shows it; use --salt-file)")
    ex.add_argument("--salt-file", default=None, metavar="FILE",
                    help="autograder: the file holding that secret (the one you give jtk grade --salt-file, so both "
                         "grade alike; made, mode 0600, when missing)")
    ex.add_argument("--insecure-marks-without-sandbox", action="store_true",
                    help="autograder: let the bundle grade where bubblewrap cannot start (marks are then not secure: "
                         "a notebook can read the solutions and the salt); without it such a machine grades nothing")
    ex.add_argument("--force", action="store_true", help="autograder: overwrite --out; nbgrader: overwrite files "
                                                         "of --course that differ")
    ex.add_argument("--course", default=None, help="nbgrader: the course directory to write source/ and "
                                                   "nbgrader_config.py into (docs/nbgrader.md)")
    ex.add_argument("--assignment", default=None, help="nbgrader: one assignment holding every notebook "
                                                       "(default: one assignment per notebook)")

    gr = sub.add_parser("grade", help="grade students' notebooks against the source notebooks (checks, points, "
                                      "hidden cases), each in a fresh contained kernel")
    gr.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                    help="notebooks, or directories: DIR/<student>/<notebook>.ipynb (nbgrader) or DIR/<student>.ipynb")
    gr.add_argument("--source", default="solutions", help="directory of source (solution) notebooks (default solutions/)")
    gr.add_argument("--json", action="store_true", help="print one JSON object per (student, notebook)")
    gr.add_argument("--csv", default=None, help="write grades to this CSV (and the misconception summary beside it)")
    gr.add_argument("--feedback", default=None, help="write one HTML feedback page per student and notebook here")
    gr.add_argument("--workers", type=_positive_int, default=None, help="notebooks graded at once (default: cores)")
    gr.add_argument("--timeout", type=_positive_int, default=30,
                    help="CPU seconds for the student's code per check cell (default 30); every cell also stops at "
                         "4x this in wall-clock time")
    gr.add_argument("--gradescope", default=None, metavar="RESULTS.json",
                    help="also write Gradescope's results.json for this one student's submission")
    gr.add_argument("--hidden-visibility", default="after_published",
                    choices=["visible", "hidden", "after_due_date", "after_published"],
                    help="with --gradescope: when students see the hidden cases' tests (default after_published)")
    gr.add_argument("--only", default=None, metavar="STUDENT[,STUDENT...]",
                    help="grade only these students' notebooks (e.g. to regrade the ones that timed out)")
    gr.add_argument("--memory", type=_bytes, default=4 * 2 ** 30, help="memory per kernel, e.g. 4G (default 4 GiB)")
    gr.add_argument("--sandbox", default="auto", choices=["auto", "none", "user", "bwrap"],
                    help="containment of student code (default auto: bwrap if it works, else user if root, else none)")
    gr.add_argument("--seed", type=_nonnegative_int, default=None, help="one seed of the cases for everybody")
    gr.add_argument("--salt-file", default=None, metavar="FILE",
                    help="the file holding the secret mixed into each student's seeds: made (mode 0600) when "
                         "missing, refused when others may read it")
    gr.add_argument("--salt", default=None, help="the salt itself (deprecated: any user sees it in ps; use "
                                                 "--salt-file)")
    gr.add_argument("--force", action="store_true", help="overwrite an existing --csv file")
    gr.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    gb = sub.add_parser("gradebook", help="convert jtk grade's grades.csv into a Canvas or Moodle gradebook import "
                                          "file, matched through a roster, with an optional late policy")
    gb.add_argument("grades", metavar="GRADES.csv", help="grades written by jtk grade --csv")
    gb.add_argument("--roster", required=True,
                    help="CSV of the class: a key column with jtk's student names (student, login, sis_login_id or "
                         "SIS Login ID, or --roster-key) and name, id, sis_user_id, sis_login_id, section, idnumber, "
                         "email, extension_days as available (a Canvas gradebook export works as it is)")
    gb.add_argument("--format", required=True, choices=["canvas", "moodle"], help="the LMS's import format")
    gb.add_argument("--out", required=True, help="the import CSV to write (and FILE.late.csv with --deadline)")
    gb.add_argument("--force", action="store_true", help="overwrite an existing --out (and its .late.csv)")
    gb.add_argument("--roster-key", default=None, metavar="COLUMN", help="the roster column holding jtk's student names")
    gb.add_argument("--moodle-key", default=None, choices=["idnumber", "email"],
                    help="moodle: identify students by ID number (default) or email address")
    gb.add_argument("--title", dest="titles", action="append", default=[], metavar="NOTEBOOK=TITLE",
                    help="column title for a notebook, e.g. '01_coin=Lab 1 (4321)' (default: the notebook's name)")
    gb.add_argument("--allow-unmatched", action="store_true",
                    help="write the file even if some submissions' students are not in the roster (they are left "
                         "out and listed on stderr; without this nothing is written and the exit status is 1)")
    gb.add_argument("--deadline", default=None, metavar="ISO-8601",
                    help="deadline, e.g. 2025-03-01T23:59:00+01:00; a roster column extension_days moves it per student")
    gb.add_argument("--submitted", default=None, metavar="TIMES.csv",
                    help="submission times: columns student, notebook, submitted (ISO 8601); needed with --deadline")
    gb.add_argument("--penalty-per-day", default=None, metavar="FRACTION",
                    help="fraction of the max score lost per started day late, e.g. 0.1 (default 0); score floored at 0")

    sw = sub.add_parser("sweep", help="resumable hyperparameter sweep; prints each agent's best configuration")
    sw.add_argument("--agents", nargs="+", default=["mlp", "ensemble", "ensemble+"], help="agents to sweep")
    sw.add_argument("--sweep", default="small", choices=["small", "paper"], help="hyperparameter grid")
    sw.add_argument("--grid", default="quick", choices=sorted(testbed.GRIDS), help="problem grid (default quick)")
    sw.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: the grid's)")
    sw.add_argument("--results", required=True,
                    help="directory for per-chunk results (resumes if it holds the same problems; refuses others)")
    sw.add_argument("--new", action="store_true",
                    help="insist on a fresh run: refuse a --results directory that is not empty")
    sw.add_argument("--set", dest="hyperparameters", type=_checks.key_value_arg, action="append", default=[],
                    metavar="KEY=VALUE", help="fixed hyperparameter for every configuration, e.g. num_steps=200")
    sw.add_argument("--scheduler", default="local", help="local, dask or tcp://HOST:PORT")
    sw.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    sub.add_parser("info", help="versions, JAX backend and devices, compilation cache, optional extras")
    rp = sub.add_parser("reproduce", help="regenerate a figure or table of the papers (its CSVs and page section); "
                                          "'jtk reproduce list' names them all")
    rp.add_argument("name", metavar="NAME|list", help="a study of 'jtk reproduce list', or list")
    rp.add_argument("--preset", default="quick",
                    help="quick (a laptop), paper (the paper's protocol), report (the page from the stored CSVs; "
                         "no training) or authors (the protocol as the authors' public code ran it, where a study "
                         "has it: ppc-fig3 … ppc-fig6, ppc-table1); default quick")
    rp.add_argument("--out-dir", default=None,
                    help="read and write the CSVs and pages here (default: the checkout's benchmarks/results and "
                         "docs/; without a checkout ./jtk-results)")
    rp.add_argument("--dry-run", action="store_true", help="print the study's commands and check its arguments only")
    rp.set_defaults(extra=[])  # what follows `--` goes to the study as it is (main() splits it off)
    rp.epilog = "Arguments after -- are passed on to the study, e.g. jtk reproduce ppc-fig4 -- --splits 5"
    lb = sub.add_parser("labs", help="write the lab notebooks, their start page and the exercises into a folder "
                                     "(for an install without a checkout)")
    lb.add_argument("--out", required=True, help="folder to write (new or empty unless --force; its parent must exist)")
    lb.add_argument("--exercises-only", action="store_true", help="write only the exercises (what students solve)")
    lb.add_argument("--force", action="store_true",
                    help="write into a non-empty --out (files of the same names are replaced, others kept)")

    bd = sub.add_parser("bandit", help="Thompson sampling with an agent on the neural bandit (§5)")
    bd.add_argument("--agent", required=True, help="oracle, uniform or an agent that can be updated online")
    bd.add_argument("--input-dim", type=_positive_int, default=2, help="action dimension d (default 2)")
    bd.add_argument("--horizon", type=_positive_int, default=1000, help="time steps T (default 1000)")
    bd.add_argument("--seeds", type=_positive_int, default=5, help="number of problems J (default 5)")
    bd.add_argument("--temperature", type=float, default=0.1, help="environment temperature (default 0.1)")
    bd.add_argument("--set", dest="hyperparameters", type=_checks.key_value_arg, action="append", default=[],
                    metavar="KEY=VALUE", help="agent hyperparameter, e.g. --set num_members=10")
    bd.add_argument("--out", default=None, help="CSV file for the cumulative regret curves (with a manifest)")
    bd.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    bd.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    vf = sub.add_parser("verify", help="check a results CSV against its manifest and recompute a sample of its rows")
    vf.add_argument("csv", metavar="ROWS.csv", help="results CSV written by jtk testbed --out or jtk sweep, or a "
                                                   "challenge board (its folder or leaderboard.csv)")
    vf.add_argument("--sample", type=_sample_arg, default=10, help="rows to recompute (default 10); a challenge "
                                                                   "board also takes 'all'")
    vf.add_argument("--seed", type=_nonnegative_int, default=None, help="picks the sample (default: 0 for a results "
                                                                        "CSV, a fresh one, printed, for a board)")
    vf.add_argument("--key", default=None, help="challenge board: the instructor's public key (base64) or a file "
                                                "holding it; the board's signature must be by it")
    vf.add_argument("--fingerprint", default=None, help="challenge board: the instructor's key fingerprint instead")
    vf.add_argument("--workers", type=_positive_int, default=1, help="challenge board: submissions scored again at "
                                                                     "once (default 1)")
    vf.add_argument("--config", default=None, help="challenge board: the challenge file with its salt (or the "
                                                   "practice file); scores the board again: every status, a sample "
                                                   "of rows")
    vf.add_argument("--submissions", default=None, help="challenge board: the folder of submission files")
    vf.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    xp = sub.add_parser("export", help="execute notebooks and write self-contained interactive web pages (no kernel)")
    xp.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help=".ipynb files to export")
    xp.add_argument("--all", action="store_true", help="every lab in ./notebooks (00_… to 06_…)")
    xp.add_argument("--out", required=True, help="folder for the pages and index.html")
    xp.add_argument("--max-frames", type=_positive_int, default=None,
                    help="most control combinations exported per app (default: jtk.course.export.MAX_FRAMES)")
    ch = sub.add_parser("challenge", help="class challenge: score students' agents on hidden seeds (new|score|practice)")
    chs = ch.add_subparsers(dest="challenge_command", required=True)
    chn = chs.add_parser("new", help="write a challenge file with a fresh secret salt (mode 0600) and practice.toml")
    chn.add_argument("config", metavar="CHALLENGE.toml", help="file to create (refused if it exists)")
    chn.add_argument("--grid", choices=sorted(testbed.GRIDS), default="quick", help="testbed grid (default quick)")
    chn.add_argument("--seeds", type=_positive_int, default=5, help="number of hidden seeds (default 5)")
    chn.add_argument("--practice", default=None, help="public practice file (default: practice.toml beside it)")
    chsc = chs.add_parser("score", help="score every *.py in a folder and the baselines on the hidden problems")
    chsc.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="folder of .py files defining make_agent()")
    chsc.add_argument("--config", required=True, help="the challenge file (with its salt)")
    chsc.add_argument("--out", required=True, help="board folder (must be empty unless --force)")
    chsc.add_argument("--workers", type=_positive_int, default=1, help="submissions scored at once (default 1)")
    chsc.add_argument("--force", action="store_true", help="write into a non-empty --out")
    chsc.add_argument("--key", default=None, help="the instructor's private signing key (PEM, mode 0600; default "
                                                  "~/.config/jtk/challenge-signing-key.pem, created on first use)")
    chp = chs.add_parser("practice", help="score one agent file on the public practice seeds (no salt needed)")
    chp.add_argument("submission", metavar="AGENT.py", help="a .py file defining make_agent()")
    chp.add_argument("--config", default=None, help="practice.toml from the instructor (default: quick grid, 1 seed)")
    chp.add_argument("--out", default=None, help="optional board folder")
    chp.add_argument("--no-baselines", action="store_true", help="score only the submission")
    chp.add_argument("--force", action="store_true", help="write into a non-empty --out")
    return parser


def _fail(command: str, message: str, code: int = 2) -> int:
    from jtk.course.untrusted import terminal

    print(terminal(f"jtk {command}: {message}", newlines=True), file=sys.stderr)  # messages may name students' files
    return code


def _testbed(args) -> int:
    from jtk import agents, executors, results as results_lib, testbed
    from jtk.testbed import runs

    hyperparameters = dict(args.hyperparameters)
    estimator = args.likelihood
    try:
        if args.force and args.resume:
            raise ValueError("--force and --resume are exclusive: --resume continues a run, --force discards it")
        if (args.force or args.resume) and not args.out:
            raise ValueError("--force and --resume need --out FILE.csv")
        if args.out:  # before any computation: a run must never end unable to write its rows
            results_lib.check_output(args.out, option="--out", force=args.force, resume=args.resume)
            parts = results_lib.parts_dir(args.out)
            if parts.exists() and not (args.resume or args.force):
                raise results_lib.OutputError(
                    f"--out: expected no unfinished run, but {str(parts)!r} holds the finished chunks of one; pass "
                    "--resume to continue it, --force to discard it, or choose another name")
        agent = agents.make(args.agent, **hyperparameters)
        executors.check_scheduler(args.scheduler)
    except (TypeError, ValueError) as err:
        return _fail("testbed", str(err))
    problems = testbed.problems(args.grid, seeds=args.seeds)
    if estimator == "exact" and isinstance(agent, agents.JaxAgent) and not agent.is_mixture:
        return _fail("testbed", f"--likelihood exact needs a finite-mixture agent, but {args.agent} is not one; "
                                "use --likelihood mc or auto")
    if getattr(args, "check", False):  # probes the agent before the long run (jtk.testbed.check_agent)
        report = testbed.check_agent(agent)
        print(report)
        if not report.ok:
            return _fail("testbed", f"check_agent: {report.failures[0].name}: {report.failures[0].message}")
    start = time.perf_counter()
    try:
        with results_lib.DeferredInterrupt() as interrupt, executors.executor(args.scheduler) as ex:
            if args.out:
                results = runs.evaluate_to_file(
                    args.agent, problems, args.out, name=args.agent, hyperparameters=hyperparameters, executor=ex,
                    resume=args.resume, force=args.force, progress=not args.no_progress, estimator=estimator,
                    config={"command": "testbed", "grid": args.grid, "seeds": args.seeds, "scheduler": args.scheduler},
                    interrupt=interrupt)
            else:
                results = testbed.evaluate(agent, problems, executor=ex, name=args.agent,
                                           progress=not args.no_progress, likelihood=estimator, interrupt=interrupt)
    except results_lib.Interrupted as err:
        again = ("run the same command with --resume to continue" if args.out
                 else "no --out was given, so nothing was saved")
        return _fail("testbed", f"{err}; {again}", 130)
    except KeyboardInterrupt:
        return _fail("testbed", "interrupted" + ("; run the same command with --resume to continue" if args.out
                                                 else ""), 130)
    except (results_lib.LockedError, results_lib.ConfigMismatch, results_lib.OutputError) as err:
        return _fail("testbed", str(err))
    except OSError as err:  # e.g. an unreachable --scheduler tcp:// address, a full disk
        return _fail("testbed", f"{type(err).__name__}: {err}")
    wall = time.perf_counter() - start
    table = testbed.summarize(results)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table.round(4).to_string())
    print(f"{len(results)} problems in {wall:.1f} s" + (f"; rows written to {args.out} (with its manifest)"
                                                        if args.out else ""))
    return 0


def _sweep(args) -> int:
    from jtk import executors, results as results_lib, testbed
    from jtk.testbed import sweep

    try:
        grids = sweep.sweep_by_name(args.sweep)
        fixed = dict(args.hyperparameters)
        configs = [sweep.Config(c.agent, tuple(sorted({**dict(c.hyperparameters), **fixed}.items())))
                   for c in sweep.configs(grids, args.agents)]
        for c in configs:
            c.make()
        executors.check_scheduler(args.scheduler)
        results_lib.check_output(args.results, option="--results", directory=True)
        root = pathlib.Path(args.results)
        if args.new and root.is_dir() and any(root.iterdir()):
            raise results_lib.OutputError(f"--results: --new expects a missing or empty directory, but "
                                          f"{args.results!r} is not empty; choose a new directory")
    except (TypeError, ValueError) as err:
        return _fail("sweep", str(err))
    problems = testbed.problems(args.grid, seeds=args.seeds)
    start = time.perf_counter()
    try:
        with results_lib.DeferredInterrupt() as interrupt, executors.executor(args.scheduler) as ex:
            results = sweep.run(configs, problems, args.results, executor=ex, progress=not args.no_progress,
                                interrupt=interrupt,
                                config={"command": "sweep", "sweep": args.sweep, "grid": args.grid,
                                        "seeds": args.seeds, "set": fixed, "agents": list(args.agents)})
    except results_lib.Interrupted as err:
        return _fail("sweep", f"{err}; run the same command to continue", 130)
    except KeyboardInterrupt:
        return _fail("sweep", "interrupted; run the same command to continue", 130)
    except (results_lib.LockedError, results_lib.ConfigMismatch, results_lib.OutputError) as err:
        return _fail("sweep", str(err))
    except OSError as err:  # e.g. an unreachable --scheduler tcp:// address, a full disk
        return _fail("sweep", f"{type(err).__name__}: {err}")
    best = sweep.best_configs(results)
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(best.round(4).to_string())
    print(f"{len(configs)} configurations x {len(problems)} problems in {time.perf_counter() - start:.1f} s; "
          f"results in {args.results} (all rows: {sweep.RESULTS_CSV} with its manifest)")
    return 0


def _verify_board(args) -> int:
    from jtk import results as results_lib
    from jtk.course import challenge

    try:
        table = challenge.verify_board(args.csv, key=args.key, fingerprint=args.fingerprint, config=args.config,
                                       submissions=args.submissions, sample=args.sample, seed=args.seed,
                                       workers=args.workers, progress=not args.no_progress)
    except results_lib.ManifestMismatch as err:
        return _fail("verify", f"FAILED: {err}", 1)
    except (TypeError, ValueError) as err:
        return _fail("verify", str(err))
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 70,
                           "display.float_format", "{:.8g}".format):
        print(table.to_string(index=False))
    bad = int((~table["ok"]).sum())
    what = "hashes and board" + (" and the board scored again" if args.config else " (no --config: nothing scored "
                                                                                     "again)")
    if bad:
        print(f"jtk verify: FAILED: {bad} of {len(table)} checks of the board {args.csv} failed "
              f"({table.attrs['tolerance']}); {table.attrs['signature']}", file=sys.stderr)
        return 1
    print(f"verified: {len(table)} checks of the board {args.csv} passed: {what} ({table.attrs['tolerance']})")
    print(f"signature: {table.attrs['signature']}")
    return 0


def _verify(args) -> int:
    from jtk import results as results_lib
    from jtk.course import challenge
    from jtk.testbed import runs

    if args.config is not None or args.submissions is not None or challenge.is_board(args.csv):
        return _verify_board(args)
    if args.sample == "all" or args.key is not None or args.fingerprint is not None:
        option = "--sample all" if args.sample == "all" else "--key" if args.key is not None else "--fingerprint"
        return _fail("verify", f"{option} is for challenge boards; {args.csv} is not one")
    try:
        table = runs.verify(args.csv, sample=args.sample, seed=0 if args.seed is None else args.seed,
                            progress=not args.no_progress)
    except results_lib.ManifestMismatch as err:
        return _fail("verify", f"FAILED: {err}", 1)
    except (TypeError, ValueError) as err:
        return _fail("verify", str(err))
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.8g}".format):
        print(table.to_string(index=False))
    bad = int((~table["ok"]).sum())
    tol = table.attrs["tolerance"]
    if bad:
        print(f"jtk verify: FAILED: {bad} of {len(table)} recomputed rows differ from {args.csv} beyond {tol}",
              file=sys.stderr)
        return 1
    print(f"verified: {len(table)} recomputed rows match {args.csv} within {tol}, and the file matches its manifest")
    return 0


def _bandit(args) -> int:
    import contextlib

    import numpy as np

    from jtk import results as results_lib
    from jtk.agents import records
    from jtk.testbed import bandit

    with contextlib.ExitStack() as stack:
        try:
            if args.out:  # before the run: never compute what cannot be written, and one writer per file
                results_lib.check_output(args.out, option="--out", force=args.force)
                stack.enter_context(results_lib.Lock(args.out))
            started = results_lib.timestamp()
            result = bandit.run(args.agent, input_dim=args.input_dim, horizon=args.horizon, seeds=args.seeds,
                                temperature=args.temperature, agent_kwargs=dict(args.hyperparameters),
                                progress=not args.no_progress)
        except (TypeError, ValueError, results_lib.LockedError) as err:
            return _fail("bandit", str(err))
        total = result.total_regret
        uniform = bandit.expected_uniform_regret(result.problems, args.horizon)
        se = total.std(ddof=1) / np.sqrt(len(total)) if len(total) > 1 else 0
        print(f"{args.agent}: total regret {total.mean():.2f} ± {se:.2f} "
              f"(s.e. over {len(total)} problems; uniform random: {uniform.mean():.2f}) "
              f"at d = {args.input_dim}, T = {args.horizon}, in {result.seconds:.1f} s")
        if args.out:
            try:
                results_lib.save_results(
                    result.frame(every=max(1, args.horizon // 100)), args.out, force=True, started=started,
                    agent=records.agent_config(args.agent, hyperparameters=dict(args.hyperparameters)),
                    config={"command": "bandit", "input_dim": args.input_dim, "horizon": args.horizon,
                            "seeds": args.seeds, "temperature": args.temperature,
                            "hyperparameters": dict(args.hyperparameters)})
            except (OSError, ValueError) as err:
                return _fail("bandit", f"--out: could not write {args.out!r}: {err}")
            print(f"curves written to {args.out} (with its manifest)")
    return 0


def _exercises(args) -> int:
    from jtk import results as results_lib
    from jtk.course import exercises

    if args.action == "autograder":
        return _autograder(args)
    if args.action == "nbgrader":
        return _nbgrader_course(args)
    try:
        if args.action == "build":
            results_lib.check_output(args.exercises, option="--exercises", directory=True)
            for path in exercises.build(args.solutions, args.exercises):
                print(f"wrote {path}")
            return 0
        stale = exercises.stale(args.solutions, args.exercises)
    except (ValueError, OSError) as err:
        print(f"jtk exercises: {err}", file=sys.stderr)
        return 2
    if stale:
        print("exercises/ is out of date; run `jtk exercises build`. Stale: " + ", ".join(stale), file=sys.stderr)
        return 1
    print(f"exercises/ is up to date with {args.solutions}/")
    return 0


def _autograder(args) -> int:
    from jtk.course import exercises, gradescope

    if args.salt_file is not None and args.salt is not None:
        return _fail("exercises autograder", "--salt and --salt-file: expected one of them, got both")
    if args.salt_file is not None:
        try:
            args.salt, made = exercises.salt_file(args.salt_file)
        except ValueError as err:
            return _fail("exercises autograder", str(err))
        if made:
            print(f"jtk exercises autograder: made a new salt in {args.salt_file} (mode 0600): give jtk grade the "
                  f"same --salt-file", file=sys.stderr)
    elif args.salt is not None:
        print("jtk exercises autograder: warning: --salt puts the salt on the command line, where every user of "
              "this machine sees it (ps); keep it in a file instead: --salt-file FILE", file=sys.stderr)
    if not args.out or args.salt is None:
        return _fail("exercises autograder", "--out FILE.zip and --salt-file FILE are required (the salt seeds each "
                     f"student's hidden cases; use the file you give jtk grade --salt-file); got --out {args.out!r}, "
                     f"--salt-file {'given' if args.salt is not None else 'missing'}")
    try:
        out = gradescope.build_autograder(args.out, args.solutions, salt=args.salt, force=args.force,
                                          insecure_marks_without_sandbox=args.insecure_marks_without_sandbox)
    except ValueError as err:
        return _fail("exercises autograder", str(err).replace("force=True (--force)", "--force"))
    except (OSError, RuntimeError) as err:
        return _fail("exercises autograder", f"{type(err).__name__}: {err}", 1)
    size = out.stat().st_size / 1e6
    print(f"wrote {out} ({size:.1f} MB): upload it as the autograder of a Gradescope programming assignment "
          "(base image Ubuntu 24.04); students submit their .ipynb files")
    return 0


def _nbgrader_course(args) -> int:
    from jtk.course import nbgrader

    if not args.course:
        return _fail("exercises nbgrader", "--course DIR is required (the nbgrader course directory), got none")
    try:
        written = nbgrader.write_course(args.course, args.solutions, assignment=args.assignment, force=args.force)
    except ValueError as err:
        return _fail("exercises nbgrader", str(err).replace("force=True (--force)", "--force"))
    except OSError as err:
        return _fail("exercises nbgrader", f"{type(err).__name__}: {err}", 1)
    for path in written:
        print(f"wrote {path}")
    names = sorted({path.parent.name for path in written[1:]})
    print(f"next, in {args.course}: nbgrader generate_assignment {names[0]} (assignments: {', '.join(names)})")
    return 0


def _grade(args) -> int:
    import json

    from jtk.course import exercises, sandbox

    def fail(message: str) -> int:
        print(f"jtk grade: {message}", file=sys.stderr)
        return 2

    from jtk.course import untrusted

    if args.salt is not None and args.salt_file is not None:
        return fail("--salt and --salt-file: expected one of them, got both")
    salt, made = args.salt or "", False
    if args.salt is not None:
        print("jtk grade: warning: --salt puts the salt on the command line, where every user of this machine "
              "sees it (ps); keep it in a file instead: --salt-file FILE", file=sys.stderr)
    try:
        if args.salt_file is not None:
            salt, made = exercises.salt_file(args.salt_file)
        sources = exercises.load_sources(args.source)
        subs = exercises.collect(args.submissions, sources)
        mode = sandbox.resolve(args.sandbox)
    except ValueError as err:
        return fail(untrusted.terminal(str(err)))
    if made:
        print(f"jtk grade: made a new salt in {args.salt_file} (mode 0600): keep it, and pass the same file to "
              f"every regrade, so each student's hidden cases stay the same", file=sys.stderr)
    if not subs:
        return fail(f"no .ipynb submissions found in {' '.join(args.submissions)}")
    if args.only is not None:
        wanted = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = sorted(wanted - {s.student for s in subs})
        if unknown or not wanted:
            known = sorted({s.student for s in subs})
            return fail(f"--only: expected a comma-separated list of students among the submissions (e.g. "
                        f"{', '.join(known[:5])}), got {args.only!r}")
        subs = [s for s in subs if s.student in wanted]
    if args.gradescope:
        students = sorted({s.student for s in subs})
        if len(students) > 1:
            return fail(f"--gradescope: results.json is one student's submission, got notebooks of {len(students)} "
                        f"students ({', '.join(students[:5])}{', ...' if len(students) > 5 else ''})")
        if not pathlib.Path(args.gradescope).resolve().parent.is_dir():
            return fail(f"--gradescope: directory of {args.gradescope!r} does not exist")
    if args.csv:
        csv = pathlib.Path(args.csv)
        if not csv.parent.is_dir() or not os.access(csv.parent, os.W_OK):
            return fail(f"--csv: directory {str(csv.parent)!r} does not exist or is not writable")
        if csv.exists() and not args.force:
            return fail(f"--csv: {str(csv)!r} exists; pass --force to overwrite it or choose another name")
    if args.feedback:
        fb = pathlib.Path(args.feedback)
        if fb.exists() and not fb.is_dir():
            return fail(f"--feedback: {str(fb)!r} exists and is not a directory")
    if mode == "none":
        print("jtk grade: warning: --sandbox none: student code runs with your rights (see jtk.course.sandbox)", file=sys.stderr)
    started = time.perf_counter()
    if args.memory < exercises.MIN_MEMORY:
        return fail(f"--memory: expected at least 2G (the grading worker needs that for Python, JAX, jtk and a "
                    f"student's answer), got {args.memory} bytes")
    shown = untrusted.terminal  # every name below is the student's: no control character reaches the terminal
    for sub in subs:
        for other in sub.skipped:
            print(shown(f"jtk grade: not graded: {other} ({sub.student}'s {sub.notebook} is graded from {sub.path}; "
                        f"one notebook per exercise: {exercises.SAME_EXERCISE_RULE})"), file=sys.stderr)
        if sub.rejected:
            print(shown(f"jtk grade: rejected: {sub.path}: {sub.rejected}"), file=sys.stderr)
    rows = exercises.grade_class(subs, sources, workers=args.workers, timeout=args.timeout, memory=args.memory,
                                 sandbox=mode, seed=args.seed, salt=salt, progress=not args.no_progress)
    out = sys.stderr if args.json else sys.stdout
    if args.json:  # JSON escapes C0 controls itself; ASCII escapes keep C1 and bidi controls off a terminal too
        print(json.dumps(rows, indent=2, ensure_ascii=True))
    table = exercises.grades_frame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(shown(table.to_string(index=False), newlines=True), file=out)
    summary = exercises.misconception_summary(rows)
    if len(summary):
        print("\nMisconceptions (students per check and code):", file=out)
        print(summary.to_string(index=False), file=out)
    if args.csv:
        exercises.write_csv(rows, args.csv)
        print(f"grades written to {args.csv}", file=out)
    if args.feedback:
        written = exercises.write_feedback(rows, args.feedback)
        print(f"{len(written)} feedback pages written to {args.feedback}", file=out)
    if args.gradescope:
        from jtk.course import gradescope

        gradescope.write_results(rows, args.gradescope, hidden_visibility=args.hidden_visibility,
                                 execution_time=time.perf_counter() - started)
        print(f"Gradescope results written to {args.gradescope}", file=out)
    late = exercises.timeout_summary(rows)
    if late:
        print(shown(f"jtk grade: {late}"), file=out)
    print(f"jtk grade: {len(rows)} notebook(s) graded in {time.perf_counter() - started:.0f} s "
          f"(sandbox: {mode}{'' if mode == 'bwrap' else ', not contained enough for marks: use bwrap'})", file=out)
    faults = exercises.fault_summary(rows)
    if faults:
        print(shown(f"jtk grade: {faults}"), file=sys.stderr)
        return 3
    return 0


def _gradebook(args) -> int:
    from jtk.course import gradebook
    from jtk.course.untrusted import terminal
    from jtk.results import OutputError, check_output

    def fail(message: str, code: int = 2) -> int:
        return _fail("gradebook", message, code)

    try:
        if args.moodle_key is not None and args.format != "moodle":
            raise ValueError(f"--moodle-key: expected only with --format moodle, got --format {args.format}")
        late_args = {"--submitted": args.submitted, "--penalty-per-day": args.penalty_per_day}
        if args.deadline is None and any(v is not None for v in late_args.values()):
            given = " and ".join(k for k, v in late_args.items() if v is not None)
            raise ValueError(f"{given}: expected with --deadline (the late policy needs a deadline), got no --deadline")
        if args.deadline is not None and args.submitted is None:
            raise ValueError("--deadline: expected --submitted TIMES.csv with the submission times, got none")
        deadline = None if args.deadline is None else gradebook.parse_time(args.deadline, "--deadline")
        penalty = 0.0
        if args.penalty_per_day is not None:
            try:
                penalty = float(args.penalty_per_day)
            except ValueError:
                penalty = float("nan")
            if not 0 <= penalty <= 1:
                raise ValueError(f"--penalty-per-day: expected a fraction of the max score in [0, 1] (0.1 = 10 % a "
                                 f"day), got {args.penalty_per_day!r}")
        titles = {}
        for text in args.titles:
            notebook, sep, title = text.partition("=")
            if not sep or not notebook.strip() or not title.strip():
                raise ValueError(f"--title: expected NOTEBOOK=TITLE, got {text!r}")
            titles[notebook.strip()] = title.strip()
        out = pathlib.Path(args.out)
        inputs = [p for p in (args.grades, args.roster, args.submitted) if p is not None]
        if any(os.path.exists(p) and os.path.exists(out) and os.path.samefile(p, out) for p in inputs):
            raise ValueError(f"--out: expected a file other than the inputs, got {str(out)!r}")
        check_output(out, option="--out", force=args.force)
        if deadline is not None:
            check_output(gradebook.late_path(out), option="--out's late report", force=args.force)
        grades = gradebook.read_grades(args.grades)
        roster = gradebook.read_roster(args.roster, key=args.roster_key)
        submitted = None if args.submitted is None else gradebook.read_submitted(args.submitted)
    except (ValueError, OutputError) as err:
        return fail(str(err))
    missing = gradebook.unmatched(grades, roster)
    if missing:
        rows = grades[grades.student.isin(missing)]
        listed = "; ".join(f"{s} ({', '.join(rows.notebook[rows.student == s])})" for s in missing)
        if not args.allow_unmatched:
            return fail(f"{len(missing)} student(s) of {args.grades} are not in the roster {args.roster}, so their "
                        f"grades have nowhere to go: {listed}. Nothing was written; add them to the roster, fix "
                        f"--roster-key, or pass --allow-unmatched to write the others", code=1)
        print(terminal(f"jtk gradebook: warning: left out {len(missing)} student(s) not in the roster: {listed}"),
              file=sys.stderr)
    skipped = grades[grades.status == "unmatched"]
    if len(skipped):
        print(terminal("jtk gradebook: note: rows with status unmatched are no notebook of the assignment and get no "
                       "column: " + ", ".join(f"{s}/{n}" for s, n in zip(skipped.student, skipped.notebook))),
              file=sys.stderr)
    try:
        late = None if deadline is None else gradebook.apply_late_policy(
            grades, submitted, deadline, penalty_per_day=penalty, roster=roster)
        kwargs = {"late": late, "titles": titles, "allow_unmatched": args.allow_unmatched}
        if args.format == "canvas":
            table = gradebook.to_canvas(grades, roster, **kwargs)
            empty = int(table.iloc[1:, len(gradebook.CANVAS_STUDENT_COLUMNS):].isna().to_numpy().sum())
        else:
            table = gradebook.to_moodle(grades, roster, key=args.moodle_key or "idnumber", **kwargs)
            empty = int(table.iloc[:, 1:].isna().to_numpy().sum())
    except ValueError as err:
        return fail(str(err))
    gradebook.write(table, out)
    exercises = len(set(gradebook.exercise_rows(grades).notebook))
    print(f"{args.format} gradebook for {len(roster)} students x {exercises} exercises written to {out}"
          + (f" ({empty} empty cells: no submission)" if empty else ""))
    if late is not None:
        report = gradebook.write(late, gradebook.late_path(out))
        num_late = int((late.days_late > 0).sum())
        print(f"late policy: {num_late} late submission(s), {late.penalty.sum():.10g} points taken off; "
              f"per submission in {report}")
    return 0


def _export(args) -> int:
    from jtk.course import export

    try:
        paths = list(args.notebooks) + ([str(p) for p in export.lab_notebooks()] if args.all else [])
        if not paths:
            return _fail("export", "name at least one NOTEBOOK, or --all")
        kwargs = {} if args.max_frames is None else {"max_frames": args.max_frames}
        results = export.export_site(paths, args.out, **kwargs)
    except ValueError as e:
        return _fail("export", str(e))
    for r in results:
        print(f"{r.page}: {r.bytes / 2**20:.1f} MB, {len(r.apps)} app(s), executed in {r.execute_seconds:.0f} s, "
              f"apps captured in {r.capture_seconds:.0f} s")
    print(f"{len(results)} page(s) exported, {sum(r.bytes for r in results) / 2**20:.1f} MB; "
          f"{pathlib.Path(args.out) / 'index.html'} lists every page in that folder")
    return 0


def _challenge(args) -> int:
    from jtk.course import challenge

    try:
        if args.challenge_command == "new":
            path, practice = challenge.new_config(args.config, grid=args.grid, seeds=args.seeds,
                                                  practice=args.practice)
            print(f"wrote {path} (mode 0600, keep it private: its salt defines the hidden seeds) and {practice} "
                  f"(hand this one out for practice)")
            return 0
        if args.challenge_command == "score":
            board = challenge.score(args.submissions, args.config, args.out, workers=args.workers, force=args.force,
                                    key=args.key)
        else:
            board = challenge.practice(args.submission, args.config, out=args.out, baselines=not args.no_baselines,
                                       force=args.force)
    except (ValueError, TypeError, FileExistsError) as e:
        return _fail(f"challenge {args.challenge_command}", str(e))
    print(challenge.format_board(board.leaderboard))
    where = f"; board in {board.out}" if board.out is not None else ""
    print(f"{len(board.entries)} entries in {board.seconds:.0f} s (sandbox: {board.sandbox}){where}")
    if board.signed_by is not None:
        signed = board.signed_by
        made = (f"created the signing key {signed['key']} (mode 0600; keep it, and keep it private: later boards "
                f"are signed with it)" if signed["created"] else f"signed with the key {signed['key']}")
        print(f"{made}\npublish on the course page: public key {signed['public_key']}  fingerprint "
              f"{signed['fingerprint']}\n(anyone checks the board with: jtk verify BOARD --fingerprint "
              f"{signed['fingerprint']})")
    return 0


def _info(args) -> int:
    from jtk._info import format_info, info

    print(format_info(info()))
    return 0


def _reproduce(args) -> int:
    from jtk import reproduce

    if args.name == "list":
        if args.extra or args.dry_run or args.out_dir is not None:
            return _fail("reproduce", "list takes no other arguments (jtk reproduce list)")
        print(reproduce.listing())
        return 0
    try:
        reproduce.steps(args.name, args.preset, args.out_dir, args.extra)  # a clear error before any import
    except ValueError as err:
        return _fail("reproduce", str(err))
    return reproduce.run(args.name, args.preset, args.out_dir, args.extra, dry_run=args.dry_run)


def _labs(args) -> int:
    import importlib.util
    import shlex

    from jtk.course import labs

    try:
        written = labs.write_labs(args.out, exercises_only=args.exercises_only, force=args.force)
    except ValueError as err:  # the API's argument names, as the command's options
        message = str(err).replace("force=True (--force)", "--force")
        return _fail("labs", "--" + message if message.startswith("out:") else message)
    except OSError as err:  # no labs in this jtk (FileNotFoundError), an unwritable folder
        return _fail("labs", f"{type(err).__name__}: {err}", 1)
    for path in written:
        print(f"wrote {path}")
    first = "exercises" if args.exercises_only else labs.START_PAGE
    print(f"{len(written)} files written to {args.out}; open them with:\n  jupyter lab "
          f"{shlex.quote(str(pathlib.Path(args.out) / first))}")
    if importlib.util.find_spec("jupyterlab") is None:
        print("(JupyterLab is not installed here: pip install 'jtk[lab]', or open the folder in your JupyterHub or Colab)")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        from jtk import _checks  # imports JAX, as build_parser does: Ctrl-C here is a plain, clean exit

        argv = _checks.argv(argv, "['testbed', '--agent', 'mlp']")
        argv = list(sys.argv[1:] if argv is None else argv)
        extra = []
        if argv[:1] == ["reproduce"] and "--" in argv:  # jtk reproduce NAME [...] -- STUDY ARGS: the study's, untouched
            extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
        args = build_parser().parse_args(argv)
        if extra:
            args.extra = extra
    except KeyboardInterrupt:
        print("jtk: interrupted before starting; nothing was written", file=sys.stderr)
        return 130
    commands = {"testbed": _testbed, "sweep": _sweep, "exercises": _exercises, "grade": _grade, "gradebook": _gradebook,
                "bandit": _bandit, "verify": _verify, "export": _export, "challenge": _challenge, "info": _info,
                "labs": _labs, "reproduce": _reproduce}
    if args.command in commands:
        return commands[args.command](args)
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
