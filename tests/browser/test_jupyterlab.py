"""The joint-predictions notebook in a real JupyterLab, driven in a real browser.

Starts ``jupyter lab`` on the loopback interface (fresh config, runtime, settings and workspace directories; see
``conftest.py``) with a copy of the notebook, drives Debian's Chromium (Playwright with ``executable_path``; no
browser download), waits until the notebook's kernel is connected and idle, clears the saved outputs, runs all
cells, moves the temperature and τ sliders, and checks that the rendered figure changes and that no error appears
(in the notebook, in JupyterLab's log console, where widget callbacks report, or in the server's log).
Screenshots go to ``$JTK_ARTIFACTS`` (default ``test-artifacts/``).

Not in the default run (``-m 'not browser'`` in pyproject.toml); ``.ci/run`` runs it as its own step with
``JTK_REQUIRE_BROWSER=1 .venv/bin/pytest -m browser tests/browser``, so a missing Chromium fails CI.

Why it waits the way it does: JupyterLab's toolbar execution indicator says ``idle`` even while the notebook has
no kernel yet, and a "Run All" issued then runs nothing, or only the first cell (JupyterLab starts the kernel
itself, or asks which kernel to start, and clears the other cells' execution). The notebook also carries saved
outputs and saved widget state, so prompts ``[1]``..``[5]``, sliders and figures can be on the page although
nothing ran. The test therefore asks JupyterLab itself (its
session context, via ``window.jupyterapp``) whether the kernel is connected and idle, clears all outputs, and
counts a cell as run only once it has a new execution count.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = "02_joint_predictions.ipynb"
ARTIFACTS = pathlib.Path(os.environ.get("JTK_ARTIFACTS", ROOT / "test-artifacts"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BUDGET_S = 240  # everything after JupyterLab has started (at most 90 s): a stuck run fails within about 5 minutes

pytestmark = pytest.mark.browser

# The notebook panel as JupyterLab sees it: kernel state from its session context, execution counts from its model.
STATE_JS = """(path) => {
  const app = window.jupyterapp;
  const dialogs = Array.from(document.querySelectorAll('.jp-Dialog')).map(
      d => (d.querySelector('.jp-Dialog-header') || d).textContent.trim());
  if (!app) return {app: false, dialogs};
  const panel = Array.from(app.shell.widgets('main')).find(
      w => w.sessionContext && w.content && w.content.model && w.context && w.context.path === path);
  if (!panel) return {app: true, panel: false, dialogs};
  const sc = panel.sessionContext;
  const kernel = sc.session ? sc.session.kernel : null;
  const counts = [];
  for (const cell of panel.content.model.cells) {
    if (cell.type === 'code') counts.push(cell.executionCount === undefined ? null : cell.executionCount);
  }
  const prompts = Array.from(panel.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt'))
      .map(e => e.textContent.trim());
  const indicator = panel.node.querySelector('.jp-Notebook-ExecutionIndicator');
  return {
    app: true, panel: true, dialogs, ready: sc.isReady, noKernel: sc.hasNoKernel, kernelName: sc.kernelDisplayName,
    status: kernel ? kernel.status : null, connection: kernel ? kernel.connectionStatus : null,
    indicator: indicator ? indicator.dataset.status : null, counts, prompts,
    runAll: window.__jtkRunAll === undefined ? null : String(window.__jtkRunAll),
  };
}"""

# Runs a JupyterLab command on this notebook (activated first). With wait=false it returns at once and the result
# lands in window.__jtkRunAll (notebook:run-all-cells resolves, once the cells have run, to false when it could not
# run them all).
COMMAND_JS = """([path, command, wait]) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  app.shell.activateById(panel.id);
  window.__jtkRunAll = undefined;
  const done = app.commands.execute(command).then(r => { window.__jtkRunAll = r; return true; },
                                                  e => { window.__jtkRunAll = 'error: ' + e; return false; });
  return wait ? done : null;
}"""

# Start the notebook's preferred kernel when JupyterLab has not started one by itself.
START_KERNEL_JS = """(path) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  const sc = panel.sessionContext;
  sc.changeKernel({name: sc.kernelPreference.name || 'python3'});
}"""

# Content digests of the rendered images (matplotlib outputs and the app's Image widgets): a changed figure is a
# changed PNG, not merely a new blob URL.
DIGESTS_JS = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('.jp-NotebookPanel img')) {
    if (!img.src) continue;
    const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    let h = 0x811c9dc5;
    for (const b of bytes) { h ^= b; h = Math.imul(h, 0x01000193) >>> 0; }
    out.push(bytes.length + ':' + h.toString(16));
  }
  return out;
}"""


class Budget:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def deadline(self, seconds: float) -> float:
        return min(time.monotonic() + seconds, self.end)

    def ms(self, seconds: float) -> float:
        """A Playwright timeout: ``seconds``, or what is left of the budget if less."""
        return max(1.0, self.deadline(seconds) - time.monotonic()) * 1000


def _state(page) -> dict:
    return page.evaluate(STATE_JS, NOTEBOOK)


def _dismiss_toasts(page) -> None:
    for button in page.locator(".Toastify__toast .Toastify__close-button").all():
        try:
            button.click(timeout=1000)
        except Exception:  # noqa: BLE001 - the toast may have gone by itself
            pass


def _handle_dialogs(page, state: dict) -> None:
    """Accepts JupyterLab's kernel choice (its default is the notebook's kernel); any other dialog is a failure."""
    for title in state.get("dialogs", []):
        if "kernel" in title.lower() and "select" in title.lower():
            page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept").first.click()
            time.sleep(0.5)
        else:
            raise AssertionError(f"unexpected JupyterLab dialog: {title!r}")


def _wait_for_kernel(page, budget: Budget, timeout: float = 150.0) -> dict:
    """Until the notebook's kernel is connected and idle, twice in a row (0.5 s apart) and shown so in the toolbar."""
    deadline, started_by_us, no_kernel_since, idle_polls = budget.deadline(timeout), False, None, 0
    state: dict = {}
    while time.monotonic() < deadline:
        state = _state(page)
        _handle_dialogs(page, state)
        _dismiss_toasts(page)
        if state.get("panel"):
            if state["noKernel"] and not state["dialogs"]:
                no_kernel_since = no_kernel_since or time.monotonic()
                if not started_by_us and time.monotonic() - no_kernel_since > 20:
                    page.evaluate(START_KERNEL_JS, NOTEBOOK)  # JupyterLab started none by itself: do it
                    started_by_us = True
            else:
                no_kernel_since = None
            ok = (state["ready"] and not state["noKernel"] and state["status"] == "idle"
                  and state["connection"] == "connected" and state["indicator"] == "idle")
            idle_polls = idle_polls + 1 if ok else 0
            if idle_polls >= 2:
                return state
        time.sleep(0.5)
    raise AssertionError(f"the notebook's kernel was not connected and idle in time: {state}")


def _run_all(page, budget: Budget) -> dict:
    """Clears all outputs, runs all cells and waits until every code cell has an execution count.

    If not every cell ran (JupyterLab's command finished without an error but left cells without an execution count,
    or the kernel stayed idle for 30 s with no cell run or queued), waits for the kernel again and retries once.
    """
    for attempt in (1, 2):
        assert page.evaluate(COMMAND_JS, [NOTEBOOK, "notebook:clear-all-cell-outputs", True])
        state = _state(page)
        assert all(c is None for c in state["counts"]), f"outputs were not cleared: {state}"
        assert page.locator(".jp-NotebookPanel .widget-slider").count() == 0, "saved widgets still shown"
        page.evaluate(COMMAND_JS, [NOTEBOOK, "notebook:run-all-cells", False])
        started, deadline, done_polls = time.monotonic(), budget.deadline(200), 0
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"cells did not finish running: {state}")
            time.sleep(0.5)
            state = _state(page)
            _handle_dialogs(page, state)
            counts, running = state["counts"], any("*" in p for p in state["prompts"])
            done = all(isinstance(c, int) for c in counts) and not running and state["status"] == "idle"
            done_polls = done_polls + 1 if done else 0
            if done_polls >= 2:  # twice in a row: not a pause between two cells
                return state
            if state["runAll"] is not None and not done and not running and state["status"] == "idle":
                errors = _errors(page)
                assert not errors, f"a cell failed: {errors}"
                break  # the command has finished, without running every cell
            nothing_ran = all(c is None for c in counts) and not running
            if nothing_ran and state["status"] == "idle" and time.monotonic() - started > 30:
                break
        if attempt == 1:
            print(f"Run All did not run every cell ({state}); waiting for the kernel and retrying once")
            _wait_for_kernel(page, budget)
    raise AssertionError(f"Run All Cells did not run every cell, twice: {state}")


def _wait_for_idle(page, budget: Budget, timeout: float = 120.0) -> None:
    """Until the kernel has been idle for 1 s (slider callbacks, e.g. refitting the agents, have finished)."""
    deadline, since = budget.deadline(timeout), None
    while time.monotonic() < deadline:
        if _state(page)["status"] == "idle":
            since = since or time.monotonic()
            if time.monotonic() - since >= 1.0:
                return
        else:
            since = None
        time.sleep(0.2)
    raise AssertionError(f"the kernel did not go idle: {_state(page)}")


def _move_slider(page, label: str, presses: int) -> None:
    """Focuses the slider whose description contains ``label`` and moves it with the keyboard."""
    slider = _slider(page, label)
    slider.scroll_into_view_if_needed()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(presses):
        handle.press("ArrowRight")
        time.sleep(0.1)


def _wait_for_change(page, before: list[str], budget: Budget, timeout: float = 60.0) -> list[str]:
    deadline = budget.deadline(timeout)
    while time.monotonic() < deadline:
        if page.evaluate(DIGESTS_JS) != before:
            break
        time.sleep(0.3)
    return page.evaluate(DIGESTS_JS)


def _errors(page) -> list[str]:
    texts = page.eval_on_selector_all(".jp-NotebookPanel .jp-OutputArea-output", "els => els.map(e => e.innerText)")
    return [t for t in texts if _is_error(t)]


def _is_error(text: str) -> bool:
    return "Traceback" in text or "Error:" in text


def _log_console_errors(page) -> list[str]:
    """What JupyterLab's log console shows for the notebook: output that belongs to no cell, such as an exception
    (or a warning) raised in a widget callback, lands there and neither in the page nor in the server's log."""
    assert page.evaluate(COMMAND_JS, [NOTEBOOK, "logconsole:open", True])
    page.wait_for_selector(".jp-LogConsolePanel", state="attached")
    time.sleep(1.0)  # let it render the entries it already holds
    texts = page.eval_on_selector_all(".jp-LogConsolePanel .jp-OutputArea-output", "els => els.map(e => e.innerText)")
    return [t for t in texts if _is_error(t)]


def _slider(page, label: str):
    return page.locator(".jp-NotebookPanel .widget-slider", has=page.locator(".widget-label", has_text=label)).first


def _screenshot(page, name: str, label: str = "temperature") -> None:
    """The whole window, scrolled so that the slider ``label`` is at the top (the figure it drives is below it)."""
    slider = _slider(page, label)
    if slider.count():
        slider.evaluate("""e => {
          e.scrollIntoView({block: 'start'});
          let scroller = e.parentElement;  // leave its row clear of the notebook's top edge
          while (scroller && scroller.scrollHeight <= scroller.clientHeight) scroller = scroller.parentElement;
          if (scroller) scroller.scrollTop -= 40;
        }""")
        time.sleep(0.3)
    page.screenshot(path=str(ARTIFACTS / name))


def _save_failure(page, lab) -> None:
    """The page and the server's log (kernel included) into the artifacts, for a failed run."""
    try:
        shutil.copy(lab.log, ARTIFACTS / "browser_failure_lab.log")
        page.screenshot(path=str(ARTIFACTS / "browser_failure.png"), timeout=10_000)
    except Exception as e:  # noqa: BLE001 - never hide the test's own failure
        print(f"could not save the failure artifacts: {e}")


def test_sliders_update_the_figure_in_a_real_browser(jupyter_lab, chromium):
    from playwright.sync_api import sync_playwright

    budget = Budget(BUDGET_S)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("browser_*"):
        old.unlink()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, jupyter_lab.root / NOTEBOOK)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(30_000)
        try:
            page.goto(jupyter_lab.url(NOTEBOOK), timeout=budget.ms(90))
            page.wait_for_function("() => window.jupyterapp !== undefined", timeout=budget.ms(90))
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=budget.ms(90))
            _wait_for_kernel(page, budget)
            state = _run_all(page, budget)
            assert len(state["counts"]) == 5 and len(set(state["counts"])) == 5, state

            page.wait_for_selector(".jp-NotebookPanel .widget-slider .noUi-handle", state="visible")
            _screenshot(page, "browser_0_after_run_all.png")
            assert not _errors(page), _errors(page)

            # One step of temperature refits the three agents (a few seconds); τ only indexes precomputed arrays.
            for step, (label, slug, presses) in enumerate((("temperature", "temperature", 1), ("τ", "tau", 5)), 1):
                before = page.evaluate(DIGESTS_JS)
                assert before, "no rendered figure found"
                _move_slider(page, label, presses=presses)
                after = _wait_for_change(page, before, budget)
                _wait_for_idle(page, budget)
                _screenshot(page, f"browser_{step}_after_{slug}.png", label)
                assert after != before, f"moving the {label} slider did not change any rendered figure"
                assert not _errors(page), _errors(page)
            assert "Traceback" not in jupyter_lab.log_text(), jupyter_lab.log_text()[-5000:]
            assert not _log_console_errors(page), _log_console_errors(page)
        except BaseException:
            _save_failure(page, jupyter_lab)
            raise
        finally:
            browser.close()
