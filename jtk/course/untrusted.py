"""Untrusted text made safe for each place it is written: the one sanitizer of names and messages.

Its one job: a student's name, a file's name or a submission's message is data, and every sink that writes such
text goes through one function here, chosen by the sink, never by the text:

* a CSV cell (:func:`csv_cell`, :func:`csv_frame`): no cell starts with a formula character (``= + - @``, tab,
  carriage return); such a cell, and one that starts with ``'``, gets a leading ``'``, which
  :func:`read_csv` takes off again when it reads a CSV that jtk wrote, so names survive the round trip. A
  carriage return inside a cell is written as a line feed, which the CSV writer quotes (a bare one would end
  the row in a spreadsheet and start a new one);
* reading a CSV back (:func:`read_csv`): no guessing of missing values: ``NA``, ``null`` or ``nan`` is text, only
  an empty cell is missing;
* an HTML page (:func:`html`): escaped, quotes included;
* the terminal (:func:`terminal`): no control character (C0, DEL, C1, and the format characters that reorder
  text, e.g. U+202E); each is shown as its ``\\x..`` / ``\\u....`` escape;
* what a person reads of a submission's own words about a visible case (:func:`excerpt`): one short line with
  runs of digits and long tokens masked (about a hidden case, nothing: the grader's own words only);
* a matplotlib label (:func:`plot_text`): never mathtext: every ``$`` is escaped, so ``$\\oops$`` is drawn as
  written instead of stopping the figure;
* a file or folder name (:func:`file_name`): a stable, collision-free mapping. A name of letters, digits and
  ``_ . -`` that is all lower case, not a reserved device name, and at most :data:`NAME_CHARS` long is kept
  as it is; any other gets a readable slug plus ``~`` and a hash of the original. ``~`` never appears in a
  kept name, so a mapped name cannot be chosen by someone else, and the hash makes two originals that share a
  slug (``ann lee``, ``ann~lee``) two files, on a case-insensitive disk too. The original name stays in the row
  (the CSV, the page), never only in the path.
"""

from __future__ import annotations

import hashlib
import html as _html
import os
import re
import unicodedata

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (OWASP's CSV-injection list)."""

QUOTE = "'"
"""The prefix that makes a CSV cell text in a spreadsheet; jtk's reader takes one off again."""

NAME_CHARS = 64
"""The longest name :func:`file_name` keeps as it is; the slug of a longer one is cut there."""

HASH_CHARS = 12
"""Hex digits of the original's SHA-256 in a mapped file name (48 bits: no two names of a class share one)."""

_KEPT = re.compile(r"[a-z0-9_][a-z0-9_.-]*")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def _text(name: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text (str), got {type(value).__name__} {value!r:.80}")
    return value


def csv_cell(value):
    """``value`` as a CSV cell a spreadsheet shows as text: a leading ``'`` when it starts with a formula character
    or with ``'``; anything that is not a str (a number) is returned as it is."""
    if not isinstance(value, str):
        if isinstance(value, (bytes, bytearray)):
            _text("value", value)
        return value
    value = QUOTE + value if value.startswith(FORMULA_START + (QUOTE,)) else value
    # pandas quotes a cell holding "\n" (its line end) but not one holding a bare "\r", which a spreadsheet reads
    # as the end of a row: the rest of the cell would become a row of its own, free to start a formula
    return value.replace("\r\n", "\n").replace("\r", "\n")


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are :func:`csv_cell`'s; numbers are left as they are."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(csv_cell)
    out.columns = [csv_cell(c) for c in out.columns]
    return out


def _unquote(value):
    return value[1:] if isinstance(value, str) and value.startswith(QUOTE) else value


def read_csv(source, *, jtk_written: bool = False, **kwargs) -> pd.DataFrame:
    """A CSV read without guessing missing values: only an empty cell is missing (``NA``, ``null``, ``nan`` and
    ``None`` are text).

    Args:
      source: a path or a file-like object.
      jtk_written: the CSV was written through :func:`csv_frame`: take the one ``'`` it added off every text cell.
      **kwargs: more of :func:`pandas.read_csv`'s options (``dtype=str`` keeps empty cells as ``""``).
    """
    if not (isinstance(source, (str, os.PathLike)) or hasattr(source, "read")):
        raise TypeError(f"source must be a path or a file-like object, got {type(source).__name__} {source!r:.80}")
    if not isinstance(jtk_written, bool):
        raise TypeError(f"jtk_written must be True or False, got {type(jtk_written).__name__} {jtk_written!r:.80}")
    kwargs.setdefault("keep_default_na", False)
    if kwargs.get("dtype") is not str:
        kwargs.setdefault("na_values", [""])
    frame = pd.read_csv(source, **kwargs)
    if jtk_written:
        for col in frame.columns:
            if frame[col].dtype == object or pd.api.types.is_string_dtype(frame[col]):
                frame[col] = frame[col].map(_unquote)
        frame.columns = [_unquote(c) for c in frame.columns]
    return frame


def html(text) -> str:
    """``text`` escaped for HTML, in an element or an attribute."""
    return _html.escape(_text("text", text), quote=True)


def _control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def terminal(text, *, newlines: bool = False) -> str:
    """``text`` with every control character shown as its escape (``\\x1b``, ``\\u202e``), so that printing it
    cannot move the cursor, set a title, clear the screen or reorder what follows.

    Args:
      newlines: keep ``\\n`` (for a multi-line report the grader wrote around untrusted cells).
    """
    text = _text("text", text)
    if text.isprintable() or (newlines and text.replace("\n", "").isprintable()):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if _control(ch) and not (newlines and ch == "\n")
                   else ch for ch in text)


def plot_text(text) -> str:
    """``text`` as a matplotlib label that is drawn as written: every ``$`` escaped, so no mathtext is parsed, and
    control characters shown as escapes (:func:`terminal`)."""
    return terminal(text).replace("$", r"\$")


EXCERPT_CHARS = 100
"""The most of a submission's own words (an exception's message, a returned object's repr) a person reads."""

_DATA = re.compile(r"\d{3,}|[A-Za-z0-9+/=_-]{24,}")


def excerpt(text) -> str:
    """What a person may read of a submission's own words about a visible case: one line, no control character,
    at most :data:`EXCERPT_CHARS`, and data-like content masked (a run of 3 or more digits, a token of 24 or more
    letters and digits such as base64), each by ``…``: enough to name an error, too little to carry data out."""
    text = terminal(" ".join(_text("text", text).split()))
    text = _DATA.sub("…", text)
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS - 1] + "…"


def file_name(name) -> str:
    """A file or folder name for ``name``: ``name`` itself when it is a plain lower-case name (letters, digits,
    ``_``, ``.``, ``-``, at most :data:`NAME_CHARS`, not starting with ``.`` or ``-``, not a device name such as ``con``),
    else a readable slug, ``~`` and :data:`HASH_CHARS` hex digits of the original's SHA-256. Stable: the same name
    always gives the same file; distinct names give distinct files, also where the disk ignores case.

    Examples: ``student03`` → ``student03``; ``ann lee`` → ``ann_lee~<hash>``; ``Ann`` → ``Ann~<hash>``.
    """
    name = _text("name", name)
    if len(name) <= NAME_CHARS and _KEPT.fullmatch(name) and name.split(".")[0] not in _RESERVED:
        return name
    slug = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", slug).lstrip(".-")[:NAME_CHARS] or "_"
    return f"{slug}~{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:HASH_CHARS]}"
