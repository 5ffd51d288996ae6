"""Pieces every widget app shares: the app box, PNG images at their natural size, background work, number formats.

* :class:`App` is the ``VBox`` every builder returns. Outside a live kernel (a notebook opened before it runs, an
  HTML export, a viewer without the widget manager) a front end shows a widget's ``text/plain`` fallback; for a
  plain ``VBox`` that is ``VBox(children=(HBox(...`` — :class:`App` says instead what the app is and that the cell
  must run.
* :func:`show_png` puts a rendered figure into an ``Image`` widget *at its pixel size*: an ``<img>`` in a ``VBox``
  (a flex column) otherwise stretches to the full cell width and grows in proportion (a 330-px map became
  ~700 px tall).
* :class:`LatestOnly` runs slow work (refits, bandit runs) in one background thread, newest request only: while
  one job runs, further requests replace each other, so five arrow-key steps of a slider cost at most two fits,
  not five, and the kernel stays free to take slider moves and draw the cheap panels meanwhile.
* :func:`figure_caption` and :func:`show_png` give every figure of an app its text alternative (from the figure's
  ``*_alt`` function in :mod:`jtk.plots`): a caption, hidden from sight but read by screen readers, kept as
  ``.caption`` of the ``Image`` or ``Output`` it describes; ``jtk export`` writes the same text into the page's
  ``<img alt=...>``. (ipywidgets 8 cannot label an ``Image`` itself: its ``tooltip`` needs a ``description``.)
* :func:`significant` rounds for people (two significant digits by default), e.g. in tables a notebook's prose
  quotes: stable across CPUs, unlike the last digits of a float32 result.
"""

from __future__ import annotations

import html
import math
import struct
import threading
import time
import traceback
from typing import Callable

import ipywidgets as widgets
import numpy as np


class App(widgets.VBox):
    """A ``VBox`` whose plain-text form names the app (shown where the widget itself cannot be)."""

    def __init__(self, children=(), title: str = "interactive app", **kwargs):
        super().__init__(children, **kwargs)
        self.app_title = title

    def __repr__(self) -> str:
        return f"[{self.app_title}: run this cell to use it; widgets need a live kernel]"


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) in pixels of PNG bytes, from the IHDR chunk."""
    data = bytes(data)
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("data must be PNG bytes (signature and IHDR chunk), got something else")
    return struct.unpack(">II", data[16:24])


CAPTION_CLASS = "jtk-figure-alt"
"""CSS class of the caption widgets that hold figures' text alternatives (``jtk export`` reads them as alt text)."""

_SR_ONLY = ("position:absolute;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;"
            "clip:rect(0 0 0 0);clip-path:inset(50%);white-space:nowrap")  # read by screen readers, not shown


def figure_caption() -> widgets.HTML:
    """An empty caption for a figure's text alternative: no room taken, read by screen readers (:func:`set_caption`)."""
    caption = widgets.HTML(layout=widgets.Layout(width="0px", height="0px", margin="0", overflow="hidden"))
    caption.add_class(CAPTION_CLASS)
    caption.alt_text = ""
    return caption


def set_caption(caption: widgets.HTML, text: str) -> None:
    """Puts a figure's text alternative into its caption (``caption.alt_text``; the HTML says "Figure: …")."""
    caption.alt_text = " ".join(str(text).split())
    caption.value = f'<span style="{_SR_ONLY}">Figure: {html.escape(caption.alt_text)}</span>'


def image_widget() -> widgets.Image:
    """An empty PNG ``Image`` that never grows past its cell (``max_width``) nor stretches (see :func:`show_png`).

    Its ``.caption`` (:func:`figure_caption`) is placed by the builder right after it and holds its text alternative.
    """
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto",
                                                              align_self="flex-start"))
    image.caption = figure_caption()
    return image


def show_png(image: widgets.Image, data: bytes, alt: str | None = None) -> None:
    """Shows ``data`` in ``image`` at its natural pixel width (scaled down only when the cell is narrower).

    Args:
      image: from :func:`image_widget`.
      data: PNG bytes.
      alt: the figure's text alternative, put into ``image.caption``.
    """
    width, _ = png_size(data)
    image.value = data
    image.layout.width = f"{width}px"
    if alt is not None and getattr(image, "caption", None) is not None:
        set_caption(image.caption, alt)


LABEL_STYLE = {"description_width": "initial"}  # a control's description in full ("temperature ρ", not "temperat…")


def significant(value: float, digits: int = 2) -> str:
    """``value`` rounded to ``digits`` significant digits, written plainly (0.075, 0.13, 12, 190, 1200).

    >>> [significant(v) for v in (0.074964, 0.125267, 11.835, 190.699997, 0.0)]
    ['0.075', '0.13', '12', '190', '0']
    """
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    exponent = math.floor(math.log10(abs(v)))
    decimals = digits - 1 - exponent
    rounded = round(v, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:  # 0.0999 → 0.10: one decimal fewer
        decimals -= 1
    return f"{rounded:.{max(decimals, 0)}f}"


def significant_frame(frame, digits: int = 2):
    """A copy of a DataFrame with every float written by :func:`significant` (strings, right-aligned by pandas)."""
    return frame.apply(lambda col: col.map(lambda v: significant(v, digits))
                       if np.issubdtype(col.dtype, np.floating) else col)


class LatestOnly:
    """Runs jobs in one background thread, newest request only; ``background=False`` runs them at once.

    Args:
      background: run in a thread (in a kernel) or synchronously (tests, benchmarks, scripts).
      delay: seconds a request waits before it starts, so that a burst of slider steps becomes one job.
      on_error: called with the exception (and its formatted traceback) of a failed job; a failure never
        escapes the thread silently.
    """

    def __init__(self, background: bool = True, delay: float = 0.3,
                 on_error: Callable[[BaseException, str], None] | None = None):
        self.background = bool(background)
        self.delay = float(delay)
        self.on_error = on_error
        self.errors: list[BaseException] = []
        self.jobs_run = 0
        self._lock = threading.Lock()
        self._pending: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()

    def submit(self, job: Callable[[], None]) -> None:
        """Runs ``job`` soon; replaces a job that has been requested but not started yet."""
        if not self.background:
            self._run(job)
            return
        with self._lock:
            self._pending = job
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="jtk-widget-job", daemon=True)
                self._thread.start()

    @property
    def busy(self) -> bool:
        """Whether a job is running or waiting."""
        return not self._idle.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until no job runs or waits (True), or ``timeout`` seconds pass (False)."""
        return self._idle.wait(timeout)

    def _loop(self) -> None:
        while True:
            time.sleep(self.delay)
            with self._lock:
                job, self._pending = self._pending, None
                if job is None:
                    self._thread = None
                    self._idle.set()
                    return
            self._run(job)

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception as e:  # noqa: BLE001 - reported, not swallowed: the app shows it in its status line
            self.errors.append(e)
            if self.on_error is not None:
                self.on_error(e, traceback.format_exc())
            elif not self.background:
                raise
        finally:
            self.jobs_run += 1


def elapsed_text(seconds: float) -> str:
    """A wall time for a status line: "0.4 s", "12 s", "1 min 05 s"."""
    s = float(seconds)
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    return f"{int(s // 60)} min {int(s % 60):02d} s"
