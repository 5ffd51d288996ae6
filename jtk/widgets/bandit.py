"""The bandit explorer of notebook 06: agent, input dimension, horizon and temperature.

:class:`BanditExplorer` runs each (agent, d, ρ) once, at the longest horizon
the slider allows, and caches the result: moving the horizon slider only
truncates the cached regret (no run), and a new agent, dimension or
temperature costs one vectorised bandit run (tens of seconds on a laptop CPU
for the learning agents; a new dimension also compiles once; :func:`run_times`
lists what each run took). In the app such a run goes to a background thread
(:class:`jtk.widgets._app.LatestOnly`) with a status line that counts the
seconds and a progress bar estimated from the earlier runs at the same d.
:func:`curves_view`, :func:`pulls_view`, :func:`regret_table` and
:func:`run_status` are the pure functions the app and the notebook show.
"""

from __future__ import annotations

import threading
import time
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from jtk import _checks, _memory, executors
from jtk.testbed import bandit
from jtk.widgets._app import LABEL_STYLE, App, LatestOnly, elapsed_text, image_widget, show_png

LAB_AGENT_KWARGS = bandit.PRESETS["lab"]["agent_kwargs"]
FIGSIZE, DPI = (9.6, 3.9), 96  # 922 × 374 px, shown at that size: 10-point text is 13 px tall
TEMPERATURES = (0.01, 0.05, 0.1, 0.2, 0.5)


class BanditExplorer:
    """Caches bandit runs for the notebook's controls.

    Args:
      num_problems: bandit problems J per run (regret is averaged over them).
      max_horizon: the longest horizon offered; every run uses it.
      agent_kwargs: hyperparameters per agent name (default: the lab preset, K = 10 ensembles).
    """

    def __init__(self, num_problems: int = 4, max_horizon: int = 1000,
                 agent_kwargs: Mapping[str, dict] | None = None):
        self.num_problems = _checks.integer("num_problems", num_problems, minimum=1)
        self.max_horizon = _checks.integer("max_horizon", max_horizon, minimum=1)
        _memory.check_budget(f"bandit explorer runs: num_problems × max_horizon × 8 bytes × 3 per run "
                             f"({self.num_problems} × {self.max_horizon})",
                             _memory.nbytes(3, self.num_problems, self.max_horizon, dtype=np.float64),
                             "lower max_horizon or num_problems")
        self.agent_kwargs = dict(LAB_AGENT_KWARGS if agent_kwargs is None else agent_kwargs)
        self.results: dict[tuple, bandit.BanditResult] = {}
        self._problems: dict[tuple, bandit.BanditProblems] = {}

    def problems(self, input_dim: int, temperature: float) -> bandit.BanditProblems:
        key = (int(input_dim), float(temperature))
        if key not in self._problems:
            self._problems[key] = bandit.make_problems(input_dim, self.num_problems, temperature=temperature)
        return self._problems[key]

    def _key(self, agent: str, input_dim: int, temperature: float) -> tuple:
        return (agent, int(input_dim), float(temperature))

    def _run(self, agent: str, input_dim: int, temperature: float) -> bandit.BanditResult:
        return bandit.run(agent, problems=self.problems(input_dim, temperature), horizon=self.max_horizon,
                          agent_kwargs=self.agent_kwargs.get(agent), progress=False)

    def result(self, agent: str, input_dim: int, temperature: float) -> bandit.BanditResult:
        """The cached run of ``agent`` on the problems of (d, ρ) at ``max_horizon`` (runs it if new)."""
        key = self._key(agent, input_dim, temperature)
        if key not in self.results:
            self.results[key] = self._run(agent, input_dim, temperature)
        return self.results[key]

    def run_all(self, agents: Sequence[str], input_dim: int = 2, temperature: float = bandit.TEMPERATURE,
                progress: bool = True) -> None:
        """Runs several agents up front (the notebook's first figure), side by side on a multi-core CPU.

        The new runs go to :func:`jtk.executors.map_local`'s worker threads (one per core, ``JTK_THREADS`` to
        change): XLA compiles and runs with the GIL released, so on two cores two agents' programs compile at
        once, and most of a first run is compilation. The costliest runs start first
        (:attr:`jtk.testbed.bandit.Policy.relative_cost`), so that the threads finish together. Each result is
        bit-identical to the agent's run alone, and the results are kept in the order of ``agents``; a run's
        ``seconds`` is its wall time beside the others.

        Args:
          agents: agent names (:func:`jtk.testbed.bandit.make_policy`); every name is checked before anything runs.
          input_dim: action dimension d.
          temperature: environment temperature ρ.
          progress: a tqdm bar over the agents, which advances as each run finishes.
        """
        if isinstance(agents, str):
            raise TypeError(f"agents must be a list of agent names, got the string {agents!r}")
        agents = list(dict.fromkeys(agents))
        # a bad name or keyword fails here, not in a thread after other runs have started
        cost = {a: bandit.make_policy(a, **dict(self.agent_kwargs.get(a) or {})).relative_cost for a in agents}
        self.problems(input_dim, temperature)  # drawn once, before the threads share them
        todo = [a for a in agents if self._key(a, input_dim, temperature) not in self.results]
        runs = executors.map_local(lambda a: self._run(a, input_dim, temperature), todo,
                                   desc=f"bandit agents d={int(input_dim)}", unit="agent", progress=progress,
                                   cost=cost.get)
        for a, res in zip(todo, runs):
            self.results[self._key(a, input_dim, temperature)] = res


def _check_explorer(explorer) -> None:
    if not isinstance(explorer, BanditExplorer):
        raise TypeError(f"explorer must be a jtk.widgets.BanditExplorer, got {type(explorer).__name__}")


def curves_view(explorer: BanditExplorer, input_dim: int, horizon: int, temperature: float) -> pd.DataFrame:
    """Cumulative regret up to ``horizon`` of every agent already run at (d, ρ): a long DataFrame."""
    _check_explorer(explorer)
    horizon = _checks.integer("horizon", horizon, minimum=1, maximum=explorer.max_horizon)
    frames = []
    for (agent, d, t), res in list(explorer.results.items()):  # a snapshot: a background run may add one
        if d == int(input_dim) and t == float(temperature):
            cum = np.cumsum(res.regret[:, :horizon], axis=1)
            every = max(1, explorer.max_horizon // 200)  # the same t grid for every horizon
            steps = np.unique(np.append(np.arange(every, horizon + 1, every), horizon))
            for j, seed in enumerate(res.problems.seeds):
                frames.append(pd.DataFrame({"agent": agent, "seed": seed, "t": steps,
                                            "cumulative_regret": cum[j, steps - 1]}))
    if not frames:
        return pd.DataFrame(columns=["agent", "seed", "t", "cumulative_regret", "average_regret"])
    df = pd.concat(frames, ignore_index=True)
    df["average_regret"] = df["cumulative_regret"] / df["t"]
    return df


def regret_table(explorer: BanditExplorer, input_dim: int = 2, temperature: float = bandit.TEMPERATURE,
                 decimals: int = 1) -> pd.DataFrame:
    """Total regret of every agent run at (d, ρ): one row per agent, one column per problem, and their mean.

    Computed in float64 and rounded to ``decimals``, so the table reads 190.7, not float32's 190.699997.
    """
    _check_explorer(explorer)
    decimals = _checks.integer("decimals", decimals, minimum=0)
    rows = {agent: np.asarray(res.regret, np.float64).sum(axis=1)
            for (agent, d, t), res in list(explorer.results.items())
            if d == int(input_dim) and t == float(temperature)}
    if not rows:
        raise ValueError(f"no agent has run at input_dim={input_dim}, temperature={temperature}; "
                         "call explorer.run_all(...) first")
    seeds = explorer.problems(input_dim, temperature).seeds
    table = pd.DataFrame.from_dict(rows, orient="index", columns=[f"problem {s}" for s in seeds])
    table["mean"] = table.mean(axis=1)
    table.index.name = "agent"
    return table.round(decimals)


def run_times(explorer: BanditExplorer) -> pd.DataFrame:
    """Wall time of every cached run (compilation included): columns agent, input_dim, temperature, seconds."""
    _check_explorer(explorer)
    return pd.DataFrame([{"agent": a, "input_dim": d, "temperature": t, "seconds": round(float(r.seconds), 1)}
                         for (a, d, t), r in list(explorer.results.items())],
                        columns=["agent", "input_dim", "temperature", "seconds"])


def expected_seconds(explorer: BanditExplorer, input_dim: int) -> float | None:
    """Median wall time of the learning agents' runs so far at this d (None before the first): the estimate the
    app's progress bar is drawn against."""
    _check_explorer(explorer)
    times = [r.seconds for (a, d, _t), r in list(explorer.results.items())
             if d == int(input_dim) and a not in bandit.BUILTIN]
    return float(np.median(times)) if times else None


def run_status(agent: str, input_dim: int, temperature: float, *, elapsed: float | None = None,
               seconds: float | None = None, expected: float | None = None, error: str | None = None) -> str:
    """The app's status line (HTML): a run in progress (``elapsed``), a finished run (``seconds``) or a failure.

    >>> run_status("mlp", 2, 0.1, elapsed=3.0, expected=20.0)
    '<b>running mlp at d = 2, ρ = 0.1 …</b> 3.0 s so far (earlier runs at d = 2 took about 20 s)'
    >>> run_status("mlp", 2, 0.1, seconds=21.4)
    'ran mlp at d = 2, ρ = 0.1 in 21 s'
    """
    _checks.instance("agent", agent, str, "an agent name (str)")
    _checks.integer("input_dim", input_dim, minimum=1), _checks.positive("temperature", temperature)
    for name, value in (("elapsed", elapsed), ("seconds", seconds), ("expected", expected)):
        if value is not None:
            _checks.positive(name, value, allow_zero=True)
    if error is not None:
        _checks.instance("error", error, str, "a message (str) or None")
    what = f"{agent} at d = {int(input_dim)}, ρ = {float(temperature):g}"
    if error is not None:
        import html

        return f"<span style='color:#b00020'><b>running {what} failed:</b> {html.escape(error)}</span>"
    if seconds is not None:
        return f"ran {what} in {elapsed_text(seconds)}"
    text = f"<b>running {what} …</b> {elapsed_text(elapsed or 0.0)} so far"
    if expected is not None:
        text += f" (earlier runs at d = {int(input_dim)} took about {elapsed_text(expected)})"
    return text


def pulls_view(explorer: BanditExplorer, agent: str, input_dim: int, horizon: int, temperature: float,
               problem: int = 0) -> dict[str, np.ndarray]:
    """Actions, mean rewards and pull counts (first ``horizon`` steps) of one problem."""
    _check_explorer(explorer)
    res = explorer.result(agent, input_dim, temperature)
    problem = _checks.integer("problem", problem, minimum=0, maximum=len(res.problems.seeds) - 1)
    n = res.problems.num_actions
    return {"actions": np.asarray(res.problems.actions[problem]), "probs": np.asarray(res.problems.probs[problem]),
            "pulls": np.bincount(res.actions[problem, :horizon], minlength=n)}


def figure_data(explorer: BanditExplorer, agent: str, input_dim: int, horizon: int, temperature: float) -> dict:
    """Everything the explorer's figure shows for one setting (runs ``agent`` if needed): curves, pulls, titles."""
    _check_explorer(explorer)
    explorer.result(agent, input_dim, temperature)
    return {"curves": curves_view(explorer, input_dim, horizon, temperature),
            "pulls": pulls_view(explorer, agent, input_dim, horizon, temperature),
            "agent": agent, "input_dim": int(input_dim), "temperature": float(temperature),
            "num_problems": explorer.num_problems}


def draw(fig, explorer: BanditExplorer, agent: str, input_dim: int, horizon: int, temperature: float,
         live=None):
    """Runs ``agent`` if needed and redraws: regret curves of every agent run so far, and the action map.

    Args:
      fig: the Figure to draw into.
      live: the :class:`jtk.plots.bandit.BanditFigure` drawn into ``fig`` last time, or None. When it shows the
        same agents at the same d, only its data change (no new artists, the layout stays frozen).

    Returns:
      the ``BanditFigure`` now on ``fig`` (pass it back as ``live`` next time).
    """
    from matplotlib.figure import Figure
    from jtk.plots.bandit import BanditFigure

    _checks.instance("fig", fig, Figure, "a matplotlib Figure")
    data = figure_data(explorer, agent, input_dim, horizon, temperature)
    if live is not None and live.fig is fig and live.matches(data["curves"], input_dim):
        live.update(data["curves"], data["pulls"], agent, temperature)
        return live
    return BanditFigure(data["curves"], data["pulls"], agent, input_dim, temperature, explorer.num_problems,
                        fig=fig)


def bandit_app(explorer: BanditExplorer, agents: Sequence[str] | None = None, agent: str = "ensemble+",
                     input_dims: Sequence[int] = (2, 10), background: bool = True):
    """The explorer: agent dropdown, input-dimension buttons, horizon and temperature sliders, the figure.

    A setting already run redraws at once. A new (agent, d, ρ) runs in a background thread when ``background``
    (newest request only), with a status line that counts the seconds and a progress bar estimated from the
    earlier runs at the same d; the figure updates when it is done.

    Returns:
      :class:`~jtk.widgets._app.App` (a VBox); ``app.controls`` holds the controls by name, ``app.redraw()``
      redraws, ``app.figure`` is the figure, ``app.status`` / ``app.progress`` the status line and bar, and
      ``app.wait(timeout)`` waits for a run in flight.
    """
    import ipywidgets as widgets
    from matplotlib.figure import Figure

    if not isinstance(explorer, BanditExplorer):
        raise TypeError(f"explorer must be a jtk.widgets.BanditExplorer, got {type(explorer).__name__}")
    agents = list(agents or [*bandit.PAPER_AGENTS, "uniform"])
    _checks.one_of("agent", agent, agents)
    controls = {
        "agent": widgets.Dropdown(options=agents, value=agent, description="agent", style=LABEL_STYLE,
                                  tooltip="agent whose pulls are shown (its regret curve is added)"),
        # no description: its label would sit on a line of its own above the buttons; a Label beside them instead
        "input_dim": widgets.ToggleButtons(options=list(input_dims), value=input_dims[0], tooltips=[
            f"d = {d}: {bandit.ACTIONS_PER_DIM * d} actions" for d in input_dims],
            tooltip="input dimension d of the actions", style={**LABEL_STYLE, "button_width": "56px"}),
        "horizon": widgets.IntSlider(value=explorer.max_horizon, min=bandit.CHUNK, max=explorer.max_horizon,
                                     step=bandit.CHUNK, description="horizon T", continuous_update=False,
                                     tooltip="number of steps T shown", style=LABEL_STYLE),
        "temperature": widgets.SelectionSlider(options=list(TEMPERATURES), value=bandit.TEMPERATURE,
                                               description="temperature ρ", continuous_update=False,
                                               tooltip="reward noise ρ of the bandit problems",
                                               style=LABEL_STYLE),
    }
    status = widgets.HTML()
    progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="≈ progress", style=LABEL_STYLE,
                                     layout=widgets.Layout(display="none"))
    status_row = widgets.HBox([status, progress], layout=widgets.Layout(display="none", align_items="center"))
    image = image_widget()
    fig = Figure(figsize=FIGSIZE)
    live: list = [None]  # the BanditFigure on ``fig``
    drawing = threading.RLock()

    def set_status(text: str) -> None:
        status.value = text
        status_row.layout.display = "flex" if text else "none"  # no empty band above the figure

    def show_progress(visible: bool) -> None:
        progress.layout.display = "flex" if visible else "none"

    def values():
        return {name: c.value for name, c in controls.items()}

    def key_of(v):
        return v["agent"], int(v["input_dim"]), float(v["temperature"])

    def render(v):
        with drawing:
            live[0] = draw(fig, explorer, **v, live=live[0])
            show_png(image, live[0].png(dpi=DPI), live[0].alt)

    def job():
        v = values()  # the newest setting when the job starts
        key = key_of(v)
        if key not in explorer.results:
            expected = expected_seconds(explorer, key[1])
            start, stop = time.perf_counter(), threading.Event()

            def tick():
                while not stop.wait(1.0):
                    elapsed = time.perf_counter() - start
                    set_status(run_status(*key, elapsed=elapsed, expected=expected))
                    if expected:
                        progress.value = min(elapsed / expected, 0.95)

            progress.value = 0.0
            show_progress(bool(expected))
            ticker = threading.Thread(target=tick, name="jtk-bandit-status", daemon=True)
            ticker.start()
            try:
                explorer.result(*key)
            finally:
                stop.set()
                ticker.join()
                show_progress(False)
            set_status(run_status(*key, seconds=explorer.results[key].seconds))
        if values() == v:  # else a newer request waits and draws instead
            render(v)

    def report_error(err, _trace):
        show_progress(False)
        set_status(run_status(*key_of(values()), error=f"{type(err).__name__}: {err}"))

    runner = LatestOnly(background=background, on_error=report_error)

    def redraw(*_):
        v = values()
        key = key_of(v)
        if key in explorer.results:
            render(v)
            return
        set_status(run_status(*key, elapsed=0.0, expected=expected_seconds(explorer, key[1])))
        runner.submit(job)

    for c in controls.values():
        c.observe(redraw, names="value")
    d_label = widgets.Label("d", layout=widgets.Layout(margin="0 4px 0 16px"))
    app = App([widgets.HBox([controls["agent"], d_label, controls["input_dim"]],
                            layout=widgets.Layout(align_items="center")),
               widgets.HBox([controls["horizon"], controls["temperature"]]),
               status_row, image, image.caption], title="bandit explorer")
    app.controls = controls
    app.redraw = redraw
    app.figure = fig
    app.status_row = status_row
    app.image = image
    app.status, app.progress = status, progress
    app.runner, app.wait = runner, runner.wait
    redraw()
    return app
