"""Layout helpers shared by the figures (no pyplot import): legends beside the data, live figures, number labels."""

from __future__ import annotations

import io
import math

from matplotlib.figure import Figure


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


class LiveFigure:
    """A figure that is built once and redrawn in place; ``png()`` renders it.

    Subclasses build ``self.fig`` (usually with ``layout="constrained"``) and change only data, limits and texts
    afterwards. The first :meth:`png` computes the layout and freezes it, so a slider move costs one draw.
    """

    fig: Figure

    def png(self, dpi: int = 72) -> bytes:
        """Renders to PNG bytes. The first call fixes the layout; later calls only redraw."""
        buf = io.BytesIO()
        self.fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
        if self.fig.get_layout_engine() is not None:
            # Freeze the positions constrained layout found; with no engine at all, savefig
            # also skips its extra layout pass (one draw per render instead of two).
            self.fig.set_layout_engine(None)
        return buf.getvalue()


def fixed_digits(value: float, digits: int = 3) -> str:
    """``value`` with exactly ``digits`` significant digits, trailing zeros kept, no exponent: labels that line up.

    >>> [fixed_digits(v) for v in (1.71, 1.8, 0.924, 12.34, 190.7, 0.0)]
    ['1.71', '1.80', '0.924', '12.3', '191', '0']
    """
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(v)))
    text = f"{v:.{max(decimals, 0)}f}"
    if decimals > 0 and math.floor(math.log10(abs(float(text)))) > math.floor(math.log10(abs(v))):
        text = f"{v:.{decimals - 1}f}"  # 9.996 → "10.0", not "10.00"
    return text
