"""WCAG 2.1 A/AA in Debian's Chromium: axe-core on every page of a site, and every lab control by keyboard alone.

The folder is ``$JTK_A11Y_SITE`` (else ``$JTK_EXPORT_SITE``, else lab 01 exported for the session, as in
``test_export_pages.py``). Every ``.html`` file under it, at any depth, is a page: the exported labs and, when the
folder is the course site, every page of the site.

* **axe-core** (npm, pinned in ``tests/browser/package.json``; ``npm ci --prefix tests/browser`` installs it) is
  injected into each page, opened from disk with the network off, and run with the rule tags :data:`AXE_TAGS`. Any
  violation fails the test, listed with its rule id, impact and the selectors of the offending elements.
* **Keyboard.** On every page with exported apps (``.jtk-app``), Tab is pressed from the top of the page until focus
  wraps around: every enabled control of every app must be reached, must show a focus ring (a computed outline or
  box-shadow while focused from the keyboard) and must have an accessible name (Playwright's ARIA snapshot, the
  browser's own computation) that contains the control's label. Each control is then operated from the keyboard —
  arrow keys for sliders and drop-downs, Space for check boxes, Enter or Space for buttons — and the app's frame must
  change.

Results go to ``$JTK_ARTIFACTS/a11y/`` (default ``test-artifacts/a11y/``): ``axe.json`` (per page: rules run,
violations, time), ``keyboard.json`` (per page: controls reached, operated, names), a screenshot at 1366×768 of
each lab page with its first app in view, and of the site's home page and one API page (:data:`SCREENSHOT_PAGES`).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import time

import pytest

from jtk.course import export

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = pathlib.Path(os.environ.get("JTK_ARTIFACTS", ROOT / "test-artifacts")) / "a11y"
AXE_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
"""The rule sets run: WCAG 2.0 and 2.1, levels A and AA (the issue's bar; axe's best practices are not run)."""

VIEWPORT = {"width": 1366, "height": 768}
SCREENSHOT_PAGES = ("index.html", "api/jtk.testbed.html")
"""Pages of the course site also kept as a screenshot at :data:`VIEWPORT` (the home page and one API page; the lab
pages' screenshots come from the keyboard test)."""
MAX_TABS = 400  # Tab presses before giving up on focus wrapping around (a lab page has a few dozen stops)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def a11y_site(tmp_path_factory, chromium) -> pathlib.Path:
    """The folder whose pages are checked: ``$JTK_A11Y_SITE``, ``$JTK_EXPORT_SITE``, or lab 01 exported now."""
    for var in ("JTK_A11Y_SITE", "JTK_EXPORT_SITE"):
        given = os.environ.get(var)
        if given:
            path = pathlib.Path(given).resolve()
            if not path.is_dir():
                pytest.fail(f"${var} must name a folder of HTML pages, got {given!r}", pytrace=False)
            return path
    out = tmp_path_factory.mktemp("a11y-site")
    export.export_site([ROOT / "notebooks" / "01_coins.ipynb"], out)
    return out


def site_pages(folder: pathlib.Path) -> list[pathlib.Path]:
    """Every HTML page under ``folder``, at any depth, in path order."""
    return sorted(p for p in folder.rglob("*.html") if p.is_file())


def _open(browser, page_path: pathlib.Path):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_offline(True)
    page = context.new_page()
    page.goto(page_path.as_uri(), wait_until="load")
    return context, page


RUN_AXE_JS = """
async (tags) => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
                                     iframes: false});
  return {violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, tags: v.tags,
                                             nodes: v.nodes.map(n => ({target: n.target.join(' '),
                                                                        summary: n.failureSummary}))})),
          rules: [...r.passes, ...r.violations, ...r.incomplete, ...r.inapplicable].map(x => x.id),
          version: axe.version};
}
"""


def format_violations(name: str, violations: list[dict], limit: int = 8) -> str:
    """One block per violated rule: id, impact, help, element count and the first ``limit`` selectors."""
    lines = []
    for v in violations:
        lines.append(f"{name}: {v['id']} ({v['impact']}, {len(v['nodes'])} elements): {v['help']}")
        for n in v["nodes"][:limit]:
            lines.append(f"    {n['target']}")
        if len(v["nodes"]) > limit:
            lines.append(f"    … and {len(v['nodes']) - limit} more")
    return "\n".join(lines)


def test_every_page_passes_axe_core_wcag_2_1_aa(a11y_site, browser, axe_source):
    pages = site_pages(a11y_site)
    assert pages, f"no .html page under {a11y_site}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    report, failures = {}, []
    for page_path in pages:
        name = str(page_path.relative_to(a11y_site))
        context, page = _open(browser, page_path)
        try:
            page.add_script_tag(content=axe_source)
            start = time.perf_counter()
            result = page.evaluate(RUN_AXE_JS, list(AXE_TAGS))
            seconds = time.perf_counter() - start
            if name in SCREENSHOT_PAGES:  # after axe, which changes nothing on the page
                page.screenshot(path=str(ARTIFACTS / f"site-{name.replace('/', '-').removesuffix('.html')}.png"))
        finally:
            context.close()
        report[name] = {"axe": result["version"], "tags": list(AXE_TAGS), "rules_run": len(set(result["rules"])),
                        "violations": result["violations"], "elements": sum(len(v["nodes"])
                                                                            for v in result["violations"]),
                        "seconds": round(seconds, 2)}
        if result["violations"]:
            failures.append(format_violations(name, result["violations"]))
    (ARTIFACTS / "axe.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    total = sum(r["elements"] for r in report.values())
    assert not failures, (f"axe-core found {total} violating elements on {len(failures)} of {len(pages)} pages:\n"
                          + "\n".join(failures))


# ------------------------------------------------------------------ keyboard
# What has focus now: the app and control it belongs to (a toggle group's buttons report their group), whether it
# is the page's body (focus wrapped around), and the computed focus indicator.
FOCUSED_JS = """
() => {
  const el = document.activeElement;
  if (!el || el === document.body) return {body: true};
  const control = el.closest('.jtk-control'), app = el.closest('.jtk-app');
  const s = getComputedStyle(el);
  return {body: false, tag: el.tagName.toLowerCase(), app: app ? app.id : null,
          control: control ? control.dataset.control : null, kind: control ? control.dataset.kind : null,
          controlId: control ? control.id : null,
          button: control && control !== el ? [...control.querySelectorAll('button')].indexOf(el) : -1,
          focusVisible: el.matches(':focus-visible'),
          outline: {style: s.outlineStyle, width: parseFloat(s.outlineWidth) || 0, color: s.outlineColor},
          boxShadow: s.boxShadow};
}
"""

CONTROLS_JS = """
() => [...document.querySelectorAll('.jtk-app')].map(app => ({id: app.id, title: app.dataset.title,
  controls: [...app.querySelectorAll('.jtk-control')].map(el => ({name: el.dataset.control, kind: el.dataset.kind,
    label: el.dataset.label || '', disabled: el.disabled === true || el.dataset.fixed === '1',
    buttons: el.querySelectorAll('button').length}))}))
"""

STATE_JS = "(appId) => document.getElementById(appId).dataset.key"


def _visible_ring(focused: dict) -> bool:
    outline, shadow = focused["outline"], focused["boxShadow"]
    return (outline["style"] not in ("none", "") and outline["width"] >= 2) or (shadow not in ("none", "")
                                                                                  and shadow)


def _accessible_name(locator) -> tuple[str, str]:
    """(role, name) of an element, from Playwright's ARIA snapshot (``- slider "flips n": "3"``)."""
    snap = locator.aria_snapshot().strip().splitlines()[0]
    m = re.match(r'-\s*(\w+)(?:\s+"((?:[^"\\]|\\.)*)")?', snap)
    return (m.group(1), m.group(2) or "") if m else ("", "")


def _operate(page, stop: dict) -> None:
    """Changes the focused control from the keyboard: arrows for sliders and drop-downs, Space or Enter else."""
    kind = stop["kind"]
    if kind == "range":
        at_end = page.evaluate("() => +document.activeElement.value >= +document.activeElement.max")
        page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
    elif kind == "select":
        at_end = page.evaluate("() => document.activeElement.selectedIndex >= document.activeElement.length - 1")
        page.keyboard.press("ArrowUp" if at_end else "ArrowDown")
    elif kind == "checkbox":
        page.keyboard.press("Space")
    else:  # buttons: a toggle group's button, a counter, "start over"
        page.keyboard.press("Enter")


def test_every_control_of_every_lab_page_works_from_the_keyboard(a11y_site, browser):
    labs = [p for p in site_pages(a11y_site) if 'class="jtk-app"' in p.read_text(encoding="utf-8",
                                                                                  errors="replace")]
    if not labs:
        pytest.skip(f"no page with an exported app under {a11y_site}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    report, problems = {}, []
    for page_path in labs:
        name = str(page_path.relative_to(a11y_site))
        context, page = _open(browser, page_path)
        try:
            apps = page.evaluate(CONTROLS_JS)
            expected = {(a["id"], c["name"]) for a in apps for c in a["controls"] if not c["disabled"]}
            labels = {(a["id"], c["name"]): c["label"] for a in apps for c in a["controls"]}
            reached, operated, names, rings = set(), set(), {}, []
            page.locator("body").focus()
            for _ in range(MAX_TABS):
                page.keyboard.press("Tab")
                stop = page.evaluate(FOCUSED_JS)
                if stop["body"]:
                    if reached:  # focus went past the last stop: every stop has been visited
                        break
                    continue
                if stop["control"] is None:
                    continue
                key = (stop["app"], stop["control"])
                rings.append(_visible_ring(stop) and stop["focusVisible"])
                if not rings[-1]:
                    problems.append(f"{name}: {key} has no visible focus ring when focused by Tab: "
                                    f"outline {stop['outline']}, box-shadow {stop['boxShadow']}")
                role, accessible = _accessible_name(page.locator("*:focus"))
                if stop["kind"] == "toggle":  # a button of a labelled group: its own name is its value
                    if not accessible:
                        problems.append(f"{name}: a button of {key} has no accessible name")
                    role, accessible = _accessible_name(page.locator(f"[id='{stop['controlId']}']"))
                names.setdefault(f"{key[0]} / {key[1]}", []).append(f"{role} {accessible!r}")
                if not accessible or labels[key].lower() not in accessible.lower():
                    problems.append(f"{name}: {key} has the accessible name {accessible!r} (role {role}), "
                                    f"which lacks its label {labels[key]!r}")
                reached.add(key)
                if key in operated or (stop["kind"] == "toggle" and page.evaluate(
                        "() => document.activeElement.getAttribute('aria-pressed') === 'true'")):
                    continue  # one operation per control; a toggle group is operated on a button not yet pressed
                before = page.evaluate(STATE_JS, stop["app"])
                _operate(page, stop)
                after = page.evaluate(STATE_JS, stop["app"])
                if stop["kind"] == "reset":
                    operated.add(key)  # "start over" from the initial state leaves the key where it was
                elif after != before:
                    operated.add(key)
                else:
                    problems.append(f"{name}: {key} ({stop['kind']}) did not change the app from the keyboard")
            missing = expected - reached
            if missing:
                problems.append(f"{name}: Tab never reached {sorted(missing)}")
            not_operated = expected - operated
            if not_operated:
                problems.append(f"{name}: not operated from the keyboard: {sorted(not_operated)}")
            report[name] = {"controls": len(expected), "reached": len(reached & expected),
                            "operated": len(operated & expected), "focus_rings": f"{sum(rings)}/{len(rings)}",
                            "names": names}
            # The screenshot: the page as loaded, Tab pressed until the first app's first control has focus (its
            # focus ring shows), that app scrolled into view.
            page.reload(wait_until="load")
            page.locator("body").focus()
            for _ in range(MAX_TABS):
                page.keyboard.press("Tab")
                if page.evaluate(FOCUSED_JS).get("control") is not None:
                    break
            page.locator(".jtk-app").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{page_path.stem}.png"))
        finally:
            context.close()
    (ARTIFACTS / "keyboard.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    assert not problems, "\n".join(problems)
