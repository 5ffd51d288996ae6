"""Every app of the labs, built small: each control has a label a screen reader announces (its ``description``, or
the ``Label`` beside a toggle group) and a ``tooltip``; each figure has a caption with its text alternative, placed
in the app, that equals the alternative of the figure it shows."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from jtk.course import export  # noqa: E402
from jtk.testbed import ensemble_study as es
from jtk.ppc.active import make_toy_state  # noqa: E402
from jtk.regression.coverage import CoverageResult  # noqa: E402
from jtk.widgets import active as wa, bandit as wb, coins as wc, coverage as wcov  # noqa: E402
from jtk.widgets import ensembles as we, joint as wj  # noqa: E402

TINY = es.FitSettings(num_members=3, num_steps=10, batch_size=8, capacity=16)


def _coverage_results():
    rng = np.random.default_rng(0)
    coord = np.linspace(-6, 6, 31)
    out = {}
    for f in (1.0, 2.0):
        truth = np.sin(f * coord)
        for m in ("BLR", "BD"):
            out[(f, m)] = CoverageResult(m, coord, coord[:, None], truth, truth + rng.normal(0, 0.3, (4, 31)),
                                         np.full((4, 31), 0.3), np.abs(coord) <= 4, {"f_main": f},
                                         np.linspace(-4, 4, 8)[:, None], rng.normal(size=(4, 8)))
    return out


def _bandit():
    explorer = wb.BanditExplorer(num_problems=2, max_horizon=500)
    explorer.run_all(["uniform"], input_dim=2)
    return wb.bandit_app(explorer, agents=["uniform"], agent="uniform", background=False)


APPS = {
    "n-flip joint": lambda: wc.joint_grid_app(flips=2),
    "coin flipping": lambda: wc.coin_flip_app(seed=0),
    "decision": lambda: wc.decision_app(horizon=5, max_horizon=10),
    "joint predictions": lambda: wj.joint_predictions_app(
        wj.JointPredictions(num_train_values=(1, 3), settings=TINY, resolution=12, test_blocks=2), num_train=3,
        background=False),
    "ensemble vs ensemble+": lambda: we.ensemble_app(es.make_ensemble_comparison(
        temperature=0.1, seed=0, num_train_values=(1, 3), prior_scales=(0.0, 3.0), resolution=12, settings=TINY)),
    "coverage": lambda: wcov.coverage_app(_coverage_results()),
    "query": lambda: wa.query_app(make_toy_state(seed=0)),
    "bandit": _bandit,
}


@pytest.mark.parametrize("name", sorted(APPS))
def test_every_control_is_labelled_and_every_figure_described(name):
    app = APPS[name]()
    tree = {id(w) for w in export._walk(app)}
    controls = dict(export.app_controls(app))
    controls.update({f"button {n}": b for n, b in getattr(app, "buttons", {}).items()})
    assert controls
    for key, control in controls.items():
        label = export._describe(control, "", app)
        assert label.strip(), f"{name}: control {key!r} has no description and no Label beside it"
        assert (control.tooltip or "").strip(), f"{name}: control {key!r} has no tooltip"
    import ipywidgets as widgets

    views = export._Views(app, list(export.app_controls(app).values()))
    views.read()  # outside a kernel an Output holds nothing; its caption is still set by the app's redraw
    figures = [w for w in views.widgets if isinstance(w, (widgets.Image, widgets.Output))]
    assert figures, f"{name}: no figure found"
    for widget, alt in zip(views.widgets, views.alts):
        if widget not in figures:
            continue
        caption = widget.caption
        assert id(caption) in tree, f"{name}: the caption of a {type(widget).__name__} is not in the app"
        assert len(caption.alt_text) > 40 and "Figure: " in caption.value
        if isinstance(widget, widgets.Image):
            assert alt == caption.alt_text  # what jtk export writes into the page's <img alt>
    if hasattr(app, "figure"):  # an app drawing one figure in place: its caption is that figure's alternative
        from jtk.plots.layout import alt_text

        assert figures[-1].caption.alt_text == alt_text(app.figure)
