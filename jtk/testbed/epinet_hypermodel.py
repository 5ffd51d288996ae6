"""Neural Testbed rows for the reference-form hypermodel and the epinet, beside mlp and ensemble+ (K = 100).

Usage:
    python -m jtk.testbed.epinet_hypermodel quick                  # 16 problems per agent (a check)
    python -m jtk.testbed.epinet_hypermodel paper                  # the paper grid: 420 problems, 10 seeds
    python -m jtk.testbed.epinet_hypermodel paper --agents epinet  # one agent (rows of the others are reused)
    python -m jtk.testbed.epinet_hypermodel paper --seeds 1        # seed 0 only: time it and extrapolate
    python -m jtk.testbed.epinet_hypermodel paper --out DIR        # e.g. on a GPU machine
    python -m jtk.testbed.epinet_hypermodel paper --report-only    # summarize the rows already in --out
    python -m jtk.testbed.epinet_hypermodel paper --report-only --docs  # and write its section of docs/results.md

Writes ``<out>/<agent>_<grid>[_seeds<N>].csv`` (one row per problem, the columns of
``jtk.testbed.evaluate``; default out: benchmarks/results/epinet_hypermodel/) and, for the report,
``<out>/summary_<grid>[_seeds<N>].csv`` and ``.md``. Agents whose CSV exists are not rerun (``--force``
reruns). mlp is always (re)used from ``<out>`` (cheap to run): it checks that the data match the older rows
in benchmarks/results/ (mlp, ensemble+ K = 100, the pre-reference hypermodel), which are then shown beside.

The report: d_KL^1 and d_KL^10 (negative per-problem values set to 0) with the reference leaderboard's
standard error (std of the per-seed means / sqrt(#seeds)), seconds per problem (train + eval, jit
included), the ratio to mlp, and the paired difference to mlp on the same problems with the same
seed-mean standard error. The script does not set JAX_PLATFORMS: on a GPU machine JAX uses the GPU
(set ``JAX_PLATFORMS=cpu`` yourself on a CPU-only machine to skip the GPU probe).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from jtk import _checks
import jtk
from jtk import testbed
from jtk._paths import DOCS as DOCS_DIR, RESULTS

__all__ = ["main"]  # see the package docstring

DEFAULT_OUT = RESULTS / "epinet_hypermodel"
AGENTS = ("hypermodel", "epinet")
KEY = ["temperature", "num_train", "tau", "seed", "input_dim"]
# Older paper-grid rows in benchmarks/results/ (the quick grid is a subset of the paper grid): label → file.
# They are shown only if they cover every problem and mlp's rows agree with them (same data).
OLDER = {"mlp_older": "testbed_mlp_paper.csv", "ensemble+_K100": "testbed_ensemble+_K100_paper.csv",
         "hypermodel_pre_reference": "zoo_hypermodel_paper.csv"}
# Paper Table 2 (mean over the 2-D grid): d_KL^1, d_KL^10.
PAPER = {"mlp": (0.129, 1.367), "hypermodel": (0.130, 1.107), "ensemble+_K100": (0.129, 1.015)}


def seed_se(per_problem: pd.DataFrame, column: str) -> float:
    """The reference leaderboard's error of ``column`` (jtk.testbed.seed_se of its per-seed means)."""
    return testbed.seed_se(per_problem.groupby("seed")[column].mean())


def run_agent(name: str, problems, path: Path, force: bool) -> pd.DataFrame:
    if path.exists() and not force:
        print(f"[{name}] reusing {path}", flush=True)
        return pd.read_csv(path)
    t0 = time.perf_counter()
    rows = testbed.evaluate(jtk.agents.make(name), problems, name=name, progress=False)
    wall = time.perf_counter() - t0
    try:  # a provenance manifest beside the CSV where jtk has one
        from jtk import results as results_lib
        import jax
        results_lib.save_results(rows, path, agent=name, problems=problems, force=True,
                                 config={"script": "jtk.testbed.epinet_hypermodel"},
                                 extra={"wall_seconds": wall, "device": jax.devices()[0].device_kind})
    except ImportError:
        rows.to_csv(path, index=False)
    print(f"[{name}] {len(rows)} problems in {wall:.1f} s ({wall / len(rows):.2f} s per problem, jit included) "
          f"→ {path}", flush=True)
    return rows


def clipped(rows: pd.DataFrame) -> pd.DataFrame:
    out = rows.copy()
    out["kl"] = out["kl"].clip(lower=0.0)
    return out


def summary(frames: dict[str, pd.DataFrame], mlp: pd.DataFrame) -> pd.DataFrame:
    """One row per agent: d_KL^τ ± seed SE, ratio and paired difference to mlp, seconds per problem."""
    base = clipped(mlp)[KEY + ["kl"]].rename(columns={"kl": "kl_mlp"})
    table = []
    for label, rows in frames.items():
        rows = clipped(rows)
        rec = {"agent": label, "problems": len(rows), "likelihood": ",".join(sorted(rows["likelihood"].unique())),
               "seconds_per_problem": float((rows["train_seconds"] + rows["eval_seconds"]).mean())}
        for tau in (1, 10):
            sub = rows[rows.tau == tau]
            if sub.empty:
                continue
            rec[f"kl_{tau}"] = float(sub["kl"].mean())
            rec[f"kl_{tau}_se"] = seed_se(sub, "kl")
            paired = sub.merge(base, on=KEY, how="inner")
            paired["diff"] = paired["kl"] - paired["kl_mlp"]
            rec[f"kl_{tau}_rel"] = rec[f"kl_{tau}"] / float(paired["kl_mlp"].mean()) if len(paired) else np.nan
            rec[f"diff_{tau}"] = float(paired["diff"].mean()) if len(paired) else np.nan
            rec[f"diff_{tau}_se"] = seed_se(paired, "diff") if len(paired) else np.nan
        table.append(rec)
    return pd.DataFrame(table).set_index("agent")


def paired_line(a: pd.DataFrame, b: pd.DataFrame, label: str) -> str:
    """Paired difference a − b of clipped d_KL^τ on shared problems, ± the seed-mean standard error."""
    shared = len(a.merge(b, on=KEY))
    parts = []
    for tau in (1, 10):
        d, se = testbed.paired_difference(a, b, tau)
        if np.isfinite(d):
            parts.append(f"Δ d_KL^{tau} = {d:+.4f} ± {se:.4f}")
    return f"Paired {label} on {shared} problems: " + ", ".join(parts) + ".\n"


def markdown(table: pd.DataFrame, grid: str) -> str:
    lines = ["| agent | problems | estimator | d_KL^1 ± se | d_KL^10 ± se | d_KL^1 / mlp | d_KL^10 / mlp | "
             "paired Δ d_KL^1 vs mlp | paired Δ d_KL^10 vs mlp | paper d_KL^10 / mlp | s / problem |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for agent, r in table.iterrows():
        ref = PAPER.get(agent.replace("_pre_reference", ""))
        paper = f"{ref[1] / PAPER['mlp'][1]:.2f}" if ref and grid == "paper" else "–"
        lines.append(
            f"| {agent} | {r.problems} | {r.likelihood} | {r.kl_1:.3f} ± {r.kl_1_se:.3f} | "
            f"{r.kl_10:.3f} ± {r.kl_10_se:.3f} | {r.kl_1_rel:.2f} | {r.kl_10_rel:.2f} | "
            f"{r.diff_1:+.4f} ± {r.diff_1_se:.4f} | {r.diff_10:+.3f} ± {r.diff_10_se:.3f} | {paper} | "
            f"{r.seconds_per_problem:.2f} |")
    return "\n".join(lines) + "\n"


DOCS = DOCS_DIR / "results.md"
DOCS_INTRO = """\
`hypermodel` is now built as the reference testbed builds it (docs/reference.md, "Hypermodel"): its prior
function's layers read separate slices of the index and its hyper layer starts from the reference's
variance-scaling initialisation (prior function std ≈ 0.46 over indices and inputs instead of ≈ 1.1; generated
hidden-to-hidden weights ≈ 0.035 instead of ≈ 0.17, with nonzero biases). `hypermodel_pre_reference` is jtk's
earlier hypermodel on the same problems (benchmarks/results/zoo_hypermodel_paper.csv); `epinet` is the
reference testbed's epinet (docs/reference.md, "Epinet"); `ensemble+_K100` comes from
benchmarks/results/testbed_ensemble+_K100_paper.csv. Older rows are shown only when this run's mlp reproduces
benchmarks/results/testbed_mlp_paper.csv (same environments and data). Estimators: hypermodel and epinet are
scored with M = 1000 sampled indices (`mc1000`); mlp is one function, so its exact and Monte Carlo estimates
coincide; ensemble+ rows use exact enumeration over its 100 members. ± = the reference leaderboard's standard
error (std of the per-seed means / sqrt(#seeds)); "paired Δ" = mean over the same problems of the agent's d_KL
minus mlp's, ± the same seed-mean error. "paper d_KL^10 / mlp" is Table 2's ratio. Seconds per problem are
train + eval with jit, on the machine each row came from (older rows: CPU runs listed above)."""


def findings(table: pd.DataFrame) -> str:
    """One generated sentence per agent: ratio to mlp, paired difference and its size in standard errors."""
    lines = []
    for agent, r in table.iterrows():
        if agent == "mlp":
            continue
        parts = []
        for tau in (1, 10):
            if f"diff_{tau}" in r and np.isfinite(r[f"diff_{tau}"]):
                z = r[f"diff_{tau}"] / r[f"diff_{tau}_se"] if r[f"diff_{tau}_se"] > 0 else np.nan
                parts.append(f"d_KL^{tau} {r[f'kl_{tau}_rel']:.2f} × mlp (paired {r[f'diff_{tau}']:+.3f} ± "
                             f"{r[f'diff_{tau}_se']:.3f}, {z:+.1f} se)")
        lines.append(f"* **{agent}**: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def breakdown(frames: dict[str, pd.DataFrame], tau: int = 10) -> str:
    """Markdown table of mean clipped d_KL^τ per agent × temperature (rows) and num_train (columns)."""
    parts = []
    for label, rows in frames.items():
        sub = clipped(rows)
        sub = sub[sub.tau == tau]
        if len(sub):
            pivot = sub.pivot_table(index="temperature", columns="num_train", values="kl", aggfunc="mean")
            pivot.index = [f"{label}, ρ = {t:g}" for t in pivot.index]
            parts.append(pivot)
    table = pd.concat(parts)
    head = "| agent, temperature | " + " | ".join(f"n = {c}" for c in table.columns) + " |"
    lines = [head, "|---" * (len(table.columns) + 1) + "|"]
    lines += [f"| {i} | " + " | ".join(f"{v:.2f}" for v in row) + " |" for i, row in table.iterrows()]
    return "\n".join(lines) + "\n"


def write_docs(section: str, key: str, path: Path = DOCS) -> None:
    """Replaces this script's section ``epinet_hypermodel:KEY`` of docs/results.md (or appends it)."""
    from jtk._docs import write_section

    write_section(f"epinet_hypermodel:{key}", section, path)


def main(argv=None) -> int:
    argv = _checks.argv(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grid", choices=("quick", "paper"))
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the CSVs (created; default: benchmarks/results/epinet_hypermodel)")
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), help=f"agents to run (default {AGENTS})")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: the grid's)")
    parser.add_argument("--force", action="store_true", help="rerun agents whose CSV exists")
    parser.add_argument("--report-only", action="store_true", help="only summarize the CSVs already there")
    parser.add_argument("--docs", action="store_true", help="write the report into docs/results.md (own section)")
    parser.add_argument("--docs-label", default=None,
                        help="where the rows were computed, for the docs (default: this run's JAX device)")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="read the older rows from here, write the rows (DIR/epinet_hypermodel) and results.md here")
    args = parser.parse_args(argv)
    global RESULTS, DOCS
    if args.out_dir is not None:
        RESULTS, DOCS = args.out_dir, args.out_dir / "results.md"
    if args.out is None:
        args.out = RESULTS / "epinet_hypermodel"
    unknown = sorted(set(args.agents) - set(jtk.agents.names()))
    if unknown:
        parser.error(f"--agents must be registered agents ({jtk.agents.names()}), got {unknown}")
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    args.out.mkdir(parents=True, exist_ok=True)
    problems = testbed.problems(args.grid, seeds=args.seeds)
    suffix = f"{args.grid}_seeds{args.seeds}" if args.seeds is not None else args.grid
    import jax
    print(f"jtk {getattr(jtk, '__version__', '?')}, jax {jax.__version__} on {jax.default_backend()} "
          f"({jax.devices()[0].device_kind}); {len(problems)} problems per agent", flush=True)

    frames: dict[str, pd.DataFrame] = {}
    for name in ["mlp", *[a for a in args.agents if a != "mlp"]]:
        path = args.out / f"{name}_{suffix}.csv"
        if args.report_only:
            if path.exists():
                frames[name] = pd.read_csv(path)
            continue
        frames[name] = run_agent(name, problems, path, args.force)
    if "mlp" not in frames:
        print(f"no mlp rows in {args.out}: nothing to report", file=sys.stderr)
        return 1
    mlp = frames["mlp"]
    wanted = mlp[KEY]
    for label, file in OLDER.items():
        path = RESULTS / file
        if not path.exists():
            continue
        older = pd.read_csv(path).merge(wanted, on=KEY, how="inner")
        if len(older) != len(mlp):
            continue
        if label == "mlp_older":  # same problems and data? mlp is deterministic given them
            both = older.merge(mlp, on=KEY, suffixes=("_old", ""))
            gap = float(np.max(np.abs(both["kl_old"] - both["kl"])))
            same = gap < 1e-2 * max(1.0, float(both["kl"].abs().max()))  # other data differ by ~0.1
            print(f"older rows: mlp max |Δkl| = {gap:.2e} vs {file} → "
                  f"{'same problems and data' if same else 'DIFFERENT data: older rows not shown'}")
            if not same:
                break
            continue
        frames[label] = older
    table = summary(frames, mlp)
    table.to_csv(args.out / f"summary_{suffix}.csv")
    text = markdown(table, args.grid)
    if "hypermodel" in frames and "hypermodel_pre_reference" in frames:
        text += "\n" + paired_line(frames["hypermodel"], frames["hypermodel_pre_reference"],
                                   "hypermodel (reference form) − hypermodel_pre_reference")
    (args.out / f"summary_{suffix}.md").write_text(text)
    print(text)
    if args.docs:
        label = args.docs_label or f"{jax.devices()[0].device_kind}, jax {jax.__version__}"
        try:
            where = args.out.resolve().relative_to(DOCS.parents[1])
        except ValueError:
            where = args.out
        command = shlex.join(sys.argv[1:] if argv is None else argv)
        section = (f"## Reference-form hypermodel and epinet: grid `{suffix}`\n\n"
                   f"Generated by `python -m jtk.testbed.epinet_hypermodel {command}`"
                   f" from the rows in `{where}/` ({label}).\n\n{DOCS_INTRO}\n\n{text}\n{findings(table)}\n\n"
                   f"d_KL^10 by setting (mean over seeds; columns: num_train):\n\n{breakdown(frames)}")
        write_docs(section, suffix, DOCS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
