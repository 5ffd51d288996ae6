"""Fixtures for the real-browser tests: Debian's Chromium and an isolated JupyterLab server.

Chromium or Playwright missing: the test is skipped, unless ``JTK_REQUIRE_BROWSER=1`` (set by ``.ci/run``),
in which case it fails, so CI cannot pass by skipping. The checks run in fixtures, not at import time, so the
default run (``-m 'not browser'`` deselects these tests) neither skips nor fails anything here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Settings a user or a stale JupyterLab state could otherwise change. They are written into a fresh user-settings
# directory, so only these and JupyterLab's defaults apply.
LAB_SETTINGS = {
    # No "Would you like to get notified about official Jupyter news?" toast, no update check, no toasts at all.
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False,
                                                    "doNotDisturbMode": True},
    # Start the notebook's kernel without asking ("Select Kernel" dialog), attach every cell to the DOM
    # (the default windowing skips off-screen cells), and keep the kernel to this test.
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True, "windowingMode": "none",
                                               "kernelShutdown": True},
    # Never write the notebook back while the test runs (no "file changed on disk" dialog).
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}


def browser_required() -> bool:
    return os.environ.get("JTK_REQUIRE_BROWSER", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> None:
    if browser_required():
        pytest.fail(f"JTK_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of the system Chromium (``$JTK_CHROMIUM``, else ``chromium`` on PATH); Playwright must never download a
    browser of its own, so the test launches this one with ``executable_path``."""
    path = shutil.which(os.environ.get("JTK_CHROMIUM") or "chromium") or shutil.which("chromium-browser")
    if path is None:
        _unavailable("Chromium is not installed (apt-get install chromium), or $JTK_CHROMIUM names no executable")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        _unavailable(f"Playwright for Python is not importable ({e}); pip install -e '.[dev]'")
    return path


@dataclasses.dataclass
class Lab:
    base: str
    token: str
    log: pathlib.Path
    root: pathlib.Path

    def url(self, path: str) -> str:
        return f"{self.base}/lab/tree/{path}?token={self.token}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stops the server and everything it started (the kernel): they share one process group."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The server is gone; make sure no kernel outlived it.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


@pytest.fixture()
def jupyter_lab(tmp_path, chromium):
    """A JupyterLab server on loopback with fresh config, runtime, data, settings and workspace directories.

    Its root is ``tmp_path/lab`` (empty: copy notebooks into ``lab.root``). Kernel specs and lab extensions
    (ipywidgets) still come from this environment's ``share/jupyter``, which stays on Jupyter's data path.
    """
    root, state = tmp_path / "lab", tmp_path / "jupyter"
    root.mkdir()
    dirs = {name: state / name for name in ("config", "data", "runtime", "settings", "workspaces", "ipython")}
    for d in dirs.values():
        d.mkdir(parents=True)
    for plugin, values in LAB_SETTINGS.items():
        f = dirs["settings"] / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values, indent=2))
    env = {k: v for k, v in os.environ.items() if k not in {"JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_TOKEN"}}
    env.update({
        "JAX_PLATFORMS": "cpu",
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),  # user data only: no user kernel spec can shadow the venv's python3
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
        "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
        "IPYTHONDIR": str(dirs["ipython"]),  # no user IPython start-up files in the kernel
    })
    port, token = _free_port(), secrets.token_hex(16)
    log_path = tmp_path / "lab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.user_settings_dir={dirs['settings']}", f"--LabApp.workspaces_dir={dirs['workspaces']}",
           "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
           "--LabApp.expose_app_in_browser=True"]  # window.jupyterapp: the test drives JupyterLab's own commands
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("jupyter lab did not start:\n" + log_path.read_text(errors="replace"))
                time.sleep(0.3)
        yield Lab(base=base, token=token, log=log_path, root=root)
    finally:
        _stop(proc)
