"""Deprecated names: one module ``__getattr__`` factory, so every module that renamed something warns alike.

>>> __getattr__ = moved_names("jtk.example", {"old_name": ("jtk.likelihood", "accuracy")})
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     fn = __getattr__("old_name")
>>> fn.__name__, str(caught[0].message)
('accuracy', 'jtk.example.old_name is deprecated; use jtk.likelihood.accuracy')
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Mapping


def moved_names(module: str, table: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for names that moved or were renamed.

    Args:
      module: the module's own name, e.g. ``"jtk.agents"`` (for the messages).
      table: old name → (module that now holds it, its new name).

    Returns:
      ``__getattr__(name)``: for an old name, warns ``"<module>.<old> is deprecated; use <new module>.<new>"``
      (a DeprecationWarning; the test suite turns these into errors, so jtk itself never uses an old name) and
      returns the object; any other name raises AttributeError as usual.
    """

    def __getattr__(name: str) -> Any:
        if name in table:
            where, new = table[name]
            warnings.warn(f"{module}.{name} is deprecated; use {where}.{new}", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(where), new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
