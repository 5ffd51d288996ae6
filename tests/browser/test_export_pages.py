"""Exported pages (``jtk export``) in Debian's Chromium: opened from disk with the network off, every control moved.

The site is exported once for the session: the notebooks named in ``$JTK_EXPORT_NOTEBOOKS`` (comma-separated stems,
default ``01_coins``; ``all`` for every lab), or taken as it is from ``$JTK_EXPORT_SITE`` when that names a folder
already exported. Each page is opened as ``file://`` in a context that is offline; every request the page makes is
logged and must be a ``file:`` or ``data:`` URL; the browser's console must show no error. Every control of every
app is moved, from the page's initial state, to a few of its other values and the app's figure must change;
the time from the move to the new frame decoded is recorded: the median move of each page must take ≤ 100 ms and
no move more than 500 ms. Pages must be ≤ 25 MB, the site ≤ 100 MB. One screenshot per page goes to
``$JTK_ARTIFACTS/export/`` (default ``test-artifacts/export/``), with ``latency.json`` beside it.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from jtk.course import export

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = pathlib.Path(os.environ.get("JTK_ARTIFACTS", ROOT / "test-artifacts")) / "export"
LATENCY_TARGET_MS = 100.0  # the median move of each page
LATENCY_LIMIT_MS = 500.0  # any single move
MOVES_PER_CONTROL = 3

pytestmark = pytest.mark.browser


def _stems() -> list[str]:
    wanted = os.environ.get("JTK_EXPORT_NOTEBOOKS", "01_coins").strip()
    if wanted == "all":
        return [p.stem for p in export.lab_notebooks(ROOT / "notebooks")]
    return [s.strip() for s in wanted.split(",") if s.strip()]


@pytest.fixture(scope="session")
def site(tmp_path_factory, chromium) -> pathlib.Path:
    given = os.environ.get("JTK_EXPORT_SITE")
    if given and pathlib.Path(given, "index.html").is_file():
        return pathlib.Path(given).resolve()  # a relative $JTK_EXPORT_SITE (as .ci/run gives) becomes a file:// URI
    out = tmp_path_factory.mktemp("site")
    export.export_site([ROOT / "notebooks" / f"{s}.ipynb" for s in _stems()], out)
    return out


# Moves control ``i`` of app ``appId`` to value ``v`` and resolves, once every image of the app is decoded, with the
# milliseconds it took and the app's frame key and view contents before and after.
MOVE_JS = """
async ([appId, i, v]) => {
  const root = document.getElementById(appId);
  const el = root.querySelectorAll('.jtk-control')[i];
  const views = () => [...root.querySelectorAll('.jtk-view')].map(e => e.dataset.ci);
  const before = {key: root.dataset.key, views: views()};
  const t0 = performance.now();
  const kind = el.dataset.kind;
  if (kind === 'range') { el.value = String(v); el.dispatchEvent(new Event('input')); }
  else if (kind === 'select') { el.value = String(v); el.dispatchEvent(new Event('change')); }
  else if (kind === 'checkbox') { el.checked = !el.checked; el.dispatchEvent(new Event('change')); }
  else if (kind === 'toggle') { el.querySelectorAll('button')[v].click(); }
  else { el.click(); }
  await Promise.all([...root.querySelectorAll('.jtk-view img')].map(img => img.decode()));
  const ms = performance.now() - t0;
  return {ms, before, after: {key: root.dataset.key, views: views()}};
}
"""

CONTROLS_JS = """
() => [...document.querySelectorAll('.jtk-app')].map(app => ({
  id: app.id, title: app.dataset.title,
  controls: [...app.querySelectorAll('.jtk-control')].map(el => ({
    kind: el.dataset.kind, name: el.dataset.control, fixed: el.dataset.fixed === '1',
    n: el.dataset.kind === 'range' ? +el.max + 1 : el.dataset.kind === 'select' ? el.options.length
       : el.dataset.kind === 'toggle' ? el.querySelectorAll('button').length : 2,
    value: el.dataset.kind === 'range' || el.dataset.kind === 'select' ? +el.value
       : el.dataset.kind === 'toggle' ? [...el.querySelectorAll('button')].findIndex(b => b.getAttribute('aria-pressed') === 'true') : 0,
  }))}))
"""


def _targets(control: dict) -> list[int]:
    """Values to move a control to: its other values, spread over its range, at most MOVES_PER_CONTROL."""
    others = [v for v in range(control["n"]) if v != control["value"]]
    if control["kind"] in ("checkbox", "counter", "reset"):
        return [0] * (1 if control["kind"] != "counter" else 2)
    step = max(1, len(others) // MOVES_PER_CONTROL)
    return others[::step][:MOVES_PER_CONTROL]


def test_exported_pages_work_offline_in_a_real_browser(site, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages = sorted(p for p in site.glob("*.html") if p.name != "index.html")
    assert pages, f"no page exported into {site}"
    sizes = {p.name: p.stat().st_size for p in site.glob("*.html")}
    assert max(sizes.values()) <= 25e6, f"a page over 25 MB: {sizes}"  # the bounds
    assert sum(sizes.values()) <= 100e6, f"the site is over 100 MB: {sum(sizes.values())} bytes"
    report: dict[str, dict] = {}
    for page_path in [site / "index.html", *pages]:
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.set_offline(True)
        requests: list[str] = []
        console: list[str] = []
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: console.append(f"{m.text} ({m.location})") if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
        try:
            page.goto(page_path.as_uri(), wait_until="load")
            apps = page.evaluate(CONTROLS_JS)
            moves: list[dict] = []
            for app in apps:
                if app["controls"]:
                    page.locator(f"#{app['id']}").scroll_into_view_if_needed()
                for i, control in enumerate(app["controls"]):
                    if control["fixed"]:  # one exported value (the page says so): nothing to move
                        continue
                    changed = False
                    for v in _targets(control):
                        r = page.evaluate(MOVE_JS, [app["id"], i, v])
                        moves.append({"app": app["title"], "control": control["name"], "ms": r["ms"]})
                        if control["kind"] == "reset":  # "start over": back to no presses, changed or not
                            changed = True
                            continue
                        assert r["after"]["key"] != r["before"]["key"], (page_path.name, app["title"], control)
                        changed = changed or r["after"]["views"] != r["before"]["views"]
                    assert changed, f"{page_path.name}: moving {control['name']} of {app['title']} changed nothing"
                    page.reload(wait_until="load")  # the next control moves from the page's initial state
            if page_path.name != "index.html":
                first = page.locator(".jtk-app").first
                if apps:
                    first.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"{page_path.stem}.png"))
            foreign = [u for u in requests if not u.startswith(("file:", "data:"))]
            assert not foreign, f"{page_path.name} made network requests: {foreign}"
            assert not console, f"{page_path.name}: console errors: {console}"
            if page_path.name != "index.html":
                assert apps or page_path.stem.startswith("00_"), f"{page_path.name} has no app"
            report[page_path.name] = {
                "bytes": page_path.stat().st_size, "apps": len(apps), "moves": len(moves),
                "max_ms": max((m["ms"] for m in moves), default=0.0),
                "median_ms": sorted(m["ms"] for m in moves)[len(moves) // 2] if moves else 0.0,
                "per_control_max_ms": {f"{m['app']} / {m['control']}": max(
                    x["ms"] for x in moves if (x["app"], x["control"]) == (m["app"], m["control"])) for m in moves},
            }
        finally:
            context.close()
    (ARTIFACTS / "latency.json").write_text(json.dumps(report, indent=1))
    # The target holds for the median move of every page; a single move may take longer on a loaded machine (the
    # CI host is shared), but never LATENCY_LIMIT_MS: that would be a page doing real work on a move.
    slow = {k: v["median_ms"] for k, v in report.items() if v["median_ms"] > LATENCY_TARGET_MS}
    assert not slow, f"the median move took longer than {LATENCY_TARGET_MS} ms to show its frame: {slow}"
    stuck = {k: v["max_ms"] for k, v in report.items() if v["max_ms"] > LATENCY_LIMIT_MS}
    assert not stuck, f"a move took longer than {LATENCY_LIMIT_MS} ms to show its frame: {stuck}"
    if os.environ.get("JTK_EXPORT_KEEP"):
        shutil.copytree(site, ARTIFACTS / "site", dirs_exist_ok=True)
