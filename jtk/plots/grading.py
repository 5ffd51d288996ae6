"""The class summary of a grading run: how many students hit each misconception code, per check."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from jtk.plots.layout import _frame, set_alt_text

NOT_MISCONCEPTIONS = ("generic.not_implemented",)
"""Codes of the summary that name no mistake: a blank answer (the ``raise NotImplementedError`` left in place) is
counted once per student in the chart's title, not drawn as a bar for every check it left blank."""


def _split(summary: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The summary's misconception rows, and the largest number of students who left one check blank."""
    blank = summary["code"].isin(NOT_MISCONCEPTIONS)
    return summary[~blank], int(summary.loc[blank, "students"].max()) if blank.any() else 0


def _title(num_students: int, blank: int) -> str:
    title = f"Misconceptions by check ({num_students} students)"
    return title + (f"; not drawn: up to {blank} student{'s' if blank != 1 else ''} left a check blank" if blank else "")


def misconception_alt(summary: pd.DataFrame, num_students: int) -> str:
    """Text alternative of :func:`misconception_figure`: every (check, code) and its count, most frequent first."""
    _frame("summary", summary)
    summary, blank = _split(summary)
    if not len(summary):
        return f"{_title(num_students, blank)}: no misconception was hit."
    rows = summary.sort_values("students", ascending=False)
    listed = "; ".join(f"{r.check} {r.code}: {r.students}" for r in rows.itertuples())
    return (f"{_title(num_students, blank)}. Horizontal bars, one per check and misconception code, of how many of "
            f"the {num_students} students hit it: {listed}.")


def misconception_figure(summary: pd.DataFrame, num_students: int) -> Figure:
    """Horizontal bars: one per (check, code), length = students who hit it; blank answers are not drawn.

    Args:
      summary: :func:`jtk.course.exercises.misconception_summary`'s frame (columns check, code, students).
      num_students: class size, for the axis limit and the title.
    """
    _frame("summary", summary)
    alt = misconception_alt(summary, num_students)
    summary, blank = _split(summary)
    rows = max(len(summary), 1)
    fig = Figure(figsize=(8, 1.2 + 0.32 * rows))
    ax = fig.add_subplot()
    if len(summary):
        data = summary.assign(label=summary["check"] + "  " + summary["code"])
        sns.barplot(data=data, y="label", x="students", hue="check", dodge=False, legend=False, ax=ax,
                    palette="colorblind")
        for patch, n in zip(ax.patches, data["students"]):
            ax.annotate(f"{n}", (patch.get_width(), patch.get_y() + patch.get_height() / 2), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no misconception was hit", ha="center", va="center", transform=ax.transAxes)
    ax.set(xlim=(0, max(num_students, 1) * 1.08), xlabel="students", ylabel="", title=_title(num_students, blank))
    set_alt_text(fig, alt)
    return fig
