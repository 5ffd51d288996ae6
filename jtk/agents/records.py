"""Agent records: a JSON description of an agent (:func:`~jtk.agents.records.agent_config`) from which
:func:`~jtk.agents.records.make_agent` rebuilds a registered one. Results manifests (:mod:`jtk.results`) record
agents this way, so ``jtk verify`` can re-run them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from jtk.agents import base as agents_base
from jtk._json import jsonable

__all__ = ["agent_config", "make_agent"]


def _config_fields(agent) -> dict:
    """A dataclass agent's configuration: its constructor fields (``init=False`` fields are derived state)."""
    return {f.name: getattr(agent, f.name) for f in dataclasses.fields(agent) if f.init}


def agent_config(agent: Any, name: str | None = None, hyperparameters: Mapping[str, Any] | None = None) -> dict:
    """A JSON description of an agent from which :func:`make_agent` can rebuild it.

    Args:
      agent: an agent object, a registered agent name, or a dict already made by this function.
      name: the registered name ``agent`` was made from (found by search among
        registered agents of the same class when not given).
      hyperparameters: the keyword arguments given to ``jtk.agents.make``
        (found as the fields that differ from the registered defaults when not given).

    Returns:
      ``{"name", "registered", "hyperparameters", "class", "fields"}`` for a
      registered agent; ``{"name", "registered": False, "class", "repr"}`` otherwise.
    """
    if hyperparameters is not None and not isinstance(hyperparameters, Mapping):
        raise TypeError(f"hyperparameters must be a dict of keyword arguments or None, got {hyperparameters!r}")
    if isinstance(agent, Mapping) and "registered" in agent:
        return dict(agent)
    if isinstance(agent, str):
        if agent not in agents_base.names():
            return {"name": agent, "registered": False, "class": None, "repr": agent}
        name, agent = agent, agents_base.make(agent, **dict(hyperparameters or {}))
    cls = f"{type(agent).__module__}.{type(agent).__qualname__}"
    fields = _config_fields(agent) if dataclasses.is_dataclass(agent) else None
    candidates = [name] if name is not None else [n for n in agents_base.names()]
    for n in candidates:
        if n not in agents_base.names() or fields is None:
            continue
        try:
            default = agents_base.make(n)
            if type(default) is not type(agent):
                continue
            hp = dict(hyperparameters) if hyperparameters is not None and n == name else {
                k: v for k, v in fields.items() if getattr(default, k) != v}
            if agents_base.make(n, **hp) != agent:
                continue
        except Exception:  # noqa: BLE001 - an agent whose equality or factory fails is recorded by repr
            continue
        return {"name": n, "registered": True, "hyperparameters": jsonable(hp), "class": cls,
                "fields": jsonable(fields)}
    return {"name": name or getattr(agent, "name", type(agent).__name__), "registered": False, "class": cls,
            "repr": repr(agent)}


def make_agent(config: Mapping[str, Any]):
    """Rebuilds a registered agent from :func:`agent_config`'s record.

    Raises:
      ValueError: the record is not of a registered agent, or the rebuilt agent's
        fields differ from the recorded ones (jtk's defaults changed since).
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict from agent_config, got {type(config).__name__}")
    if not config.get("registered"):
        what = config.get("class") or config.get("name") if isinstance(config, Mapping) else config
        raise ValueError(f"agent must be a registered jtk agent to be rebuilt, got {what!r} (class path and repr "
                         "are recorded, but jtk cannot construct a user's agent)")
    hp = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(config.get("hyperparameters") or {}).items()}
    recorded = config.get("fields")
    proto = agents_base._default_agent(agents_base._REGISTRY[config["name"]]) \
        if config.get("name") in agents_base.names() else None
    if proto is not None:  # a record written before a keyword was renamed (e.g. length_scale → l2_scale)
        hp = agents_base.translate_renamed(type(proto), hp, f"jtk.agents.{config['name']}", warn=False)
        if recorded is not None:
            recorded = jsonable(agents_base.translate_renamed(type(proto), dict(recorded), "fields", warn=False))
    agent = agents_base.make(config["name"], **hp)
    now = jsonable(_config_fields(agent))
    if recorded is not None and now != recorded:
        diff = {k: (recorded.get(k), now.get(k)) for k in set(now) | set(recorded) if recorded.get(k) != now.get(k)}
        raise ValueError(f"agent {config['name']!r} rebuilt with {hp} differs from the recorded configuration "
                         f"(field: (recorded, now)) {diff}")
    return agent
