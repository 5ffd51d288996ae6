"""Static interactive pages of the labs: every notebook as one self-contained HTML page, no kernel needed.

``jtk export NOTEBOOK... --out DIR`` (or :func:`export_site`) executes each notebook headless (nbclient, a kernel
from this environment, the notebook's own directory as working directory), then, in the same kernel, drives every
widget app the notebook shows through its controls' values and records what the app draws for each combination
(:func:`capture_app`). The notebook is rendered with nbconvert's ``HTMLExporter`` (``lab`` template, images
embedded) and each app's output is replaced by a small HTML + JavaScript block (:func:`app_html`): the same controls
(``<input type=range>`` for sliders, ``<select>`` for dropdowns, buttons for toggle buttons, a checkbox, counting
buttons for flip buttons) and a table from control values to precomputed frames (base64 PNG data URIs and HTML
snippets, each stored once). Nothing is fetched from the network: scripts and links to other hosts that the
template would add (require.js, MathJax) are removed; TeX in the prose (``$…$``, ``$$…$$``) and the labs' plain
notation (``d_KL^τ``) become MathML at export time (:mod:`jtk.course._math`), which browsers render without a script.

Accessible (WCAG 2.1 AA, checked with axe-core by ``tests/browser/test_accessibility.py``): every figure has a text
alternative written from its data (``alt`` of the notebook's static figures from their display metadata, of an
app's frames from the captions its builder keeps, :mod:`jtk.widgets._app`); every control of an app has a label tied
to it (``<label for>``, a named group for toggle buttons, the value's label as ``aria-valuetext`` of a slider) and a
visible focus ring, and works from the keyboard (Tab, arrow keys, Enter, Space); the page's colours are overridden
where the notebook template's fall below 4.5:1 contrast (:data:`PAGE_COLORS`).

Bounded size: an app whose controls span more than ``max_frames`` combinations, or whose figures would exceed its
share of :data:`MAX_PAGE_BYTES`, is exported on a sub-grid: first the values of :data:`SUBGRIDS` (the apps with free
seed entry or refits), then sliders (before dropdowns) are thinned to evenly spaced values, keeping their current
value and, while there is room, both ends. The page says, under the app, which values each reduced control offers.
Free text entries (a seed box) keep their current value only unless :data:`SUBGRIDS` lists more. Apps with flip
buttons (``app.buttons`` with a "reset" button and ``app.state["seed"]``: the coin-flipping app) are exported as
counters: each flip button can be pressed up to ``max_clicks`` times (the outcomes are the app's own, drawn from
its seed), and the "new coins" button starts the same coins over.

Same truth: a frame is the bytes the live app's ``Image`` widget holds (or the PNG its ``Output`` widget displays)
after its controls are set to that combination, so an exported frame equals what the notebook draws.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import html
import itertools
import json
import math
import os
import pathlib
import re
import tempfile
import time
import types
from typing import Any, Mapping, Sequence

import numpy as np

from jtk import _checks
from jtk.course import _math

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

MAX_FRAMES = 400
"""Default cap on the control combinations one app is exported for."""

MAX_CLICKS = 4
"""Default number of presses each flip button of a button app is exported for."""

MAX_PAGE_BYTES = 16 * 2**20
"""Default budget for the apps' contents on one page (shared equally by its apps), under the 25 MB a page may weigh."""

MAX_APP_BYTES = MAX_PAGE_BYTES
"""Default byte budget of one app's contents in :func:`capture_app` (a page splits :data:`MAX_PAGE_BYTES`)."""

SUBGRIDS: dict[str, dict[str, Sequence[Any]]] = {
    # notebook 02: a new temperature or seed refits three agents; three temperatures × two seeds are refitted.
    "joint-predictions app": {"temperature": (0.01, 0.1, 1.0), "seed": (0, 1),
                              "tau": (1, 2, 5, 10, 20, 50, 100)},
    # notebook 06: a new (agent, d, ρ) runs the bandit for minutes; the export keeps the runs the notebook made.
    # the runs the notebook made (agents at d = 2, ρ = 0.1); the horizon slider only truncates them.
    "bandit explorer": {"agent": ("uniform", "mlp", "dropout", "ensemble+"), "input_dim": (2,), "temperature": (0.1,)},
}
"""Values exported for the named apps' controls (by app title and control name), where every value costs a refit."""

SUBGRID_REASONS = {
    "joint-predictions app": "in the live app each new temperature or seed refits three agents",
    "bandit explorer": "in the live app each new agent, d or ρ runs the bandit; the page holds the runs the "
                       "notebook made",
}
"""Why an app of :data:`SUBGRIDS` is reduced, said under it in the page."""

_SLIDERS = ("IntSlider", "FloatSlider", "FloatLogSlider", "SelectionSlider")
_CHOICES = ("Dropdown", "ToggleButtons", "RadioButtons", "Select")
_TEXTS = ("BoundedIntText", "IntText", "BoundedFloatText", "FloatText")
_CONTROL_TYPES = _SLIDERS + _CHOICES + _TEXTS + ("Checkbox", "ToggleButton", "Button")


# ------------------------------------------------------------------ controls
def _is_control(w) -> bool:
    return type(w).__name__ in _CONTROL_TYPES


def app_controls(app) -> dict[str, Any]:
    """The app's controls by name: its ``controls`` dict when it has one, else every control in its widget tree.

    Buttons of a button app (``app.buttons``) are not included; :func:`capture_app` exports them as counters.
    """
    import ipywidgets as widgets

    if not isinstance(app, widgets.Box):
        raise TypeError(f"app must be an ipywidgets Box from a jtk.widgets builder, got {type(app).__name__}")
    controls = getattr(app, "controls", None)
    if isinstance(controls, Mapping):
        found = dict(controls)
        reveal = getattr(app, "reveal", None)
        if reveal is not None and reveal not in found.values():
            found["reveal"] = reveal
        return found
    found, buttons = {}, set(map(id, getattr(app, "buttons", {}).values()))
    for w in _walk(app):
        if _is_control(w) and type(w).__name__ != "Button" and id(w) not in buttons:
            name = getattr(w, "description", "") or f"control {len(found)}"
            found[name] = w
    return found


def _walk(w):
    yield w
    for child in getattr(w, "children", ()) or ():
        yield from _walk(child)


def control_values(widget) -> list:
    """Every value the control can take (a text entry: its current value only)."""
    kind = type(widget).__name__
    if kind in ("IntSlider",):
        return list(range(widget.min, widget.max + 1, widget.step))
    if kind == "FloatSlider":
        n = int(round((widget.max - widget.min) / widget.step))
        return [float(widget.min + i * widget.step) for i in range(n + 1)]
    if kind == "FloatLogSlider":
        n = int(round((widget.max - widget.min) / widget.step))
        return [float(widget.base ** (widget.min + i * widget.step)) for i in range(n + 1)]
    if kind in ("SelectionSlider",) + _CHOICES:
        return list(widget._options_values)
    if kind in ("Checkbox", "ToggleButton"):
        return [False, True]
    if kind in _TEXTS:
        return [widget.value]
    raise TypeError(f"widget must be one of the controls {_CONTROL_TYPES}, got {kind}")


def _label(widget, value) -> str:
    kind = type(widget).__name__
    if kind in ("SelectionSlider",) + _CHOICES:
        return str(widget._options_labels[list(widget._options_values).index(value)])
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        fmt = getattr(widget, "readout_format", ".2f") or ".2f"
        try:
            return format(value, fmt)
        except ValueError:
            return f"{value:g}"
    return str(value)


def _closest(values: Sequence, value) -> int:
    if value in values:
        return list(values).index(value)
    try:
        return int(np.argmin([abs(float(v) - float(value)) for v in values]))
    except (TypeError, ValueError):
        return 0


def _thin(values: list, keep, target: int) -> list:
    """``target`` of ``values``, evenly spread: both ends and ``keep`` stay while there is room for them."""
    picks = sorted({int(round(i)) for i in np.linspace(0, len(values) - 1, target)})
    if keep in values and values.index(keep) not in picks:
        k = values.index(keep)
        inner = [p for p in picks if 0 < p < len(values) - 1] or picks
        picks.remove(min(inner, key=lambda p: abs(p - k)))
        picks = sorted(picks + [k])
    return [values[i] for i in picks]


def plan_grid(values: Mapping[str, list], defaults: Mapping[str, Any], max_frames: int,
              subgrid: Mapping[str, Sequence] | None = None, thin_first: Sequence[str] = (),
              size=None, max_size: float = math.inf) -> dict[str, list]:
    """The exported values of each control: ``subgrid`` first, then thinning until the product ≤ ``max_frames``.

    Args:
      values: control name → every value of the live control.
      defaults: control name → its current value (always kept).
      max_frames: the largest number of combinations.
      subgrid: control name → the values to keep (those the control has; the default is added).
      thin_first: controls thinned before the others (sliders before dropdowns), the longest first.
      size: optional estimate of a grid's bytes (a function of the grid); then the grid is also halved, control by
        control, until ``size(grid) ≤ max_size``.
      max_size: the byte budget for ``size``.

    Returns:
      control name → exported values, in the control's order.

    Raises:
      ValueError: ``max_frames`` < 1.
    """
    _checks.instance("values", values, Mapping, "a dict of control name → its values")
    _checks.instance("defaults", defaults, Mapping, "a dict of control name → its current value")
    if subgrid is not None:
        _checks.instance("subgrid", subgrid, Mapping, "a dict of control name → values to keep, or None")
    if size is not None:
        _checks.function("size", size, "a function of the grid (its size in bytes) or None")
    if not isinstance(max_frames, int) or max_frames < 1:
        raise ValueError(f"max_frames must be an integer ≥ 1, got {max_frames!r}")
    grid = {name: list(v) for name, v in values.items()}
    for name, wanted in (subgrid or {}).items():
        if name in grid:
            full = grid[name]
            chosen = [full[_closest(full, w)] for w in wanted] if full and len(full) > 1 else list(wanted)
            chosen = [v for v in full if v in chosen or v == defaults[name]] if len(full) > 1 else chosen
            if defaults[name] not in chosen:
                chosen.append(defaults[name])
            grid[name] = chosen
    while math.prod(len(v) for v in grid.values()) > max_frames:
        name = max(grid, key=lambda n: (n in thin_first and len(grid[n]) > 2, len(grid[n])))
        if len(grid[name]) <= 1:
            break
        others = math.prod(len(v) for n, v in grid.items() if n != name)
        allowed = max_frames // others  # the most values this control may keep with the others as they are
        half = (len(grid[name]) + 1) // 2  # halve while halving is not enough: the reduction spreads over controls
        target = min(len(grid[name]) - 1, allowed) if allowed >= half else half
        grid[name] = _thin(grid[name], defaults[name], target)
    while size is not None and size(grid) > max_size:
        name = max(grid, key=lambda n: (n in thin_first and len(grid[n]) > 2, len(grid[n])))
        if len(grid[name]) <= 1:
            break
        n, half = len(grid[name]), (len(grid[name]) + 1) // 2
        fits = [k for k in range(n - 1, half - 1, -1) if size({**grid, name: grid[name][:k]}) <= max_size]
        grid[name] = _thin(grid[name], defaults[name], fits[0] if fits else half)  # the most that fit, or half
    return grid


# ------------------------------------------------------------------ views (what an app draws)
def _is_caption(w) -> bool:
    from jtk.widgets import CAPTION_CLASS
    return CAPTION_CLASS in (getattr(w, "_dom_classes", ()) or ())


class _Views:
    """The app's displays in tree order (Image, HTML, Output), their current content and text alternatives.

    Captions (:func:`jtk.widgets._app.figure_caption`) are no views of their own: a caption's text is the
    ``alt`` of the Image or Output that keeps it as ``.caption`` (an Output without one: the ``alt`` metadata of
    the figure it displayed).
    """

    def __init__(self, app, controls):
        import ipywidgets as widgets
        skip = set(map(id, controls)) | set(map(id, getattr(app, "buttons", {}).values()))
        self.widgets = [w for w in _walk(app) if id(w) not in skip and isinstance(
            w, (widgets.Image, widgets.HTML, widgets.Output)) and not _is_caption(w)]  # a Label names a control
        self.current: list[str | None] = [None] * len(self.widgets)
        self.alts: list[str | None] = [None] * len(self.widgets)

    def kinds(self) -> list[str]:
        return [type(w).__name__ for w in self.widgets]

    def read(self, captured=None) -> list[str]:
        """Current content of each view: a PNG data URI, or HTML text (``self.alts``: the figures' alt texts)."""
        import ipywidgets as widgets
        for i, w in enumerate(self.widgets):
            alt = None
            if isinstance(w, widgets.Image):
                self.current[i] = _data_uri(bytes(w.value), w.format) if w.value else ""
            elif isinstance(w, widgets.HTML):
                self.current[i] = w.value
            else:  # Output: what was displayed into it (w.outputs in a front end; the capture in a kernel)
                for data, metadata in _output_data(w, captured):
                    if "image/png" in data:
                        png = data["image/png"]
                        self.current[i] = f"data:image/png;base64,{png}" if isinstance(png, str) \
                            else _data_uri(png, "png")
                        alt = (metadata.get("image/png") or {}).get("alt") or alt
                    elif "text/html" in data:
                        self.current[i] = data["text/html"]
                    elif "text/plain" in data:
                        self.current[i] = f"<pre>{html.escape(data['text/plain'])}</pre>"
                if self.current[i] is None:
                    self.current[i] = ""
            caption = getattr(w, "caption", None)
            if caption is not None and getattr(caption, "alt_text", ""):
                alt = caption.alt_text
            self.alts[i] = (alt or None) if (self.current[i] or "").startswith("data:image/") else None
        return list(self.current)


def _output_data(out, captured) -> list[tuple[dict, dict]]:
    """(data, metadata) of each display in an Output widget (its outputs, then what ``captured`` caught)."""
    datas = [(dict(o.get("data", {})), dict(o.get("metadata", {}) or {})) for o in getattr(out, "outputs", ())
             if o.get("output_type") != "stream"]
    if captured is not None:
        datas += [(dict(o.data), dict(o.metadata)) for o in captured.outputs]
    return datas


def _data_uri(data: bytes, fmt: str = "png") -> str:
    mime = {"svg": "image/svg+xml", "svg+xml": "image/svg+xml"}.get(fmt, f"image/{fmt}")
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


# ------------------------------------------------------------------ capture
def _sync(app):
    """Makes an app's background runner synchronous (refits run at once) and returns a function undoing that."""
    runner = getattr(app, "runner", None)
    if runner is None or not hasattr(runner, "background"):
        return lambda: None
    before = runner.background
    if hasattr(runner, "wait"):
        runner.wait(600)
    runner.background = False
    return lambda: setattr(runner, "background", before)


class _Captured:
    """What was displayed while :func:`_capturing` was active (``outputs``: items with a ``data`` dict)."""

    def __init__(self):
        self.outputs: list = []


@contextlib.contextmanager
def _capturing():
    """Catches what is displayed (what an ``Output`` widget would show) instead of sending it; None outside IPython.

    The shell's display publisher keeps its identity (an ``Output`` widget calls its ``set_parent``); only its
    ``publish`` and ``clear_output`` are replaced for the duration.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        yield None
        return
    ip = get_ipython()
    if ip is None or getattr(ip, "display_pub", None) is None:
        yield None
        return
    pub, captured = ip.display_pub, _Captured()

    def publish(data, metadata=None, *args, **kwargs):
        captured.outputs.append(types.SimpleNamespace(data=dict(data), metadata=dict(metadata or {})))

    def clear_output(wait=False):
        captured.outputs.clear()

    pub.publish, pub.clear_output = publish, clear_output
    try:
        yield captured
    finally:
        del pub.publish, pub.clear_output  # the class's methods again


def capture_app(app, max_frames: int = MAX_FRAMES, max_clicks: int = MAX_CLICKS,
                subgrid: Mapping[str, Sequence] | None = None, max_bytes: float = MAX_APP_BYTES) -> dict:
    """Drives ``app`` through its controls' exported values and records what it draws for each combination.

    Args:
      app: a widget app (an ``ipywidgets`` box from a :mod:`jtk.widgets` builder).
      max_frames: the most control combinations recorded (see :func:`plan_grid`).
      max_clicks: the most presses of each flip button of a button app (``app.buttons``).
      subgrid: control name → values to export; default: :data:`SUBGRIDS` for the app's title.
      max_bytes: budget for the app's contents. Before the capture each control is moved once or twice from its
        value, which shows which displays it changes and how large they are; the grid is then thinned until the
        estimate (mean size × distinct contents of each display) fits. Not applied to button apps.

    Returns:
      a JSON-able dict: ``title``, ``controls`` (name, label, kind, labels, default, note, tip), ``views`` (kind
      of each display), ``contents`` (each distinct content once), ``frames`` (key "i-j-…" of control indices →
      content index of each view), ``alts`` (the same keys → content index of each view's text alternative, None
      for a view that shows no image), ``seconds``, ``reason`` (why a sub-grid, or ""). The app is left at its
      initial values.

    Raises:
      TypeError: ``app`` is not an ipywidgets box.
      ValueError: ``max_frames`` or ``max_clicks`` < 1, or ``max_bytes`` ≤ 0.
    """
    import ipywidgets as widgets
    if not isinstance(app, widgets.Box):
        raise TypeError(f"app must be an ipywidgets Box from a jtk.widgets builder, got {type(app).__name__}")
    if not isinstance(max_frames, int) or max_frames < 1:
        raise ValueError(f"max_frames must be an integer ≥ 1, got {max_frames!r}")
    if not isinstance(max_clicks, int) or max_clicks < 1:
        raise ValueError(f"max_clicks must be an integer ≥ 1, got {max_clicks!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, float)) or not max_bytes > 0:
        raise ValueError(f"max_bytes must be a number > 0, got {max_bytes!r}")
    start = time.perf_counter()
    title = getattr(app, "app_title", "interactive app")
    subgrid = SUBGRIDS.get(title, {}) if subgrid is None else subgrid
    controls = app_controls(app)
    buttons = dict(getattr(app, "buttons", {}) or {})
    counters = [n for n in buttons if n != "reset"] if buttons and isinstance(getattr(app, "state", None), dict) \
        else []
    original = {n: c.value for n, c in controls.items()}
    full = {n: control_values(c) for n, c in controls.items()}
    defaults = {n: full[n][_closest(full[n], v)] for n, v in original.items()}  # on the slider's grid
    click_grid = {f"button {n}": list(range(max_clicks + 1)) for n in counters}
    grid = plan_grid(full, defaults, max(1, max_frames // max(1, math.prod(len(v) for v in click_grid.values()))),
                     subgrid, thin_first=[n for n, c in controls.items() if type(c).__name__ in _SLIDERS])
    views = _Views(app, list(controls.values()))
    undo = _sync(app)
    contents: list[str] = []
    index: dict[str, int] = {}
    frames: dict[str, list[int]] = {}
    alts: dict[str, list[int | None]] = {}

    def store(items: list[str]) -> list[int]:
        ids = []
        for item in items:
            h = hashlib.sha1(item.encode()).hexdigest()
            if h not in index:
                index[h] = len(contents)
                contents.append(item)
            ids.append(index[h])
        return ids

    def wait():
        if callable(getattr(app, "wait", None)):
            app.wait(600)

    def set_values(combo):
        with _capturing() as captured:
            for (name, c), value in zip(controls.items(), combo):
                if c.value != value:
                    c.value = value
                    wait()
        return captured

    seed0 = app.state.get("seed") if counters else None

    def restart():  # the button app back to its first coins and no flips: "new coins" draws seed + 1
        app.state["seed"] = seed0 - 1
        buttons["reset"].click()

    names = list(controls)
    try:
        views.read()
        if "Output" in views.kinds():  # what the Output shows now is only known from a redraw we capture
            with _capturing() as captured:
                if callable(getattr(app, "redraw", None)):
                    app.redraw()
                elif names:
                    c = controls[names[0]]
                    other = [v for v in full[names[0]] if v != c.value]
                    if other:
                        before = c.value
                        c.value = other[0]
                        c.value = before
            views.read(captured)
        if not counters and names and math.isfinite(max_bytes):
            grid = _fit_bytes(grid, defaults, names, views, set_values, max_bytes,
                              [n for n, c in controls.items() if type(c).__name__ in _SLIDERS])
        combos = list(itertools.product(*(grid[n] for n in names)))

        def record(suffix=()):
            for combo in combos:
                captured = set_values(combo)
                key = "-".join(map(str, [grid[n].index(v) for n, v in zip(names, combo)] + list(suffix)))
                frames[key] = store(views.read(captured))
                alts[key] = [None if a is None else store([a])[0] for a in views.alts]

        if not counters:
            record()
        else:  # presses outermost (each state reached once), the controls' values inside
            pressed = None  # presses made since the last restart, button by button (in counter order)
            for clicks in itertools.product(*click_grid.values()):
                if pressed is not None and clicks[:-1] == pressed[:-1] and clicks[-1] == pressed[-1] + 1:
                    buttons[counters[-1]].click()  # one more press of the last button
                else:  # from the start: each button pressed its number of times, in order
                    restart()
                    for n, k in zip(counters, clicks):
                        for _ in range(k):
                            buttons[n].click()
                pressed = clicks
                record(clicks)
            restart()
        set_values(tuple(original[n] for n in names))
    finally:
        undo()
    spec_controls = []
    for n in names:
        c = controls[n]
        kind = type(c).__name__
        page_kind = ("range" if kind in _SLIDERS else "select" if kind in ("Dropdown", "Select", "RadioButtons")
                     or kind in _TEXTS else "toggle" if kind == "ToggleButtons" else "checkbox")
        labels = [_label(c, v) for v in grid[n]]
        reduced = len(grid[n]) < len(full[n]) or kind in _TEXTS
        note = ""
        if reduced:
            live = (f"free entry, {c.min}–{c.max}" if kind.startswith("Bounded") else "free entry") \
                if kind in _TEXTS else ", ".join(_label(c, v) for v in full[n]) \
                if kind in ("SelectionSlider",) + _CHOICES and len(full[n]) <= 10 \
                else f"{len(full[n])} values, {_label(c, full[n][0])}–{_label(c, full[n][-1])}"
            note = f"{_describe(c, n, app)}: exported for {', '.join(labels)} (live app: {live})"
        spec_controls.append({"name": n, "label": _describe(c, n, app), "kind": page_kind, "labels": labels,
                              "default": grid[n].index(defaults[n]), "note": note, "tip": c.tooltip or ""})
    for n in counters:
        spec_controls.append({"name": f"button {n}", "label": buttons[n].description, "kind": "counter",
                              "labels": [str(k) for k in range(max_clicks + 1)], "default": 0,
                              "note": f"{buttons[n].description}: up to {max_clicks} presses",
                              "tip": buttons[n].tooltip or ""})
    if counters:
        spec_controls.append({"name": "reset", "label": buttons["reset"].description, "kind": "reset",
                              "labels": [], "default": 0,
                              "note": f"{buttons['reset'].description}: starts the same coins over "
                                      "(the live app draws new ones)", "tip": buttons["reset"].tooltip or ""})
    return {"title": title, "controls": spec_controls, "views": views.kinds(), "contents": contents,
            "frames": frames, "alts": alts, "seconds": time.perf_counter() - start,
            "reason": SUBGRID_REASONS.get(title, "") if any(c["note"] for c in spec_controls) else ""}


def _fit_bytes(grid, defaults, names, views, set_values, max_bytes, thin_first):
    """``grid`` thinned until the estimated bytes fit, from a probe moving each control away from its default."""
    base = list(views.current)
    sizes = [[len(x or "")] for x in base]
    affects: dict[str, set[int]] = {n: set() for n in names}
    start = tuple(defaults[n] for n in names)
    for k, n in enumerate(names):
        others = [v for v in grid[n] if v != defaults[n]]
        for v in [others[-1], others[len(others) // 2]][: len(others)] if others else []:
            combo = list(start)
            combo[k] = v
            now = views.read(set_values(tuple(combo)))
            for i, (x, y) in enumerate(zip(now, base)):
                if x != y:
                    affects[n].add(i)
                    sizes[i].append(len(x or ""))
            views.read(set_values(start))

    def size(g):
        return sum(np.mean(sz) * math.prod(len(g[n]) for n in names if i in affects[n]) for i, sz in enumerate(sizes))

    return plan_grid(grid, defaults, max_frames=math.prod(len(v) for v in grid.values()), thin_first=thin_first,
                     size=size, max_size=max_bytes)


def _describe(widget, name: str, app=None) -> str:
    """A control's label: its description, else the ``Label`` just before it in a box of ``app``, else its name."""
    import ipywidgets as widgets

    if getattr(widget, "description", ""):
        return widget.description
    for box in _walk(app) if app is not None else ():
        children = list(getattr(box, "children", ()) or ())
        if widget in children:
            i = children.index(widget)
            if i > 0 and isinstance(children[i - 1], widgets.Label) and children[i - 1].value.strip():
                return children[i - 1].value.strip()
    return name


# ------------------------------------------------------------------ the page block
FOCUS_RING = "#1a5fb4"
"""Colour of the focus ring around the control that has keyboard focus (≥ 3:1 against white, WCAG 2.1 1.4.11)."""

PRESSED = ("#ffffff", "#1456a0")
"""Text and background of a pressed toggle button (≥ 4.5:1)."""

_STYLE = """
.jtk-app{border:1px solid #767676;border-radius:4px;padding:8px;margin:4px 0;font-family:sans-serif;font-size:13px}
.jtk-app .jtk-controls{display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center;margin-bottom:6px}
.jtk-app .jtk-field{display:inline-flex;align-items:center;gap:6px}
.jtk-app [role=group]{display:inline-flex;gap:2px}
.jtk-app .jtk-views{display:flex;flex-wrap:wrap;gap:4px;align-items:flex-start}
.jtk-app .jtk-views img{max-width:100%;height:auto}
.jtk-app button{font:inherit;color:#1f1f1f;background:#efefef;border:1px solid #767676;border-radius:3px;
  padding:2px 8px}
.jtk-app button[aria-pressed=true]{background:PRESSED_BG;color:PRESSED_FG;border-color:PRESSED_BG}
.jtk-app button:disabled{opacity:.6}
.jtk-app :focus-visible{outline:3px solid FOCUS;outline-offset:2px}
.jtk-app .jtk-note{color:#555;font-size:12px;margin-top:6px}
.jtk-app .jtk-readout{min-width:3em;display:inline-block}
""".replace("FOCUS", FOCUS_RING).replace("PRESSED_BG", PRESSED[1]).replace("PRESSED_FG", PRESSED[0])

_SCRIPT = r"""
(function(){
var root=document.getElementById(ID), spec=JSON.parse(document.getElementById(ID+"-data").textContent);
var state=spec.controls.map(function(c){return c.default;}), box=root.querySelector(".jtk-controls");
var alts=spec.alts||{}, views=root.querySelector(".jtk-views"), els=spec.views.map(function(kind){
  var el=document.createElement("div"); el.className="jtk-view"; views.appendChild(el); return el;});
function show(){
  var key=state.filter(function(_,k){return spec.controls[k].kind!=="reset";}).join("-"), f=spec.frames[key];
  if(!f){console.error("jtk export: no frame for control values "+key); return;}
  var a=alts[key]||[];
  f.forEach(function(ci,i){var c=spec.contents[ci], el=els[i]; if(el.dataset.ci===String(ci)){return;}
    el.dataset.ci=String(ci);
    if(c.slice(0,11)==="data:image/"){var img=el.querySelector("img")||el.appendChild(document.createElement("img"));
      img.alt=a[i]==null?"figure of "+spec.title:spec.contents[a[i]]; img.src=c;}
    else{el.innerHTML=c;}});
  root.dataset.key=key;
}
spec.controls.forEach(function(c,k){
  var id=ID+"-c"+k, field=document.createElement("div"), el;
  field.className="jtk-field"; if(c.tip){field.title=c.tip;}
  function label(){var lab=document.createElement("label"); lab.htmlFor=id; lab.textContent=c.label;
    field.appendChild(lab);}
  if(c.kind==="range"){label(); el=document.createElement("input"); el.type="range"; el.min=0;
    el.max=c.labels.length-1; el.step=1; el.value=c.default; el.setAttribute("aria-valuetext",c.labels[c.default]);
    var ro=document.createElement("output"); ro.className="jtk-readout"; ro.htmlFor=id;
    ro.setAttribute("aria-hidden","true"); ro.textContent=c.labels[c.default];
    el.addEventListener("input",function(){state[k]=+el.value; ro.textContent=c.labels[state[k]];
      el.setAttribute("aria-valuetext",c.labels[state[k]]); show();});
    field.appendChild(el); field.appendChild(ro);}
  else if(c.kind==="select"){label(); el=document.createElement("select"); c.labels.forEach(function(t,i){
    var o=document.createElement("option"); o.value=i; o.textContent=t; el.appendChild(o);}); el.value=c.default;
    el.addEventListener("change",function(){state[k]=+el.value; show();}); field.appendChild(el);}
  else if(c.kind==="toggle"){var name=document.createElement("span"); name.id=id+"-label"; name.textContent=c.label;
    field.appendChild(name); el=document.createElement("div"); el.setAttribute("role","group");
    el.setAttribute("aria-labelledby",name.id); c.labels.forEach(function(t,i){
    var b=document.createElement("button"); b.type="button"; b.textContent=t; b.setAttribute("aria-pressed",i===c.default);
    b.addEventListener("click",function(){state[k]=i; el.querySelectorAll("button").forEach(function(x,j){
      x.setAttribute("aria-pressed",j===i);}); show();}); el.appendChild(b);}); field.appendChild(el);}
  else if(c.kind==="checkbox"){el=document.createElement("input"); el.type="checkbox"; el.checked=c.default===1;
    el.addEventListener("change",function(){state[k]=el.checked?1:0; show();}); field.appendChild(el); label();}
  else if(c.kind==="counter"){el=document.createElement("button"); el.type="button"; el.textContent=c.label;
    el.addEventListener("click",function(){if(state[k]<c.labels.length-1){state[k]++; show();}
      el.disabled=state[k]>=c.labels.length-1;}); field.appendChild(el);}
  else if(c.kind==="reset"){el=document.createElement("button"); el.type="button"; el.textContent=c.label;
    el.addEventListener("click",function(){spec.controls.forEach(function(d,j){if(d.kind==="counter"){state[j]=0;}});
      box.querySelectorAll("button[data-kind=counter]").forEach(function(b){b.disabled=false;}); show();});
    field.appendChild(el);}
  el.id=el.id||id; el.dataset.kind=c.kind; el.dataset.control=c.name; el.dataset.label=c.label;
  el.classList.add("jtk-control"); box.appendChild(field);
  if(c.kind!=="counter"&&c.kind!=="reset"&&c.labels.length<2){el.dataset.fixed="1"; el.disabled=true;
    el.querySelectorAll("button").forEach(function(b){b.disabled=true;});}
});
show();
})();
"""


def app_html(spec: Mapping, uid: str) -> str:
    """The self-contained HTML + JavaScript block that replaces an app's widget output in a page.

    The block is a region named by the app's title; its controls are labelled form controls (see the module
    docstring) and its images carry the frames' text alternatives (``spec["alts"]``).

    Args:
      spec: a :func:`capture_app` result.
      uid: an id unique within the page (letters, digits, ``-``, ``_``).

    Raises:
      ValueError: ``uid`` has other characters.
    """
    _checks.keyed("spec", spec, ("title", "controls"))
    if not re.fullmatch(r"[A-Za-z][\w-]*", str(uid)):
        raise ValueError(f"uid must be letters, digits, '-' or '_' starting with a letter, got {uid!r}")
    data = json.dumps({"alts": {}, **{k: spec[k] for k in ("title", "controls", "views", "contents", "frames",
                                                            "alts") if k in spec}},
                      separators=(",", ":")).replace("</", "<\\/")
    notes = [c["note"] for c in spec["controls"] if c.get("note")]
    reason = f" ({spec['reason']})" if spec.get("reason") else ""
    note = ("Exported page: precomputed frames, no kernel. " + ("; ".join(notes) + f"{reason}." if notes else
            "Every control value of the live app is included."))
    title = html.escape(spec["title"])
    return (f'<div class="jtk-app" id="{uid}" data-title="{title}" role="region" aria-label="{title}">'
            f'<style>{_STYLE}</style>'
            f'<div class="jtk-controls"></div><div class="jtk-views"></div>'
            f'<div class="jtk-note">{html.escape(note)}</div>'
            f'<script type="application/json" id="{uid}-data">{data}</script>'
            f'<script>{_SCRIPT.replace("ID", json.dumps(uid))}</script></div>')


# ------------------------------------------------------------------ notebooks → pages
PAGE_COLORS = {
    # JupyterLab's code colours (the notebook template's syntax highlighting), darkened where they fell below
    # 4.5:1 on the code cells' #f5f5f5: numbers #080 (4.3), operators #a2f (4.4), comments #408080 (4.2), …
    "--jp-mirror-editor-keyword-color": "#008000",
    "--jp-mirror-editor-atom-color": "#5555ff",
    "--jp-mirror-editor-number-color": "#007a00",
    "--jp-mirror-editor-variable-3-color": "#007e4f",
    "--jp-mirror-editor-operator-color": "#9a10f0",
    "--jp-mirror-editor-meta-color": "#9a10f0",
    "--jp-mirror-editor-comment-color": "#3c7777",
    "--jp-mirror-editor-builtin-color": "#008000",
    "--jp-mirror-editor-bracket-color": "#707054",
    "--jp-mirror-editor-quote-color": "#007f00",
    "--jp-mirror-editor-error-color": "#d40000",
    # the "In [1]:" / "[1]:" prompts: #307fc1 (3.9) and #bf5b3d (4.0), and grey at half opacity (2.2) when inactive
    "--jp-cell-inprompt-font-color": "#2b73af",
    "--jp-cell-outprompt-font-color": "#b05438",
    "--jp-cell-prompt-not-active-font-color": "#616161",
}
"""CSS variables a page overrides so that its text has ≥ 4.5:1 contrast on white and on the code cells' #f5f5f5."""

PAGE_BACKGROUNDS = ("#ffffff", "#f5f5f5")
"""The backgrounds the page's text sits on: the page, and code cells (``--jp-cell-editor-background``)."""

_PAGE_CSS = (":root{" + "".join(f"{k}:{v};" for k, v in PAGE_COLORS.items())
             + "--jp-cell-prompt-not-active-opacity:1;}"
             + f":focus-visible{{outline:3px solid {FOCUS_RING};outline-offset:2px}}")


@dataclasses.dataclass
class PageResult:
    """One exported page: ``notebook`` → ``page`` (bytes on disk), its apps and timings in seconds.

    ``images_without_alt`` counts the notebook's figures whose display carried no text alternative (figures from
    :mod:`jtk.plots` always carry one; the page falls back to nbconvert's "No description has been provided").
    """
    notebook: pathlib.Path
    page: pathlib.Path
    title: str
    bytes: int
    apps: list[dict]
    execute_seconds: float
    capture_seconds: float
    total_seconds: float
    images_without_alt: int = 0


_KERNEL_CELL = """\
import json as _json, jtk.course.export as _jtk_export
_json.dump(_jtk_export._capture_by_model_id({ids!r}, max_frames={max_frames}, max_clicks={max_clicks},
                                            max_page_bytes={max_page_bytes}), open({path!r}, "w"))
"""


def _capture_by_model_id(model_ids: Sequence[str], max_frames: int = MAX_FRAMES, max_clicks: int = MAX_CLICKS,
                         max_page_bytes: float = MAX_PAGE_BYTES) -> dict:
    """In the notebook's kernel: model id → :func:`capture_app` of that app (None where the widget is no app).

    The apps share ``max_page_bytes`` equally.
    """
    from ipywidgets.widgets.widget import _instances

    from jtk.widgets import App
    apps = {mid: _instances.get(mid) for mid in model_ids}
    apps = {mid: w if isinstance(w, App) else None for mid, w in apps.items()}
    budget = max_page_bytes / max(1, sum(w is not None for w in apps.values()))
    return {mid: None if w is None else capture_app(w, max_frames=max_frames, max_clicks=max_clicks,
                                                    max_bytes=budget) for mid, w in apps.items()}


def _accessible_output(output) -> int:
    """Makes one code-cell output accessible in place; returns 1 if it is an image without a text alternative.

    An ``image/png`` with an ``alt`` in its metadata (:func:`jtk.plots.layout.set_alt_text`) becomes an ``<img>``
    with that ``alt``; the plain notation in an HTML output's text (a table header ``d_KL^10``) becomes MathML.
    """
    data = output.get("data", {})
    if "image/png" in data:
        alt = ((output.get("metadata") or {}).get("image/png") or {}).get("alt")
        if not alt:
            return 1
        png = data["image/png"]
        png = png if isinstance(png, str) else base64.b64encode(png).decode()
        output["data"] = {"text/html": f'<img src="data:image/png;base64,{png.strip()}" alt="{html.escape(alt)}">'}
    elif "text/html" in data:
        text = data["text/html"]
        data["text/html"] = _math.plain_math_html("".join(text) if isinstance(text, list) else text)
    return 0


def _title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, flags=re.M)
            if m:
                return m.group(1).strip()
    return "jtk lab"


def _strip_external(body: str) -> str:
    """Removes scripts and stylesheets loaded from other hosts, and points notebook links to exported pages."""
    remote = re.compile(r"(?:https?:)?//[\w-]+(?:\.[\w-]+)+/")  # another host (cdnjs: require.js, MathJax, mermaid)
    body = re.sub(r"<script\b(?![^>]*application/json)[^>]*>[\s\S]*?</script>",
                  lambda m: "" if remote.search(m.group(0)) else m.group(0), body, flags=re.I)
    body = re.sub(r"<link\b[^>]*\bhref=[\"']?(?:https?:)?//[^>]*>", "", body, flags=re.I)
    return re.sub(r"href=\"([\w./-]+)\.ipynb(#[^\"]*)?\"",
                  lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', body)


def _check_paths(notebooks) -> list[pathlib.Path]:
    if isinstance(notebooks, (str, os.PathLike)):
        notebooks = [notebooks]
    paths = [pathlib.Path(p) for p in notebooks]
    if not paths:
        raise ValueError("notebooks must name at least one .ipynb file, got none")
    for p in paths:
        if p.suffix != ".ipynb" or not p.is_file():
            raise ValueError(f"notebooks must be existing .ipynb files, got {str(p)!r}")
    return paths


def export_notebook(notebook, out_dir, max_frames: int = MAX_FRAMES, max_clicks: int = MAX_CLICKS,
                    max_page_bytes: float = MAX_PAGE_BYTES, timeout: int = 900,
                    kernel_name: str = "python3") -> PageResult:
    """Executes ``notebook`` headless and writes ``out_dir/<name>.html``, its apps replaced by kernel-free ones.

    Args:
      notebook: path of an ``.ipynb`` file (run with its own directory as working directory).
      out_dir: folder of the page (created).
      max_frames: cap on one app's control combinations (see :func:`capture_app`).
      max_clicks: presses of each flip button exported.
      max_page_bytes: byte budget of the page's apps, shared equally (see ``max_bytes`` of :func:`capture_app`).
      timeout: seconds one cell may run.
      kernel_name: the Jupyter kernel to run it in.

    Returns:
      a :class:`PageResult`.

    Raises:
      ValueError: ``notebook`` is no existing .ipynb file.
      nbclient.exceptions.CellExecutionError: a cell failed.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    (path,) = _check_paths([notebook])
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    has_code = any(c.cell_type == "code" and c.source.strip() for c in nb.cells)
    apps: dict[str, dict | None] = {}
    execute_seconds = capture_seconds = 0.0
    if has_code:
        with tempfile.TemporaryDirectory(prefix="jtk-export-") as tmp:
            result = pathlib.Path(tmp) / "apps.json"
            client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                                    resources={"metadata": {"path": str(path.parent.resolve())}})
            with client.setup_kernel():
                for i, cell in enumerate(nb.cells):
                    client.execute_cell(cell, i)
                execute_seconds = time.perf_counter() - start
                ids = [o["data"][WIDGET_MIME]["model_id"] for c in nb.cells if c.cell_type == "code"
                       for o in c.outputs if WIDGET_MIME in o.get("data", {})]
                probe = nbformat.v4.new_code_cell(_KERNEL_CELL.format(
                    ids=ids, max_frames=max_frames, max_clicks=max_clicks, max_page_bytes=float(max_page_bytes),
                    path=str(result)))
                nb.cells.append(probe)
                try:
                    client.execute_cell(probe, len(nb.cells) - 1)
                finally:
                    nb.cells.pop()
            apps = json.loads(result.read_text())
            capture_seconds = time.perf_counter() - start - execute_seconds
    nb.metadata.pop("widgets", None)
    title = _title(nb)
    formulas: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _math.protect_math(cell.source, formulas)
    missing_alt = 0
    captured = []
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        kept = []
        for o in cell.outputs:
            mid = o.get("data", {}).get(WIDGET_MIME, {}).get("model_id")
            if mid is None:
                missing_alt += _accessible_output(o)
                kept.append(o)
            elif apps.get(mid):  # an app: the kernel-free block; other widgets (progress bars) are left out
                spec = apps[mid]
                captured.append({"title": spec["title"], "frames": len(spec["frames"]),
                                 "contents": len(spec["contents"]), "seconds": spec["seconds"],
                                 "controls": spec["controls"]})
                kept.append(nbformat.v4.new_output("display_data", data={
                    "text/html": app_html(spec, f"jtk-app-{ci}-{len(captured)}")}))
        cell.outputs = kept
    exporter = HTMLExporter(template_name="lab", embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title, "path": str(path.parent)}})
    body = _math.restore_math(body, formulas)
    body = body.replace("</head>", f"<style>{_PAGE_CSS}</style></head>", 1)
    page = out_dir / f"{path.stem}.html"
    page.write_text(_strip_external(body), encoding="utf-8")
    return PageResult(notebook=path, page=page, title=title, bytes=page.stat().st_size, apps=captured,
                      images_without_alt=missing_alt,
                      execute_seconds=execute_seconds, capture_seconds=capture_seconds,
                      total_seconds=time.perf_counter() - start)


def lab_notebooks(folder="notebooks") -> list[pathlib.Path]:
    """The lab notebooks in sequence order (their file names start with the lab number)."""
    folder = _checks.path("folder", folder)
    if not folder.is_dir():
        raise ValueError(f"folder must be a directory of notebooks, got {str(folder)!r}")
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def write_index(out_dir) -> pathlib.Path:
    """Writes ``out_dir/index.html``: every page in ``out_dir`` (the labs in sequence), linked, with its size.

    Pages exported earlier into the same folder stay listed, so labs can be exported one at a time.
    """
    out_dir = pathlib.Path(out_dir)
    if not out_dir.is_dir():
        raise ValueError(f"out_dir must be an existing folder, got {str(out_dir)!r}")
    rows = []
    for page in sorted(p for p in out_dir.glob("*.html") if p.name != "index.html"):
        head = page.read_text(encoding="utf-8", errors="replace")[:4096]
        m = re.search(r"<title>(.*?)</title>", head, flags=re.S)
        title = html.unescape(m.group(1).strip()) if m else page.stem
        rows.append(f'<li><a href="{html.escape(page.name)}">{html.escape(title)}</a> '
                    f"<small>({page.stem}, {page.stat().st_size / 2**20:.1f} MB)</small></li>")
    index = out_dir / "index.html"
    index.write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>jtk labs</title>'
        '<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}</style></head><body>'
        "<h1>jtk labs: joint predictive uncertainty</h1>"
        "<p>Work through the labs in order, starting with <i>Start here</i>. Each page is the executed notebook; "
        "its apps run in the page itself from precomputed figures (no Python, no network), on the grid of "
        "control values written under each app.</p>"
        f"<ol start=\"0\">{''.join(rows)}</ol></body></html>", encoding="utf-8")
    return index


def export_site(notebooks, out_dir, **kwargs) -> list[PageResult]:
    """Exports each notebook (:func:`export_notebook`, same keyword arguments) and writes the index page.

    Raises:
      ValueError: a path is no existing .ipynb file (checked before anything runs).
    """
    paths = _check_paths(notebooks)
    results = [export_notebook(p, out_dir, **kwargs) for p in paths]
    write_index(out_dir)
    return results
