"""The labs on the site: one page per lab notebook, written from the notebook itself.

A page in ``docs/labs/`` holds one fence::

    ```{jtk-lab} 01_coins
    ```

and this extension replaces it, when Sphinx reads the page, with Markdown taken from ``notebooks/01_coins.ipynb``:
the notebook's title and introduction (its first Markdown cell), a link to the lab's interactive page (what
``jtk export`` wrote into ``interactive/`` of the built site: ``.ci/build-site`` exports every lab there), download
links for the notebook and for its exercise (``exercises/01_*.ipynb``), and the exercise's introduction. The
start page (``00_start_here``) gives all of its Markdown cells and its links to the other labs point to their pages.
So the notebooks stay the one source of what each lab teaches.
"""

from __future__ import annotations

import pathlib
import re

import nbformat
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
EXERCISES = ROOT / "exercises"
INTERACTIVE = "interactive"
"""The folder of the built site that holds the exported lab pages (``jtk export --out OUT/interactive``)."""

FENCE = re.compile(r"^```\{jtk-lab\}\s+(\S+)\s*\n```\s*$", re.M)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def exercise_for(stem: str) -> pathlib.Path | None:
    """The exercise notebook of lab ``stem`` (same two-digit number), or None (the start page has none)."""
    found = sorted(EXERCISES.glob(stem[:2] + "_*.ipynb"))
    return found[0] if found else None


def _markdown_cells(path: pathlib.Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def _relink(markdown: str) -> str:
    """Links of a notebook cell, made to work from ``docs/labs/``: a lab notebook → its page, a docs page → that
    page; anything else that is relative becomes plain code text (it is a file of the repository)."""

    def fix(m: re.Match) -> str:
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        resolved = (NOTEBOOKS / path).resolve()
        if resolved.parent == NOTEBOOKS and resolved.suffix == ".ipynb":
            return f"]({resolved.stem}.md{'#' + anchor if anchor else ''})"
        if resolved.parent == ROOT / "docs" and resolved.suffix == ".md":
            return f"](../{resolved.name}{'#' + anchor if anchor else ''})"
        return m.group(0)

    return _LINK.sub(fix, markdown)


def _demote(markdown: str) -> str:
    """Every heading one level down (an exercise's title becomes a section of the lab page)."""
    return re.sub(r"^(#{1,5}) ", r"#\1 ", markdown, flags=re.M)


def _download(path: pathlib.Path) -> str:
    return f"{{download}}`{path.name} <{pathlib.Path('../..', path.relative_to(ROOT)).as_posix()}>`"


def lab_markdown(stem: str) -> str:
    """The Markdown that replaces ``{jtk-lab} stem``."""
    notebook = NOTEBOOKS / f"{stem}.ipynb"
    if not notebook.is_file():
        raise ValueError(f"jtk-lab: no notebook {notebook.relative_to(ROOT)} for the lab {stem!r}")
    cells = _markdown_cells(notebook)
    interactive = f"../{INTERACTIVE}/{stem}.html"
    if stem.startswith("00"):
        body = "\n\n".join(_relink(c) for c in cells)
        return (f"{body}\n\n## The lab pages\n\n"
                f'All labs as interactive pages, without an install: <a href="../{INTERACTIVE}/index.html">the '
                f"exported lab sequence</a> (every app's controls work in the page, from figures computed in "
                f"advance). Each lab's page below links to its own interactive page and to its notebook and "
                f"exercise.\n")
    title, _, intro = cells[0].partition("\n")
    exercise = exercise_for(stem)
    parts = [_relink(title), "", _relink(intro.strip()), "",
             "## Open the lab", "",
             f'* **In the browser, no install:** <a href="{interactive}">the interactive page of this lab</a>, '
             "with the notebook's text, its figures and every app. The controls work in the page, on the values "
             "written under each app.",
             f"* **In JupyterLab:** download the notebook, {_download(notebook)}, or run "
             f"`.venv/bin/jupyter lab notebooks/{notebook.name}` in a checkout (see "
             "{doc}`../start-students`).", ""]
    if exercise is not None:
        ex_cells = _markdown_cells(exercise)
        ex_title, _, ex_intro = ex_cells[0].partition("\n")
        parts += ["## The exercise", "",
                  f"Download {_download(exercise)}, fill in the answer cells and run the check cell under each "
                  "one: it prints a ✓ line, or names the case, the expected and the received value.", "",
                  "**" + ex_title.lstrip("# ").strip() + "**", "", _relink(ex_intro.strip()), ""]
    return "\n".join(parts)


def replace_fences(app, docname: str, source: list[str]) -> None:
    if not docname.startswith("labs/"):
        return

    def expand(m: re.Match) -> str:
        stem = m.group(1)
        for path in [NOTEBOOKS / f"{stem}.ipynb", exercise_for(stem)]:
            if path is not None and path.is_file():
                app.env.note_dependency(str(path))  # a changed notebook rebuilds its page
        try:
            return lab_markdown(stem)
        except (ValueError, OSError) as e:
            logger.warning("%s", e, location=docname, type="jtk_labs")
            return ""

    source[0] = FENCE.sub(expand, source[0])


def setup(app):
    app.connect("source-read", replace_fences)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
