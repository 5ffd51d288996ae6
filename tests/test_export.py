"""jtk.course.export: control grids, frames equal to what the live app draws, the page block, a notebook → page, the CLI."""

import base64
import json
import re

import ipywidgets as widgets
import nbformat
import pytest

from jtk import cli
from jtk.course import export
from jtk.widgets import coins as wc

COINS = wc.paper_coins()


def _spec_of(html_text: str) -> list[dict]:
    """The app specs embedded in a page (the JSON in each app's ``<script type=application/json>``)."""
    return [json.loads(m.replace("<\\/", "</")) for m in
            re.findall(r'<script[^>]*application/json[^>]*>(.*?)</script>', html_text, flags=re.S)]


def _png(uri: str) -> bytes:
    assert uri.startswith("data:image/png;base64,"), uri[:40]
    return base64.b64decode(uri.split(",", 1)[1])


# ------------------------------------------------------------------ grids
def test_plan_grid_keeps_subgrid_default_and_ends_and_respects_the_cap():
    values = {"a": list(range(1, 51)), "b": ["x", "y", "z"], "seed": [0]}
    grid = export.plan_grid(values, {"a": 10, "b": "y", "seed": 0}, max_frames=30, subgrid={"seed": (0, 1, 2)},
                            thin_first=["a"])
    assert grid["seed"] == [0, 1, 2]
    assert grid["b"] == ["x", "y", "z"]  # the dropdown is left whole while the slider can still be thinned
    assert 10 in grid["a"] and 1 in grid["a"] and 50 in grid["a"]
    assert len(grid["a"]) * 3 * 3 <= 30


def test_plan_grid_rejects_a_bad_cap():
    with pytest.raises(ValueError, match="max_frames must be an integer ≥ 1, got 0"):
        export.plan_grid({"a": [1, 2]}, {"a": 1}, max_frames=0)


def test_control_values_cover_each_kind():
    assert export.control_values(widgets.IntSlider(value=2, min=1, max=4)) == [1, 2, 3, 4]
    assert export.control_values(widgets.FloatLogSlider(value=0.1, base=10, min=-2, max=0, step=1)) == \
        pytest.approx([0.01, 0.1, 1.0])
    assert export.control_values(widgets.Dropdown(options=[("A", 1), ("B", 2)])) == [1, 2]
    assert export.control_values(widgets.Checkbox()) == [False, True]
    assert export.control_values(widgets.BoundedIntText(value=7, min=0, max=99)) == [7]
    with pytest.raises(TypeError, match="widget must be one of the controls"):
        export.control_values(widgets.HTML())


def test_capture_app_rejects_bad_arguments():
    with pytest.raises(TypeError, match="app must be an ipywidgets Box"):
        export.capture_app(widgets.IntSlider())
    app = wc.joint_grid_app(flips=1, coins=COINS)
    with pytest.raises(ValueError, match="max_frames must be an integer ≥ 1, got -1"):
        export.capture_app(app, max_frames=-1)
    with pytest.raises(ValueError, match="max_clicks must be an integer ≥ 1, got 0"):
        export.capture_app(app, max_clicks=0)


# ------------------------------------------------------------------ same truth as the live app
def test_every_frame_equals_what_a_fresh_app_draws_for_the_same_value():
    spec = export.capture_app(wc.joint_grid_app(flips=3, coins=COINS))
    (control,) = spec["controls"]
    assert control["labels"] == [str(n) for n in range(1, wc.MAX_FLIPS + 1)] and control["default"] == 2
    assert spec["views"] == ["Image"] and len(spec["frames"]) == wc.MAX_FLIPS
    for n in (1, 4, wc.MAX_FLIPS):  # pixel for pixel: the PNG bytes the live app's Image widget holds
        live = wc.joint_grid_app(flips=n, coins=COINS)
        (frame,) = spec["frames"][str(n - 1)]
        assert _png(spec["contents"][frame]) == bytes(live.image.value)


def test_a_reduced_grid_is_written_into_the_note_and_frames_still_match():
    app = wc.decision_app(horizon=10, coins=COINS, max_horizon=20)
    spec = export.capture_app(app, max_frames=6)
    (control,) = spec["controls"]
    exported = [int(v) for v in control["labels"]]
    assert len(exported) <= 6 and 10 in exported and exported[0] == 1 and exported[-1] == 20
    assert control["default"] == exported.index(10)
    assert "exported for" in control["note"] and "live app: 20 values" in control["note"]
    assert app.controls["horizon"].value == 10  # the app is left where it was
    live = wc.decision_app(horizon=10, coins=COINS, max_horizon=20)  # the app redraws one figure in place:
    live.controls["horizon"].value = exported[-1]                      # moved there, as a student would
    table, image = spec["frames"][str(len(exported) - 1)]
    assert spec["contents"][table] == live.table.value
    assert _png(spec["contents"][image]) == bytes(live.image.value)


def test_a_byte_budget_thins_the_grid():
    full = export.capture_app(wc.decision_app(horizon=10, coins=COINS, max_horizon=20))
    frame_bytes = sum(map(len, full["contents"])) / len(full["frames"])
    spec = export.capture_app(wc.decision_app(horizon=10, coins=COINS, max_horizon=20), max_bytes=6 * frame_bytes)
    assert 2 <= len(spec["frames"]) <= 6 and "10" in spec["controls"][0]["labels"]
    assert sum(map(len, spec["contents"])) <= 8 * frame_bytes
    with pytest.raises(ValueError, match="max_bytes must be a number > 0, got 0"):
        export.capture_app(wc.joint_grid_app(flips=1, coins=COINS), max_bytes=0)


OUTPUT_APP = """
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
ip.display_formatter.active_types = ["text/plain", "text/html"]
import json, ipywidgets as w
from IPython.display import HTML, display
from jtk.course import export
from jtk.widgets._app import App
out, s = w.Output(), w.IntSlider(value=2, min=1, max=3, description="n")
def redraw(*_):
    out.clear_output(wait=True)
    with out:
        display(HTML(f"<b>{s.value}</b>"))
s.observe(redraw, "value")
redraw()
print(json.dumps(export.capture_app(App([s, out], title="output app"))))
"""


def test_an_output_widget_app_is_captured_from_what_it_displays():
    import subprocess
    import sys

    # its own process: an IPython shell made here would stay the test session's get_ipython()
    done = subprocess.run([sys.executable, "-c", OUTPUT_APP], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    spec = json.loads(done.stdout.strip().splitlines()[-1])
    assert spec["views"] == ["Output"]
    assert [spec["contents"][spec["frames"][k][0]] for k in ("0", "1", "2")] == ["<b>1</b>", "<b>2</b>", "<b>3</b>"]


# ------------------------------------------------------------------ the page block
def test_app_html_is_self_contained_and_escapes_its_data():
    spec = {"title": "t", "controls": [{"name": "n", "label": "n", "kind": "range", "labels": ["1", "2"],
                                        "default": 0, "note": "n: exported for 1, 2"}],
            "views": ["HTML"], "contents": ["<b>a</b></script><script>alert(1)</script>", "b"],
            "frames": {"0": [0], "1": [1]}}
    block = export.app_html(spec, "jtk-app-1")
    assert "</script><script>alert(1)" not in block  # the JSON cannot close its script element
    assert _spec_of(block)[0]["contents"] == spec["contents"]
    assert "http" not in block and "n: exported for 1, 2" in block
    with pytest.raises(ValueError, match="uid must be letters"):
        export.app_html(spec, "1 bad")


# ------------------------------------------------------------------ notebook → page
def test_export_notebook_writes_a_page_without_widgets_or_network(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A tiny lab\n\nSee [the next lab](01_coins.ipynb). $x^2$"),
                nbformat.v4.new_code_cell("from jtk.widgets import coins as wc\nprint('hello')\n"
                                          "wc.joint_grid_app(flips=2, coins=wc.paper_coins())")]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    result = export.export_site([path], tmp_path / "site")
    (r,) = result
    text = r.page.read_text()
    assert r.title == "A tiny lab" and len(r.apps) == 1 and r.apps[0]["frames"] == wc.MAX_FLIPS
    assert re.search(r"<(?:script|link|img)[^>]*(?:src|href)=[\"']?(?:https?:)?//", text) is None
    assert "widget-view+json" not in text and "hello" in text and 'href="01_coins.html"' in text
    (spec,) = _spec_of(text)
    live = wc.joint_grid_app(flips=wc.MAX_FLIPS, coins=COINS)
    assert _png(spec["contents"][spec["frames"][str(wc.MAX_FLIPS - 1)][0]]) == bytes(live.image.value)
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="tiny.html"' in index and "A tiny lab" in index


def test_export_checks_paths_before_running_anything(tmp_path, capsys):
    with pytest.raises(ValueError, match="notebooks must be existing .ipynb files, got"):
        export.export_site([tmp_path / "missing.ipynb"], tmp_path / "site")
    assert cli.main(["export", "--out", str(tmp_path / "site")]) == 2
    assert "name at least one NOTEBOOK, or --all" in capsys.readouterr().err
    assert cli.main(["export", str(tmp_path / "missing.ipynb"), "--out", str(tmp_path / "site")]) == 2
    assert "missing.ipynb" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()
