"""The testbed's summary statistics: leaderboards (:func:`summarize`), paired differences and breakdowns.

Standard errors (:func:`summarize`, ``se=``): ``"seed"`` (default) is the
reference leaderboard's: average each agent's rows of one seed, then the
population std of those per-seed means over sqrt(number of seeds)
(docs/reference.md, "Statistics"). ``"environment"`` treats every training
group (seed, num_train, temperature, input_dim) as an independent unit
(sample std over sqrt(number of groups)); it is larger on the paper grid
because it counts the spread of d_KL across num_train and temperature as noise.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from jtk import _checks
from jtk.testbed.grids import GROUP_COLUMNS, PROBLEM_COLUMNS

__all__ = ["SE_KINDS", "SUMMARY_COLUMNS", "NUMERIC_COLUMNS", "InfiniteKLWarning", "seed_se", "paired_difference",
           "summarize", "breakdown"]

SE_KINDS = ("seed", "environment")
SUMMARY_COLUMNS = ("agent", "tau", "seed", "kl", "accuracy", "ece")  # what summarize reports; timings are optional


class InfiniteKLWarning(UserWarning):
    """Some test τ-samples scored KL = +inf (an observed label got probability 0); ``kl`` clipped them."""


def _warn_infinite_kl(results: pd.DataFrame, stacklevel: int = 3) -> None:
    """Warns (:class:`InfiniteKLWarning`) when a row's ``frac_finite`` is below 1, naming agents and problems.

    The reference's clip rule (:func:`jtk.likelihood.summarize_kl`) replaces a +inf per-τ-sample KL by the
    problem's largest finite one, so a table stays comparable with the reference; but an agent that emits
    -inf (or ±1e300, which float32 turns into ±inf) logits can then read better than the Bayes-optimal agent.
    The rows keep the fraction in ``frac_finite``; this makes it loud.
    """
    if "frac_finite" not in results.columns or results.empty:
        return
    frac = pd.to_numeric(results["frac_finite"], errors="coerce")
    bad = frac < 1.0
    if not bad.any():
        return
    agent_col = "agent" if "agent" in results.columns else None
    agents = sorted(map(str, results.loc[bad, agent_col].unique())) if agent_col else []
    worst = results.loc[frac[bad].idxmin()]
    where = ", ".join(f"{c}={worst[c]}" for c in ("seed", "num_train", "temperature", "tau") if c in results.columns)
    warnings.warn(f"{int(bad.sum())} of {len(results)} problems have test τ-samples whose KL is +inf "
                  f"(agents {agents}; worst: {where}, frac_finite = {float(frac[bad].min()):.4f}): the agent gave "
                  f"probability 0 to an observed label (-inf logits, or logits such as ±1e300 that float32 makes "
                  f"±inf). Column 'kl' clips them to the problem's largest finite KL, as the reference does, so "
                  f"these rows understate the true d_KL (+inf) and can read better than the Bayes-optimal agent; "
                  f"see column 'frac_finite', and jtk.testbed.check_agent's 'finite' probe to find such logits",
                  InfiniteKLWarning, stacklevel=stacklevel)


# ------------------------------------------------------------------ leaderboard
NUMERIC_COLUMNS = ("kl", "tau", "seed", "num_train", "temperature", "input_dim", "accuracy", "ece", "train_seconds",
                   "eval_seconds", "frac_finite")  # checked to be numbers wherever present


def _numeric_column(values: pd.Series) -> bool:
    """Numbers: a numeric dtype but bool, or an object column holding only real numbers (and missing values)."""
    if pd.api.types.is_bool_dtype(values):
        return False
    if pd.api.types.is_numeric_dtype(values):
        return True
    return pd.api.types.infer_dtype(values, skipna=True) in ("integer", "floating", "mixed-integer-float", "decimal")


def _check_results(results: pd.DataFrame, required=("agent", "tau", "seed", "kl")) -> pd.DataFrame:
    """Type, required columns, numeric columns, finite ``kl`` and one row per problem; returns a copy with kl
    clipped at 0."""
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame from jtk.testbed.evaluate, got {type(results).__name__}")
    missing = sorted(set(required) - set(results.columns))
    if missing:
        raise ValueError(f"results is missing the required columns {missing} (it has {sorted(results.columns)})")
    if results.empty:
        raise ValueError("results must hold at least one row, got an empty DataFrame")
    for col in NUMERIC_COLUMNS:
        if col in results.columns and not _numeric_column(results[col]):
            values = results[col].dropna()
            example = values[~values.map(lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool))]
            shown = f" (e.g. {example.iloc[0]!r})" if len(example) else ""
            raise TypeError(f"results[{col!r}] must be numeric, got dtype {results[col].dtype}{shown}; "
                            f"convert it with pd.to_numeric")
    kl = results["kl"].astype(float)
    bad = ~np.isfinite(kl.to_numpy())
    if bad.any():
        agents = sorted(map(str, results.loc[bad, "agent"].unique()))
        none_finite = ""
        if "frac_finite" in results.columns and (pd.to_numeric(results.loc[bad, "frac_finite"], errors="coerce") == 0).any():
            none_finite = (" (frac_finite = 0: no test τ-sample had a finite KL, the agent gave probability 0 to an "
                           "observed label in every one; see jtk.testbed.check_agent's 'finite' probe)")
        raise ValueError(f"results column 'kl' must be finite, but {int(bad.sum())} of {len(results)} rows are "
                         f"NaN/inf or not numbers (agents {agents}){none_finite}; drop or rerun those problems first")
    keys = [c for c in PROBLEM_COLUMNS if c in results.columns]
    dup = results.duplicated(subset=keys, keep=False)
    if dup.any():
        first = results.loc[dup, keys].iloc[0].to_dict()
        raise ValueError(f"results must hold one row per problem, but {int(dup.sum())} rows share their "
                         f"{keys} with another row (e.g. {first}); concatenated the same run twice?")
    df = results.copy()
    df["kl"] = kl.clip(lower=0.0)  # negative estimates are Monte Carlo noise: 0, as in the reference
    return df


def _check_one_estimator(df: pd.DataFrame) -> None:
    if "likelihood" not in df.columns:
        return
    for tau, sub in df.groupby("tau"):
        kinds = sub.groupby("likelihood")["agent"].unique()
        if len(kinds) > 1:
            listing = "; ".join(f"{k}: {sorted(map(str, a))}" for k, a in kinds.items())
            raise ValueError(f"results mixes likelihood estimators at tau={tau} ({listing}): exact enumeration and "
                             f"Monte Carlo scores are not comparable; rerun with jtk.testbed.evaluate(..., "
                             f"likelihood='mc') (or 'exact') for every agent, or pass allow_mixed=True")


def seed_se(per_seed_means: pd.Series) -> float:
    """The reference leaderboard's error bar: population std of per-seed means over sqrt(#seeds) (NaN below 2)."""
    values = _checks.as_float_array("per_seed_means", per_seed_means, ndim=1, finite=False, dtype=np.float64)
    return float(np.std(values, ddof=0) / np.sqrt(len(values))) if len(values) > 1 else np.nan


def paired_difference(results: pd.DataFrame, baseline: pd.DataFrame, tau: int) -> tuple[float, float]:
    """Mean d_KL^τ difference results − baseline over the problems both scored, and its seed-mean standard error.

    Negative KL is set to 0 first, as in :func:`summarize`. Problems are matched on the columns of
    ``PROBLEM_COLUMNS`` (but agent) both frames have; the error is :func:`seed_se` of the per-seed mean differences.

    Args:
      results: rows of one agent from :func:`~jtk.testbed.engine.evaluate`.
      baseline: rows of the agent to compare with, on (some of) the same problems.
      tau: the τ to compare.

    Returns:
      (mean difference, standard error); (NaN, NaN) when no problem is shared.
    """
    _checks.frame("results", results, ["tau", "kl"]), _checks.frame("baseline", baseline, ["tau", "kl"])
    _checks.integer("tau", tau, minimum=1)
    keys = [c for c in PROBLEM_COLUMNS if c != "agent" and c in results.columns and c in baseline.columns]
    both = results[results["tau"] == tau].merge(baseline[baseline["tau"] == tau], on=keys, suffixes=("", "_base"))
    if both.empty:
        return np.nan, np.nan
    diff = both["kl"].clip(lower=0.0) - both["kl_base"].clip(lower=0.0)
    return float(diff.mean()), seed_se(diff.groupby(both["seed"]).mean())


def _environment_se(values: pd.Series) -> float:
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else np.nan


def summarize(results: pd.DataFrame, baseline: str | None = None, se: str = "seed",
              allow_mixed: bool = False) -> pd.DataFrame:
    """The leaderboard: mean d_KL^τ per agent with standard errors.

    Negative per-problem KL (Monte Carlo noise) is set to 0 first, as in the
    reference. Two standard errors (``se``; column ``kl_{τ}_se`` either way):

    * ``"seed"`` (default; the reference leaderboard's, docs/reference.md,
      "Statistics"): for each agent and τ, average the rows of each seed
      (over num_train, temperature, input_dim), then
      ``np.std(per-seed means, ddof=0) / sqrt(number of seeds)``. On the
      paper grid the 10 seeds are the reference's 10 seed classes.
    * ``"environment"``: average the rows of each training group (seed,
      num_train, temperature, input_dim), then the sample std (ddof=1) of the
      group means over sqrt(number of groups). It treats the spread of d_KL
      across num_train and temperature as noise, so it is larger.

    Args:
      results: rows from :func:`~jtk.testbed.engine.evaluate` (one or several agents): columns
        agent, tau, seed, kl, accuracy and ece at least (numeric but for
        agent); one row per problem; finite kl.
      baseline: optional agent name in ``results`` (e.g. "mlp" as in Fig. 2, or
        "uniform"); adds columns ``kl_{τ}_rel`` = score / baseline's score.
      se: "seed" or "environment" (above).
      allow_mixed: accept a table in which agents were scored by different
        likelihood estimators (column ``likelihood``) for one τ; by default
        that raises, since exact enumeration reads lower than Monte Carlo.

    Returns:
      DataFrame indexed by agent with columns kl_{τ}, kl_{τ}_se for every τ,
      accuracy, ece, frac_finite (the mean over the agent's problems of the
      fraction of test τ-samples whose KL was finite; below 1, ``kl`` holds
      clipped values and an :class:`InfiniteKLWarning` says so),
      train_seconds, eval_seconds (when ``results`` has them), num_problems;
      NaN standard errors with fewer than two seeds / groups.

    Raises:
      ValueError: missing columns, NaN/inf kl, duplicated problems, mixed
        estimators (unless ``allow_mixed``), an unknown ``se`` or ``baseline``.
      TypeError: ``results`` not a DataFrame, or a column such as kl that is not numeric.
    """
    _checks.one_of("se", se, SE_KINDS)
    df = _check_results(results, required=SUMMARY_COLUMNS)
    _warn_infinite_kl(df)
    if not allow_mixed:
        _check_one_estimator(df)
    if se == "environment":
        unit, se_fn = [c for c in GROUP_COLUMNS if c in df.columns], _environment_se
    else:
        unit, se_fn = ["seed"], seed_se
    out = {}
    for tau, sub in df.groupby("tau"):
        unit_means = sub.groupby(["agent"] + unit)["kl"].mean()
        out[f"kl_{tau}"] = sub.groupby("agent")["kl"].mean()
        out[f"kl_{tau}_se"] = unit_means.groupby("agent").agg(se_fn)
    table = pd.DataFrame(out)
    aggs = {k: v for k, v in dict(accuracy=("accuracy", "mean"), ece=("ece", "mean"),
                                   frac_finite=("frac_finite", "mean"),
                                   train_seconds=("train_seconds", "sum"),
                                   eval_seconds=("eval_seconds", "sum")).items() if v[0] in df.columns}
    extra = df.groupby("agent").agg(**aggs, num_problems=("kl", "size"))
    table = table.join(extra)
    if baseline is not None:
        if baseline not in table.index:
            raise ValueError(f"baseline must be an agent in results ({sorted(table.index)}), got {baseline!r}")
        for tau in sorted(df["tau"].unique()):
            table[f"kl_{tau}_rel"] = table[f"kl_{tau}"] / table.loc[baseline, f"kl_{tau}"]
    return table


def breakdown(results: pd.DataFrame) -> pd.DataFrame:
    """Mean d_KL per agent × τ × temperature × num_train (the Fig. 13/14 breakdown).

    Raises:
      ValueError: columns missing (agent, tau, seed, kl, temperature,
        num_train), NaN/inf kl or duplicated problems.
      TypeError: a column such as kl or temperature that is not numeric.
    """
    df = _check_results(results, required=("agent", "tau", "seed", "kl", "temperature", "num_train"))
    return df.pivot_table(index=["agent", "tau", "temperature"], columns="num_train", values="kl", aggfunc="mean")

