"""Accessible names the theme leaves out (found by axe-core, WCAG 2.1 A; ``tests/browser/test_accessibility.py``).

pydata-sphinx-theme folds a navigation entry with sub-pages into ``<details>`` whose ``<summary>`` holds only a
chevron icon, so a screen reader announces an unnamed control (axe: ``summary-name``, WCAG 4.1.2). This extension
wraps the theme's ``generate_toctree_html`` and gives each such ``<summary>`` the name "Pages under <entry>".
(The search button's name is fixed in ``docs/_templates/components/search-button-field.html``.)
"""

from __future__ import annotations

from bs4 import BeautifulSoup


def name_summaries(html):
    """``html`` (a string, or the theme's BeautifulSoup, changed in place) with every ``<summary>`` that has no text
    labelled after the link of its list item."""
    soup = html if isinstance(html, BeautifulSoup) else BeautifulSoup(html, "html.parser")
    for summary in soup.find_all("summary"):
        if summary.get_text(strip=True) or summary.get("aria-label"):
            continue
        item = summary.find_parent("li")
        link = item.find("a", recursive=False) if item is not None else None
        title = link.get_text(" ", strip=True) if link is not None else ""
        summary["aria-label"] = f"Pages under {title}" if title else "Show or hide the pages under this entry"
    return soup if soup is html else str(soup)


def _wrap(app, pagename, templatename, context, doctree) -> None:
    generate = context.get("generate_toctree_html")
    if generate is None or getattr(generate, "_jtk_named", False):
        return

    def generate_named(*args, **kwargs):
        out = generate(*args, **kwargs)  # a BeautifulSoup when freshly built, a string when taken from its cache
        return name_summaries(out) if isinstance(out, (str, BeautifulSoup)) else out

    generate_named._jtk_named = True
    context["generate_toctree_html"] = generate_named


def setup(app):
    app.connect("html-page-context", _wrap, priority=600)  # after the theme puts its function in the context (500)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
