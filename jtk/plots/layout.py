"""Layout helpers shared by the figures (no pyplot import)."""

from __future__ import annotations


def legend_outside(ax_or_fig, handles=None, labels=None, fontsize: int = 7, **kwargs):
    """A legend beside the plotting area (right of an axes, or right of a whole figure), never over the data."""
    if handles is None:
        handles, labels = (ax_or_fig.get_legend_handles_labels() if hasattr(ax_or_fig, "get_legend_handles_labels")
                           else ax_or_fig.axes[0].get_legend_handles_labels())
    kw = dict(fontsize=fontsize, frameon=False, **kwargs)
    if hasattr(ax_or_fig, "get_legend_handles_labels"):
        return ax_or_fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), borderaxespad=0, **kw)
    # a figure: in the strip that ``tight_layout(rect=...)`` kept free on the right
    return ax_or_fig.legend(handles, labels, loc="center right", bbox_to_anchor=(1.0, 0.5), **kw)
