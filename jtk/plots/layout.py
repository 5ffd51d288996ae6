"""Layout helpers shared by the figures (no pyplot import): legends beside the data, live figures, number labels,
and text alternatives.

**Text alternatives.** Every figure says in words what it shows, generated from its data: each plotting function
has an ``*_alt`` function next to it that writes the sentence, and stores it with :func:`set_alt_text` on the
figure or on the axes it drew. :func:`alt_text` reads a figure's alternative (the figure's own, else one sentence
per panel: a panel's own, else its title and axis labels). A figure that has one carries it when IPython displays
it: its ``text/plain`` form is the alternative and ``image/png`` has the metadata ``{"alt": ...}``, which
``jtk export`` writes into the page's ``<img alt=...>``; widgets put it into a caption screen readers announce.
"""

from __future__ import annotations

import numpy as np

import io
import math
import re

from matplotlib.figure import Figure

# The public surface: a figure's text alternative (set and read) and the base of the redrawn figures. legend_outside,
# plain_label and fixed_digits are the plotting modules' shared formatting helpers, not in __all__.
__all__ = ["set_alt_text", "alt_text", "LiveFigure"]


def legend_outside(ax_or_fig, handles=None, labels=None, fontsize: int = 10, **kwargs):
    """A legend beside the plotting area (right of an axes, or right of a whole figure), never over the data.

    10 pt: the smallest text the labs use, readable in a notebook laid out for a 1366-pixel-wide screen.
    """
    if handles is None:
        handles, labels = (ax_or_fig.get_legend_handles_labels() if hasattr(ax_or_fig, "get_legend_handles_labels")
                           else ax_or_fig.axes[0].get_legend_handles_labels())
    kw = dict(fontsize=fontsize, frameon=False, **kwargs)
    if hasattr(ax_or_fig, "get_legend_handles_labels"):
        return ax_or_fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), borderaxespad=0, **kw)
    # a figure: in the strip that ``tight_layout(rect=...)`` kept free on the right
    return ax_or_fig.legend(handles, labels, loc="center right", bbox_to_anchor=(1.0, 0.5), **kw)


def legend_beside_figure(fig, handles, labels, fontsize: int = 10, **kwargs):
    """A figure legend on the right, with just its width kept free of panels (however long its labels are)."""
    legend = legend_outside(fig, handles, labels, fontsize=fontsize, **kwargs)
    width = legend.get_window_extent().width / fig.bbox.width  # the figure's own renderer, whatever its canvas
    fig.tight_layout(rect=(0, 0, max(0.6, 0.99 - width), 1))
    return legend


# Offsets (points) and alignments tried in turn for a point's label: beside it, then above or below, then further.
_LABEL_SPOTS = [((4, 3), "left", "bottom"), ((4, -3), "left", "top"), ((-4, 3), "right", "bottom"),
                ((-4, -3), "right", "top"), ((0, 8), "center", "bottom"), ((0, -8), "center", "top"),
                ((4, 14), "left", "bottom"), ((4, -14), "left", "top"), ((-4, 14), "right", "bottom"),
                ((-4, -14), "right", "top"), ((0, 22), "center", "bottom"), ((0, -22), "center", "top")]


def place_labels(ax, xs, ys, texts, fontsize: int = 10) -> list:
    """Labels beside scattered points that overlap neither each other nor the axes' edges, where room allows.

    Each label takes the first spot of a fixed list (right, left, above, below, further out) whose box overlaps no
    label placed before it and stays inside the axes; a label with no free spot keeps the first one. Labels are
    placed from the top point down.

    Returns:
      The ``Annotation`` artists, in the order of ``texts``.
    """
    # window extents from the figure's own renderer (no argument): any canvas, also the export's plain one
    inside = ax.get_window_extent()
    order = sorted(range(len(texts)), key=lambda i: -float(ys[i]) if np.isfinite(ys[i]) else np.inf)
    placed, artists = [], [None] * len(texts)
    for i in order:
        for k, (offset, ha, va) in enumerate(_LABEL_SPOTS):
            ann = ax.annotate(str(texts[i]), (xs[i], ys[i]), xytext=offset, textcoords="offset points", ha=ha,
                              va=va, fontsize=fontsize)
            box = ann.get_window_extent()
            fits = (box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0 and box.y1 <= inside.y1)
            if fits and not any(box.overlaps(other) for other in placed):
                break
            ann.remove()
        else:
            offset, ha, va = _LABEL_SPOTS[0]
            ann = ax.annotate(str(texts[i]), (xs[i], ys[i]), xytext=offset, textcoords="offset points", ha=ha,
                              va=va, fontsize=fontsize)
            box = ann.get_window_extent()
        placed.append(box)
        artists[i] = ann
    return artists


class _AltBundle:
    """A figure's display bundle with its text alternative (read when the figure is shown, so later panels count)."""

    def __init__(self, fig):
        self.fig = fig

    def __call__(self, include=None, exclude=None):
        text = alt_text(self.fig)
        return {"text/plain": text}, {"image/png": {"alt": text}}


def set_alt_text(target, text: str) -> None:
    """Stores ``text`` as the text alternative of a figure, or of one panel (an Axes) of a figure.

    Args:
      target: a ``matplotlib.figure.Figure`` (the whole figure) or an ``Axes`` (that panel only).
      text: what the figure or panel shows, in words (non-empty).

    Raises:
      TypeError: ``target`` is neither; ValueError: ``text`` is empty.
    """
    from matplotlib.axes import Axes

    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string, got {text!r}")
    if isinstance(target, Figure):
        fig = target
    elif isinstance(target, Axes):
        fig = target.figure
    else:
        raise TypeError(f"target must be a matplotlib Figure or Axes, got {type(target).__name__}")
    target._jtk_alt = " ".join(text.split())
    if not isinstance(getattr(fig, "_repr_mimebundle_", None), _AltBundle):
        fig._repr_mimebundle_ = _AltBundle(fig)  # IPython's display reads it (an instance attribute is enough)


_TEX_WORDS = {r"\tau": "τ", r"\rho": "ρ", r"\sigma": "σ", r"\lambda": "λ", r"\mu": "μ", r"\pm": "±",
              r"\cdot": "·", r"\leq": "≤", r"\geq": "≥"}


def plain_label(text: str) -> str:
    """A matplotlib label without mathtext markup, for text alternatives: ``$\\bar{R}_x$`` → ``R̄_x``,
    ``$d_{\\mathrm{KL}}^{\\tau}$`` → ``d_KL^τ``."""
    if "$" not in text:
        return text

    def math(m: re.Match) -> str:
        t = m.group(1)
        for tex, word in _TEX_WORDS.items():
            t = t.replace(tex, word)
        t = re.sub(r"\\bar\{(\w)\}", "\\1\u0304", t)  # R̄: the letter and a combining macron
        t = re.sub(r"\\math(?:rm|bf|it)\{([^{}]*)\}", r"\1", t)
        t = re.sub(r"([_^])\{([^{}]*)\}", r"\1\2", t)
        return t.replace("\\", "")

    return re.sub(r"\$([^$]*)\$", math, text)


def _panel_text(ax) -> str:
    own = getattr(ax, "_jtk_alt", None)
    if own:
        return own
    title = plain_label(ax.get_title() or ax.get_title(loc="left") or ax.get_title(loc="right"))
    y, x = plain_label(ax.get_ylabel()), plain_label(ax.get_xlabel())
    what = f"{y} against {x}" if y and x else (y or x)
    text = "; ".join(t for t in (" ".join(title.split()), what) if t)
    return text or "an unlabelled panel"


def alt_text(fig) -> str:
    """The text alternative of a figure: its own (:func:`set_alt_text`), else its title and one sentence a panel.

    A panel says what its plotting function stored for it, else its title and "y label against x label". Colour
    bars and hidden axes are left out.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    own = getattr(fig, "_jtk_alt", None)
    if own:
        return own
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    texts = [_panel_text(ax) for ax in panels]
    title = " ".join(fig.get_suptitle().split())
    if len(texts) == 1:
        parts = [title, texts[0]]
    else:
        parts = [title] + [f"Panel {i + 1} of {len(texts)}: {t}" for i, t in enumerate(texts)]
    text = ". ".join(p.rstrip(". ") for p in parts if p.strip())
    return (text + ".") if text else "A figure without titles or labels."


class LiveFigure:
    """A figure that is built once and redrawn in place; ``png()`` renders it.

    Subclasses build ``self.fig`` (usually with ``layout="constrained"``) and change only data, limits and texts
    afterwards. The first :meth:`png` computes the layout and freezes it, so a slider move costs one draw.
    """

    fig: Figure

    @property
    def alt(self) -> str:
        """The figure's text alternative for what it shows now (:func:`alt_text`; ``update`` keeps it current)."""
        return alt_text(self.fig)

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


def _frame(name: str, value) -> None:
    """A plot's table argument must be a pandas DataFrame (a clear TypeError, not an AttributeError inside pandas)."""
    import pandas as pd

    if not isinstance(value, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(value).__name__}")
