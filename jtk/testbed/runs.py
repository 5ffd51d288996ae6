"""Testbed runs on disk: :func:`~jtk.testbed.runs.evaluate_to_file` (resumable, with a manifest) and
:func:`~jtk.testbed.runs.verify` (re-run a sample).

The file safety (atomic writes, locks, chunk stores, manifests) is :mod:`jtk.results`'; what is testbed-specific
(which problems, which agent, how rows are recomputed) is here.
"""

from __future__ import annotations

import dataclasses
import shutil
from typing import Any, Mapping, Sequence

import pandas as pd

from jtk import _info, executors
from jtk.agents import base as agents_base
from jtk.agents.records import agent_config, make_agent
from jtk.results import (CROSS_MACHINE_ATOL, CROSS_MACHINE_RTOL, VERIFY_ATOL, VERIFY_RTOL, ChunkStore,
                         ConfigMismatch, DeferredInterrupt, Interrupted, Lock, ManifestMismatch, OutputError,
                         check_output, chunk_id, distinct_values, identity_hash, load_results, parts_dir,
                         problems_record, save_results, timestamp)
from jtk.testbed.engine import agent_name, evaluate, make_chunks, run_grid, sort_rows
from jtk.testbed.grids import Problem, check_problems

__all__ = ["evaluate_to_file", "verify", "problems_from_record"]


def problems_from_record(record: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The inverse of :func:`problems_record`."""
    if isinstance(record, (str, bytes, Mapping)) or not all(isinstance(r, Mapping) for r in record):
        raise TypeError(f"record must be a list of dicts (from problems_record), got {type(record).__name__}")
    return [Problem(**{k: tuple(v) if isinstance(v, list) else v for k, v in r.items()}) for r in record]


_KEY_COLUMNS = ("temperature", "num_train", "tau", "seed", "input_dim", "test_inputs")


def _key(row: Mapping[str, Any], columns: Sequence[str]) -> tuple:
    return tuple(float(row[c]) if c == "temperature" else str(row[c]) if c == "test_inputs" else int(row[c])
                 for c in columns)


def verify(path, sample: int = 10, seed: int = 0, *, progress: bool = False) -> pd.DataFrame:
    """Re-runs a random sample of a results file's problems and compares d_KL with the recorded values.

    Where the manifest's numerics key (machine and the vector ISA XLA compiled for, :func:`jtk._info.numerics`)
    is this machine's, values agree if ``|recorded − recomputed| ≤ VERIFY_ATOL + VERIFY_RTOL · |recomputed|``
    (rtol 1e-4, atol 1e-5: a sample is evaluated as its own chunks, whose float sums may differ in the last
    digits). Across keys, floating-point rounding differs from the first training step on and a trained agent's
    d_KL moves by up to about 1 % (docs/reference.md, "Reproducibility across machines"), so values agree within
    CROSS_MACHINE_RTOL / CROSS_MACHINE_ATOL (rtol 2e-2, atol 5e-3), still far below a seed mean's standard error.
    The table's ``attrs["tolerance"]`` says which applied.

    Args:
      path: a results CSV with its manifest (:func:`load_results` checks them first).
      sample: how many rows to recompute (all rows if it is at least their number).
      seed: picks the sample.
      progress: show the testbed's progress bar.

    Returns:
      One row per sampled problem: its key columns, agent, ``recorded``,
      ``recomputed``, ``abs_diff`` and ``ok``.

    Raises:
      ValueError: the file does not match its manifest, the manifest lacks the
        problems or a rebuildable (registered) agent configuration.
    """
    import numpy as np

    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be a positive integer, got {sample!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    df = load_results(path)
    manifest = df.attrs["manifest"]
    if isinstance(manifest.get("challenge"), dict):
        raise ValueError(f"path: {str(path)!r} belongs to a jtk class challenge board, whose problems come from "
                         f"its salt, not from public seeds: verify the board instead (jtk verify "
                         f"BOARD/leaderboard.csv [--config challenge.toml --submissions DIR]; "
                         f"jtk.course.challenge.verify_board)")
    if not manifest.get("problems"):
        raise ValueError(f"path: the manifest of {str(path)!r} records no problems; only testbed results can be "
                         "verified")
    column = manifest.get("agent_column") or "agent"
    configs = manifest.get("agents") or {}
    if column not in df or "kl" not in df:
        raise ValueError(f"path: expected columns {column!r} and 'kl' in {str(path)!r}, got {list(df.columns)}")
    missing = sorted(set(map(str, df[column].unique())) - set(configs))
    if missing:
        raise ValueError(f"path: the manifest records no agent configuration for {missing}")
    agents = {name: make_agent(cfg) for name, cfg in configs.items() if name in set(map(str, df[column]))}
    key_cols = [c for c in _KEY_COLUMNS if c in df.columns]
    by_key = {}
    for p in problems_from_record(manifest["problems"]):
        by_key[_key(dataclasses.asdict(p), key_cols)] = p
    recorded_key = ((manifest.get("provenance") or {}).get("numerics") or {}).get("numerics_key")
    same_key = recorded_key is not None and recorded_key == _info.numerics()["numerics_key"]
    rtol, atol = (VERIFY_RTOL, VERIFY_ATOL) if same_key else (CROSS_MACHINE_RTOL, CROSS_MACHINE_ATOL)
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(df), size=min(sample, len(df)), replace=False))
    rows = df.iloc[picked]
    out = []
    for name, sub in rows.groupby(column, sort=True):
        problems, unknown = [], []
        for _, r in sub.iterrows():
            k = _key(r, key_cols)
            (problems.append(by_key[k]) if k in by_key else unknown.append(k))
        if unknown:
            raise ValueError(f"path: rows {unknown[:3]} of {str(path)!r} are not among the manifest's problems")
        requested = (manifest.get("estimator") or {}).get("requested")
        new = evaluate(agents[str(name)], problems, name=str(name), progress=progress,
                               likelihood=requested or "auto")
        new_by_key = {_key(r, key_cols): r for _, r in new.iterrows()}
        for _, r in sub.iterrows():
            n = new_by_key[_key(r, key_cols)]
            rec, now = float(r["kl"]), float(n["kl"])
            same = bool(np.isclose(rec, now, rtol=rtol, atol=atol, equal_nan=True))
            if "likelihood" in r and "likelihood" in n:
                same = same and str(r["likelihood"]) == str(n["likelihood"])
            out.append({column: name, **{c: r[c] for c in key_cols}, "recorded": rec, "recomputed": now,
                        "abs_diff": abs(rec - now), "ok": same})
    table = pd.DataFrame(out)
    where = "the same numerics key" if same_key else f"numerics key {recorded_key} recorded, {_info.numerics()['numerics_key']} here"
    table.attrs["tolerance"] = f"rtol {rtol:g}, atol {atol:g} ({where})"
    return table


def evaluate_to_file(agent, problems: Sequence[Any], out, *, name: str | None = None,
                     hyperparameters: Mapping[str, Any] | None = None, executor=None, resume: bool = False,
                     force: bool = False, progress: bool = True, estimator: str | None = None,
                     config: Mapping[str, Any] | None = None,
                     interrupt: DeferredInterrupt | None = None) -> pd.DataFrame:
    """:func:`jtk.testbed.evaluate` that saves each finished chunk, resumes, and writes ``out`` with a manifest.

    Finished chunks go to ``out``'s sibling ``<out>.parts/`` (see :class:`ChunkStore`)
    as they finish; when all are done, ``out`` and ``<out-stem>.manifest.json`` are
    written atomically and the parts directory is removed. A chunk is identified
    by a hash of its problems and the agent configuration, so a resumed run
    recomputes exactly the chunks that are missing or damaged.

    Args:
      agent: a registered agent name or agent object.
      problems: the :class:`jtk.testbed.Problem` list.
      out: the CSV to write (checked before any computation).
      name: value of the ``agent`` column (default: the registered name).
      hyperparameters: the keyword arguments the agent was made with (recorded in the manifest).
      executor: optional ``submit``-style executor (:mod:`jtk.executors`).
      resume: continue from ``<out>.parts/`` (or return a complete ``out`` of
        the same configuration without recomputing).
      force: discard an existing ``out`` and parts directory and start over.
      progress: show a progress bar.
      estimator: the requested likelihood estimator, passed to the testbed where it takes one.
      config: more run settings for the manifest (grid name, seeds).
      interrupt: a :class:`DeferredInterrupt` checked between chunks (the CLI installs one).

    Returns:
      The rows, ordered as :func:`jtk.testbed.evaluate` orders them.

    Raises:
      OutputError: ``out`` cannot be written, exists, or has parts of an
        unfinished run, without ``force`` / ``resume``.
      LockedError: another process is writing ``out``.
      ConfigMismatch: ``resume`` with results of a different configuration.
      Interrupted: Ctrl-C; finished chunks are saved.
    """
    from tqdm.auto import tqdm

    if resume and force:
        raise ValueError("resume and force are exclusive: resume continues a run, force discards it; got both")
    executors.check_executor(executor)
    out = check_output(out, option="--out", force=force, resume=resume)
    parts = parts_dir(out)
    if parts.exists() and not (resume or force):
        raise OutputError(f"--out: expected no unfinished run, but {str(parts)!r} holds the finished chunks of one; "
                          "pass --resume to continue it, --force to discard it, or choose another name")
    if isinstance(agent, str):
        name = name or agent
        agent_cfg = agent_config(agent, name=agent, hyperparameters=hyperparameters or {})
        agent = agents_base.make(agent, **dict(hyperparameters or {}))
    else:
        agent_cfg = agent_config(agent, hyperparameters=hyperparameters)
    name = agent_name(agent, name)
    problems = check_problems(problems)
    identity = {"kind": "testbed", "name": name, "agent": agent_cfg, "problems": problems_record(problems),
                "estimator": estimator}
    started = timestamp()
    with Lock(out):
        if resume and out.exists() and not parts.exists():
            try:
                done = load_results(out)
            except ManifestMismatch as err:
                raise ConfigMismatch(f"--out: {str(out)!r} exists but cannot be resumed: {err}; pass --force to "
                                     "overwrite it or choose another name") from None
            if done.attrs["manifest"].get("identity") != identity_hash(identity):
                raise ConfigMismatch(f"--out: {str(out)!r} holds the complete results of a different configuration; "
                                     "jtk does not mix them: choose another name, or pass --force to overwrite it")
            return done
        if force and parts.exists():
            shutil.rmtree(parts)
        store = ChunkStore(parts, identity, label="--out")
        chunks = make_chunks(problems, agent)
        ids = [chunk_id(c, identity) for c in chunks]
        sizes = [sum(len(g) for g in c) for c in chunks]
        todo = [i for i, cid in enumerate(ids) if not store.finished(cid)]
        kept = sum(sizes) - sum(sizes[i] for i in todo)
        bar = tqdm(total=len(problems), initial=kept, desc=f"testbed {name}", unit="problem", disable=not progress)
        prov = _info.provenance()

        def save(i, frame):
            nonlocal kept
            store.write(ids[i], frame, {"provenance": prov, "problems": sizes[i]})
            kept += sizes[i]
            bar.update(sizes[i])

        def stop():
            bar.close()
            return Interrupted(f"interrupted: {kept} of {len(problems)} problems are saved in {str(parts)!r}",
                               kept, len(problems), parts)

        run_grid(todo, lambda i: (agent, chunks[i], name, estimator or "auto"), save, executor=executor,
                         interrupt=interrupt, stop=stop, bar=bar)
        bar.close()
        if interrupt is not None and interrupt.requested and kept < len(problems):  # pragma: no cover
            raise stop()
        frames = [store.read(cid) for cid in ids]
        chunk_prov = distinct_values(store.sidecar(cid).get("provenance") for cid in ids)
        df = sort_rows(pd.concat(frames, ignore_index=True))
        save_results(df, out, agent=agent_cfg, problems=problems, estimator=estimator, started=started, force=True,
                     config=config, extra={"identity": identity_hash(identity), "chunks": len(ids),
                                           "chunk_provenance": chunk_prov})
        shutil.rmtree(parts, ignore_errors=True)
        return load_results(out)
