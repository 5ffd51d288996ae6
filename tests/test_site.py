"""The course site's sources stay complete, cheaply (no Sphinx): the full build is `.ci/build-site`, run by CI.

* every public module of jtk has its API page in docs/api/, and every API page is a public module;
* every page under docs/ is in a toctree (Sphinx warns otherwise, and the build treats warnings as errors), and
  every toctree entry names a page (or one of conf.py's optional pages);
* every lab notebook has its site page and every lab its exercise;
* the README is a landing page: at most 200 lines, its local links resolve, and it holds the labs table the labs
  page includes;
* `.ci/check-links` finds a broken link, a missing anchor and a remote script, and passes a sound page;
* `.ci/check-source-links` passes README.md and the notebooks of notebooks/, exercises/ and solutions/ (every link,
  anchor, section reference and repository path in them resolves), and finds each kind of broken one.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import pathlib
import re

import jtk

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TOCTREE = re.compile(r"```\{toctree\}\n(.*?)```", re.S)


def public_modules() -> set[str]:
    """Public modules of jtk from its files (no import): no part of the dotted name starts with ``_``."""
    aliases = {f"jtk.{m}" for m in jtk._ALIAS_SUBMODULES}  # no pages
    found = set()
    for path in (ROOT / "jtk").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if not any(p.startswith("_") for p in parts) and name not in aliases:
            found.add(name)
    return found


def test_every_public_module_has_an_api_page_and_every_api_page_a_module():
    pages = {p.stem: p for p in (DOCS / "api").glob("*.rst")}
    modules = public_modules()
    assert {"jtk", "jtk.testbed", "jtk.agents.base", "jtk.widgets.joint"} <= modules
    missing = sorted(modules - set(pages))
    assert not missing, (f"public modules without an API page: {missing}; add docs/api/NAME.rst holding a title and "
                         "'.. jtk-module:: NAME' (see docs/api/jtk.testbed.rst)")
    stale = sorted(set(pages) - modules)
    assert not stale, f"API pages of modules that are not public modules of jtk: {stale}"
    for name, page in pages.items():
        assert f".. jtk-module:: {name}\n" in page.read_text(), f"{page.name} must hold '.. jtk-module:: {name}'"


def _toctree_entries(page: pathlib.Path) -> list[str]:
    """The documents a page's toctrees name, as docnames relative to docs/ (``Title <name>`` entries included)."""
    out = []
    for block in TOCTREE.findall(page.read_text()):
        for line in block.splitlines():
            line = line.strip()
            if not line or line.startswith(":"):
                continue
            m = re.search(r"<([^>]+)>$", line)
            name = m.group(1) if m else line
            out.append((page.parent.relative_to(DOCS) / name).as_posix().removeprefix("./"))
    return out


def _pages() -> set[str]:
    skip = {"_templates", "_static", "_ext"}
    return {p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md")
            if not skip & set(p.relative_to(DOCS).parts)}


def test_every_page_is_in_a_toctree_and_every_entry_is_a_page():
    pages = _pages()
    named = {}
    for page in sorted(DOCS.rglob("*.md")):
        for entry in _toctree_entries(page):
            named.setdefault(entry, page.relative_to(DOCS).as_posix())
    api = {f"api/{m}" for m in public_modules()}
    unknown = sorted(e for e in named if e not in pages and e not in api)
    assert not unknown, f"toctree entries without a page: {[(e, named[e]) for e in unknown]}"
    orphans = sorted(pages - set(named) - {"index"})
    assert not orphans, (f"pages in no toctree (Sphinx warns, and the site build fails): {orphans}; add them to a "
                         "toctree (docs/index.md, docs/guides.md, docs/studies.md, ...)")
    # API pages: jtk and its direct submodules are listed in docs/api/index.md; deeper ones by their package's page
    listed = {e.removeprefix("api/") for e in named if e.startswith("api/")}
    top = {m for m in public_modules() if m.count(".") <= 1}
    assert top <= listed, f"modules missing from docs/api/index.md's toctrees: {sorted(top - listed)}"


def test_every_lab_has_a_page_and_an_exercise():
    labs = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(labs) == 7
    index = (DOCS / "labs" / "index.md").read_text()
    assert "```{jtk-lab} 00_start_here\n```" in index
    entries = set(_toctree_entries(DOCS / "labs" / "index.md"))
    for lab in labs[1:]:
        page = DOCS / "labs" / f"{lab.stem}.md"
        assert page.is_file() and f"```{{jtk-lab}} {lab.stem}\n```" in page.read_text(), page
        assert f"labs/{lab.stem}" in entries, f"docs/labs/index.md's toctree lacks {lab.stem}"
        assert list((ROOT / "exercises").glob(lab.stem[:2] + "_*.ipynb")), f"no exercise for {lab.name}"


def test_readme_is_a_landing_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200, f"README.md has {len(text.splitlines())} lines (at most 200)"
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"^[a-z]+:", link)]
    assert len(local) >= 10, local  # links into the site's pages
    for link in local:
        path = link.split("#")[0]
        assert (ROOT / path).exists(), f"README.md links to {link!r}, which does not exist"
    # The labs page includes the README's labs table between these markers (docs/labs/index.md)
    include = re.search(r":start-after: \"(.*?)\"\n:end-before: \"(.*?)\"", (DOCS / "labs" / "index.md").read_text())
    assert include and include.group(1) in text and include.group(2) in text
    assert ".ci/build-site" in text


def _check_links():
    loader = importlib.machinery.SourceFileLoader("check_links", str(ROOT / ".ci" / "check-links"))
    spec = importlib.util.spec_from_loader("check_links", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_check_links_finds_broken_links_missing_anchors_and_remote_scripts(tmp_path):
    check = _check_links().check
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text('<h1 id="top">t</h1><a name="old"></a>')
    (tmp_path / "style.css").write_text("body { background: url(img/bg.png) }")
    (tmp_path / "index.html").write_text(
        '<link rel="stylesheet" href="style.css"><a href="sub/page.html#top">ok</a> <a href="sub/page.html#old">ok</a> '
        '<a href="#here" id="here">self</a> <a href="https://example.org/">external, followed by the reader</a> '
        '<img src="data:image/png;base64,AAAA" alt="">')
    problems, pages, checked = check(tmp_path)
    assert pages == 2 and checked == 5
    assert problems == ["style.css:1: 'img/bg.png': no file img/bg.png"]
    (tmp_path / "style.css").write_text("")
    (tmp_path / "bad.html").write_text(
        '<a href="sub/page.html#nowhere">x</a>\n<a href="missing.html">y</a>\n'
        '<script src="https://cdn.example.org/mathjax.js"></script>')
    problems, _, _ = check(tmp_path)
    assert problems == [
        "bad.html:1: 'sub/page.html#nowhere': sub/page.html has no element with id 'nowhere'",
        "bad.html:2: 'missing.html': no file missing.html",
        "bad.html:3: loads 'https://cdn.example.org/mathjax.js' from the network (the site must work offline)",
    ]


def test_build_site_is_what_ci_runs():
    script = ROOT / ".ci" / "build-site"
    assert script.is_file() and script.stat().st_mode & 0o111
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".ci/build-site build/site" in ci
    assert 'pip install -c constraints.txt -e ".[docs]"' in ci


def _check_source_links():
    loader = importlib.machinery.SourceFileLoader("check_source_links", str(ROOT / ".ci" / "check-source-links"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("check_source_links", loader))
    loader.exec_module(module)
    return module


def test_readme_and_notebooks_references_resolve():
    problems, checked = _check_source_links().check(ROOT)
    assert not problems, "\n".join(problems)
    assert checked >= 20, checked


def _notebook(*markdown: str) -> str:
    import json

    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": m} for m in markdown],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_check_source_links_finds_each_kind_of_broken_reference(tmp_path):
    module = _check_source_links()
    (tmp_path / "docs").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Evaluate your own agent\n\ntext\n")
    (tmp_path / "README.md").write_text("# jtk\n\n## Quickstart\n\n[guide](docs/guide.md#evaluate-your-own-agent)\n")
    (tmp_path / "notebooks" / "00_start.ipynb").write_text(_notebook(
        "## Intro\nSee `docs/guide.md`, section \"Evaluate your own agent\", and [up](#intro).",
        "Read the README section \"Quickstart\"; ```\n[not a link](nowhere.md)\n```"))
    problems, checked = module.check(tmp_path)
    assert problems == [] and checked == 5, problems
    (tmp_path / "notebooks" / "01_lab.ipynb").write_text(_notebook(
        "[gone](../docs/old.md) [moved](../docs/guide.md#class-challenge) [self](#nowhere)",
        "the README section \"Labs without an install\" and `docs/guide.md`, section \"Quickstart\"",
        "a section \"Missing\" of this page; `benchmarks/results/none.csv`"))
    problems, _ = module.check(tmp_path)
    text = "\n".join(problems)
    assert "no file '../docs/old.md'" in text and "#class-challenge" in text and "#nowhere" in text
    assert "README.md has no section 'Labs without an install'" in text
    assert "docs/guide.md has no section 'Quickstart'" in text
    assert "01_lab.ipynb has no section 'Missing'" in text and "'benchmarks/results/none.csv' does not exist" in text
    assert len(problems) == 7, problems
