"""Code cites docs as ``docs/<page>.md, "<section>"``: every such section must exist in that page.

A renamed or rewritten section otherwise leaves docstrings and comments pointing at nothing (two did: they cited a
platforms page section, Training near the matrix rate, that was never written under that name).
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CITATION = re.compile(r'(docs/[\w-]+\.md),\s+"([^"\n]+)"')
SOURCES = sorted(p for folder in ("jtk", "benchmarks", "examples", "tests") for p in (ROOT / folder).rglob("*.py"))


def _citations():
    found = []
    for path in SOURCES:
        text = re.sub(r"\s*\n\s*(#:?\s*)?", " ", path.read_text())  # citations wrap across lines and comments
        found += [(path.relative_to(ROOT).as_posix(), page, section) for page, section in CITATION.findall(text)]
    return found


CITATIONS = _citations()


def test_the_code_cites_docs_sections():
    assert len(CITATIONS) > 20, CITATIONS  # the pattern still finds the citations it guards


@pytest.mark.parametrize("where,page,section", CITATIONS, ids=[f"{w}:{s}" for w, _, s in CITATIONS])
def test_every_cited_docs_section_exists(where, page, section):
    path = ROOT / page
    assert path.exists(), f"{where} cites {page}, which does not exist"
    text = re.sub(r"\s+", " ", path.read_text())
    assert section in text, f"{where} cites {page}, \"{section}\": no such section or paragraph there"
