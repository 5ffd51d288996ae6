"""Joint predictions on a testbed problem (Osband et al. 2022, §2–3, Fig. 6), as a widget.

A temperature and a seed draw an environment from the testbed prior
(p(y = 1 | x) = softmax(MLP(x) / ρ)); the first n points of one training draw
are the training set; three agents are fitted to it — ``mlp``, ``ensemble``
and ``ensemble+`` (K = 10 members) — and the app shows an agent's mean
prediction, a few of its posterior samples, and d_KL^τ of all three agents as
τ grows from 1 to 100 (Fig. 6 analogue).

Speed (see :mod:`jtk.widgets.ensembles` for the training settings):

* The environment map, training points and test pool come from
  :func:`jtk.envs.classification.sample_lab_data` (the testbed's draw keyed by
  the seed alone: one environment at every temperature), jitted with the
  temperature and the seed as *traced* arguments: any slider value, no
  recompilation, a few milliseconds.
* For one (temperature, seed) every num_train slider position and both
  ensembles are trained in one vmapped call (the mlp is member 0 of the plain
  ensemble: with Adam each member trains as an mlp with the same L2), and
  everything the sliders show is precomputed then: member maps on the grid
  and d_KL^τ for every τ = 1 … 100. A new temperature or seed triggers that
  refit (seconds; ``benchmarks/widget_latency.py`` measures it), cached for
  revisits. In the app the refit runs in a background thread, newest request
  only (:class:`jtk.widgets._app.LatestOnly`): the environment map redraws at
  once, a status line says what is being fitted and how long it took, and a
  burst of slider steps costs at most two fits.
* d_KL^τ is exact over the K members (a finite uniform mixture) on one test
  pool of 100 · 100 points cut into blocks of τ (⌊10000/τ⌋ τ-samples for each
  τ; 100 for τ = 100), see :func:`jtk.likelihood.mixture_kl_by_tau`.
"""

from __future__ import annotations

import collections
import html
import threading
from typing import Sequence

import ipywidgets as widgets
import jax.numpy as jnp
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from jtk import _checks
from jtk.testbed.ensemble_study import AgentFits, FitSettings, fit_joint_agents, probability_grid
from jtk.envs.classification import sample_lab_data
from jtk.plots import testbed as tb_plots
from jtk.widgets._app import (
    LABEL_STYLE,
    App,
    LatestOnly,
    image_widget,
    show_png,
    significant_frame,
)

AGENTS = ("mlp", "ensemble", "ensemble+")
NUM_TRAIN_VALUES = (1, 3, 10, 30, 100)
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 1.0
MAX_TAU = 100
PRIOR_SCALE = 3.0  # ensemble+ prior networks scaled by 3 / sqrt(ρ) (reference default)


class JointPredictions:
    """Cached computations behind the joint-predictions app (pure functions of the control values).

    Args:
      num_train_values: positions of the num_train slider (≤ settings.capacity).
      settings: ensemble training settings (K, steps, batch).
      resolution: grid points per axis of the probability maps.
      test_blocks: τ-samples at τ = MAX_TAU; the test pool has test_blocks · MAX_TAU points.
      cache_size: number of (temperature, seed) fits kept.
    """

    def __init__(self, num_train_values: Sequence[int] = NUM_TRAIN_VALUES, settings: FitSettings = FitSettings(),
                 resolution: int = 50, test_blocks: int = 100, cache_size: int = 8):
        self.num_train_values = tuple(_checks.integer("num_train_values", n, minimum=1, maximum=settings.capacity)
                                      for n in num_train_values)
        if not self.num_train_values:
            raise ValueError("num_train_values must hold at least one value")
        self.settings = settings
        self.axis, grid = probability_grid(resolution)
        self.grid = jnp.asarray(grid)
        self.resolution = resolution
        self.test_blocks = _checks.integer("test_blocks", test_blocks, minimum=1)
        self.cache_size = _checks.integer("cache_size", cache_size, minimum=1)
        self._fits: collections.OrderedDict = collections.OrderedDict()
        self._cache_lock = threading.Lock()  # guards _fits (the app reads it while a background fit runs)
        self._fit_lock = threading.Lock()  # one fit at a time; a second caller of the same key waits, then hits

    # -------------------------------------------------------------- checks
    @staticmethod
    def check_temperature(temperature) -> float:
        t = _checks.positive("temperature", temperature)
        if not MIN_TEMPERATURE - 1e-9 <= t <= MAX_TEMPERATURE + 1e-9:
            raise ValueError(f"temperature must be in [{MIN_TEMPERATURE}, {MAX_TEMPERATURE}], got {temperature}")
        return t

    def check_num_train(self, num_train) -> int:
        n = _checks.integer("num_train", num_train)
        if n not in self.num_train_values:
            raise ValueError(f"num_train must be one of {self.num_train_values}, got {n}")
        return n

    # -------------------------------------------------------------- environment
    def environment(self, temperature: float, seed: int):
        """(x [n_max, 2], y [n_max], probs [R, R]) of the environment and its training draw."""
        t = self.check_temperature(temperature)
        seed = _checks.integer("seed", seed, minimum=0, maximum=2 ** 31 - 1)
        d = sample_lab_data(seed, t, max(self.num_train_values), self.test_blocks * MAX_TAU, self.grid)
        return d.x_train, d.y_train, d.grid_probs.reshape(self.resolution, self.resolution)

    # -------------------------------------------------------------- agents
    def fits(self, temperature: float, seed: int) -> AgentFits:
        """Fits (or returns the cached fits of) all agents at every num_train for one environment."""
        t = self.check_temperature(temperature)
        seed = _checks.integer("seed", seed, minimum=0, maximum=2 ** 31 - 1)
        key = (round(t, 6), seed)
        hit = self._cached(key)
        if hit is not None:
            return hit
        with self._fit_lock:
            hit = self._cached(key)
            return hit if hit is not None else self._fit(key, t, seed)

    def _cached(self, key) -> AgentFits | None:
        with self._cache_lock:
            if key in self._fits:
                self._fits.move_to_end(key)
                return self._fits[key]
        return None

    def _fit(self, key, t: float, seed: int) -> AgentFits:
        fits = fit_joint_agents(t, seed, self.num_train_values, self.grid, self.test_blocks * MAX_TAU,
                                settings=self.settings, prior_scale=PRIOR_SCALE, max_tau=MAX_TAU)
        fits = AgentFits({a: p.reshape(*p.shape[:2], self.resolution, self.resolution) for a, p in fits.probs.items()},
                         fits.kl, fits.seconds)
        with self._cache_lock:
            self._fits[key] = fits
            while len(self._fits) > self.cache_size:
                self._fits.popitem(last=False)
        return fits

    def is_fitted(self, temperature: float, seed: int) -> bool:
        """Whether :meth:`fits` would return from the cache (no training)."""
        key = (round(self.check_temperature(temperature), 6), seed)
        with self._cache_lock:
            return key in self._fits


# ------------------------------------------------------------------ update functions
def _check_model(model) -> JointPredictions:
    if not isinstance(model, JointPredictions):
        raise TypeError(f"model must be a jtk.widgets.joint.JointPredictions, got {type(model).__name__}")
    return model


def environment_update(model: JointPredictions, temperature: float, seed: int, num_train: int) -> dict:
    """The environment panel: p(y = 1 | x) on the grid and the first ``num_train`` training points.

    Returns:
      dict: axis [R], probs [R, R], x_train [n, 2], y_train [n], temperature, seed.
    """
    model = _check_model(model)
    n = model.check_num_train(num_train)
    x, y, probs = model.environment(temperature, seed)
    return {"axis": model.axis, "probs": probs, "x_train": x[:n], "y_train": y[:n],
            "temperature": float(temperature), "seed": int(seed)}


def agent_update(model: JointPredictions, agent: str, temperature: float, seed: int, num_train: int,
                 num_samples: int = 4) -> dict:
    """The agent panel: mean prediction and ``num_samples`` posterior samples (members) on the grid.

    Returns:
      dict: axis, agent, mean [R, R], samples [num_samples, R, R], x_train, y_train, num_train.
      The mlp has one function, so its samples are all that function.
    """
    model = _check_model(model)
    _checks.one_of("agent", agent, AGENTS)
    n = model.check_num_train(num_train)
    num_samples = _checks.integer("num_samples", num_samples, minimum=1)
    members = model.fits(temperature, seed).probs[agent][model.num_train_values.index(n)]  # [K, R, R]
    x, y, _ = model.environment(temperature, seed)
    samples = members[np.arange(num_samples) % members.shape[0]]
    return {"axis": model.axis, "agent": agent, "mean": members.mean(0), "samples": samples,
            "x_train": x[:n], "y_train": y[:n], "num_train": n}


def kl_update(model: JointPredictions, temperature: float, seed: int, num_train: int, tau: int,
              agents: Sequence[str] = AGENTS) -> dict:
    """The d_KL^τ panel: each agent's curve over τ = 1 … 100 and the current τ.

    Returns:
      dict: curves (agent → [MAX_TAU]), tau, title.
    """
    model = _check_model(model)
    n = model.check_num_train(num_train)
    tau = _checks.integer("tau", tau, minimum=1, maximum=MAX_TAU)
    for a in agents:
        _checks.one_of("agents", a, AGENTS)
    fits = model.fits(temperature, seed)
    j = model.num_train_values.index(n)
    return {"curves": {a: fits.kl[a][j] for a in agents}, "tau": tau,
            "title": f"temperature {float(temperature):.3g}, seed {seed}, {n} training points"}


def environment_figure(model: JointPredictions, temperature: float, seed: int, num_train: int):
    """A fresh figure of :func:`environment_update`."""
    return tb_plots.plot_environment(environment_update(model, temperature, seed, num_train))


def agent_figure(model: JointPredictions, agent: str, temperature: float, seed: int, num_train: int):
    """A fresh figure of :func:`agent_update`."""
    return tb_plots.plot_agent_predictions(agent_update(model, agent, temperature, seed, num_train))


def kl_figure(model: JointPredictions, temperature: float, seed: int, num_train: int, tau: int):
    """A fresh figure of :func:`kl_update` (Fig. 6 analogue)."""
    view = kl_update(model, temperature, seed, num_train, tau)
    return tb_plots.plot_kl_vs_tau(view["curves"], view["tau"], view["title"])


def temperature_figure(model: JointPredictions, temperatures: Sequence[float] = (0.01, 0.1, 1.0), seed: int = 0,
                       num_train: int = 30):
    """One environment (one seed) at several temperatures: same decision boundary, different noise."""
    model = _check_model(model)
    temps = [model.check_temperature(t) for t in temperatures]
    if not temps:
        raise ValueError("temperatures must hold at least one temperature")
    fig = Figure(figsize=(3.6 * len(temps) + 0.8, 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(temps)))
    im = None
    for ax, t in zip(axes, temps):
        v = environment_update(model, t, seed, num_train)
        im = tb_plots.plot_probability_map(ax, v["axis"], v["probs"], v["x_train"], v["y_train"],
                                           f"temperature ρ = {t:g}")
    fig.colorbar(im, ax=list(axes), label="P(y = 1 | x)", shrink=0.85)
    # The class markers' legend under the maps, outside every panel (the same markers in each).
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False, fontsize=10)
    fig.suptitle(f"Environment seed {seed} with {num_train} training points: the temperature sets the label noise")
    return fig


def kl_table(model: JointPredictions, temperature: float, seed: int, taus: Sequence[int] = (1, 10, 100),
             digits: int | None = None):
    """d_KL^τ of every agent at every num_train for one environment: DataFrame indexed (num_train, agent).

    Args:
      digits: None for floats; else every value written with this many significant digits (strings), the form
        a notebook prints under a ``nbval-check-output`` tag and quotes in its prose.
    """
    model = _check_model(model)
    taus = [_checks.integer("taus", t, minimum=1, maximum=MAX_TAU) for t in _checks.nonempty("taus", taus, "τ")]
    fits = model.fits(temperature, seed)
    rows = [{"num_train": n, "agent": a, **{f"d_KL^{t}": float(fits.kl[a][j, t - 1]) for t in taus}}
            for j, n in enumerate(model.num_train_values) for a in AGENTS]
    table = pd.DataFrame(rows).set_index(["num_train", "agent"])
    if digits is None:
        return table
    return significant_frame(table, _checks.integer("digits", digits, minimum=1))


def fit_status(temperature: float, seed: int, seconds: float | None = None, cached: bool = False,
               error: str | None = None) -> str:
    """The app's status line (HTML) for the agents of one environment.

    ``seconds`` None and not ``cached``: the fit is running. ``error``: the fit failed with this message.

    >>> fit_status(0.3, 0)
    '<b>fitting 3 agents for ρ = 0.3, seed 0 …</b> the agent and d_KL^τ panels update when it is done'
    >>> fit_status(0.3, 0, seconds=4.12)
    'fitting 3 agents for ρ = 0.3, seed 0 … done in 4.1 s'
    """
    if seconds is not None:
        _checks.positive("seconds", seconds, allow_zero=True)
    what = f"ρ = {float(temperature):.3g}, seed {int(seed)}"
    if error is not None:
        return f"<span style='color:#b00020'><b>fitting the agents for {what} failed:</b> {html.escape(error)}</span>"
    if cached:
        return f"agents for {what}: fitted before (cached)"
    if seconds is None:
        return (f"<b>fitting {len(AGENTS)} agents for {what} …</b> "
                "the agent and d_KL^τ panels update when it is done")
    return f"fitting {len(AGENTS)} agents for {what} … done in {float(seconds):.1f} s"


# ------------------------------------------------------------------ builder
APP_FIGSIZES = {"environment": (3.4, 3.0), "agent": (10.5, 2.6), "kl": (9.0, 3.0)}  # inches at 72 dpi: the
# temperature slider, the map and d_KL^τ fit one 1366×768 screen (about 890 × 560 px for the whole app)


def joint_predictions_app(model: JointPredictions | None = None, temperature: float = 0.1, seed: int = 0,
                          num_train: int = 10, agent: str = "ensemble+", tau: int = 10,
                          background: bool = True) -> App:
    """Temperature, seed, num_train, agent and τ controls → environment, agent and d_KL^τ figures.

    Moving num_train, agent or τ only indexes precomputed arrays and redraws
    a live figure. A new temperature or seed redraws the environment at once,
    then refits the agents for it (cached): in a background thread when
    ``background`` (the kernel stays free; a burst of slider steps costs at most
    two fits), with a status line saying what is fitted and how long it took.
    The first fit, for the initial values, runs before the builder returns.

    Returns:
      :class:`~jtk.widgets._app.App` (a VBox); ``.controls`` (dict: temperature, seed, num_train, agent, tau),
      ``.images`` (dict: environment, agent, kl), ``.status``, ``.model`` and ``.wait(timeout)`` (until no fit
      runs) for tests.
    """
    model = JointPredictions() if model is None else _check_model(model)
    temperature = model.check_temperature(temperature)
    num_train = model.check_num_train(num_train)
    _checks.one_of("agent", agent, AGENTS)
    tau = _checks.integer("tau", tau, minimum=1, maximum=MAX_TAU)
    style = LABEL_STYLE
    controls = {
        # continuous_update=False: dragging refits only where the slider is let go; arrow-key steps each set a
        # value, and the background runner keeps only the newest of them.
        "temperature": widgets.FloatLogSlider(value=temperature, base=10, min=-2, max=0, step=0.05,
                                              description="temperature ρ", readout_format=".3f",
                                              tooltip="label noise of the environment: small ρ, nearly noise-free",
                                              continuous_update=False, style=style),
        "seed": widgets.BoundedIntText(value=seed, min=0, max=99_999, description="seed", style=style,
                                       tooltip="seed of the environment and its training data",
                                       continuous_update=False, layout=widgets.Layout(width="140px")),
        "num_train": widgets.SelectionSlider(options=list(model.num_train_values), value=num_train,
                                             description="num_train", tooltip="number of training points",
                                             continuous_update=False, style=style),
        # no description: a ToggleButtons' label sits on a line of its own; a Label beside the buttons instead
        "agent": widgets.ToggleButtons(options=list(AGENTS), value=agent, style={**style, "button_width": "96px"},
                                       tooltip="agent whose mean prediction and samples are shown",
                                       tooltips=[f"show {a}'s mean prediction and posterior samples"
                                                 for a in AGENTS]),
        "tau": widgets.IntSlider(value=tau, min=1, max=MAX_TAU, description="τ", continuous_update=False,
                                 tooltip="number of test inputs τ predicted jointly", style=style),
    }
    images = {k: image_widget() for k in ("environment", "agent", "kl")}
    status = widgets.HTML()
    live: dict = {}
    drawing = threading.RLock()  # the worker thread and slider observers draw on the same live figures

    def values():
        return {k: c.value for k, c in controls.items()}

    def draw(name, view, make):
        with drawing:
            if name not in live:
                live[name] = make(view)
            else:
                live[name].update(view) if name != "kl" else live[name].update(view["curves"], view["tau"],
                                                                                  view["title"])
            show_png(images[name], live[name].png(), live[name].alt)

    def draw_environment():
        v = values()
        draw("environment", environment_update(model, v["temperature"], v["seed"], v["num_train"]),
             lambda view: tb_plots.EnvironmentFigure(view, figsize=APP_FIGSIZES["environment"]))

    def draw_agent():
        v = values()
        if model.is_fitted(v["temperature"], v["seed"]):  # else the running fit draws it when done
            draw("agent", agent_update(model, v["agent"], v["temperature"], v["seed"], v["num_train"]),
                 lambda view: tb_plots.AgentFigure(view, figsize=APP_FIGSIZES["agent"]))

    def draw_kl():
        v = values()
        if model.is_fitted(v["temperature"], v["seed"]):
            draw("kl", kl_update(model, v["temperature"], v["seed"], v["num_train"], v["tau"]),
                 lambda view: tb_plots.KLTauFigure(view["curves"], view["tau"], view["title"],
                                                   figsize=APP_FIGSIZES["kl"]))

    def fit_job():
        v = values()  # the newest values when the job starts: skipped slider steps are never fitted
        t, s = v["temperature"], v["seed"]
        fits = model.fits(t, s)  # cached when an earlier job of the same burst fitted it: then it reports that fit
        now = values()
        if (now["temperature"], now["seed"]) == (t, s):  # else a newer job is waiting and reports instead
            status.value = fit_status(t, s, seconds=fits.seconds)
            draw_agent()
            draw_kl()

    def report_error(err, _trace):
        v = values()
        status.value = fit_status(v["temperature"], v["seed"], error=f"{type(err).__name__}: {err}")

    runner = LatestOnly(background=background, on_error=report_error)

    def on_environment(_=None):
        draw_environment()
        v = values()
        if model.is_fitted(v["temperature"], v["seed"]):
            status.value = fit_status(v["temperature"], v["seed"], cached=True)
            draw_agent()
            draw_kl()
            return
        status.value = fit_status(v["temperature"], v["seed"])
        runner.submit(fit_job)

    def on_num_train(_=None):
        draw_environment()
        draw_agent()
        draw_kl()

    controls["temperature"].observe(on_environment, "value")
    controls["seed"].observe(on_environment, "value")
    controls["num_train"].observe(on_num_train, "value")
    controls["agent"].observe(lambda _: draw_agent(), "value")
    controls["tau"].observe(lambda _: draw_kl(), "value")
    # The first fit runs before the app is returned (the cell shows the app complete, and a notebook run saves it
    # complete); only the refits the controls ask for go to the background.
    draw_environment()
    LatestOnly(background=False, on_error=report_error).submit(fit_job)
    box = App([
        widgets.HBox([controls["temperature"], controls["seed"], controls["num_train"]]),
        status,
        widgets.HBox([images["environment"], images["environment"].caption,
                      widgets.VBox([controls["tau"], images["kl"], images["kl"].caption])]),
        widgets.HBox([widgets.Label("agent", layout=widgets.Layout(margin="0 8px 0 0")), controls["agent"]],
                     layout=widgets.Layout(align_items="center")),
        images["agent"], images["agent"].caption,
    ], title="joint-predictions app")
    box.controls, box.images, box.status, box.model = controls, images, status, model
    box.runner, box.wait = runner, runner.wait
    return box
