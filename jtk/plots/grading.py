"""The class summary of a grading run: how many students hit each misconception code, per check."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure


def misconception_figure(summary: pd.DataFrame, num_students: int) -> Figure:
    """Horizontal bars: one per (check, code), length = students who hit it.

    Args:
      summary: :func:`jtk.exercises.misconception_summary`'s frame (columns check, code, students).
      num_students: class size, for the axis limit and the title.
    """
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
    ax.set(xlim=(0, max(num_students, 1) * 1.08), xlabel="students", ylabel="",
           title=f"Misconceptions by check ({num_students} students)")
    return fig
