"""The Fig. 2 app: where TIG, MIG and BatchMIG query on a 1-D toy, and what the oracle predicts after.

Pure part: :func:`make_toy_state` fits every selection model once;
:func:`toy_view` maps control values (criterion, batch size, selection model)
to the plotted data. The widget built by :func:`build_toy_app` only calls them.

Example:
  >>> state = make_toy_state(seed=0)
  >>> view = toy_view(state, "batchmig", 4, "oracle GP")
  >>> len(view["x_query"])
  4
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from jtk import _checks, active
from jtk.widgets._app import LABEL_STYLE, App
from jtk.regression.gp import GPRegression, MonteCarloGP
from jtk.envs.gp import NOISE_VAR, GPSplit, ReLUKernelGP, toy_split_1d


@dataclass(frozen=True, eq=False)
class ToyState:
    """Everything the app needs, computed once.

    Attributes:
      split: the 1-D toy data (pool = an even grid over [−4, 4]).
      oracle: the data-generating GP (also the prediction model).
      covs: selection-model name → noise-free covariance [P + U, P + U] over (pool, test).
      noise_var: observation noise variance σ².
    """

    split: GPSplit
    oracle: ReLUKernelGP
    covs: Mapping[str, np.ndarray]
    noise_var: float = NOISE_VAR

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(self.covs)


def default_toy_models(oracle: ReLUKernelGP) -> dict[str, Any]:
    """Selection models of decreasing PPC quality for the toy."""
    exact = GPRegression(kernel=oracle.kernel, noise_var=NOISE_VAR)
    return {
        "oracle GP": exact,
        "GP-RBF (ML-II)": GPRegression(noise_var=NOISE_VAR),
        "GP-RBF, lengthscale 0.3": GPRegression(noise_var=NOISE_VAR, lengthscale=0.3),
        "oracle seen through 5 samples": MonteCarloGP(exact, 5),
    }


def make_toy_state(seed: Any = 0, models: Mapping[str, Any] | None = None, **toy_kwargs) -> ToyState:
    """Draws the toy split and fits each selection model on its training points.

    Args:
      seed: int or JAX key for the toy data.
      models: name → agent with ``fit(x, y, seed) → posterior.covariance``; default
        :func:`default_toy_models`.
      **toy_kwargs: passed to :func:`jtk.envs.gp.toy_split_1d` (num_train, num_pool, num_test).
    """
    oracle = ReLUKernelGP(input_dim=1)
    split = toy_split_1d(seed, oracle=oracle, **toy_kwargs)
    models = default_toy_models(oracle) if models is None else dict(models)
    if not models:
        raise ValueError("models must name at least one selection model, got none")
    x_all = np.concatenate([split.x_pool, split.x_test])
    covs = {}
    for name, model in models.items():
        cov = np.asarray(model.fit(split.x_train, split.y_train, seed=0).covariance(x_all), np.float64)
        covs[name] = 0.5 * (cov + cov.T)
    return ToyState(split, oracle, covs)


def toy_view(state: ToyState, criterion: str, batch_size: int, model: str) -> dict:
    """The plotted data for one setting of the controls (pure).

    Args:
      state: from :func:`make_toy_state`.
      criterion: "batchmig", "mig", "tig" or "random".
      batch_size: points queried in the one round (1 ≤ q ≤ pool size).
      model: a key of ``state.covs``: the selection model.

    Returns:
      dict with x_grid, f_grid (ground truth on the pool grid), x_train, y_train,
      x_test, x_query, y_query (in selection order), mean, std (oracle prediction
      after the query on the grid), test_log_likelihood, criterion, model.
    """
    _checks.one_of("criterion", criterion, active.CRITERIA)
    _checks.one_of("model", model, state.model_names)
    s = state.split
    n_pool, n_test = len(s.x_pool), len(s.x_test)
    batch_size = _checks.integer("batch_size", batch_size, minimum=1, maximum=n_pool)
    pool, test = np.arange(n_pool), n_pool + np.arange(n_test)
    picked = active.select(criterion, state.covs[model], pool, test, state.noise_var, batch_size, seed=0)
    prediction = GPRegression(kernel=state.oracle.kernel, noise_var=state.noise_var)
    ll, _ = active.evaluate_prediction(s, picked, prediction)
    post = prediction.fit(np.concatenate([s.x_train, s.x_pool[picked]]), np.concatenate([s.y_train, s.y_pool[picked]]))
    order = np.argsort(s.x_pool[:, 0])
    mean, std = post.predict(s.x_pool[order])
    return {"x_grid": s.x_pool[order, 0], "f_grid": s.f_pool[order], "x_train": s.x_train[:, 0], "y_train": s.y_train,
            "x_test": s.x_test[:, 0], "x_query": s.x_pool[picked, 0], "y_query": s.y_pool[picked],
            "mean": mean, "std": std, "test_log_likelihood": ll, "criterion": criterion, "model": model}


def build_toy_app(state: ToyState | None = None):
    """Dropdowns for criterion and selection model, a batch-size slider, and the Fig. 2 plot.

    Returns:
      an ``ipywidgets.VBox``; its ``controls`` attribute maps names to the control widgets.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from jtk.plots.active import plot_toy_view
    from jtk.plots.layout import legend_outside

    state = make_toy_state() if state is None else state
    if not isinstance(state, ToyState):
        raise TypeError(f"state must be a ToyState from make_toy_state() or None, got {type(state).__name__}")
    criterion = w.Dropdown(options=[("BatchMIG", "batchmig"), ("MIG", "mig"), ("TIG", "tig"),
                                    ("random", "random")], value="batchmig", description="criterion",
                           style=LABEL_STYLE)
    batch = w.IntSlider(value=4, min=1, max=10, description="batch size", continuous_update=False, style=LABEL_STYLE)
    model = w.Dropdown(options=list(state.model_names), value=state.model_names[0], description="selection model",
                       style=LABEL_STYLE)
    out = w.Output()

    def redraw(*_):
        view = toy_view(state, criterion.value, batch.value, model.value)
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(8.5, 3.5))
            plot_toy_view(view, ax)
            legend_outside(ax, fontsize=8)
            fig.tight_layout()
            plt.show()
            plt.close(fig)

    for c in (criterion, batch, model):
        c.observe(redraw, names="value")
    redraw()
    app = App([w.HBox([criterion, batch, model]), out], title="query explorer")
    app.controls = {"criterion": criterion, "batch_size": batch, "model": model}
    return app
