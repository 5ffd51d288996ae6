"""Writes a study's or a benchmark's measured table into its own marked section of a document in docs/.

Every generated section sits between ``<!-- NAME begin -->`` and ``<!-- NAME end -->``; rerunning a script
replaces only its own section (or appends it once), so several scripts can share docs/results.md and a person's
prose around the sections survives regeneration.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from jtk._paths import DOCS


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of section ``name``."""
    return f"<!-- {name} begin -->", f"<!-- {name} end -->"


def write_section(name: str, text: str, path: Path = DOCS / "results.md") -> None:
    """Replaces section ``name`` of ``path`` by ``text`` (appends it if the file has none)."""
    begin, end = markers(name)
    block = f"{begin}\n{text.rstrip()}\n{end}\n"
    old = path.read_text() if path.exists() else ""
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        rest = rest.split(end, 1)[1].lstrip("\n")
        new = head + block + ("\n" + rest if rest else "")  # one blank line before what follows, as appended
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + block
    path.write_text(new)
    print(f"wrote the section {name!r} of {path}")


def publish(name: str, intro: str, table: pd.DataFrame, path: Path, *, load_start: float, write: bool = True,
            floatfmt: str = "{:.3g}") -> str:
    """A benchmark's measured section: ``intro``, the machine (CPU cores, load average at the start and now), the
    table; printed, and written as section ``name`` of ``path`` unless ``write`` is False. Returns the text."""
    text = (f"{intro.rstrip()} {os.cpu_count()} CPU cores, load average {load_start:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end.\n\n" + md_table(table, floatfmt, index=False) + "\n")
    print(text)
    if write:
        write_section(name, text, path)
    return text


def sections(text: str) -> dict[str, str]:
    """All marked sections of a document: name → the whole block, markers included."""
    pattern = re.compile(r"<!-- (\S+) begin -->\n.*?<!-- \1 end -->\n?", re.S)
    return {m.group(1): m.group(0) for m in pattern.finditer(text)}


def md_table(df: pd.DataFrame, floatfmt: str = "{:.3f}", index: bool = True) -> str:
    """A GitHub markdown table (no tabulate dependency); NaN cells are empty."""
    d = df.reset_index() if index else df
    cols = [str(c) for c in d.columns]
    fmt = lambda v: floatfmt.format(v) if isinstance(v, (float, np.floating)) and np.isfinite(v) else (  # noqa: E731
        "" if isinstance(v, float) and np.isnan(v) else str(v))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in d.itertuples(index=False)]
    return "\n".join(lines)
