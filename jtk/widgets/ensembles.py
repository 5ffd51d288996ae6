"""ensemble vs ensemble+ (Osband et al. 2022, App. D.1 / Fig. 12 and §4.2 / Fig. 5), as widgets.

Thin: the fits and scores come from :mod:`jtk.testbed.ensemble_study`
(:func:`~jtk.testbed.ensemble_study.make_ensemble_comparison`,
:func:`~jtk.testbed.ensemble_study.kl_vs_num_train`); every slider position is
precomputed there, so a slider move here is numpy indexing plus one PNG render.
"""

from __future__ import annotations


import ipywidgets as widgets
import pandas as pd

from jtk import _checks
from jtk.testbed.ensemble_study import EnsembleComparison
from jtk.plots import testbed as tb_plots
from jtk.widgets._app import LABEL_STYLE, App, image_widget, show_png, significant_frame


def comparison_update(comp: EnsembleComparison, prior_scale: float, num_members: int, num_train: int,
                      num_samples: int = 4) -> dict:
    """The data of the Fig. 12 figure for one slider position (pure numpy indexing).

    Args:
      comp: from :func:`jtk.testbed.ensemble_study.make_ensemble_comparison`.
      prior_scale: one of ``comp.prior_scales`` (the ensemble+ row).
      num_members: ensemble size k in 1 … K (mean over the first k members).
      num_train: one of ``comp.num_train_values``.
      num_samples: member maps shown per agent (the first min(num_samples, k)).

    Returns:
      dict: axis, true_probs [R, R], x_train [n, 2], y_train [n], and rows:
      agent name → {"mean": [R, R], "samples": [m, R, R]} for "ensemble" and
      "ensemble+".
    """
    if not isinstance(comp, EnsembleComparison):
        raise TypeError(f"comp must be an EnsembleComparison from jtk.testbed.ensemble_study.make_ensemble_comparison, "
                        f"got {type(comp).__name__}")
    scale = _checks.positive("prior_scale", prior_scale, allow_zero=True)
    if scale not in comp.prior_scales:
        raise ValueError(f"prior_scale must be one of {comp.prior_scales}, got {prior_scale!r}")
    num_members = _checks.integer("num_members", num_members, minimum=1, maximum=comp.num_members)
    num_train = _checks.integer("num_train", num_train)
    if num_train not in comp.num_train_values:
        raise ValueError(f"num_train must be one of {comp.num_train_values}, got {num_train}")
    num_samples = _checks.integer("num_samples", num_samples, minimum=1)
    j = comp.num_train_values.index(num_train)
    m = min(num_samples, num_members)
    rows = {}
    for name, s in (("ensemble", 0.0), ("ensemble+", scale)):
        members = comp.probs[comp.prior_scales.index(s), j, :num_members]  # [k, R, R]
        rows[name] = {"mean": members.mean(0), "samples": members[:m]}
    return {"axis": comp.axis, "true_probs": comp.true_probs, "x_train": comp.x_train[:num_train],
            "y_train": comp.y_train[:num_train], "rows": rows, "prior_scale": scale,
            "num_members": num_members, "temperature": comp.temperature}


def comparison_figure(comp: EnsembleComparison, prior_scale: float, num_members: int, num_train: int):
    """Fig. 12 analogue: true model (left), mean and 4 members of ensemble (top) and ensemble+ (bottom)."""
    return tb_plots.plot_ensemble_comparison(comparison_update(comp, prior_scale, num_members, num_train))


def ensemble_app(comp: EnsembleComparison, prior_scale: float | None = None, num_members: int | None = None,
                 num_train: int | None = None) -> App:
    """Sliders for prior scale, ensemble size and num_train → the Fig. 12 figure (precomputed; no training).

    Returns:
      :class:`~jtk.widgets._app.App` (a VBox); ``.controls`` (dict: prior_scale, num_members, num_train) and
      ``.image`` for tests.
    """
    if not isinstance(comp, EnsembleComparison):
        raise TypeError(f"comp must be an EnsembleComparison from jtk.testbed.ensemble_study.make_ensemble_comparison, "
                        f"got {type(comp).__name__}")
    scales = [s for s in comp.prior_scales]
    default_scale = 3.0 if 3.0 in scales else max(scales)
    controls = {
        "prior_scale": widgets.SelectionSlider(options=scales, value=default_scale if prior_scale is None
                                               else prior_scale, description="prior scale λ", style=LABEL_STYLE,
                                               tooltip="scale λ of the ensemble+ members' random prior functions"),
        "num_members": widgets.IntSlider(value=comp.num_members if num_members is None else num_members, min=1,
                                         max=comp.num_members, description="ensemble size", style=LABEL_STYLE,
                                         tooltip="members K of each ensemble (the mean is over the first K)"),
        "num_train": widgets.SelectionSlider(options=list(comp.num_train_values),
                                             value=(10 if 10 in comp.num_train_values else comp.num_train_values[0])
                                             if num_train is None else num_train, description="num_train",
                                             style=LABEL_STYLE, tooltip="number of training points"),
    }
    image = image_widget()
    live: list[tb_plots.ComparisonFigure] = []

    def refresh(_=None):
        view = comparison_update(comp, controls["prior_scale"].value, controls["num_members"].value,
                                 controls["num_train"].value)
        if not live:
            live.append(tb_plots.ComparisonFigure(view))
        else:
            live[0].update(view)
        show_png(image, live[0].png(dpi=80), live[0].alt)  # 912 px wide: the maps at natural size in a 1366-px lab

    for c in controls.values():
        c.observe(refresh, "value")
    refresh()
    box = App([widgets.HBox(list(controls.values())), image, image.caption], title="ensemble vs ensemble+ app")
    box.controls, box.image, box.comparison = controls, image, comp
    return box


# ------------------------------------------------------------------ Fig. 5 analogue
def kl_vs_num_train_figure(results: pd.DataFrame):
    """Fig. 5 analogue: mean d_KL^τ (± standard error over seeds) vs num_train, one panel per τ."""
    return tb_plots.plot_kl_vs_num_train(results)


def kl_prior_effect(results: pd.DataFrame, tau: int = 10, digits: int = 2) -> pd.DataFrame:
    """ensemble+ − ensemble in d_KL^τ at each num_train, paired by seed: the difference, its 95 % interval's
    half-width (Student t over the seeds) and whether the interval holds 0, as strings of ``digits`` significant
    digits (what a notebook prints under ``nbval-check-output`` and quotes)."""
    _checks.frame("results", results, ["agent", "num_train", "seed", "tau", "kl"])
    table = tb_plots.kl_paired_differences(results, _checks.integer("tau", tau, minimum=1))
    shown = significant_frame(table[["difference", "half_width"]], _checks.integer("digits", digits, minimum=1))
    shown["within noise"] = table["within_noise"].map({True: "within noise", False: "beyond noise"})
    return shown


def kl_summary(results: pd.DataFrame, digits: int | None = None) -> pd.DataFrame:
    """Mean d_KL^τ over seeds: rows (tau, agent), columns num_train (the Fig. 5 numbers).

    Args:
      results: from :func:`jtk.testbed.ensemble_study.kl_vs_num_train`.
      digits: None for floats; else strings with this many significant digits (what a notebook prints under a
        ``nbval-check-output`` tag and quotes in its prose: stable across CPUs, unlike float32's last digits).
    """
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame, got {type(results).__name__}")
    table = results.pivot_table(index=["tau", "agent"], columns="num_train", values="kl", aggfunc="mean")
    if digits is None:
        return table
    return significant_frame(table, _checks.integer("digits", digits, minimum=1))


def kl_wins(results: pd.DataFrame, tau: int = 10) -> pd.Series:
    """For each num_train, in how many seeds ensemble+ has a lower d_KL^τ than the ensemble (same environment,
    data and initialisations)."""
    _checks.frame("results", results, ["tau"])
    tau = _checks.integer("tau", tau, minimum=1)
    sub = results[results["tau"] == tau]
    if sub.empty:
        raise ValueError(f"results hold no rows with tau = {tau} (taus: {sorted(results['tau'].unique())})")
    wide = sub.pivot_table(index=["num_train", "seed"], columns="agent", values="kl")
    wins = (wide["ensemble+"] < wide["ensemble"]).groupby(level="num_train").sum().astype(int)
    wins.name = f"seeds where ensemble+ has the lower d_KL^{tau} (of {sub['seed'].nunique()})"
    return wins
