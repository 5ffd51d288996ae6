"""One estimator per table: every agent scored with M = 1000 sampled functions ("mc") vs today's "auto".

Usage:
    python -m jtk.testbed.estimator_table                         # quick grid, the cheap agents
    python -m jtk.testbed.estimator_table --agents mlp ensemble   # a subset
    python -m jtk.testbed.estimator_table --report-only           # rebuild the table from the stored CSVs

For each agent, one training per problem is scored twice: with the reference's
estimator (``likelihood="mc"``: 1000 sampled functions, ensembles sampling
members uniformly with replacement) and with ``"auto"`` (exact enumeration of a
finite mixture's components, else the same Monte Carlo estimator). For agents
that are not finite mixtures (dropout, bbb, hypermodel) the two are the same
computation, so only "mc" is run. Rows go to
benchmarks/results/estimator_<agent>_<grid>.csv (an existing file is reused:
delete it to rerun). The script prints the table and writes it into
docs/results.md as its own marked section ``estimator-table-GRID`` (``jtk/_docs.py``), which
jtk.testbed.zoo_report keeps when it rebuilds that file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from jtk import _checks
import jtk
from jtk import testbed
from jtk.testbed import engine
from jtk.agents import base as agents_base
from jtk._docs import write_section
from jtk._paths import DOCS as DOCS_DIR, RESULTS

__all__ = ["main", "table"]  # see the package docstring

DOCS = DOCS_DIR / "results.md"
AGENTS = ["mlp", "ensemble", "ensemble+", "sgmcmc", "dropout", "bbb", "hypermodel"]


def run_agent(name: str, problems) -> tuple[pd.DataFrame, float]:
    """Rows of both estimators ("auto" and "mc") from one training of ``name`` on ``problems``."""
    agent = jtk.agents.make(name)
    t0 = time.perf_counter()
    if isinstance(agent, agents_base.JaxAgent):
        modes = ("auto", "mc") if agent.is_mixture else ("mc",)
        rows = []
        for chunk in engine.make_chunks(problems, agent):
            rows += engine._evaluate_jax_chunk(agent, chunk, name, modes)
        df = pd.DataFrame(rows, columns=testbed.RESULT_COLUMNS)
    else:  # a generic agent: two evaluations (it is trained twice)
        df = pd.concat([testbed.evaluate(agent, problems, name=name, progress=False, likelihood=m)
                        for m in ("auto", "mc")], ignore_index=True).drop_duplicates()
    return df, time.perf_counter() - t0


def table(frames: dict[str, pd.DataFrame], mlp_name: str = "mlp") -> pd.DataFrame:
    """One row per agent: d_KL^1 and d_KL^10 by the agent's own (auto) estimator and by Monte Carlo, their paired
    difference, and the Monte Carlo d_KL^10 relative to ``mlp_name``'s.

    ``frames``: agent name → its testbed rows, scored both ways (``likelihood`` "exact" and "mc...")."""
    _checks.instance("frames", frames, dict, "a dict of agent name → testbed rows (DataFrame)")
    if not frames:
        raise ValueError("frames must hold at least one agent's rows, got an empty dict")
    for name, df in frames.items():
        _checks.frame(f"frames[{name!r}]", df, ("likelihood", "tau", "kl"))
        if not df.likelihood.astype(str).str.startswith("mc").any():
            raise ValueError(f"frames[{name!r}] must hold Monte Carlo rows (likelihood 'mc...'), got likelihoods "
                             f"{sorted(df.likelihood.astype(str).unique())}")
    _checks.instance("mlp_name", mlp_name, str)
    rows = []
    mc_all = pd.concat([f[f.likelihood.str.startswith("mc")] for f in frames.values()], ignore_index=True)
    mc_sum = testbed.summarize(mc_all)  # one estimator for every agent: no allow_mixed needed
    for name, df in frames.items():
        mc = df[df.likelihood.str.startswith("mc")]
        auto = df[df.likelihood == "exact"] if (df.likelihood == "exact").any() else mc
        auto_sum = testbed.summarize(auto)
        row = {"agent": name, "auto estimator": auto.likelihood.iloc[0]}
        for tau in (1, 10):
            row[f"auto d_KL^{tau}"] = (f"{auto_sum.loc[name, f'kl_{tau}']:.3f} ± "
                                       f"{auto_sum.loc[name, f'kl_{tau}_se']:.3f}")
            row[f"mc d_KL^{tau}"] = f"{mc_sum.loc[name, f'kl_{tau}']:.3f} ± {mc_sum.loc[name, f'kl_{tau}_se']:.3f}"
            if auto is mc:
                row[f"mc − auto d_KL^{tau}"] = "0 (same computation)"
            else:
                d, se = testbed.paired_difference(mc, auto, tau)
                row[f"mc − auto d_KL^{tau}"] = f"{d:+.3f} ± {se:.3f}"
        if mlp_name in mc_sum.index:
            row["mc d_KL^10 / mlp"] = f"{mc_sum.loc[name, 'kl_10'] / mc_sum.loc[mlp_name, 'kl_10']:.3f}"
        rows.append(row)
    return pd.DataFrame(rows)


def md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)


def section(t: pd.DataFrame, grid: str, seconds: dict[str, float], load: str) -> str:
    timing = ", ".join(f"{a} {s:.0f} s" for a, s in seconds.items() if np.isfinite(s))
    diffs = [(r["agent"], float(r["mc − auto d_KL^10"].split(" ± ")[0]), float(r["auto d_KL^10"].split(" ± ")[0]))
             for _, r in t.iterrows() if "±" in str(r["mc − auto d_KL^10"])]
    measured = ""
    if diffs:
        a, d, v = max(diffs, key=lambda x: abs(x[1]))
        measured = (f"Measured here, the largest paired difference at τ = 10 is {a}'s {d:+.3f} "
                    f"({100 * abs(d) / v:.1f} % of its d_KL^10): on this grid the estimator does not change the "
                    f"comparison between agents.")
    return f"""## One estimator per table: Monte Carlo for every agent (grid `{grid}`)

Generated by `python -m jtk.testbed.estimator_table` (rows in `benchmarks/results/estimator_<agent>_{grid}.csv`).
Every agent was trained once per problem and scored twice: with the reference's estimator, `likelihood="mc"`
(M = 1000 sampled functions; ensembles draw members uniformly with replacement, as the reference's ensemble
indexer does), and with jtk's default `"auto"` (exact enumeration of a finite mixture's components — mlp,
ensemble, ensemble+ and sgmcmc here — else the same Monte Carlo estimator). ± is the seed-mean standard error
(`jtk.testbed.summarize`, docs/reference.md "Statistics"); "mc − auto" is the paired difference over the same
problems with the same error. Exact enumeration has no Monte Carlo noise and avoids the downward Jensen bias
of log-mean-exp over M samples, so "mc" is expected to read slightly higher, the more so the more the members
disagree. {measured} A table that compares agents must still use one estimator: `jtk.testbed.summarize`
refuses mixed ones unless `allow_mixed=True`. For mlp (one member) both estimators are the same number.

{md(t)}

Wall time (training once, scoring both ways; {load}): {timing}.
"""


def main(argv=None) -> int:
    argv = _checks.argv(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=AGENTS)
    parser.add_argument("--grid", default="quick", choices=sorted(testbed.GRIDS))
    parser.add_argument("--report-only", action="store_true", help="only rebuild the table from stored CSVs")
    parser.add_argument("--load", default=None, help="machine load / device to state beside the timings")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="directory of the per-agent CSVs, and of the page (results.md) instead of docs/")
    args = parser.parse_args(argv)
    page = DOCS if args.out_dir is None else args.out_dir / "results.md"
    if args.out_dir is None:
        args.out_dir = RESULTS
    problems = testbed.problems(args.grid)
    frames, seconds = {}, {}
    for name in args.agents:
        path = args.out_dir / f"estimator_{name}_{args.grid}.csv"
        if path.exists():
            frames[name] = pd.read_csv(path)
            seconds[name] = np.nan
            timing = args.out_dir / f"estimator_{name}_{args.grid}.seconds"
            if timing.exists():
                seconds[name] = float(timing.read_text())
            continue
        if args.report_only:
            continue
        df, secs = run_agent(name, problems)
        df.to_csv(path, index=False)
        (args.out_dir / f"estimator_{name}_{args.grid}.seconds").write_text(f"{secs:.1f}\n")
        frames[name], seconds[name] = df, secs
        print(f"{name}: {len(df)} rows in {secs:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    if not frames:
        print("no results", file=sys.stderr)
        return 1
    t = table(frames)
    print(t.to_string(index=False))
    load = args.load or f"2 shared CPU cores, load average {os.getloadavg()[0]:.1f} when the table was written"
    write_section(f"estimator-table-{args.grid}", section(t, args.grid, seconds, load), page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
