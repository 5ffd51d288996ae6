"""Frames and plain values between a trusted process and an untrusted one: bounded, strict, never pickled.

Used by the grader and its sandboxed worker (:mod:`jtk.course._grading_worker`) and by the class challenge's scorer and
worker (:mod:`jtk.course._challenge_worker`). It imports nothing of jtk, so a sandbox can load it before anything else.

A frame is an 8-byte big-endian length, a 1-byte kind (``J``: UTF-8 JSON, ``N``: a ``.npy`` array without
pickles) and the payload. :func:`pack` / :func:`unpack` carry a tree of plain values inside one JSON frame: None,
bools, ints, floats (inf and nan included), strings, tuples, lists and numeric arrays (as ``.npy``), each tagged so
that a tuple comes back a tuple and a list a list. :func:`unpack` refuses anything else, and anything deeper, longer
or larger than its limits.
"""

from __future__ import annotations

import base64
import io
import json
import struct

import numpy as np

HEADER = struct.Struct(">QB")

MAX_DEPTH = 4
"""Nesting of tuples and lists :func:`unpack` accepts."""

MAX_ITEMS = 4096
"""Items of one tuple or list :func:`unpack` accepts."""

MAX_ARRAY_VALUES = 2_000_000
"""Numbers in one array :func:`unpack` accepts."""


class WireError(ValueError):
    """A frame or a value that breaks the protocol: too large, malformed, or of a type that is not allowed."""


def _read_exact(f, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = f.read(left)
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(f, max_bytes: int = 2 ** 34):
    """Reads one frame from a binary file: a dict (JSON) or a numpy array (``.npy``, no pickles).

    Raises:
      EOFError: the other side closed the pipe.
      WireError: a frame longer than ``max_bytes`` or of an unknown kind.
    """
    length, kind = HEADER.unpack(_read_exact(f, HEADER.size))
    if length > max_bytes:
        raise WireError(f"frame of {length} bytes exceeds the limit of {max_bytes}")
    return decode_frame(kind, _read_exact(f, length))


def decode_frame(kind: int, payload: bytes):
    """The value of one frame's payload (see :func:`read_frame`)."""
    if kind == ord("J"):
        try:
            return json.loads(payload.decode())
        except (UnicodeDecodeError, ValueError) as err:
            raise WireError(f"a JSON frame that does not parse: {err}"[:200]) from None
        except RecursionError:  # nesting deeper than the parser's stack: refused like any malformed frame
            raise WireError("a JSON frame nested deeper than the decoder's stack") from None
    if kind == ord("N"):
        try:
            return np.load(io.BytesIO(payload), allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - whatever numpy says, the frame is broken
            raise WireError(f"an array frame that does not load: {type(err).__name__}"[:200]) from None
    raise WireError(f"unknown frame kind {kind!r}")


def frame_bytes(obj) -> bytes:
    """One frame: a dict as JSON, anything else as a ``.npy`` array."""
    if isinstance(obj, dict):
        payload, kind = json.dumps(obj).encode(), b"J"
    else:
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(obj), allow_pickle=False)
        payload, kind = buf.getvalue(), b"N"
    return HEADER.pack(len(payload), kind[0]) + payload


def write_frame(f, obj) -> None:
    """Writes a dict as a JSON frame or an array as a ``.npy`` frame, and flushes."""
    f.write(frame_bytes(obj))
    f.flush()


# ------------------------------------------------------------------ plain values inside JSON
def _npy(arr: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.array(arr, order="C"), allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _float(x: float):
    return x if np.isfinite(x) else {"float": repr(float(x))}  # JSON has no inf / nan


def pack(value, depth: int = 0):
    """A JSON-safe tree of ``value``: None, bool, int, float, str, tuple, list and numeric numpy arrays.

    Raises:
      WireError: a value of another type, or nested deeper than :data:`MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        raise WireError(f"values nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _float(float(value))
    if isinstance(value, tuple):
        return {"tuple": [pack(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return {"list": [pack(v, depth + 1) for v in value]}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"npy": _npy(value)}
    raise WireError(f"cannot send a value of type {type(value).__name__}")


def unpack(obj, depth: int = 0):
    """Reads :func:`pack`'s tree back, strictly.

    Raises:
      WireError: anything :func:`pack` does not write, or beyond the limits (:data:`MAX_DEPTH`,
        :data:`MAX_ITEMS`, :data:`MAX_ARRAY_VALUES`).
    """
    if depth > MAX_DEPTH:
        raise WireError(f"values nested deeper than {MAX_DEPTH}")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if not isinstance(obj, dict) or len(obj) != 1:
        raise WireError("a malformed value")
    (tag, inner), = obj.items()
    if tag in ("tuple", "list"):
        if not isinstance(inner, list) or len(inner) > MAX_ITEMS:
            raise WireError(f"a {tag} that is not a list of at most {MAX_ITEMS} items")
        items = [unpack(v, depth + 1) for v in inner]
        return tuple(items) if tag == "tuple" else items
    if tag == "float" and inner in ("inf", "-inf", "nan"):
        return float(inner)
    if tag == "npy" and isinstance(inner, str):
        if len(inner) > 12 * MAX_ARRAY_VALUES:  # base64 of 8-byte numbers, and a header
            raise WireError(f"an array of more than {MAX_ARRAY_VALUES} numbers")
        try:
            arr = np.load(io.BytesIO(base64.b64decode(inner, validate=True)), allow_pickle=False)
        except Exception as err:  # noqa: BLE001
            raise WireError(f"an array that does not load: {type(err).__name__}") from None
        if arr.dtype.kind not in "biuf" or arr.size > MAX_ARRAY_VALUES:
            raise WireError(f"an array of dtype {arr.dtype} and {arr.size} values is not allowed")
        return arr
    raise WireError(f"a value tagged {tag!r} is not allowed")
