"""Builds docs/results.md from the agent-zoo CSVs (jtk.testbed.zoo) and the lead's mlp / ensemble+ runs.

Usage:
    python -m jtk.testbed.zoo_report                 # every grid found in benchmarks/results
    python -m jtk.testbed.zoo_report --grids quick

For each grid tag (``quick``, ``paper``, ``paper_seeds2``, ...) it reads
benchmarks/results/zoo_<agent>_<tag>.csv and, for paper tags, the lead's
benchmarks/results/testbed_<agent>_paper.csv (restricted to the seeds of the
zoo run), then writes into docs/:

* the Table 2 analogue: accuracy, ECE, d_KL^1, d_KL^10 with standard errors
  (``jtk.testbed.summarize``) and the paper's numbers beside; **bold** where
  the paired difference to mlp over the same problems exceeds 2 standard errors
  of that difference (groups = shared training sets);
* the Fig. 2 bar chart normalised to mlp (zoo_fig2_<tag>.png);
* the per-setting breakdown (``jtk.testbed.breakdown``; Fig. 13/14 analogue);
* d_KL^10 against training seconds per problem (zoo_time_<tag>.png; Fig. 15 analogue);
* the Bayes-optimal reference's effective sample size per (n, ρ) and the
  comparison restricted to problems where ESS ≥ 100;
* the §6 robustness study (zoo_robustness_*.csv): scores per generative
  setting and their correlation across settings (zoo_robustness.png).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jtk import _checks
from jtk import testbed
from jtk._docs import md_table
from jtk._paths import DOCS, RESULTS, ROOT

__all__ = ["main"]  # see the package docstring

ESS_ADEQUATE = 100.0
# Osband et al. (2022), Table 2: accuracy, ECE, d_KL^1, d_KL^10.
PAPER = {"mlp": (0.793, 0.078, 0.129, 1.367), "ensemble": (0.792, 0.079, 0.128, 1.356),
         "dropout": (0.793, 0.080, 0.128, 1.347), "bbb": (0.792, 0.079, 0.129, 1.375),
         "hypermodel": (0.793, 0.081, 0.130, 1.107), "ensemble+": (0.790, 0.085, 0.129, 1.015),
         "sgmcmc": (0.796, 0.082, 0.122, 0.947)}
ORDER = ["mlp", "ensemble", "dropout", "bbb", "hypermodel", "ensemble+", "sgmcmc", "sgmcmc_tuned", "sgmcmc_reference",
         "sgld", "deep_kernel", "knn", "random_forest", "bayes_optimal", "uniform"]


# ------------------------------------------------------------------ helpers
def base_agent(label: str, names) -> str:
    """The longest of ``names`` that ``label`` is or extends with "_…" (``ensemble+_K10`` → ``ensemble+``)."""
    matches = [n for n in names if label == n or label.startswith(n + "_")]
    return max(matches, key=len) if matches else label


def ordered(agents) -> list[str]:
    """Paper order; variants (``ensemble+_K10``) sit with their base agent."""
    def key(a):
        base = base_agent(a, ORDER)
        return (ORDER.index(base) if base in ORDER else len(ORDER), a)
    return sorted(agents, key=key)


def grid_tags() -> list[str]:
    tags = {m.group(2) for f in RESULTS.glob("zoo_*.csv")
            if (m := re.match(r"zoo_(.+)_(quick.*|paper.*)\.csv$", f.name))}
    return sorted(tags)


def load(tag: str) -> pd.DataFrame:
    frames = []
    for f in RESULTS.glob(f"zoo_*_{tag}.csv"):
        if f.name == f"zoo_robustness_{tag}.csv":
            continue
        frames.append(pd.read_csv(f))
    df = pd.concat(frames, ignore_index=True)
    if tag.startswith("paper"):
        seeds = set(df["seed"].unique())
        for f in sorted(RESULTS.glob("testbed_*_paper.csv")):  # the lead's runs (mlp, ensemble+, ...)
            agent = f.name[len("testbed_"):-len("_paper.csv")]
            if agent != "speed" and agent not in set(df["agent"]):
                lead = pd.read_csv(f)
                frames.append(lead[lead["seed"].isin(seeds)].assign(agent=agent))
        df = pd.concat(frames, ignore_index=True)
    keep = [c for c in df.columns if c in testbed.RESULT_COLUMNS or c in ("ess", "log_evidence", "distinct_components")]
    return df[keep]


def paired_diff(df: pd.DataFrame, agent: str, base: str, tau: int) -> tuple[float, float]:
    """Mean and stderr of the per-problem d_KL difference agent − base over shared problems (groups = training sets)."""
    keys = ["tau"] + testbed.GROUP_COLUMNS
    a = df[(df.agent == agent) & (df.tau == tau)].set_index(keys)["kl"].clip(lower=0)
    b = df[(df.agent == base) & (df.tau == tau)].set_index(keys)["kl"].clip(lower=0)
    d = (a - b).dropna()
    if len(d) < 2:
        return np.nan, np.nan
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


def common_problems(df: pd.DataFrame, agents: list[str]) -> pd.DataFrame:
    """Rows of problems every agent in ``agents`` was scored on."""
    keys = ["tau"] + testbed.GROUP_COLUMNS
    counts = df[df.agent.isin(agents)].groupby(keys)["agent"].nunique()
    full = counts[counts == len(agents)].index
    return df[df.set_index(keys).index.isin(full)]


# ------------------------------------------------------------------ sections
def table2(df: pd.DataFrame, tag: str) -> str:
    s = testbed.summarize(df, allow_mixed=True)
    s["train_s_per_problem"] = s["train_seconds"] / s["num_problems"]
    s["eval_s_per_problem"] = s["eval_seconds"] / s["num_problems"]
    rows = []
    for agent in ordered(s.index):
        r = s.loc[agent]
        cells = {"agent": agent, "problems": int(r["num_problems"]), "accuracy": f"{r['accuracy']:.3f}",
                 "ECE": f"{r['ece']:.3f}"}
        for tau in (1, 10):
            txt = f"{r[f'kl_{tau}']:.3f} ± {r[f'kl_{tau}_se']:.3f}"
            if "mlp" in s.index and agent != "mlp":
                d, se = paired_diff(df, agent, "mlp", tau)
                if np.isfinite(d) and abs(d) > 2 * se:
                    txt = f"**{txt}**"
            cells[f"d_KL^{tau}"] = txt
        p = PAPER.get(base_agent(agent, PAPER))  # ensemble+_K10, sgmcmc_tuned: the paper's row
        cells["paper acc / ECE / d_KL^1 / d_KL^10"] = " / ".join(f"{v:.3f}" for v in p) if p else "–"
        cells["train s/problem"] = f"{r['train_s_per_problem']:.2f}"
        cells["eval s/problem"] = f"{r['eval_s_per_problem']:.2f}"
        rows.append(cells)
    return md_table(pd.DataFrame(rows), index=False)


def fig2(df: pd.DataFrame, tag: str) -> str | None:
    if "mlp" not in set(df.agent):
        return None
    s = testbed.summarize(df, baseline="mlp", allow_mixed=True)
    agents = [a for a in ordered(s.index) if a != "mlp"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=False)
    for ax, tau in zip(axes, (1, 10)):
        vals = s.loc[agents, f"kl_{tau}_rel"]
        err = s.loc[agents, f"kl_{tau}_se"] / s.loc["mlp", f"kl_{tau}"]
        ax.bar(range(len(agents)), vals, yerr=2 * err, color="C0" if tau == 1 else "C1", capsize=3)
        ax.axhline(1.0, color="k", ls="--", lw=1)
        ax.set_xticks(range(len(agents)), agents, rotation=45, ha="right")
        ax.set_title(f"d_KL^{tau} / mlp ({tag})")
    fig.tight_layout()
    path = DOCS / f"zoo_fig2_{tag}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def time_plot(df: pd.DataFrame, tag: str) -> tuple[str, str]:
    s = testbed.summarize(df, allow_mixed=True)
    per = (s["train_seconds"] / s["num_problems"]).rename("train s/problem")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for agent in ordered(s.index):
        ax.scatter(per[agent], s.loc[agent, "kl_10"], s=30)
        ax.annotate(agent, (per[agent], s.loc[agent, "kl_10"]), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("training seconds per problem (2 shared CPU cores)")
    ax.set_ylabel("d_KL^10")
    ax.set_title(f"d_KL^10 vs training time ({tag})")
    fig.tight_layout()
    path = DOCS / f"zoo_time_{tag}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    t = pd.DataFrame({"train s/problem": per, "eval s/problem": s["eval_seconds"] / s["num_problems"],
                      "d_KL^10": s["kl_10"]}).loc[ordered(s.index)]
    return path.name, md_table(t)


def breakdown_tables(df: pd.DataFrame) -> str:
    b = testbed.breakdown(df)
    out = []
    for tau in sorted(df.tau.unique()):
        sub = b.xs(tau, level="tau")
        sub = sub.loc[[a for a in ordered(sub.index.get_level_values(0).unique())]]
        sub.columns = [f"n={c}" for c in sub.columns]
        out.append(f"**τ = {tau}** (mean d_KL per problem cell)\n\n" + md_table(sub))
    return "\n\n".join(out)


def ess_section(df: pd.DataFrame) -> str:
    bo = df[df.agent == "bayes_optimal"]
    if bo.empty or "ess" not in bo.columns:
        return "No bayes_optimal run in this grid."
    g = bo[bo.tau == bo.tau.min()]
    t = g.pivot_table(index="num_train", columns="temperature", values="ess", aggfunc=["median", "min"])
    t.columns = [f"{a} ESS, ρ={b}" for a, b in t.columns]
    adequate = bo[bo.ess >= ESS_ADEQUATE]
    txt = [md_table(t, "{:.0f}"),
           f"\nESS ≥ {ESS_ADEQUATE:.0f} on {adequate[adequate.tau == 1].shape[0]} of {g.shape[0]} training sets "
           f"(N = 16 384 prior draws each)."]
    if adequate.empty:
        return "\n".join(txt)
    keys = ["tau"] + testbed.GROUP_COLUMNS
    ok = adequate.set_index(keys).index
    sub = df[df.set_index(keys).index.isin(ok)]
    agents = [a for a in ordered(sub.agent.unique()) if sub[sub.agent == a].shape[0] == adequate.shape[0]]
    sub = sub[sub.agent.isin(agents)]
    s = testbed.summarize(sub, allow_mixed=True)
    cols = [c for c in ("kl_1", "kl_1_se", "kl_10", "kl_10_se", "accuracy", "num_problems") if c in s.columns]
    s = s.loc[agents, cols]
    for tau in (1, 10):  # paired difference to the reference: > 0 means the agent is worse than bayes_optimal
        s[f"Δ d_KL^{tau} vs bayes_optimal"] = ["" if a == "bayes_optimal" else
                                              "{:+.3f} ± {:.3f}".format(*paired_diff(sub, a, "bayes_optimal", tau))
                                              for a in agents]
    txt.append("\nScores restricted to those problems (every agent on the same problems; Δ = paired difference "
               "agent − bayes_optimal ± its standard error):\n")
    txt.append(md_table(s))
    return "\n".join(txt)


def robustness_section() -> tuple[str, str | None]:
    files = sorted(RESULTS.glob("zoo_robustness_*.csv"))
    if not files:
        return "Not run yet (`python -m jtk.testbed.zoo --robustness --agents ...`).", None
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    settings = list(dict.fromkeys(df["setting"]))
    scores = {}
    for setting in settings:
        s = testbed.summarize(df[df.setting == setting].drop(columns="setting"), allow_mixed=True)
        for tau in (1, 10):
            scores[(tau, setting)] = s[f"kl_{tau}"]
    out, panels = [], []
    for tau in (1, 10):
        m = pd.DataFrame({st: scores[(tau, st)] for st in settings})
        m = m.loc[ordered(m.index)]
        out.append(f"**d_KL^{tau} per generative setting** (rows: agents)\n\n" + md_table(m))
        if m.shape[0] < 3:
            out.append(f"Only {m.shape[0]} agents were run through the study: a correlation across settings "
                       "needs at least 3 (with 2 it is ±1 by construction), so none is reported.")
            continue
        # The same correlation with every agent and without knn / random_forest, the two outliers that
        # dominate Pearson's r (the paper's Fig. 10/11 have neural agents only).
        neural = m.drop(index=[a for a in ("knn", "random_forest") if a in m.index])
        lines = []
        for label, sub in (("all agents", m), ("neural agents only", neural)):
            if sub.shape[0] < 3:
                continue
            corr, off = sub.corr(), ~np.eye(len(settings), dtype=bool)
            spearman = sub.corr(method="spearman").values[off]
            lines.append(f"**Correlation of the agents' d_KL^{tau} across settings, {label}** ({sub.shape[0]}): "
                         f"Pearson mean off-diagonal {corr.values[off].mean():.2f} (min {corr.values.min():.2f}), "
                         f"Spearman mean {spearman.mean():.2f} (min {spearman.min():.2f}).")
            panels.append((f"d_KL^{tau}, {label} ({sub.shape[0]})", corr))
        out.append("\n\n".join(lines) + "\n\nPearson, all agents:\n\n" + md_table(m.corr(), "{:.2f}"))
    if not panels:
        return "\n\n".join(out), None
    ncols = 2
    nrows = (len(panels) + 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(12, 5.5 * nrows), squeeze=False)
    for i, (ax, (title, corr)) in enumerate(zip(axes.flat, panels)):
        im = ax.imshow(corr.values, vmin=-1, vmax=1, cmap="RdBu")
        ax.set_xticks(range(len(settings)), settings, rotation=90, fontsize=7)
        ax.set_yticks(range(len(settings)), settings if i % ncols == 0 else [], fontsize=7)
        ax.set_title(title, fontsize=10)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    fig.colorbar(im, ax=axes, shrink=0.6)
    fig_name = "zoo_robustness.png"
    fig.savefig(DOCS / fig_name, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "\n\n".join(out), fig_name


def main(argv=None) -> int:
    argv = _checks.argv(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grids", nargs="*", default=None, help="grid tags (default: all found)")
    parser.add_argument("--out", type=Path, default=None, help="the page (default: docs/results.md)")
    parser.add_argument("--notes", type=Path, default=ROOT / "benchmarks" / "zoo_notes.md",
                        help="markdown file inserted after the title (default: the checkout's benchmarks/zoo_notes.md)")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="read the CSVs from here and write the page (results.md) and its figures here instead")
    args = parser.parse_args(argv)
    global RESULTS, DOCS
    if args.out_dir is not None:
        RESULTS = DOCS = args.out_dir
    if args.out is None:
        args.out = DOCS / "results.md"
    DOCS.mkdir(exist_ok=True)
    tags = args.grids if args.grids else grid_tags()
    parts = ["# Neural Testbed results: the agent zoo\n",
             "Generated by `python -m jtk.testbed.zoo_report` from `benchmarks/results/zoo_*.csv` "
             "(written by `python -m jtk.testbed.zoo`). d_KL^τ: mean over problems with negative values "
             "set to 0; ± the reference leaderboard's standard error, the population std of the per-seed means "
             "over √(number of seeds) (`jtk.testbed.summarize`, docs/reference.md \"Statistics\"). Agents are "
             "scored with jtk's default estimator (`likelihood=\"auto\"`: exact enumeration for finite mixtures "
             "— mlp, ensembles, sgmcmc, knn, random_forest, bayes_optimal — 1000 sampled functions for the "
             "others), so these tables mix estimators (`summarize(..., allow_mixed=True)`); the section \"One "
             "estimator per table\" measures what that changes. **Bold**: the paired "
             "difference to mlp on the same problems exceeds 2 of its standard errors. Seconds are per problem "
             "on 2 CPU cores, jit included; the load on the machine during each run is given below.\n"]
    if args.notes and args.notes.exists():
        parts.append(args.notes.read_text())
    for tag in tags:
        df = load(tag)
        parts.append(f"## Grid `{tag}` ({df.groupby('agent').size().max()} problems per agent)\n")
        parts.append("### Table 2 analogue\n\n" + table2(df, tag) + "\n")
        f2 = fig2(df, tag)
        if f2:
            parts.append(f"### Fig. 2 analogue (normalised to mlp; error bars ±2 stderr)\n\n![fig2]({f2})\n")
        tp, tt = time_plot(df, tag)
        parts.append(f"### d_KL^10 vs training time (Fig. 15 analogue)\n\n![time]({tp})\n\n{tt}\n")
        parts.append("### Bayes-optimal reference: effective sample size\n\n" + ess_section(df) + "\n")
        parts.append("### Per-setting breakdown (Fig. 13/14 analogue)\n\n" + breakdown_tables(df) + "\n")
    rob, rob_fig = robustness_section()
    parts.append("## §6 robustness: generative activations and widths\n\n"
                 "Reduced grid per setting: n ∈ {10, 100}, ρ ∈ {0.1, 0.5}, τ ∈ {1, 10}, 2 seeds, 250 test "
                 "τ-samples and 250 posterior samples per problem.\n\n" + rob + "\n")
    if rob_fig:
        parts.append(f"![robustness]({rob_fig})\n")
    # Sections other scripts own (estimator tables, testbed speed, epinet / hypermodel) survive the rebuild.
    from jtk._docs import sections

    kept = sections(args.out.read_text()) if args.out.exists() else {}
    args.out.write_text("\n".join(parts + list(kept.values())))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
