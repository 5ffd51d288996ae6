"""JSON-able values: one owner for what results manifests, agent records and identity hashes write."""

from __future__ import annotations

import json
from typing import Any, Mapping


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (tuples become lists, numpy scalars Python numbers, anything else its repr)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return jsonable(item())
    return repr(value)


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces): the text hashes of identities are taken of."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"))
