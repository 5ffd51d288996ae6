"""Every notebook in a real JupyterLab, driven in a real browser, as a student sees it on a 1366×768 screen.

One ``jupyter lab`` on the loopback interface serves copies of all the notebooks for the whole session (fresh
config, runtime, settings and workspace directories; see ``conftest.py``), and Debian's Chromium (Playwright with
``executable_path``; no browser download) opens each notebook in a context of its own with a 1366×768 viewport. For
each notebook with code the test waits until its kernel is connected and idle, clears the saved outputs, runs all
cells, moves the app's main slider (the table ``CASES``) and checks that a figure of that app changes; the
markdown-only ``00_start_here`` must render. No error may appear anywhere: in a cell's output, in JupyterLab's log
console (where widget callbacks report), in the server's log (kernel included) or in the browser's console. One
screenshot per notebook, ``NN_<name>.png``, goes to ``$JTK_ARTIFACTS`` (default ``test-artifacts/``), scrolled so that
the app is at the top of the notebook; a failure leaves ``browser_failure_<notebook>.png`` and the server's log.

Not in the default run (``-m 'not browser'`` in pyproject.toml); ``.ci/run`` runs it as its own step with
``JTK_REQUIRE_BROWSER=1 .venv/bin/pytest -m browser tests/browser``, so a missing Chromium fails CI.

Why it waits the way it does: JupyterLab's toolbar execution indicator says ``idle`` even while the notebook has
no kernel yet, and a "Run All" issued then runs nothing, or only the first cell (JupyterLab starts the kernel
itself, or asks which kernel to start, and clears the other cells' execution). The notebooks also carry saved
outputs and saved widget state, so prompts, sliders and figures can be on the page although nothing ran. The test
therefore asks JupyterLab itself (its session context, via ``window.jupyterapp``) whether the kernel is connected
and idle, clears all outputs, and counts a cell as run only once it has a new execution count.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = pathlib.Path(os.environ.get("JTK_ARTIFACTS", ROOT / "test-artifacts"))
VIEWPORT = {"width": 1366, "height": 768}  # the smallest laptop screen the labs are laid out for
# Everything one notebook's test does once the session's JupyterLab has started: a stuck run fails within it.
BUDGET_S = 200

pytestmark = pytest.mark.browser


@dataclasses.dataclass(frozen=True)
class Move:
    """Move the slider whose description contains ``label`` by ``presses`` arrow-key steps (``key``)."""

    label: str
    presses: int = 1
    key: str = "ArrowRight"


@dataclasses.dataclass(frozen=True)
class Case:
    """One notebook: the app's main control(s) to move, and which element of the app's output must change.

    ``figure`` is a CSS selector (an ``img`` or ``canvas``) inside the output of the cell that holds the moved
    slider; the app is the one whose controls and figure the screenshot shows at the top of the notebook.
    """

    notebook: str
    moves: tuple[Move, ...] = ()
    figure: str = "img"

    @property
    def name(self) -> str:
        return pathlib.Path(self.notebook).stem

    def code_cells(self) -> int:
        cells = json.loads((ROOT / "notebooks" / self.notebook).read_text())["cells"]
        return sum(c["cell_type"] == "code" for c in cells)

    def markdown_cells(self) -> int:
        cells = json.loads((ROOT / "notebooks" / self.notebook).read_text())["cells"]
        return sum(c["cell_type"] == "markdown" for c in cells)


CASES = [
    Case("00_start_here.ipynb"),  # markdown only: it must render, with no error
    # The decision app: each horizon H redraws the expected-heads curves of the three policies.
    Case("01_coins.ipynb", (Move("horizon H", 5),)),
    # One step of temperature refits the three agents (a background job, a few seconds); τ only indexes
    # precomputed arrays and redraws the d_KL^τ panel.
    Case("02_joint_predictions.ipynb", (Move("temperature", 1), Move("τ", 5))),
    # λ 3 → 10: the ensemble+ members (precomputed) redraw.
    Case("03_ensemble_vs_ensemble_plus.ipynb", (Move("prior scale", 1),)),
    # f_main 0.5 → 1: the fit, its interval and the coverage panel redraw (precomputed sweep).
    Case("04_blr_coverage.ipynb", (Move("f_main", 1),)),
    # batch size 4 → 6: two more queries chosen by BatchMIG, a new posterior.
    Case("05_tal_batchmig.ipynb", (Move("batch size", 2),)),
    # horizon T 1000 → 500 truncates the cached runs (a new agent, d or ρ would start a background run instead).
    Case("06_bandit.ipynb", (Move("horizon T", 2, "ArrowLeft"),)),
]

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

# The output area of the cell whose app holds the slider labelled `label` (null when there is none).
APP_OUTPUT_JS = """(label) => {
  const sliders = Array.from(document.querySelectorAll('.jp-NotebookPanel .widget-slider'));
  const slider = sliders.find(s => Array.from(s.querySelectorAll('.widget-label'))
                                       .some(l => l.textContent.includes(label)));
  if (!slider) return null;
  const cell = slider.closest('.jp-Cell');
  return cell ? cell.querySelector('.jp-Cell-outputArea') : null;
}"""

# Content digests of the figures (`selector`: img and/or canvas) in that app's output: a changed figure is a
# changed PNG, not merely a new blob URL.
DIGESTS_JS = """async ([label, selector]) => {
  const area = (""" + APP_OUTPUT_JS + """)(label);
  if (!area) return null;
  const out = [];
  for (const el of area.querySelectorAll(selector)) {
    let bytes;
    if (el.tagName === 'CANVAS') {
      bytes = new TextEncoder().encode(el.toDataURL('image/png'));
    } else {
      if (!el.src) continue;
      bytes = new Uint8Array(await (await fetch(el.src)).arrayBuffer());
    }
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


def _state(page, path: str) -> dict:
    return page.evaluate(STATE_JS, path)


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


def _wait_for_kernel(page, path: str, budget: Budget, timeout: float = 150.0) -> dict:
    """Until the notebook's kernel is connected and idle, twice in a row (0.5 s apart) and shown so in the toolbar."""
    deadline, started_by_us, no_kernel_since, idle_polls = budget.deadline(timeout), False, None, 0
    state: dict = {}
    while time.monotonic() < deadline:
        state = _state(page, path)
        _handle_dialogs(page, state)
        _dismiss_toasts(page)
        if state.get("panel"):
            if state["noKernel"] and not state["dialogs"]:
                no_kernel_since = no_kernel_since or time.monotonic()
                if not started_by_us and time.monotonic() - no_kernel_since > 20:
                    page.evaluate(START_KERNEL_JS, path)  # JupyterLab started none by itself: do it
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


def _run_all(page, path: str, budget: Budget) -> dict:
    """Clears all outputs, runs all cells and waits until every code cell has an execution count.

    If not every cell ran (JupyterLab's command finished without an error but left cells without an execution count,
    or the kernel stayed idle for 30 s with no cell run or queued), waits for the kernel again and retries once.
    """
    for attempt in (1, 2):
        assert page.evaluate(COMMAND_JS, [path, "notebook:clear-all-cell-outputs", True])
        state = _state(page, path)
        assert all(c is None for c in state["counts"]), f"outputs were not cleared: {state}"
        assert page.locator(".jp-NotebookPanel .widget-slider").count() == 0, "saved widgets still shown"
        page.evaluate(COMMAND_JS, [path, "notebook:run-all-cells", False])
        started, deadline, done_polls = time.monotonic(), budget.deadline(BUDGET_S), 0
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"cells did not finish running within the budget: {state}")
            time.sleep(0.5)
            state = _state(page, path)
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
            _wait_for_kernel(page, path, budget)
    raise AssertionError(f"Run All Cells did not run every cell, twice: {state}")


def _wait_for_idle(page, path: str, budget: Budget, timeout: float = 120.0) -> None:
    """Until the kernel has been idle for 1 s (slider callbacks, e.g. redrawing a figure, have finished)."""
    deadline, since = budget.deadline(timeout), None
    while time.monotonic() < deadline:
        if _state(page, path)["status"] == "idle":
            since = since or time.monotonic()
            if time.monotonic() - since >= 1.0:
                return
        else:
            since = None
        time.sleep(0.2)
    raise AssertionError(f"the kernel did not go idle: {_state(page, path)}")


def _slider(page, label: str):
    return page.locator(".jp-NotebookPanel .widget-slider", has=page.locator(".widget-label", has_text=label)).first


def _move_slider(page, move: Move) -> None:
    """Focuses the slider and moves it with the keyboard, as a student can."""
    slider = _slider(page, move.label)
    slider.scroll_into_view_if_needed()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(move.presses):
        handle.press(move.key)
        time.sleep(0.1)


def _digests(page, case: Case, label: str) -> list[str]:
    digests = page.evaluate(DIGESTS_JS, [label, case.figure])
    assert digests is not None, f"no output area holds a slider labelled {label!r}"
    return digests


def _wait_for_change(page, case: Case, label: str, before: list[str], budget: Budget,
                     timeout: float = 90.0) -> list[str]:
    deadline = budget.deadline(timeout)
    while time.monotonic() < deadline:
        if _digests(page, case, label) != before:
            break
        time.sleep(0.3)
    return _digests(page, case, label)


def _errors(page) -> list[str]:
    texts = page.eval_on_selector_all(".jp-NotebookPanel .jp-OutputArea-output", "els => els.map(e => e.innerText)")
    return [t for t in texts if _is_error(t)]


def _is_error(text: str) -> bool:
    # "failed:" is how the apps' status lines (02's fits, 06's bandit runs) report a background job that raised.
    return "Traceback" in text or "Error:" in text or "failed:" in text


def _log_console_errors(page, path: str) -> list[str]:
    """What JupyterLab's log console shows for the notebook: output that belongs to no cell, such as an exception
    (or a warning) raised in a widget callback, lands there and neither in the page nor in the server's log."""
    assert page.evaluate(COMMAND_JS, [path, "logconsole:open", True])
    page.wait_for_selector(".jp-LogConsolePanel", state="attached")
    time.sleep(1.0)  # let it render the entries it already holds
    texts = page.eval_on_selector_all(".jp-LogConsolePanel .jp-OutputArea-output", "els => els.map(e => e.innerText)")
    return [t for t in texts if _is_error(t)]


def _screenshot(page, case: Case) -> pathlib.Path:
    """The whole 1366×768 window, the app of the first moved slider scrolled to the top of the notebook."""
    if case.moves:
        page.evaluate("""(label) => {
          const area = (""" + APP_OUTPUT_JS + """)(label);
          if (!area) return;
          area.scrollIntoView({block: 'start'});
          let scroller = area.parentElement;  // leave the app's first row clear of the notebook's top edge
          while (scroller && scroller.scrollHeight <= scroller.clientHeight) scroller = scroller.parentElement;
          if (scroller) scroller.scrollTop -= 16;
        }""", case.moves[0].label)
        time.sleep(0.5)
    path = ARTIFACTS / f"{case.name}.png"
    page.screenshot(path=str(path))
    return path


def _save_failure(page, lab, case: Case) -> None:
    """The page and the server's log (kernels included) into the artifacts, for a failed run."""
    try:
        shutil.copy(lab.log, ARTIFACTS / f"browser_failure_{case.name}_lab.log")
        page.screenshot(path=str(ARTIFACTS / f"browser_failure_{case.name}.png"), timeout=10_000)
    except Exception as e:  # noqa: BLE001 - never hide the test's own failure
        print(f"could not save the failure artifacts: {e}")


@pytest.fixture(scope="module", autouse=True)
def artifacts():
    """``test-artifacts/`` without the failure files of an earlier run."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("browser_*"):
        old.unlink()
    return ARTIFACTS


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_notebook_runs_and_its_app_responds_in_a_real_browser(case, jupyter_lab, browser):
    budget = Budget(BUDGET_S)
    path = f"notebooks/{case.notebook}"
    (ARTIFACTS / f"{case.name}.png").unlink(missing_ok=True)
    log_start = jupyter_lab.log_size()
    console: list[str] = []  # the browser's console: JavaScript errors of JupyterLab or the widget manager
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("console", lambda m: console.append(f"{m.text} ({m.location})") if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    started = time.monotonic()
    try:
        # A workspace of its own: JupyterLab would otherwise restore the previous test's notebook and panels.
        page.goto(jupyter_lab.url(path, workspace=f"jtk-{case.name}"), timeout=budget.ms(90))
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=budget.ms(90))
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=budget.ms(90))
        code_cells = case.code_cells()
        _wait_for_kernel(page, path, budget)  # a markdown-only notebook starts one too
        if code_cells:
            state = _run_all(page, path, budget)
            counts = state["counts"]
            assert len(counts) == code_cells and len(set(counts)) == code_cells, state
            print(f"{case.name}: Run All done after {time.monotonic() - started:.0f} s")
            page.wait_for_selector(".jp-NotebookPanel .widget-slider .noUi-handle", state="visible")
            assert not _errors(page), _errors(page)
            for move in case.moves:
                before = _digests(page, case, move.label)
                assert before, f"no {case.figure!r} figure in the app of the {move.label!r} slider"
                _move_slider(page, move)
                after = _wait_for_change(page, case, move.label, before, budget)
                _wait_for_idle(page, path, budget)
                assert after != before, f"moving the {move.label!r} slider did not change the app's figure"
                assert not _errors(page), _errors(page)
        else:
            # Rendered, not merely attached: every markdown cell has its heading, and the table of labs is there.
            page.wait_for_function(
                """n => {
                  const cells = document.querySelectorAll('.jp-NotebookPanel .jp-MarkdownCell .jp-RenderedMarkdown');
                  return cells.length === n && Array.from(cells).every(c => c.querySelector('h1, h2'))
                         && document.querySelector('.jp-NotebookPanel .jp-RenderedMarkdown table') !== null;
                }""", arg=case.markdown_cells(), timeout=budget.ms(60))
        shot = _screenshot(page, case)
        log = jupyter_lab.log_text(log_start)
        assert "Traceback" not in log, log[-5000:]
        if code_cells:
            assert not _log_console_errors(page, path), _log_console_errors(page, path)
        assert not console, f"errors in the browser's console: {console}"
        print(f"{case.name}: {time.monotonic() - started:.0f} s, screenshot {shot}")
    except BaseException:
        _save_failure(page, jupyter_lab, case)
        raise
    finally:
        context.close()
        jupyter_lab.shutdown_kernels()
