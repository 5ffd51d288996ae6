"""Hyperparameter sweeps over the testbed that survive interruption.

A sweep is agents × hyperparameter grids × problems. Work is cut into the
testbed's chunks (problems sharing compiled code) and each finished chunk is
written at once to ``results_dir/<config>/chunk-<hash>.csv`` with a sidecar
``chunk-<hash>.json`` holding its row count and SHA-256 (both written
atomically: unique temporary file, fsync, rename; see :mod:`jtk.results`). A
rerun skips every chunk whose file matches its sidecar, so an interrupted sweep
resumes where it stopped and never recomputes or loses finished work; a
truncated or edited chunk is reported and recomputed.

Rules of a results directory: its ``manifest.json`` records the problem set,
and each ``<config>/manifest.json`` the agent's full configuration; a sweep with
other problems, or a configuration whose agent now differs (jtk's defaults
changed), is refused (:class:`jtk.results.ConfigMismatch`) instead of mixed in.
More configurations over the same problems may be added to a directory. One
process at a time writes a directory (``sweep.lock``). When every chunk is
done, all rows of the run's configurations go to ``results.csv`` with its
provenance manifest (``results.manifest.json``), which ``jtk verify`` checks.

Each agent's best configuration is the one with the lowest d_KL^agg =
d_KL^1 + d_KL^10 / 10, the paper's selection rule (App. D).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import pathlib
import re
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from tqdm.auto import tqdm

from jtk import _checks, _info, executors, results as results_lib
from jtk.agents import base as agents_base
from jtk.agents.records import agent_config
from jtk.testbed.engine import make_chunks, run_grid
from jtk.testbed.grids import Problem, check_problems
from jtk.testbed.stats import summarize

#: The file (in the results directory) holding every row of a finished sweep run, with its manifest beside it.
RESULTS_CSV = "results.csv"

LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)

#: The paper's sweeps: App. C.1, C.2, C.6 for the ensemble family; C.5 (the reference's momentum-SGLD sweep,
#: learning rate × prior variance σ² ∈ {0.05, 0.1, 0.2}, i.e. l2_scale = 1/σ² ∈ {20, 10, 5}) for sgmcmc, with jtk's
#: fast chain (``make("sgmcmc")``;
#: ``jtk sweep --set preset=reference`` runs the 500 000-step schedule).
PAPER_SWEEPS: dict[str, dict[str, Sequence[Any]]] = {
    "mlp": {"l2_scale": LAMBDAS},
    "ensemble": {"num_members": (1, 3, 10, 30, 100), "l2_scale": LAMBDAS},
    "ensemble+": {"num_members": (1, 3, 10, 30, 100), "prior_scale": (0.3, 1.0, 3.0, 10.0),
                  "l2_scale": (0.1, 1.0, 10.0)},
    "sgmcmc": {"learning_rate": (1e-4, 5e-4, 1e-3, 5e-3), "l2_scale": (20.0, 10.0, 5.0)},
}

#: A laptop-sized sweep: three values of the most important knob per agent.
SMALL_SWEEPS: dict[str, dict[str, Sequence[Any]]] = {
    "mlp": {"l2_scale": (0.1, 1.0, 10.0)},
    "ensemble": {"num_members": (10,), "l2_scale": (0.1, 1.0, 10.0)},
    "ensemble+": {"num_members": (10,), "prior_scale": (1.0, 3.0, 10.0)},
    "sgmcmc": {"l2_scale": (20.0, 10.0, 5.0)},
}

SWEEPS = {"paper": PAPER_SWEEPS, "small": SMALL_SWEEPS}


@dataclass(frozen=True)
class Config:
    """One agent configuration: a registered name plus hyperparameters."""

    agent: str
    hyperparameters: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        _checks.instance("agent", self.agent, str, "a registered agent name (str)")
        if not isinstance(self.hyperparameters, tuple) or not all(
                isinstance(kv, tuple) and len(kv) == 2 and isinstance(kv[0], str) for kv in self.hyperparameters):
            raise TypeError(f"hyperparameters must be a tuple of (name, value) pairs, got {self.hyperparameters!r}")

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
    _checks.instance("sweeps", sweeps, Mapping, "a dict: agent name -> {hyperparameter: values}")
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


def _chunk_id(chunk: list[list[Problem]]) -> str:
    text = repr(sorted(repr(p) for group in chunk for p in group))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _agent_record(config: Config) -> dict:
    return agent_config(config.agent, name=config.agent, hyperparameters=dict(config.hyperparameters))


def run(sweep_configs: Sequence[Config], problems: Sequence[Problem], results_dir, executor=None,
        progress: bool = True, *, interrupt: results_lib.DeferredInterrupt | None = None,
        config: dict | None = None) -> pd.DataFrame:
    """Runs (or resumes) a sweep and returns every row of it.

    Args:
      sweep_configs: configurations to evaluate.
      problems: testbed problems for every configuration.
      results_dir: directory for the per-chunk CSV files (created if missing; its parent must exist).
      executor: optional ``submit``-style executor, e.g. a ``dask.distributed.Client`` (see :mod:`jtk.executors`).
      progress: show a tqdm progress bar over chunks.
      interrupt: a :class:`jtk.results.DeferredInterrupt` checked between chunks.
      config: the sweep's settings, recorded in ``results.manifest.json``.

    Returns:
      DataFrame of all rows (columns of ``testbed.evaluate`` plus ``config``).

    Raises:
      jtk.results.OutputError: ``results_dir`` cannot be created or written.
      jtk.results.LockedError: another process is writing ``results_dir``.
      jtk.results.ConfigMismatch: ``results_dir`` holds another problem set, or
        a configuration whose recorded agent differs from today's.
      jtk.results.Interrupted: Ctrl-C; finished chunks are kept.
    """
    executors.check_executor(executor)
    sweep_configs = list(sweep_configs)
    if not sweep_configs:
        raise ValueError("sweep_configs must hold at least one Config, got none")
    for i, c in enumerate(sweep_configs):
        if not isinstance(c, Config):
            raise TypeError(f"sweep_configs[{i}] must be a jtk.testbed.sweep.Config, got {type(c).__name__}")
    problems = check_problems(problems)
    root = results_lib.check_output(results_dir, option="results_dir", directory=True)
    root.mkdir(exist_ok=True)
    started = results_lib.timestamp()
    records = {c.id: _agent_record(c) for c in sweep_configs}
    with results_lib.Lock(root, root / "sweep.lock"):
        results_lib.ChunkStore(root, {"kind": "sweep", "problems": results_lib.problems_record(problems)},
                               label="--results")
        todo, total = [], 0
        for c in sweep_configs:
            agent = c.make()
            store = results_lib.ChunkStore(root / c.id, {"kind": "sweep-config", "config": c.id,
                                                         "agent": records[c.id]}, label="--results")
            for chunk in make_chunks(problems, agent):
                total += 1
                cid = _chunk_id(chunk)
                if not store.finished(cid):
                    todo.append((c, agent, chunk, store, cid))
        bar = tqdm(total=total, initial=total - len(todo), desc="sweep", unit="chunk", disable=not progress)
        prov = _info.provenance()
        done = total - len(todo)

        def save(task, frame):
            nonlocal done
            c, _, chunk, store, cid = task
            store.write(cid, frame.assign(config=c.id), {"provenance": prov})
            done += 1
            bar.update()

        def stop():
            bar.close()
            return results_lib.Interrupted(f"interrupted: {done} of {total} chunks are saved in {str(root)!r}",
                                           done, total, root)

        run_grid(todo, lambda task: (task[1], task[2], task[0].id, "auto"), save, executor=executor,
                         interrupt=interrupt, stop=stop, bar=bar)
        bar.close()
        rows = load(root, sweep_configs)
        results_lib.save_results(rows, root / RESULTS_CSV, agents=records, agent_column="config", problems=problems,
                                 started=started, force=True, config=config)
        return rows


def load(results_dir, sweep_configs: Sequence[Config] | None = None) -> pd.DataFrame:
    """Reads the finished chunks of a sweep (all configurations, or the given ones).

    Chunks that do not match their checksum sidecar are reported
    (:class:`jtk.results.ResultsWarning`) and left out; rerunning the sweep recomputes them.
    A directory written before jtk kept checksums (no manifest, no sidecars) is
    read with one warning that its chunks are unverified.
    """
    root = pathlib.Path(results_dir)
    if not root.is_dir():
        raise ValueError(f"results_dir: expected a sweep results directory, but {str(root)!r} does not exist")
    dirs = [root / c.id for c in sweep_configs] if sweep_configs is not None else sorted(
        d for d in root.iterdir() if d.is_dir())
    frames = []
    for d in dirs:
        store = results_lib.ChunkStore(d, None)
        ids = store.chunk_ids()
        if ids and not (d / "manifest.json").exists() and not any(store.sidecar_path(c).exists() for c in ids):
            warnings.warn(f"{str(d)!r} was written by an older jtk without checksums: its {len(ids)} chunks are "
                          "read unverified (a rerun of the sweep recomputes them with checksums)",
                          results_lib.ResultsWarning, stacklevel=2)
            frames += [pd.read_csv(store.csv_path(c)) for c in ids]
            continue
        frames += [store.read(cid) for cid in ids if store.finished(cid, remove=False)]
    if not frames:
        raise ValueError(f"results_dir {str(root)!r} holds no finished chunks")
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["config", "tau", "num_train", "temperature", "seed"], kind="stable").reset_index(drop=True)


def best_configs(results: pd.DataFrame) -> pd.DataFrame:
    """Each agent's best configuration by d_KL^agg = d_KL^1 + d_KL^10 / 10 (App. D).

    Returns:
      DataFrame indexed by agent family with the chosen config, its kl_1, kl_10,
      kl_agg and the number of configurations compared.

    Raises:
      ValueError: results without rows at tau = 1 or tau = 10 (the tau values given are named), or
        anything :func:`jtk.testbed.summarize` refuses.
    """
    if not isinstance(results, pd.DataFrame) or "config" not in results:
        raise TypeError("results must be the DataFrame returned by jtk.testbed.sweep.run / load")
    taus = results["tau"].unique().tolist() if "tau" in results else None
    with contextlib.suppress(TypeError):  # mixed types stay unsorted
        taus = sorted(taus)
    need = "results must hold rows with tau = 1 and tau = 10 to compute d_KL^agg = d_KL^1 + d_KL^10 / 10"
    if taus is not None and not {1, 10} <= set(taus):
        raise ValueError(f"{need}, got tau values {taus}")
    # configurations are compared within a family, which has one estimator: mixing across families is harmless
    table = summarize(results.assign(agent=results["config"]), allow_mixed=True)
    if "kl_1" not in table or "kl_10" not in table:  # e.g. tau read as 1.0, 10.0
        raise ValueError(f"{need} (integers), got tau values {taus}")
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
    return SWEEPS[_checks.one_of("name", name, tuple(SWEEPS))]
