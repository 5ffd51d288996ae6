"""The joint-predictions notebook in a real JupyterLab, driven in a real browser.

Starts ``jupyter lab`` on the loopback interface with a copy of the notebook,
drives Debian's Chromium (Playwright with ``executable_path``; no browser
download), runs all cells, moves the temperature and τ sliders, and checks that
the rendered figure changes and that no error output appears. Screenshots go to
``$JTK_ARTIFACTS`` (default ``test-artifacts/``).

CI sets ``JTK_REQUIRE_BROWSER=1`` so a missing Chromium fails instead of skipping.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = "02_joint_predictions.ipynb"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = pathlib.Path(os.environ.get("JTK_ARTIFACTS", ROOT / "test-artifacts"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# Not in the default run yet: in a fresh environment "Run All Cells" can race the kernel start
# (seen in 1 of 3 fresh-clone runs). Run it with `pytest -m browser tests/browser`.
pytestmark = pytest.mark.browser

if CHROMIUM is None:
    if os.environ.get("JTK_REQUIRE_BROWSER"):
        raise RuntimeError("JTK_REQUIRE_BROWSER is set but no chromium is on PATH (apt-get install chromium)")
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def lab(tmp_path):
    """A JupyterLab server on loopback serving a copy of the notebook; yields its URL."""
    work = tmp_path / "lab"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, work / NOTEBOOK)
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         "--LabApp.news_url=", "--LabApp.collaborative=False"] + (["--allow-root"] if os.geteuid() == 0 else []),
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("jupyter lab did not start:\n" + (tmp_path / "lab.log").read_text())
                time.sleep(0.5)
        yield f"{base}/lab/tree/{NOTEBOOK}?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _accept_kernel_dialog(page, timeout: float = 10.0) -> None:
    """In a fresh environment JupyterLab may ask which kernel to start: accept its default (the venv's python3)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        button = page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")
        if button.count():
            button.first.click()
            return
        if page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count():
            return
        time.sleep(0.25)


def _figure_sources(page) -> list[str]:
    """The data URLs of every rendered image in the notebook (matplotlib figures)."""
    return page.eval_on_selector_all(".jp-NotebookPanel img", "els => els.map(e => e.src)")


def _move_slider(page, label: str, presses: int) -> None:
    """Focuses the slider whose description contains ``label`` and moves it with the keyboard."""
    slider = page.locator(".widget-slider", has=page.locator(".widget-label", has_text=label)).first
    slider.scroll_into_view_if_needed()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(presses):
        handle.press("ArrowRight")
        time.sleep(0.05)


def _wait_for_change(page, before: list[str], timeout: float = 30.0) -> list[str]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = _figure_sources(page)
        if now != before:
            time.sleep(0.5)  # let the remaining outputs settle
            return _figure_sources(page)
        time.sleep(0.2)
    return _figure_sources(page)


def _errors(page) -> list[str]:
    texts = page.eval_on_selector_all(".jp-OutputArea-output", "els => els.map(e => e.innerText)")
    return [t for t in texts if "Traceback" in t or "Error:" in t]


def test_sliders_update_the_figure_in_a_real_browser(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(lab)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
            _accept_kernel_dialog(page)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            page.wait_for_selector(".widget-slider .noUi-handle", timeout=120_000)
            deadline = time.time() + 180
            while time.time() < deadline and page.locator(".jp-InputPrompt", has_text="[*]").count():
                time.sleep(0.5)
            assert page.locator(".jp-InputPrompt", has_text="[*]").count() == 0, "cells still running after 180 s"
            page.screenshot(path=str(ARTIFACTS / "browser_0_after_run_all.png"), full_page=True)
            assert not _errors(page), _errors(page)

            for step, (label, slug) in enumerate((("temperature", "temperature"), ("τ", "tau")), start=1):
                before = _figure_sources(page)
                assert before, "no rendered figure found"
                _move_slider(page, label, presses=5)
                after = _wait_for_change(page, before)
                page.screenshot(path=str(ARTIFACTS / f"browser_{step}_after_{slug}.png"), full_page=True)
                assert after != before, f"moving the {label} slider did not change any rendered figure"
                assert not _errors(page), _errors(page)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "browser_failure.png"), full_page=True)
            raise
        finally:
            browser.close()
