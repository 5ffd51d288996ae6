"""Input validation shared by every public entry point.

Each helper raises ``ValueError`` / ``TypeError`` whose message names the
argument, what was expected and what was given, so that a bad slider value or a
student's wrong array never surfaces as a cryptic trace from inside JAX.
"""

from __future__ import annotations

import collections
import difflib
import inspect
import numbers
from typing import Any, Callable, Iterable, Mapping

import jax
import numpy as np


def _describe(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"an array of shape {tuple(value.shape)} and dtype {value.dtype}"
    return f"{type(value).__name__} {value!r}"


def describe(value: Any) -> str:
    """How a message names a given value: an array by its shape and dtype, anything else by its type and repr."""
    return _describe(value)


SEED_LIMIT = 2 ** 32  # int seeds live in [0, 2**32): JAX keys hold 32-bit words and would wrap larger ones
TEMPERATURE_MIN = 1e-6  # smaller temperatures push logits f(x) / ρ towards float32 overflow (NaN probabilities)


def jax_float_dtype() -> np.dtype:
    """The float dtype JAX computes in: float32, or float64 when ``jax_enable_x64`` is on."""
    return np.dtype(np.float64 if jax.config.jax_enable_x64 else np.float32)


def as_float_array(name: str, value: Any, ndim: int | tuple[int, ...] | None = None,
                   finite: bool = True, dtype: Any = None) -> np.ndarray:
    """Returns ``value`` as a float numpy array after checking rank and finiteness.

    The finiteness check runs *after* the cast to the working dtype, so a float64
    value such as 1e39 that would become inf in float32 is refused, not computed with.

    Args:
      name: argument name used in error messages.
      value: array-like of real numbers.
      ndim: allowed rank(s), or None for any.
      finite: whether NaN / inf entries are rejected.
      dtype: the working dtype; None keeps float64 input as float64 and casts
        everything else to float32 (use :func:`jax_float_dtype` for arrays
        that go to JAX).
    """
    try:
        arr = np.asarray(value)
    except Exception as err:  # pragma: no cover - exotic objects
        raise TypeError(f"{name} must be array-like, got {_describe(value)}") from err
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got {_describe(value)}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real-valued, got {_describe(value)}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must have {want} dimensions, got {_describe(arr)}")
    if dtype is None:
        dtype = np.float64 if arr.dtype == np.float64 else np.float32
    given = arr
    with np.errstate(over="ignore", invalid="ignore"):
        arr = arr.astype(dtype, copy=False)
    if finite and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        if np.issubdtype(given.dtype, np.inexact) and np.all(np.isfinite(given)) or given.dtype.kind in "iub":
            raise ValueError(f"{name} must be finite in {np.dtype(dtype).name}, but {bad} entries overflow "
                             f"when cast to it (largest |value| {float(np.max(np.abs(given))):.3g})")
        raise ValueError(f"{name} must be finite, but it has {bad} NaN/inf entries")
    return arr


def as_labels(name: str, value: Any, num_classes: int, ndim: int | None = None) -> np.ndarray:
    """Returns integer class labels in [0, num_classes) as an int32 array."""
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
                                   or arr.dtype == bool):
        raise TypeError(f"{name} must be an array of integer labels, got {_describe(value)}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got {_describe(arr)}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold whole-number labels, got non-integer or NaN/inf values")
    if arr.size and (arr.min() < 0 or arr.max() >= num_classes):
        raise ValueError(
            f"{name} must be labels in [0, {num_classes}), got values in [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int32)


def temperature(name: str, value: Any) -> float:
    """Checks a softmax temperature: a real number in [1e-6, float32 max].

    Logits are f(x) / ρ in float32; below ``TEMPERATURE_MIN`` they approach
    float32 overflow and probabilities turn into NaN, so such values are refused.
    """
    v = positive(name, value)
    if v < TEMPERATURE_MIN or not np.isfinite(np.float32(v)):
        raise ValueError(f"{name} must be in [{TEMPERATURE_MIN:g}, {float(np.finfo(np.float32).max):.3g}] "
                         f"(logits f(x) / {name} must stay finite in float32), got {value!r}")
    return v


def positive(name: str, value: Any, allow_zero: bool = False) -> float:
    """Checks a finite real scalar is > 0 (or >= 0) and returns it as float."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.number)) and not (
            hasattr(value, "shape") and np.shape(value) == ()):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        want = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {want}, got {value!r}")
    return v


def integer(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """Checks ``value`` is an integer within [minimum, maximum] and returns it."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def seeds(name: str, value: Any, allow_empty: bool = False, unique: bool = False) -> tuple[int, ...]:
    """An int n means seeds 0..n-1 (n >= 1); otherwise an iterable of non-negative ints. Returns a tuple.

    ``unique``: refuse repeated seeds (where each seed makes one problem, a repeat would count it twice).
    """
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
        value = range(integer(name, value, minimum=1))
    elif isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be an int n (seeds 0..n-1) or an iterable of ints, got {_describe(value)}")
    out = tuple(integer(f"{name} entries", s, minimum=0, maximum=SEED_LIMIT - 1) for s in value)
    if not out and not allow_empty:
        raise ValueError(f"{name} must hold at least one seed, got none")
    if unique:
        repeated = sorted(s for s, count in collections.Counter(out).items() if count > 1)
        if repeated:
            raise ValueError(f"{name} must not repeat (a repeated seed duplicates problems), got {repeated} "
                             f"more than once")
    return out


def data_stacks(xs: Any, ys: Any) -> tuple[np.ndarray, np.ndarray]:
    """A stack of regression data sets: xs [D, n, d] and ys [D, n] as float arrays, at least one set of one point."""
    xs = as_float_array("xs", xs, ndim=3)
    ys = as_float_array("ys", ys, ndim=2)
    if ys.shape != xs.shape[:2]:
        raise ValueError(f"ys must have shape {xs.shape[:2]} (data sets, points) like xs {xs.shape}, got {ys.shape}")
    if xs.shape[0] == 0 or xs.shape[1] == 0:
        raise ValueError(f"xs must hold at least one data set of at least one point, got shape {xs.shape}")
    return xs, ys


def one_of(name: str, value: Any, options: tuple[str, ...] | list[str]) -> str:
    """Checks ``value`` is one of the allowed strings."""
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return value


def as_key(seed: Any, name: str = "seed") -> jax.Array:
    """Turns an int seed or a JAX PRNG key (typed or raw uint32[2]) into a typed key."""
    if isinstance(seed, jax.Array) or isinstance(seed, np.ndarray):
        if jax.dtypes.issubdtype(seed.dtype, jax.dtypes.prng_key):
            if seed.shape != ():
                raise ValueError(f"{name} must be a single PRNG key, got a key array of shape {seed.shape}")
            return seed
        if seed.shape == (2,) and seed.dtype == np.uint32:
            return jax.random.wrap_key_data(seed)
        if seed.shape == () and np.issubdtype(seed.dtype, np.integer):
            return jax.random.key(seed_int(name, int(seed)))
        raise TypeError(f"{name} must be an int or a JAX PRNG key, got {_describe(seed)}")
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int or a JAX PRNG key, got {_describe(seed)}")
    return jax.random.key(seed_int(name, seed))


def seed_int(name: str, value: Any) -> int:
    """Checks an integer seed is in [0, 2**32) and returns it as int.

    JAX keys hold 32-bit words: larger seeds would silently wrap (2**32 would be
    seed 0) or crash inside JAX, so they are refused. Bools are not seeds.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int in [0, 2**32) or a JAX PRNG key, got {_describe(value)}")
    v = int(value)
    if not 0 <= v < SEED_LIMIT:
        raise ValueError(f"{name} must be an int in [0, 2**32) (or a JAX PRNG key), got {v}")
    return v


def keywords(name: str, given: Iterable[str], valid: Iterable[str], what: str = "keyword argument") -> None:
    """Raises TypeError for keyword names not in ``valid``, suggesting close matches ("did you mean").

    The message reads ``{name} got an unknown {what} 'x' (did you mean 'y'?); valid names: [...]``.
    """
    valid = sorted(valid)
    unknown = [k for k in given if k not in valid]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(str(k), valid, n=3)
            hints.append(f"{k!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
        what = f"an unknown {what}" if len(unknown) == 1 else f"unknown {what}s"
        raise TypeError(f"{name} got {what} {', '.join(hints)}; valid names: {valid}")


def call_keywords(fn: Callable) -> list[str] | None:
    """Keyword names ``fn`` accepts, or None when it takes ``**kwargs`` (anything goes)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def mapping(name: str, value: Any) -> Mapping:
    """Checks ``value`` is a mapping (dict) or None (→ {})."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of keyword arguments or None, got {_describe(value)}")
    return value


def widths(name: str, value: Any, allow_empty: bool = True) -> tuple[int, ...]:
    """Hidden-layer widths as a tuple of positive ints; names the bad entry, e.g. ``hidden[1]``."""
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of positive ints, got {_describe(value)}") from None
    out = tuple(integer(f"{name}[{i}]", h, minimum=1) for i, h in enumerate(items))
    if not out and not allow_empty:
        raise ValueError(f"{name} must list at least one hidden width, got ()")
    return out


def instance(name: str, value: Any, types: type | tuple[type, ...], what: str | None = None) -> Any:
    """Checks ``isinstance(value, types)`` (TypeError naming ``what``, e.g. "a Problem"), returns ``value``."""
    if not isinstance(value, types):
        types = types if isinstance(types, tuple) else (types,)
        what = what or "a " + " or ".join(t.__name__ for t in types)
        raise TypeError(f"{name} must be {what}, got {_describe(value)}")
    return value


def function(name: str, value: Any, what: str = "a callable") -> Callable:
    """Checks ``value`` is callable (a kernel, an environment factory) and returns it."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {_describe(value)}")
    return value


def frame(name: str, value: Any, columns: Iterable[str] = ()):
    """Checks ``value`` is a pandas DataFrame holding ``columns``; returns it."""
    import pandas as pd

    if not isinstance(value, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(value).__name__}")
    columns = list(columns)
    missing = [c for c in columns if c not in value.columns]
    if missing:
        raise ValueError(f"{name} must have columns {columns}, missing {missing}")
    return value


def names(name: str, value: Any, options: Iterable[str], allow_empty: bool = False) -> list[str]:
    """A sequence of names, each one of ``options`` (a bare string is refused: "mig" is not ["m", "i", "g"])."""
    options = sorted(options)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a list of names from {options}, got {_describe(value)}")
    out = [one_of(name, v, options) for v in value]
    if not out and not allow_empty:
        raise ValueError(f"{name} must name at least one of {options}, got none")
    return out


def nonempty(name: str, value: Any, what: str = "item") -> list:
    """Returns ``list(value)`` after checking it is a non-string iterable with at least one entry."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of {what}s, got {_describe(value)}")
    out = list(value)
    if not out:
        raise ValueError(f"{name} must hold at least one {what}, got none")
    return out


def prng_key(name: str, value: Any) -> Any:
    """Checks ``value`` is a JAX PRNG key (typed, or raw uint32 [..., 2]); a traced key passes (a static check)."""
    if isinstance(value, (jax.Array, np.ndarray)) and (
            jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)
            or value.dtype == np.uint32 and value.shape[-1:] == (2,)):
        return value
    raise TypeError(f"{name} must be a JAX PRNG key (e.g. jax.random.key(0)), got {_describe(value)}")


def path(name: str, value: Any):
    """Checks ``value`` is a file-system path (str or os.PathLike) and returns it as a pathlib.Path."""
    import os
    import pathlib

    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), got {_describe(value)}")
    return pathlib.Path(value)


def argv(value: Any, example: str = "['--help']", name: str = "argv", allow_none: bool = True) -> list[str] | None:
    """Checks a command's ``argv``: a list (or tuple) of str, or None (the command line, ``sys.argv[1:]``).

    Shared by :func:`jtk.cli.main`, every study module's ``main(argv)`` and :mod:`jtk.reproduce` (its ``extra``
    arguments): a bare string is refused (argparse would read ``"--preset quick"`` as one unknown argument), as is a
    non-str entry. Returns ``list(value)``, or None unchanged.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not all(
            isinstance(a, str) for a in value):
        raise TypeError(f"{name} must be a list of str (e.g. {example}){' or None' if allow_none else ''}, "
                        f"got {_describe(value)}")
    return list(value)


def keyed(name: str, value: Any, keys: Iterable[str]) -> Mapping:
    """Checks ``value`` is a mapping holding ``keys`` (a figure's view dict, a result row); returns it."""
    keys = list(keys)
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict with keys {keys}, got {_describe(value)}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name} must have keys {keys}, missing {missing} (got keys {sorted(map(str, value))})")
    return value


def indices(name: str, value: Any, n: int | None, into: str = "cov", allow_empty: bool = False) -> np.ndarray:
    """``value`` as distinct int64 indices into ``into`` (n rows; None: any non-negative index)."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of indices into {into}, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices into {into}, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size == 0:
        if allow_empty:
            return arr
        raise ValueError(f"{name} must hold at least one index, got an empty array")
    if arr.min() < 0 or n is not None and arr.max() >= n:
        limit = "non-negative indices" if n is None else f"indices in [0, {n}) ({into} has {n} rows)"
        raise ValueError(f"{name} must hold {limit}, got values in [{arr.min()}, {arr.max()}]")
    if len(np.unique(arr)) != len(arr):
        raise ValueError(f"{name} must not repeat indices, got {len(arr) - len(np.unique(arr))} repeats")
    return arr


def key_value_arg(text: str) -> tuple[str, object]:
    """An argparse ``type`` for ``--set KEY=VALUE`` (``jtk testbed``, ``jtk sweep``, ``jtk bandit``, the zoo study):
    (KEY, VALUE read as a Python literal, else the text itself). A missing ``=`` is argparse's usage error."""
    import argparse
    import ast

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = value
    return key.strip(), parsed
