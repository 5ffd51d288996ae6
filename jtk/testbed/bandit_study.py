"""The §5 study: Thompson-sampling regret of the testbed agents, and its correlation with d_KL^1 / d_KL^10.

    python -m jtk.testbed.bandit_study                    # lab preset (K = 10, T = 2000, 8 problems, 5 seeds)
    python -m jtk.testbed.bandit_study --preset subset    # Figs. 8/9's part that fits 2 cores: d = 50, problem 0, seed 0
    python -m jtk.testbed.bandit_study --preset paper     # App. E / §5: T = 50 000, 20 problems, d ∈ {2, 10, 50}, 10 seeds
    python -m jtk.testbed.bandit_study --preset figs89    # Figs. 8/9 as §5 runs them: d = 50, 10 seeds, 20 problems per seed
    python -m jtk.testbed.bandit_study --speed            # steps per second only (ensemble+ K = 10, d = 2)

Paper and subset presets (Figs. 8/9, App. E.3): for each d, agent and initialisation seed s the bandit runs on
the preset's problems (``jtk.testbed.bandit.run``, one vmapped scan); one point per (agent, d, s) is its mean total
regret at T against the agent's mean d_KL^τ on the 2-D testbed (the paper grid's problems of seed s; rows
already measured are reused, the missing ones evaluated). Pearson r on log scales with bootstrap 5–95 %
intervals, one per d and never pooled across d, beside the paper's −0.12 (−0.34, 0.09) and 0.69 (0.62, 0.75).
The lab preset scores each agent on testbed problems at ρ = 0.1 with the bandit's own d instead.

One compiled program per agent and d runs all its missing seeds and problems together (``--seeds-per-program``
bounds the seeds per program). The paper and subset presets run every seed on problems 0..19; figs89 draws the
problems per seed, as §5 does (``jtk.testbed.bandit.problem_seeds``: seed s runs 20 s..20 s + 19, so seed 0's runs
are shared with the paper preset), and reports problems by their index within the seed's draw.

Every call resumes: rows already in the run CSV are kept and not rerun (the CSVs are written atomically after
each run), and a run in progress checkpoints its state, so a killed call continues where it stopped; --fresh
starts over. Writes benchmarks/results/bandit_<preset>_*.csv (the subset shares bandit_paper_regret.csv) and the
section 'bandit-fig89' of docs/bandit.md, and prints the tables.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import time

import jax
import numpy as np
import pandas as pd

from jtk import _checks
import jtk
from jtk import testbed
from jtk._paths import DOCS, RESULTS
from jtk.testbed import bandit

__all__ = ["main", "import_log", "per_dim_correlations"]  # see the package docstring

MEASURED = RESULTS  # the lab preset's and the speed run's CSVs, read for comparisons and estimates
PAGE = DOCS / "bandit.md"


def speed(horizon: int = 2000, num_problems: int = 8, dims=(2, 10)) -> None:
    """Steps per second after compilation; writes bandit_speed.csv (d = 2 and 10: ensemble+ K = 10 and 100, mlp,
    8 problems vmapped) or, for ``dims`` (50,), bandit_speed_d50.csv (the six agents of §5, one problem)."""
    rows = []
    d50 = tuple(dims) == (50,)
    for d in dims:
        problems = bandit.make_problems(d, seeds=1 if d50 else num_problems)
        agents = ([(name, {}) for name in bandit.PAPER_AGENTS] if d50 else
                  (("ensemble+", {"num_members": 10}), ("mlp", {}), ("ensemble+", {"num_members": 100})))
        for name, kw in agents:
            steps = (500 if "ensemble" in name else 1000) if d50 else horizon
            t0 = time.perf_counter()
            bandit.run(name, problems=problems, horizon=bandit.CHUNK, agent_kwargs=kw, progress=False)
            compile_s = time.perf_counter() - t0
            res = bandit.run(name, problems=problems, horizon=steps, agent_kwargs=kw, progress=False, agent_seed=1)
            members = kw.get("num_members", 100 if "ensemble" in name else None)
            rows.append({"agent": name, "num_members": members, "input_dim": d, "problems": len(problems.seeds),
                         "horizon": steps, "seconds": round(res.seconds, 2),
                         "agent_steps_per_s": round(steps * len(problems.seeds) / res.seconds),
                         "first_chunk_with_compile_s": round(compile_s, 1),
                         "load_avg_1min": round(os.getloadavg()[0], 2)})
            print(rows[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    write_csv(pd.DataFrame(rows), RESULTS / ("bandit_speed_d50.csv" if d50 else "bandit_speed.csv"))


PAPER_CORRELATION = bandit.PAPER_CORRELATION  # Figs. 8/9's captions: (r, 5 %, 95 %) for d_KL^1 and d_KL^10
# The 2-D paper-grid rows (420 problems: ρ ∈ {0.01, 0.1, 0.5}, n ∈ {1, …, 1000}, τ ∈ {1, 10}, seeds 0–9) already
# measured for each bandit agent with its default settings, as jtk.testbed.evaluate wrote them.
TESTBED_2D_SOURCES = {
    "mlp": "testbed_mlp_paper.csv",
    "ensemble": "zoo_h200/zoo_ensemble_paper.csv",
    "dropout": "zoo_dropout_paper.csv",
    "bbb": "zoo_bbb_paper.csv",
    "ensemble+": "testbed_ensemble+_K100_paper.csv",
    "hypermodel": "zoo_h200/zoo_hypermodel_paper.csv",
}


def write_csv(df: pd.DataFrame, path: pathlib.Path) -> None:
    """Atomically (a killed run leaves the previous complete file, never half of one)."""
    from jtk.results import write_atomic

    if str(path).endswith(".gz"):
        import gzip

        write_atomic(path, gzip.compress(df.to_csv(index=False).encode(), mtime=0))
    else:
        write_atomic(path, df.to_csv(index=False).encode())


def read_csv(path: pathlib.Path) -> pd.DataFrame:
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def read_regret(path: pathlib.Path, horizon: int) -> pd.DataFrame:
    """The run CSV; rows written before it had a horizon column (the lab preset's) are at the preset's T."""
    regret = read_csv(path)
    if len(regret) and "horizon" not in regret:
        regret.insert(regret.columns.get_loc("total_regret"), "horizon", horizon)
    return regret


def missing_problems(regret: pd.DataFrame, agent: str, input_dim: int, agent_seed: int, horizon: int,
                     problems) -> list[int]:
    """The problem seeds of ``problems`` that have no row yet for (agent, d, agent_seed, horizon)."""
    if not len(regret):
        return list(problems)
    have = regret[(regret.agent == agent) & (regret.input_dim == input_dim) & (regret.agent_seed == agent_seed)
                  & (regret.horizon == horizon)].seed
    return [p for p in problems if p not in set(have)]


def run_missing(agents, dims, problems, seeds, horizon, agent_kwargs, files, checkpoints: pathlib.Path,
                fresh: bool = False, draw: str = "fixed", block: int | None = None,
                seeds_per_program: int | None = None) -> pd.DataFrame:
    """Runs every (agent, d, agent_seed, problem) of the selection that the run CSV lacks, and returns all its rows.

    One program per agent and d runs the missing problems of all its seeds together
    (:func:`jtk.testbed.bandit.run_seeds`: every (seed, problem) a row of one vmapped scan), or of
    ``seeds_per_program`` seeds at a time. ``problems`` are problem indices: seed s runs the problem seeds
    ``bandit.problem_seeds(s, block, draw)`` at those indices (``block``: the preset's problems per seed; default
    ``max(problems) + 1``).

    Resumable at two levels: finished programs are rows of ``files["regret"]`` (rewritten atomically after each
    program, so rows are never lost or redone), and the program in progress saves its state under ``checkpoints``
    at least every minute (``checkpoint=`` of :func:`jtk.testbed.bandit.run_seeds`), so a killed one continues from
    its last save. Order: by groups of seeds, and within a group the cheapest agent first, so that an interrupted
    session leaves whole agents.
    """
    regret = pd.DataFrame() if fresh else read_regret(files["regret"], horizon)
    curves = pd.DataFrame() if fresh else read_csv(files["curve_runs"])
    matrix_rate = None  # the machine's 2048² rate, measured once before this invocation's runs, kept with each run
    made = {name: bandit.make_policy(name, **agent_kwargs.get(name, {})) for name in agents}
    order = sorted(agents, key=lambda name: made[name].relative_cost)
    seeds = list(seeds)
    step = len(seeds) if seeds_per_program is None else _checks.integer("seeds_per_program", seeds_per_program,
                                                                         minimum=1)
    groups = [seeds[i:i + step] for i in range(0, len(seeds), step)] if seeds else []
    for d in dims:
        for group in groups:
            for name in order:
                todo = {}
                for s in group:
                    wanted = [bandit.problem_seeds(s, block, draw)[p] for p in problems] if draw != "fixed" else list(problems)
                    if missing := missing_problems(regret, name, d, s, horizon, wanted):
                        todo[s] = missing
                if not todo:
                    continue
                if matrix_rate is None:
                    from jtk._info import gemm_gflops
                    matrix_rate = round(gemm_gflops(), 1)
                ckpt = checkpoints / _checkpoint_name(name, d, horizon, todo)
                load_start = os.getloadavg()[0]
                results = bandit.run_seeds(made[name], list(todo), [bandit.make_problems(d, seeds=p)
                                                                    for p in todo.values()],
                                           horizon=horizon, name=name, checkpoint=ckpt)
                load_end = os.getloadavg()[0]
                for (s, done), res in zip(todo.items(), results):
                    rows = pd.DataFrame({"agent": name, "input_dim": d, "agent_seed": s, "seed": list(done),
                                         "horizon": horizon, "total_regret": res.total_regret.astype(float),
                                         "seconds": res.seconds / len(done),
                                         "load_avg_1min_start": load_start,
                                         "load_avg_1min": load_end,  # at the end of the run
                                         "matrix_gflops": matrix_rate,
                                         "device": jax.devices()[0].device_kind})
                    regret = pd.concat([regret, rows], ignore_index=True)
                    curves = pd.concat([curves, res.frame(every=max(1, horizon // 100)).assign(agent_seed=s)],
                                       ignore_index=True)
                    print(f"{name} d = {d} seed {s} problems {done}: total regret "
                          f"{np.round(res.total_regret, 1).tolist()}, {res.seconds:.0f} s, load "
                          f"{load_start:.1f} → {load_end:.1f}", flush=True)
                write_csv(curves, files["curve_runs"])
                write_csv(regret, files["regret"])  # the program's rows, then its checkpoint goes
                ckpt.unlink(missing_ok=True)
    return regret


def _checkpoint_name(name: str, d: int, horizon: int, todo: dict) -> str:
    """The checkpoint file of one program: one seed's keeps the name it always had (a stopped run continues);
    several seeds' name a short hash of their (seed, problems)."""
    if len(todo) == 1:
        (s, problems), = todo.items()
        return f"{name}_d{d}_T{horizon}_s{s}_p{'-'.join(map(str, problems))}.npz"
    import hashlib

    digest = hashlib.sha256(repr(sorted(todo.items())).encode()).hexdigest()[:16]
    return f"{name}_d{d}_T{horizon}_s{min(todo)}-{max(todo)}_{digest}.npz"


def problem_view(regret: pd.DataFrame, num_problems: int, draw: str) -> pd.DataFrame:
    """The run CSV's rows with ``seed`` as the problem's index 0..J-1 within its initialisation seed's draw.

    "fixed": unchanged (problem seeds are the indices). "per-seed": only the rows of seed s on its own problems
    (``bandit.problem_seeds(s, J, "per-seed")``), with s·J subtracted; rows of the fixed draw on other problems
    are left out (seed 0's are in both).
    """
    if draw == "fixed" or not len(regret):
        return regret
    first = regret.agent_seed * num_problems
    keep = (regret.seed >= first) & (regret.seed < first + num_problems)
    return regret[keep].assign(seed=regret.seed[keep] - first[keep])


RUN_LINE = re.compile(r"^(?P<agent>\S+) d = (?P<d>\d+) seed (?P<s>\d+) problems \[(?P<problems>[\d, ]+)\]: "
                      r"total regret \[(?P<regret>[^\]]+)\], (?P<seconds>\d+) s, "
                      r"load (?P<load0>[\d.]+) → (?P<load1>[\d.]+)$")


def import_log(path: pathlib.Path, regret_csv: pathlib.Path) -> pd.DataFrame:
    """Adds the runs printed in a log (run_missing's lines, e.g. from a lent GPU whose result files could not come
    back) to the run CSV, with the log's name as each row's ``source``; returns the rows added.

    The log's header gives ``# device: ...`` and ``# horizon: ...``. Every line is checked before anything is
    written: one total per listed problem, each exactly a float32 rounded to 0.1 as run_missing prints it (a
    mistyped digit fails this), and a (agent, d, seed, problem) already in the CSV must carry the same total.
    """
    path, regret_csv = _checks.path("path", path), _checks.path("regret_csv", regret_csv)
    if not path.is_file():
        raise ValueError(f"path must be an existing log file, got {str(path)!r} (no such file)")
    header, runs = {}, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if key.strip() in ("device", "horizon"):
                header[key.strip()] = value.strip()
            continue
        if not line.strip():
            continue
        m = RUN_LINE.match(line)
        if m is None:
            raise ValueError(f"{path}:{number}: not a run line: {line[:80]!r}")
        problems = [int(v) for v in m["problems"].split(",")]
        totals = [float(v) for v in m["regret"].split(",")]
        if len(totals) != len(problems):
            raise ValueError(f"{path}:{number}: {len(problems)} problems but {len(totals)} totals")
        for v in totals:
            if float(np.round(np.float32(v), 1)) != v:
                raise ValueError(f"{path}:{number}: {v!r} is not a float32 total as printed")
        runs.append((m, problems, totals))
    if set(header) != {"device", "horizon"}:
        raise ValueError(f"{path}: the header must give '# device:' and '# horizon:', got {sorted(header)}")
    rows = pd.DataFrame([
        {"agent": m["agent"], "input_dim": int(m["d"]), "agent_seed": int(m["s"]), "seed": p,
         "horizon": int(header["horizon"]), "total_regret": v, "seconds": int(m["seconds"]) / len(problems),
         "load_avg_1min_start": float(m["load0"]), "load_avg_1min": float(m["load1"]), "matrix_gflops": np.nan,
         "device": header["device"], "source": path.name}
        for m, problems, totals in runs for p, v in zip(problems, totals)])
    regret = read_csv(regret_csv)
    keys = ["agent", "input_dim", "agent_seed", "seed", "horizon"]
    if len(regret):
        both = rows.merge(regret[keys + ["total_regret"]], on=keys, suffixes=("", "_stored"))
        clash = both[both.total_regret != both.total_regret_stored]
        if len(clash):
            raise ValueError(f"{path}: {len(clash)} rows differ from {regret_csv.name}, e.g. "
                             f"{clash.iloc[0][keys + ['total_regret', 'total_regret_stored']].to_dict()}")
        rows = rows.merge(regret[keys], on=keys, how="left", indicator=True)
        rows = rows[rows.pop("_merge") == "left_only"]
    if len(rows):
        write_csv(pd.concat([regret, rows], ignore_index=True), regret_csv)
    print(f"{path.name}: {len(rows)} rows added to {regret_csv.name} "
          f"({rows.groupby(['agent', 'agent_seed']).ngroups if len(rows) else 0} runs)")
    return rows


def testbed_2d(agents, seeds, agent_kwargs, path: pathlib.Path) -> pd.DataFrame:
    """Each agent's 2-D testbed rows on the paper grid (jtk.testbed.paper_problems()) for testbed seeds ``seeds``.

    Kept in ``path``: rows already measured on the same grid (TESTBED_2D_SOURCES) are copied in with their
    source named; the (agent, seed)s missing from both are evaluated here.
    """
    scores = read_csv(path)
    for name in agents:
        have = set(scores[scores.agent == name].seed) if len(scores) else set()
        need = [s for s in seeds if s not in have]
        source = MEASURED / TESTBED_2D_SOURCES.get(name, "-")
        if need and source.exists():
            old = pd.read_csv(source).assign(agent=name, source=TESTBED_2D_SOURCES[name])
            scores = pd.concat([scores, old[old.seed.isin(need)]], ignore_index=True)
            need = [s for s in need if s not in set(old.seed)]
        if need:
            grid = [p for p in testbed.paper_problems() if p.seed in need]
            agent = jtk.agents.make(name, **agent_kwargs.get(name, {}))
            scores = pd.concat([scores, testbed.evaluate(agent, grid, name=name).assign(source="bandit_study.py")],
                               ignore_index=True)
        write_csv(scores, path)
    return scores


def check_2d(agents=bandit.PAPER_AGENTS) -> pd.DataFrame:
    """Re-evaluates one 2-D paper-grid problem per agent (seed 0, ρ = 0.1, n = 100, τ ∈ {1, 10}) with today's
    code and compares it with the stored row that testbed_2d reuses; writes bandit_testbed_2d_check.csv."""
    probs = [p for p in testbed.paper_problems() if p.seed == 0 and p.temperature == 0.1 and p.num_train == 100]
    rows = []
    for name in agents:
        t0 = time.perf_counter()
        now = testbed.evaluate(jtk.agents.make(name), probs, name=name, progress=False)
        old = pd.read_csv(MEASURED / TESTBED_2D_SOURCES[name])
        old = old[(old.seed == 0) & (old.temperature == 0.1) & (old.num_train == 100)]
        for _, r in now.merge(old, on="tau", suffixes=("_now", "_stored")).iterrows():
            rows.append({"agent": name, "source": TESTBED_2D_SOURCES[name], "tau": r.tau, "kl_now": r.kl_now,
                         "kl_stored": r.kl_stored, "likelihood": r.likelihood_now,
                         "seconds": round(time.perf_counter() - t0, 1), "load": os.getloadavg()[0]})
        print(rows[-1], flush=True)
    out = pd.DataFrame(rows)
    write_csv(out, RESULTS / "bandit_testbed_2d_check.csv")
    return out


def points_2d(regret: pd.DataFrame, scores: pd.DataFrame, agents, seeds, problems, horizon) -> tuple:
    """One point per (agent, d, seed): mean total regret over the problems every agent at that d ran, and the mean
    d_KL^1 / d_KL^10 of the agent on the 2-D grid problems of testbed seed ``seed`` (§5, App. E.3)."""
    sel = regret[regret.agent.isin(agents) & regret.agent_seed.isin(seeds) & regret.seed.isin(problems)
                 & (regret.horizon == horizon)]
    common = sel.groupby(["input_dim", "agent"])["seed"].agg(set).groupby(level=0).agg(lambda v: set.intersection(*v))
    rows = []
    for (name, d, s), g in sel.groupby(["agent", "input_dim", "agent_seed"]):
        if common[d] and common[d] <= set(g.seed):
            rows.append({"agent": name, "input_dim": d, "agent_seed": s, "problems": len(common[d]),
                         "total_regret": g[g.seed.isin(common[d])].total_regret.mean()})
    per_run = pd.DataFrame(rows, columns=["agent", "input_dim", "agent_seed", "problems", "total_regret"])
    kl = scores.pivot_table(index=["agent", "seed"], columns="tau", values="kl", aggfunc="mean")
    kl.columns = [f"kl_{t}" for t in kl.columns]
    kl = kl.clip(lower=1e-6).reset_index().rename(columns={"seed": "agent_seed"})
    return per_run.merge(kl, on=["agent", "agent_seed"], how="inner"), common


def equal_subset(regret: pd.DataFrame, agents, input_dim: int, horizon: int, seeds, problems
                 ) -> tuple[list[int], list[int]]:
    """(initialisation seeds, problems) that every agent of ``agents`` ran at ``input_dim``: the seeds each agent ran
    on at least one common problem, and the problems every agent ran with every one of those seeds.

    When the runs are uneven (a GPU finished some agents' seeds, the CPU others), these points put every agent on
    the same footing: the same seeds and problems, one point per (agent, seed).
    """
    sel = regret[regret.agent.isin(agents) & (regret.input_dim == input_dim) & (regret.horizon == horizon)
                 & regret.agent_seed.isin(seeds) & regret.seed.isin(problems)]
    pairs = [set(zip(g.agent_seed, g.seed)) for _, g in sel.groupby("agent")]
    if len(pairs) < len(set(agents)):
        return [], []
    both = set.intersection(*pairs)
    common_seeds = sorted({int(s) for s, _ in both})
    common = [sorted(int(p) for s2, p in both if s2 == s) for s in common_seeds]
    shared = sorted(set.intersection(*map(set, common))) if common else []
    return (common_seeds, shared) if shared else ([], [])


def per_dim_correlations(points: pd.DataFrame, metrics=("kl_1", "kl_10")) -> pd.DataFrame:
    """Log–log Pearson r with bootstrap 5–95 % intervals, one row per (d, metric): never pooled across d."""
    metrics = _checks.nonempty("metrics", metrics, "column name")
    for i, m in enumerate(metrics):
        _checks.instance(f"metrics[{i}]", m, str, "a column name (str)")
    _checks.frame("points", points, ("input_dim", "agent", "total_regret", *metrics))
    rows = []
    for d, sub in points.groupby("input_dim"):
        for metric in metrics:
            c = bandit.regret_correlation(sub, metric) if len(sub) >= 3 else \
                {"r": float("nan"), "lo": float("nan"), "hi": float("nan"), "num_points": len(sub)}  # too few
            paper = PAPER_CORRELATION[metric] if d == 50 else (np.nan,) * 3  # Figs. 8/9 are d = 50
            rows.append({"input_dim": d, "metric": metric, **c, "num_agents": sub.agent.nunique(),
                         "paper_r": paper[0], "paper_lo": paper[1], "paper_hi": paper[2]})
    return pd.DataFrame(rows, columns=["input_dim", "metric", "r", "lo", "hi", "num_points", "num_agents",
                                       "paper_r", "paper_lo", "paper_hi"])


def main(argv=None) -> None:
    argv = _checks.argv(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(bandit.PRESETS), default="lab")
    parser.add_argument("--agents", nargs="+", default=list(bandit.PAPER_AGENTS))
    parser.add_argument("--dims", nargs="+", type=int)
    parser.add_argument("--horizon", type=int)
    parser.add_argument("--problems", type=int, help="bandit problems J per run (seeds 0..J-1)")
    parser.add_argument("--seeds", type=int, help="initialisation seeds 0..S-1 (points per agent and d)")
    parser.add_argument("--test-inputs", choices=["auto", "iid", "polyadic"], default="auto",
                        help="lab preset's testbed test inputs: auto = iid for d = 2 (the paper grid), polyadic for "
                             "d > 2 (docs/reference.md, 'The grid': iid inputs in high dimension make τ = 10 nearly "
                             "marginal)")
    parser.add_argument("--resume", action="store_true",
                        help="(the default; kept for old command lines) keep the rows already in the CSVs and run "
                             "only the missing (agent, d, seed, problem)s")
    parser.add_argument("--fresh", action="store_true", help="start over: ignore the rows already in the CSVs")
    parser.add_argument("--runs-only", action="store_true", help="run the missing rows, no testbed, no report")
    parser.add_argument("--report-only", action="store_true",
                        help="no runs: the tables, correlations (and the section of docs/bandit.md) from the CSVs")
    parser.add_argument("--speed", action="store_true", help="steps per second (with --dims 50: the six agents at d = 50)")
    parser.add_argument("--check-2d", action="store_true",
                        help="re-evaluate one stored 2-D testbed problem per agent with today's code (reuse check)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/bandit.md alone")
    parser.add_argument("--out-dir", type=pathlib.Path, help="write the CSVs (and bandit.md) here instead")
    parser.add_argument("--seeds-per-program", type=int, metavar="N",
                        help="run N initialisation seeds per compiled program (default: all the missing seeds of an "
                             "agent and d in one)")
    parser.add_argument("--import-log", type=pathlib.Path, nargs="+", metavar="LOG",
                        help="add the runs printed in these logs (e.g. benchmarks/results/bandit_gpu_h100_log.txt) "
                             "to the preset's run CSV, then go on")
    args = parser.parse_args(argv)
    global RESULTS, PAGE
    if args.out_dir is not None:
        RESULTS, PAGE = args.out_dir, args.out_dir / "bandit.md"
    if args.speed:
        speed(dims=tuple(args.dims or (2, 10)))
        return
    if args.check_2d:
        check_2d(args.agents)
        return
    preset = bandit.PRESETS[args.preset]
    dims = args.dims or preset["input_dims"]
    horizon = args.horizon or preset["horizon"]
    problems = list(range(args.problems or preset["num_seeds"]))
    seeds = list(range(args.seeds or preset["agent_seeds"]))
    kwargs = preset["agent_kwargs"]
    draw, block = preset.get("problem_draw", "fixed"), preset["num_seeds"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs = f"bandit_{preset.get('runs', args.preset)}"  # the run CSVs, shared by a preset and its subsets
    tag = f"bandit_{args.preset}"
    files = {"regret": RESULTS / f"{runs}_regret.csv",
             "curve_runs": RESULTS / f"{runs}_curve_runs.csv.gz"}  # every run's curve (100 points per problem)
    if args.report_only and not files["regret"].exists():
        parser.error(f"--report-only needs the CSVs of an earlier {args.preset} run; {files['regret']} is missing")
    for log in args.import_log or ():
        import_log(log, files["regret"])
    t0 = time.perf_counter()
    if args.report_only:
        regret = read_regret(files["regret"], horizon)
    else:
        regret = run_missing(args.agents, dims, problems, seeds, horizon, kwargs, files,
                             RESULTS / f".{runs}_checkpoints", fresh=args.fresh, draw=draw, block=block,
                             seeds_per_program=args.seeds_per_program)
    run_wall = time.perf_counter() - t0
    regret = problem_view(regret, block, draw)  # seed: the problem's index within its seed's draw
    if args.runs_only:
        print(f"runs: {run_wall:.0f} s of wall time in this call")
        return
    regret = regret[(regret.horizon == horizon) & regret.input_dim.isin(dims)]
    if args.preset == "lab":
        report_lab(args, regret, dims, seeds, tag, kwargs)
        return
    curves = read_csv(files["curve_runs"])
    if len(curves):  # mean ± s.e. of the cumulative regret over problems and seeds, for every run in the CSV
        write_csv(curves.groupby(["agent", "input_dim", "t"])["cumulative_regret"].agg(["mean", "sem"])
                  .reset_index(), RESULTS / f"{runs}_curves.csv")
    scores = testbed_2d(args.agents, seeds, kwargs, RESULTS / "bandit_testbed_2d.csv")
    points, common = points_2d(regret, scores, args.agents, seeds, problems, horizon)
    write_csv(points, RESULTS / f"{tag}_points.csv")
    corr = per_dim_correlations(points)
    write_csv(corr, RESULTS / f"{tag}_correlation.csv")
    sel = regret[regret.agent.isin(args.agents) & regret.agent_seed.isin(seeds) & regret.seed.isin(problems)]
    total = sel.groupby(["agent", "input_dim"])["total_regret"].agg(["mean", "sem"])
    total["sec_per_problem"] = sel.groupby(["agent", "input_dim"])["seconds"].mean()
    total["runs"] = sel.groupby(["agent", "input_dim"]).size()
    table = total.join(points.groupby(["agent", "input_dim"])[["kl_1", "kl_10"]].mean()).reset_index() \
        .sort_values(["input_dim", "mean"])
    write_csv(table, RESULTS / f"{tag}_summary.csv")
    pd.set_option("display.width", 160)
    print(f"\npreset {args.preset}: d = {list(dims)}, T = {horizon}, problems {problems}, initialisation seeds "
          f"{seeds}; 2-D testbed scores (paper grid) of the same seeds")
    print(table.round(4).to_string(index=False))
    print("\nlog-log Pearson correlation of total regret with the 2-D testbed score, bootstrap 5-95 %, per d "
          "(paper: Figs. 8/9, d = 50, 6 agents × 10 seeds):")
    print(corr.round(3).to_string(index=False))
    if not args.no_docs:
        write_docs(args.preset, table, corr, points, regret, common, horizon, problems, seeds, args.agents, dims,
                   scores)


def report_lab(args, regret, dims, seeds, tag, kwargs) -> None:
    """Lab preset: each agent scored on testbed problems at ρ = 0.1 with the bandit's d (seeds as the runs)."""
    path = RESULTS / f"{tag}_testbed.csv"
    tb = read_csv(path)
    for d in dims:
        test_inputs = args.test_inputs if args.test_inputs != "auto" else ("iid" if d == 2 else "polyadic")
        for name in args.agents:
            have = set(tb[(tb.agent == name) & (tb.input_dim == d)].seed) if len(tb) else set()
            missing = [s for s in seeds if s not in have]
            if missing:
                grid = testbed.grid(temperatures=(bandit.TEMPERATURE,), num_train=(10, 100, 1000), seeds=missing,
                                    input_dim=d, test_inputs=test_inputs)
                agent = jtk.agents.make(name, **kwargs.get(name, {}))
                tb = pd.concat([tb, testbed.evaluate(agent, grid, name=name).assign(test_inputs=test_inputs)],
                               ignore_index=True)
                write_csv(tb, path)
    curves = read_csv(RESULTS / f"{tag}_curve_runs.csv.gz")
    if len(curves):
        write_csv(curves.groupby(["agent", "input_dim", "t"])["cumulative_regret"].agg(["mean", "sem"])
                  .reset_index(), RESULTS / f"{tag}_curves.csv")
    per_run = regret.groupby(["agent", "input_dim", "agent_seed"])["total_regret"].mean()
    tb = tb.assign(kl=tb["kl"].clip(lower=1e-6))
    kl = tb.pivot_table(index=["agent", "input_dim", "seed"], columns="tau", values="kl", aggfunc="mean")
    kl.columns = [f"kl_{t}" for t in kl.columns]
    kl.index = kl.index.set_names("agent_seed", level="seed")
    points = kl.join(per_run, how="inner").reset_index()
    write_csv(points, RESULTS / f"{tag}_points.csv")
    corr = per_dim_correlations(points).drop(columns=["paper_r", "paper_lo", "paper_hi"])
    write_csv(corr, RESULTS / f"{tag}_correlation.csv")
    total = regret.groupby(["agent", "input_dim"])["total_regret"].agg(["mean", "sem"])
    total["sec_per_problem"] = regret.groupby(["agent", "input_dim"])["seconds"].mean()
    table = total.join(points.groupby(["agent", "input_dim"])[["kl_1", "kl_10"]].mean()).reset_index() \
        .sort_values(["input_dim", "mean"])
    write_csv(table, RESULTS / f"{tag}_summary.csv")
    print(table.round(4).to_string(index=False))
    print(corr.round(3).to_string(index=False))


def estimate_hours(agent: str, input_dim: int, measured: pd.DataFrame) -> tuple[float, str]:
    """Hours for one initialisation seed of the paper preset (20 problems × 50 000 steps) on this machine.

    In order of preference: measured at paper scale (this (agent, d) ran; compilation included); at d = 50 the
    steps per second of one problem in bandit_speed_d50.csv (``--speed --dims 50``); the steps per
    second of benchmarks/results/bandit_speed.csv (after compilation; ensembles at K = 100, plain ensembles at
    ensemble+'s rate, whose extra prior networks are evaluated once per action set); the lab preset's seconds per
    problem (T = 2000, 8 problems, compilation included). The last two were measured at d ≤ 10: for d = 50 they
    use d = 10 and are a lower bound.
    """
    paper = bandit.PRESETS["paper"]
    steps = paper["horizon"] * paper["num_seeds"]
    row = measured[(measured.agent == agent) & (measured.input_dim == input_dim)]
    if len(row):
        return float(row.seconds.mean()) * paper["num_seeds"] * paper["horizon"] / float(row.horizon.iloc[0]) / 3600, \
            f"measured at paper scale ({len(row)} run{'s' if len(row) > 1 else ''})"
    d50 = MEASURED / "bandit_speed_d50.csv"
    if input_dim == 50 and d50.exists():
        fast = pd.read_csv(d50)
        fast = fast[fast.agent == agent]
        if len(fast):
            rate = float(fast.agent_steps_per_s.mean())
            return steps / rate / 3600, (f"bandit_speed_d50.csv: {rate:.0f} steps/s on one problem, load "
                                         f"{float(fast.load_avg_1min.mean()):.1f}")
    d = min(input_dim, 10)
    bound = ", d = 10 rate: a lower bound" if input_dim > 10 else ""
    speed = pd.read_csv(MEASURED / "bandit_speed.csv")
    like, members = ("ensemble+", 100.0) if agent in ("ensemble", "ensemble+") else (agent, None)
    fast = speed[(speed.agent == like) & (speed.input_dim == d)
                 & (speed.num_members == members if members else speed.num_members.isna())]
    if len(fast):
        rate = float(fast.agent_steps_per_s.mean())
        return steps / rate / 3600, f"bandit_speed.csv, {like}{' K = 100' if members else ''}: {rate:.0f} steps/s{bound}"
    lab = pd.read_csv(MEASURED / "bandit_lab_summary.csv")
    lab_row = lab[(lab.agent == agent) & (lab.input_dim == d)]
    if not len(lab_row) or agent in ("ensemble", "ensemble+"):
        return float("nan"), "no measurement"
    per_step = float(lab_row.sec_per_problem.iloc[0]) / bandit.PRESETS["lab"]["horizon"]
    return per_step * steps / 3600, f"lab preset: {per_step * 1e3:.2f} ms per problem-step{bound}"


def plot_fig89(points: pd.DataFrame, corr: pd.DataFrame, d: int, path: pathlib.Path) -> str:
    """Figs. 8/9 as jtk measures them (regret at d against the 2-D scores, log–log); returns the text alternative."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jtk.plots.bandit import plot_regret_vs_kl, regret_vs_kl_alt

    sub = points[points.input_dim == d]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    alts = []
    for ax, metric, fig_no in zip(axes, ("kl_1", "kl_10"), (8, 9)):
        c = corr[(corr.input_dim == d) & (corr.metric == metric)].iloc[0]
        have = c[["r", "lo", "hi"]].notna().all()
        plot_regret_vs_kl(sub, metric, ax=ax, correlation=dict(c) if have else None, scores="2-D paper grid")
        pr, plo, phi = PAPER_CORRELATION[metric]
        ax.set_title(f"Fig. {fig_no}, d = {d}: jtk r = " + (f"{c.r:.2f} [{c.lo:.2f}, {c.hi:.2f}]" if have else "n/a")
                     + f"\npaper r = {pr:.2f} ({plo:.2f}, {phi:.2f})", fontsize=9)
        alts.append(f"Fig. {fig_no} ({'marginal' if metric == 'kl_1' else 'joint'}): "
                    + regret_vs_kl_alt(sub, metric, dict(c) if have else None)
                    + f" The paper's figure: r = {pr:.2f} ({plo:.2f}, {phi:.2f}).")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return " ".join(alts)


def write_docs(preset: str, table, corr, points, regret, common, horizon, problems, seeds, agents, dims,
               scores) -> None:
    """The section 'bandit-fig89' of docs/bandit.md: what ran, Figs. 8/9 with the paper's numbers, per-d tables."""
    from jtk._docs import md_table, write_section

    fmt = lambda r, lo, hi: "" if pd.isna(r) else f"{r:.2f} [{lo:.2f}, {hi:.2f}]"  # noqa: E731
    corr_rows = pd.DataFrame({
        "d": corr.input_dim, "score": corr.metric.map({"kl_1": "d_KL^1 (Fig. 8)", "kl_10": "d_KL^10 (Fig. 9)"}),
        "jtk r [5 %, 95 %]": [fmt(*v) for v in zip(corr.r, corr.lo, corr.hi)],
        "points (agents)": [f"{n} ({a})" for n, a in zip(corr.num_points, corr.num_agents)],
        "paper r (5 %, 95 %)": [fmt(*v).replace("[", "(").replace("]", ")") if not pd.isna(v[0]) else
                                "not given (Figs. 16/17 are plots only)" for v in zip(corr.paper_r, corr.paper_lo,
                                                                                       corr.paper_hi)]})
    rows = table.assign(**{"problems × seeds": table["runs"].astype(int),
                           "total regret (mean ± s.e.)": [f"{m:.1f}" + ("" if pd.isna(s) else f" ± {s:.1f}")
                                                          for m, s in zip(table["mean"], table["sem"])],
                           "seconds per problem": [f"{v:.0f}" for v in table["sec_per_problem"]]})
    rows = rows[["input_dim", "agent", "problems × seeds", "total regret (mean ± s.e.)", "kl_1", "kl_10",
                 "seconds per problem"]].rename(columns={"input_dim": "d", "kl_1": "2-D d_KL^1", "kl_10": "2-D d_KL^10"})
    sel = regret[regret.agent.isin(agents) & regret.agent_seed.isin(seeds) & regret.seed.isin(problems)
                 & regret.input_dim.isin(dims)]
    missing = []  # per (agent, d): the seeds not run at all, then the seeds run on part of the problems
    for d in dims:
        for a in agents:
            gaps = {s: p for s in seeds if (p := missing_problems(sel, a, d, s, horizon, problems))}
            whole = [s for s, p in gaps.items() if len(p) == len(problems)]
            part = [f"seed {s} problems {p}" for s, p in gaps.items() if len(p) < len(problems)]
            if gaps:
                missing.append(f"{a} at d = {d}: " + "; ".join(
                    ([f"seeds {whole}"] if whole else []) + part))
    fig_d = 50 if 50 in set(points.input_dim) else (max(points.input_dim) if len(points) else 50)
    per_seed = bandit.PRESETS[preset].get("problem_draw", "fixed") == "per-seed"
    drawn = (f"bandit problems drawn per seed: seed s runs problem seeds s·{bandit.PRESETS[preset]['num_seeds']} + "
             f"{problems} (`jtk.testbed.bandit.problem_seeds`), and the problem numbers below are these indices"
             if per_seed else f"bandit problems {problems}")
    lines = [f"Regenerated by `python -m jtk.testbed.bandit_study --preset {preset}` (T = {horizon}; "
             f"d = {', '.join(map(str, dims))}; {drawn}; initialisation seeds {seeds}; agents "
             f"{', '.join(agents)}, the reference defaults, ensembles of K = 100).", ""]
    if missing:
        lines += [f"**Not yet run** ({len(missing)}): " + "; ".join(missing) + ". Rerun the same command: it runs "
                  "only these, and a run that was stopped continues from its checkpoint.", ""]
    lines += ["Each point is one (agent, initialisation seed s): the total regret at T, averaged over the problems "
              "every agent ran (" + "; ".join(f"d = {d}: {sorted(v)}" for d, v in common.items()) + "), against "
              "the agent's mean d_KL^τ on the 2-D testbed (the 42 problems of seed s of the paper grid: "
              "ρ ∈ {0.01, 0.1, 0.5}, n ∈ {1, 3, …, 1000}, τ ∈ {1, 10}). Pearson r of the logs, bootstrap 5–95 % "
              "interval over the points; one row per d, never pooled across d. The paper's numbers are the "
              "captions of Figs. 8/9 (d = 50, six agents × 10 seeds, 20 problems each).", "",
              md_table(corr_rows, index=False), "", f"**Verdict.** {bandit.paper_verdict(corr, fig_d)}", ""]
    at_d = points[points.input_dim == fig_d]
    per_agent = at_d.groupby("agent").size()
    if per_agent.nunique() > 1 and len(per_agent) >= 3:  # uneven seeds: the same with one point per agent
        means = at_d.groupby("agent")[["total_regret", "kl_1", "kl_10"]].agg(
            lambda v: float(np.exp(np.log(v).mean())))  # geometric means: the mean on the log scale of the figure
        balanced = {m: bandit.regret_correlation(means, m) for m in ("kl_1", "kl_10")}
        lines += [f"**Weighting.** The points are uneven across agents at d = {fig_d} ("
                  + ", ".join(f"{a} {n}" for a, n in per_agent.sort_values(ascending=False).items())
                  + " seeds), so agents with more seeds weigh more. With one point per agent instead (the geometric "
                  "mean of its points' regret and scores): "
                  + "; ".join(f"d_KL^{m[3:]} r = {c['r']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"
                              for m, c in balanced.items()) + f" over {len(means)} points.", ""]
        eq_seeds, eq_problems = equal_subset(regret, agents, fig_d, horizon, seeds, problems)
        if eq_problems:  # every agent on the same seeds and problems, so the correlations compare like with like
            eq_points, _ = points_2d(regret[regret.input_dim == fig_d], scores, agents, eq_seeds, eq_problems, horizon)
            eq = per_dim_correlations(eq_points)
            write_csv(eq.assign(agent_seeds="|".join(map(str, eq_seeds)), problems="|".join(map(str, eq_problems))),
                      RESULTS / f"bandit_{preset}_equal_correlation.csv")
            lines += [f"**Every agent on the same runs.** The runs all {len(set(agents))} agents have at d = {fig_d}: "
                      f"initialisation seeds {eq_seeds} on problems {eq_problems}, one point per (agent, seed), "
                      f"{len(eq_points)} points: "
                      + "; ".join(f"d_KL^{m[3:]} r = {fmt(r, lo, hi)}" for m, r, lo, hi
                                  in zip(eq.metric, eq.r, eq.lo, eq.hi))
                      + " (`bandit_" + preset + "_equal_correlation.csv`)."
                      + (" So few points leave intervals that span most of [−1, 1]: this subset can neither confirm "
                         "nor contradict the paper; the missing runs listed above decide it." if len(eq_points) < 10
                         else ""), ""]
    for d, g in points.groupby("input_dim"):  # the same comparison without a coefficient: the agents' order
        mean = g.groupby("agent")[["total_regret", "kl_1", "kl_10"]].mean()
        order = {c: " < ".join(mean.sort_values(c).index) for c in mean.columns}
        lines += [f"Order of the agents at d = {d} (mean over their points), lowest first: regret "
                  f"{order['total_regret']}; 2-D d_KL^10 {order['kl_10']}; 2-D d_KL^1 {order['kl_1']}.", ""]
    if len(points[points.input_dim == fig_d]):
        image = PAGE.parent / f"bandit_fig89_{preset}.png"
        alt = plot_fig89(points, corr, fig_d, image)
        lines += [f"![{alt}]({image.name})", "", f"Text alternative: {alt}", ""]
    check = MEASURED / "bandit_testbed_2d_check.csv"
    if check.exists():
        c = pd.read_csv(check)
        c = c.assign(**{"relative difference": (c.kl_now - c.kl_stored).abs() / c.kl_stored})
        lines += ["The 2-D scores are the rows measured earlier on the paper grid (`bandit_testbed_2d.csv` names each "
                  "row's source file). Whether they still describe today's agents: one problem per agent re-evaluated "
                  "now (`--check-2d`: seed 0, ρ = 0.1, n = 100) against the stored row:", "",
                  md_table(c[["agent", "source", "tau", "kl_now", "kl_stored", "relative difference", "likelihood"]],
                           "{:.3g}", index=False), ""]
    lines += ["Total regret per agent (mean ± s.e. over problems × seeds of the selection), with the mean 2-D "
              "scores of the seeds plotted:", "", md_table(rows, "{:.3f}", index=False), "",
              "Points:", "", md_table(points.rename(columns={"input_dim": "d", "agent_seed": "seed",
                                                             "kl_1": "2-D d_KL^1", "kl_10": "2-D d_KL^10"}),
                                      "{:.4g}", index=False)]
    timed = sel.copy()
    for column in ("load_avg_1min_start", "load_avg_1min"):
        if column not in timed:
            timed[column] = np.nan
    timed["device"] = timed["device"].fillna("CPU") if "device" in timed else "CPU"  # rows before the column: CPU
    run_keys = ["agent", "input_dim", "agent_seed", "horizon", "seconds"]  # the rows of one run share its seconds
    timed = timed.merge(regret.groupby(run_keys).size().rename("vmapped").reset_index(), on=run_keys, how="left")
    timing = timed.groupby(["agent", "input_dim", "agent_seed", "device"]).agg(
        problems=("seed", "size"), vmapped=("vmapped", "max"), seconds=("seconds", "sum"),
        load_start=("load_avg_1min_start", "mean"), load_end=("load_avg_1min", "mean")).reset_index()
    lines += ["", "Wall time of the selection's runs: seconds per problem (a run's wall time, compilation included, "
              "divided by the problems it ran vmapped together, `vmapped`) summed over the selection's problems, "
              "and the 1-minute `os.getloadavg()` at the "
              "run's start and end. `CPU`: the project's 2-core machine, shared with other work (a load above 2: "
              "the run had less than the whole machine; empty: not recorded then); a GPU: a lent machine running "
              "the six agents' processes side by side (benchmarks/gpu_bandit.sh), rows from its log "
              "(`--import-log`):", "",
              md_table(timing.rename(columns={"input_dim": "d", "agent_seed": "seed"}), "{:.1f}", index=False)]
    cpu = regret[regret["device"].isna()] if "device" in regret else regret  # this machine's runs, not a GPU's
    measured = cpu.groupby(["agent", "input_dim", "agent_seed"]).agg(
        seconds=("seconds", "mean"), horizon=("horizon", "first")).reset_index()
    est = []
    for agent in bandit.PAPER_AGENTS:
        h, how = estimate_hours(agent, 50, measured)
        est.append({"agent": agent, "d": 50, "hours per seed (20 problems × 50 000 steps)": round(h, 2), "from": how})
    lines += ["", "What the rest of the paper preset costs at d = 50 on this machine, per initialisation seed:", "",
              md_table(pd.DataFrame(est), "{:.2f}", index=False)]
    write_section("bandit-fig89", "\n".join(lines), PAGE)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\nwall {time.perf_counter() - t0:.0f} s")
