"""The bandit explorer of notebook 06: agent, input dimension, horizon and temperature.

:class:`BanditExplorer` runs each (agent, d, ρ) once, at the longest horizon
the slider allows, and caches the result: moving the horizon slider only
truncates the cached regret (no run), and a new agent, dimension or
temperature costs one vectorised bandit run (a few seconds; a new dimension
also compiles once). :func:`curves_view` is the pure function the figure is
drawn from.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from jtk import _checks, bandit

LAB_AGENT_KWARGS = bandit.PRESETS["lab"]["agent_kwargs"]
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
        self.agent_kwargs = dict(LAB_AGENT_KWARGS if agent_kwargs is None else agent_kwargs)
        self.results: dict[tuple, bandit.BanditResult] = {}
        self._problems: dict[tuple, bandit.BanditProblems] = {}

    def problems(self, input_dim: int, temperature: float) -> bandit.BanditProblems:
        key = (int(input_dim), float(temperature))
        if key not in self._problems:
            self._problems[key] = bandit.make_problems(input_dim, self.num_problems, temperature=temperature)
        return self._problems[key]

    def result(self, agent: str, input_dim: int, temperature: float) -> bandit.BanditResult:
        """The cached run of ``agent`` on the problems of (d, ρ) at ``max_horizon`` (runs it if new)."""
        key = (agent, int(input_dim), float(temperature))
        if key not in self.results:
            self.results[key] = bandit.run(agent, problems=self.problems(input_dim, temperature),
                                           horizon=self.max_horizon, agent_kwargs=self.agent_kwargs.get(agent),
                                           progress=False)
        return self.results[key]

    def run_all(self, agents: Sequence[str], input_dim: int = 2, temperature: float = bandit.TEMPERATURE) -> None:
        """Runs several agents up front (the notebook's first figure)."""
        for a in agents:
            self.result(a, input_dim, temperature)


def curves_view(explorer: BanditExplorer, input_dim: int, horizon: int, temperature: float) -> pd.DataFrame:
    """Cumulative regret up to ``horizon`` of every agent already run at (d, ρ): a long DataFrame."""
    horizon = _checks.integer("horizon", horizon, minimum=1, maximum=explorer.max_horizon)
    frames = []
    for (agent, d, t), res in explorer.results.items():
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


def pulls_view(explorer: BanditExplorer, agent: str, input_dim: int, horizon: int, temperature: float,
               problem: int = 0) -> dict[str, np.ndarray]:
    """Actions, mean rewards and pull counts (first ``horizon`` steps) of one problem."""
    res = explorer.result(agent, input_dim, temperature)
    problem = _checks.integer("problem", problem, minimum=0, maximum=len(res.problems.seeds) - 1)
    n = res.problems.num_actions
    return {"actions": np.asarray(res.problems.actions[problem]), "probs": np.asarray(res.problems.probs[problem]),
            "pulls": np.bincount(res.actions[problem, :horizon], minlength=n)}


def draw(fig, explorer: BanditExplorer, agent: str, input_dim: int, horizon: int, temperature: float) -> None:
    """Runs ``agent`` if needed and redraws: regret curves of every agent run so far, and the action map."""
    from jtk.plots.bandit import plot_action_map, plot_regret_curves

    explorer.result(agent, input_dim, temperature)
    fig.clear()
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
    plot_regret_curves(curves_view(explorer, input_dim, horizon, temperature), ax=ax1,
                       title=f"d = {input_dim}, ρ = {temperature}: cumulative regret, "
                             f"mean ± s.e. over {explorer.num_problems} problems")
    v = pulls_view(explorer, agent, input_dim, horizon, temperature)
    if input_dim == 2:
        plot_action_map(v["actions"], v["probs"], v["pulls"], ax=ax2, title=f"{agent}: pulls on problem 0")
    else:
        order = np.argsort(v["probs"])
        ax2.bar(np.arange(len(order)), v["pulls"][order], color="tab:gray")
        ax2.set_xlabel("actions sorted by mean reward →")
        ax2.set_ylabel("times pulled")
        ax2.set_title(f"{agent}: pulls on problem 0 (best action on the right)", fontsize=9)


def build_bandit_app(explorer: BanditExplorer, agents: Sequence[str] | None = None, agent: str = "ensemble+",
                     input_dims: Sequence[int] = (2, 10)):
    """The explorer: agent dropdown, input-dimension buttons, horizon and temperature sliders, the figure.

    Returns:
      an ``ipywidgets.VBox``; ``app.controls`` holds the controls by name, ``app.redraw()`` redraws.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    agents = list(agents or [*bandit.PAPER_AGENTS, "uniform"])
    _checks.one_of("agent", agent, agents)
    controls = {
        "agent": widgets.Dropdown(options=agents, value=agent, description="agent"),
        "input_dim": widgets.ToggleButtons(options=list(input_dims), value=input_dims[0], description="d"),
        "horizon": widgets.IntSlider(value=explorer.max_horizon, min=bandit.CHUNK, max=explorer.max_horizon,
                                     step=bandit.CHUNK, description="horizon T"),
        "temperature": widgets.SelectionSlider(options=list(TEMPERATURES), value=bandit.TEMPERATURE,
                                               description="temperature ρ"),
    }
    status = widgets.Label()
    out = widgets.Output()
    with plt.ioff():
        fig = plt.figure(figsize=(10, 3.6), layout="constrained")

    def redraw(*_):
        values = {name: c.value for name, c in controls.items()}
        key = (values["agent"], values["input_dim"], float(values["temperature"]))
        new = key not in explorer.results
        if new:
            status.value = f"running {values['agent']} (d = {values['input_dim']}, ρ = {values['temperature']}) ..."
        draw(fig, explorer, **values)
        status.value = f"ran {values['agent']} in {explorer.results[key].seconds:.1f} s" if new else ""
        out.clear_output(wait=True)
        with out:
            from IPython.display import display
            display(fig)

    for c in controls.values():
        c.observe(redraw, names="value")
    app = widgets.VBox([widgets.HBox([controls["agent"], controls["input_dim"]]),
                        widgets.HBox([controls["horizon"], controls["temperature"]]), status, out])
    app.controls = controls
    app.redraw = redraw
    app.figure = fig
    redraw()
    return app
