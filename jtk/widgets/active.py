"""The Fig. 2 app: where TIG, MIG and BatchMIG query on a 1-D toy, and what the oracle predicts after.

The computations are the library's (:mod:`jtk.ppc.active`): :func:`jtk.ppc.active.make_toy_state`
fits every selection model once; :func:`jtk.ppc.active.toy_view` maps control values
(criterion, batch size, selection model) to the plotted data. The widget built
by :func:`query_app` only calls them and plots.
"""

from __future__ import annotations

from jtk.ppc import active
from jtk.ppc.active import ToyState
from jtk.widgets._app import LABEL_STYLE, App, figure_caption, set_caption


def query_app(state: ToyState | None = None):
    """Dropdowns for criterion and selection model, a batch-size slider, and the Fig. 2 plot.

    Returns:
      an ``ipywidgets.VBox``; its ``controls`` attribute maps names to the control widgets.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from jtk.plots.active import plot_toy_view
    from jtk.plots.layout import alt_text, legend_outside

    state = active.make_toy_state() if state is None else state
    if not isinstance(state, ToyState):
        raise TypeError(f"state must be a ToyState from jtk.ppc.active.make_toy_state() or None, "
                        f"got {type(state).__name__}")
    criterion = w.Dropdown(options=[("BatchMIG", "batchmig"), ("MIG", "mig"), ("TIG", "tig"),
                                    ("random", "random")], value="batchmig", description="criterion",
                           tooltip="how the points to query are chosen", style=LABEL_STYLE)
    batch = w.IntSlider(value=4, min=1, max=10, description="batch size", continuous_update=False, style=LABEL_STYLE,
                        tooltip="number of points queried")
    model = w.Dropdown(options=list(state.model_names), value=state.model_names[0], description="selection model",
                       tooltip="the model whose uncertainty chooses the queries", style=LABEL_STYLE)
    out = w.Output()
    out.caption = figure_caption()

    def redraw(*_):
        view = active.toy_view(state, criterion.value, batch.value, model.value)
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(8.5, 3.5))
            plot_toy_view(view, ax)
            legend_outside(ax, fontsize=8)
            fig.tight_layout()
            set_caption(out.caption, alt_text(fig))
            plt.show()
            plt.close(fig)

    for c in (criterion, batch, model):
        c.observe(redraw, names="value")
    redraw()
    app = App([w.HBox([criterion, batch, model]), out, out.caption], title="query explorer")
    app.controls = {"criterion": criterion, "batch_size": batch, "model": model}
    return app
