"""Shared widget pieces: the app box's text form, PNG sizes, rounding for people, and the background runner."""

import threading

import numpy as np
import pandas as pd
import pytest

from jtk.plots.coins import figure_to_png
from jtk.widgets import _app


def test_app_text_form_names_the_app_instead_of_a_vbox_repr():
    app = _app.App([], title="demo app")
    text = app._repr_mimebundle_()["text/plain"]
    assert text.startswith("[demo app: run this cell") and "VBox" not in text
    assert "application/vnd.jupyter.widget-view+json" in app._repr_mimebundle_()  # still a widget in a kernel


def test_png_size_and_show_png_fix_the_width():
    from matplotlib.figure import Figure

    png = figure_to_png(Figure(figsize=(3, 2)), dpi=50)
    assert _app.png_size(png) == (150, 100)
    image = _app.image_widget()
    _app.show_png(image, png)
    assert image.layout.width == "150px" and image.layout.max_width == "100%"
    with pytest.raises(ValueError, match="PNG"):
        _app.png_size(b"GIF89a........................")


@pytest.mark.parametrize("value, text", [
    (0.074964, "0.075"), (0.125267, "0.13"), (0.118353, "0.12"), (11.835312, "12"), (38.036316, "38"),
    (190.699997, "190"), (0.0999, "0.10"), (0.996, "1.0"), (-0.0123, "-0.012"), (0.0, "0"), (5.0, "5.0"),
])
def test_significant(value, text):
    assert _app.significant(value) == text


def test_significant_frame_writes_floats_only():
    frame = pd.DataFrame({"n": [1, 10], "kl": [0.380363, 3.803632]})
    out = _app.significant_frame(frame)
    assert out["n"].tolist() == [1, 10] and out["kl"].tolist() == ["0.38", "3.8"]


def test_elapsed_text():
    assert [_app.elapsed_text(s) for s in (0.44, 12.4, 65.2)] == ["0.4 s", "12 s", "1 min 05 s"]


def test_latest_only_runs_at_once_without_background():
    seen = []
    runner = _app.LatestOnly(background=False)
    runner.submit(lambda: seen.append(1))
    assert seen == [1] and not runner.busy and runner.wait(0)
    with pytest.raises(ZeroDivisionError):  # without on_error a synchronous failure propagates
        runner.submit(lambda: 1 / 0)


def test_latest_only_coalesces_a_burst_and_reports_errors():
    seen, gate, started = [], threading.Event(), threading.Event()
    errors = []
    runner = _app.LatestOnly(background=True, delay=0.05, on_error=lambda e, tb: errors.append((e, tb)))
    runner.submit(lambda: (started.set(), gate.wait(60), seen.append("first")))
    assert started.wait(60)  # the first job has started and is blocked (an event, not a sleep: load-independent)
    for i in range(5):
        runner.submit(lambda i=i: seen.append(i))  # each replaces the one before
    assert runner.busy
    gate.set()
    assert runner.wait(60)
    assert seen == ["first", 4] and runner.jobs_run == 2
    runner.submit(lambda: 1 / 0)
    assert runner.wait(60)
    assert isinstance(errors[0][0], ZeroDivisionError) and "ZeroDivisionError" in errors[0][1]
    runner.submit(lambda: seen.append("after"))  # a failure does not stop the runner
    assert runner.wait(60) and seen[-1] == "after"
    assert np.all([t.name != "jtk-widget-job" for t in threading.enumerate()])  # the thread ends when idle
