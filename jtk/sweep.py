"""Hyperparameter sweeps over the testbed that survive interruption.

A sweep is agents × hyperparameter grids × problems. Work is cut into the
testbed's chunks (problems sharing compiled code) and each finished chunk is
written at once to ``results_dir/<config>/chunk-<hash>.csv`` (write to a
temporary name, then rename, so a killed run never leaves half a file). A
rerun skips every chunk whose file exists, so an interrupted sweep resumes
where it stopped and never recomputes or loses finished work. Each agent's best
configuration is the one with the lowest d_KL^agg = d_KL^1 + d_KL^10 / 10, the
paper's selection rule (App. D).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import pathlib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks, testbed
from jtk.agents import base as agents_base

LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)

#: The paper's sweeps: App. C.1, C.2, C.6 for the ensemble family; C.5 (the reference's momentum-SGLD sweep,
#: learning rate × prior variance) for sgmcmc, with jtk's fast chain (``make("sgmcmc")``;
#: ``jtk sweep --set preset=reference`` runs the 500 000-step schedule).
PAPER_SWEEPS: dict[str, dict[str, Sequence[Any]]] = {
    "mlp": {"l2_scale": LAMBDAS},
    "ensemble": {"num_members": (1, 3, 10, 30, 100), "l2_scale": LAMBDAS},
    "ensemble+": {"num_members": (1, 3, 10, 30, 100), "prior_scale": (0.3, 1.0, 3.0, 10.0),
                  "l2_scale": (0.1, 1.0, 10.0)},
    "sgmcmc": {"learning_rate": (1e-4, 5e-4, 1e-3, 5e-3), "prior_variance": (0.05, 0.1, 0.2)},
}

#: A laptop-sized sweep: three values of the most important knob per agent.
SMALL_SWEEPS: dict[str, dict[str, Sequence[Any]]] = {
    "mlp": {"l2_scale": (0.1, 1.0, 10.0)},
    "ensemble": {"num_members": (10,), "l2_scale": (0.1, 1.0, 10.0)},
    "ensemble+": {"num_members": (10,), "prior_scale": (1.0, 3.0, 10.0)},
    "sgmcmc": {"prior_variance": (0.05, 0.1, 0.2)},
}

SWEEPS = {"paper": PAPER_SWEEPS, "small": SMALL_SWEEPS}


@dataclass(frozen=True)
class Config:
    """One agent configuration: a registered name plus hyperparameters."""

    agent: str
    hyperparameters: tuple[tuple[str, Any], ...] = ()

    @property
    def id(self) -> str:
        """A readable, file-name-safe identifier, e.g. ``ensemble+__num_members=10__prior_scale=3.0``."""
        parts = [self.agent] + [f"{k}={v}" for k, v in self.hyperparameters]
        return re.sub(r"[^A-Za-z0-9_.+=-]", "_", "__".join(parts))

    def make(self):
        return agents_base.make(self.agent, **dict(self.hyperparameters))


def configs(sweeps: Mapping[str, Mapping[str, Sequence[Any]]], agents: Iterable[str] | None = None) -> list[Config]:
    """The Cartesian product of each agent's hyperparameter grid.

    Args:
      sweeps: agent name → {hyperparameter: values}.
      agents: restrict to these agents (default: all in ``sweeps``).
    """
    agents = list(sweeps) if agents is None else list(agents)
    out = []
    for name in agents:
        if name not in sweeps:
            raise ValueError(f"agents must be among the swept agents {sorted(sweeps)}, got {name!r}")
        grid = sweeps[name]
        keys = sorted(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            out.append(Config(name, tuple(zip(keys, values))))
    return out


def _chunk_id(chunk: list[list[testbed.Problem]]) -> str:
    text = repr(sorted(repr(p) for group in chunk for p in group))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _write_atomic(df: pd.DataFrame, path: pathlib.Path) -> None:
    tmp = path.with_suffix(".csv.tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


def run(sweep_configs: Sequence[Config], problems: Sequence[testbed.Problem], results_dir, executor=None,
        progress: bool = True) -> pd.DataFrame:
    """Runs (or resumes) a sweep and returns every row of it.

    Args:
      sweep_configs: configurations to evaluate.
      problems: testbed problems for every configuration.
      results_dir: directory for the per-chunk CSV files (created if missing).
      executor: optional ``submit``-style executor (see :mod:`jtk.executors`).
      progress: show a tqdm progress bar over chunks.

    Returns:
      DataFrame of all rows (columns of ``testbed.evaluate`` plus ``config``).
    """
    sweep_configs = list(sweep_configs)
    if not sweep_configs:
        raise ValueError("sweep_configs must hold at least one Config, got none")
    for i, c in enumerate(sweep_configs):
        if not isinstance(c, Config):
            raise TypeError(f"sweep_configs[{i}] must be a jtk.sweep.Config, got {type(c).__name__}")
    problems = list(problems)
    if not problems:
        raise ValueError("problems must hold at least one Problem, got an empty list")
    root = pathlib.Path(results_dir)
    todo, files = [], []
    for config in sweep_configs:
        agent = config.make()
        (root / config.id).mkdir(parents=True, exist_ok=True)
        for chunk in testbed._chunks(problems, agent):
            path = root / config.id / f"chunk-{_chunk_id(chunk)}.csv"
            files.append(path)
            if not path.exists():
                todo.append((config, agent, chunk, path))
    bar = tqdm(total=len(files), initial=len(files) - len(todo), desc="sweep", unit="chunk", disable=not progress)
    if executor is None:
        for config, agent, chunk, path in todo:
            _write_atomic(testbed.evaluate_chunk(agent, chunk, config.id).assign(config=config.id), path)
            bar.update()
    else:
        futures = [(executor.submit(testbed.evaluate_chunk, agent, chunk, config.id), config, path)
                   for config, agent, chunk, path in todo]
        for future, config, path in futures:
            _write_atomic(future.result().assign(config=config.id), path)
            bar.update()
    bar.close()
    return load(root, sweep_configs)


def load(results_dir, sweep_configs: Sequence[Config] | None = None) -> pd.DataFrame:
    """Reads the finished chunks of a sweep (all configurations, or the given ones)."""
    root = pathlib.Path(results_dir)
    dirs = [root / c.id for c in sweep_configs] if sweep_configs is not None else sorted(
        d for d in root.iterdir() if d.is_dir())
    frames = [pd.read_csv(f) for d in dirs for f in sorted(d.glob("chunk-*.csv"))]
    if not frames:
        raise ValueError(f"results_dir {str(root)!r} holds no finished chunks")
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["config", "tau", "num_train", "temperature", "seed"], kind="stable").reset_index(drop=True)


def best_configs(results: pd.DataFrame) -> pd.DataFrame:
    """Each agent's best configuration by d_KL^agg = d_KL^1 + d_KL^10 / 10 (App. D).

    Returns:
      DataFrame indexed by agent family with the chosen config, its kl_1, kl_10,
      kl_agg and the number of configurations compared.
    """
    if not isinstance(results, pd.DataFrame) or "config" not in results:
        raise TypeError("results must be the DataFrame returned by jtk.sweep.run / load")
    table = testbed.summarize(results.assign(agent=results["config"]))
    if "kl_1" not in table or "kl_10" not in table:
        raise ValueError("results must contain both τ = 1 and τ = 10 problems to compute d_KL^agg")
    table["kl_agg"] = table["kl_1"] + table["kl_10"] / 10
    table["family"] = [c.split("__")[0] for c in table.index]
    rows = []
    for family, sub in table.groupby("family"):
        best = sub["kl_agg"].idxmin()
        rows.append({"agent": family, "config": best, "kl_1": sub.loc[best, "kl_1"],
                     "kl_10": sub.loc[best, "kl_10"], "kl_agg": sub.loc[best, "kl_agg"], "num_configs": len(sub)})
    return pd.DataFrame(rows).set_index("agent")


def sweep_by_name(name: str) -> Mapping[str, Mapping[str, Sequence[Any]]]:
    """The named sweep: "paper" (App. C grids) or "small" (three values per agent)."""
    return SWEEPS[_checks.one_of("sweep", name, tuple(SWEEPS))]
