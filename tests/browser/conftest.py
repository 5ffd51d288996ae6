"""Fixtures for the real-browser tests: Debian's Chromium and one isolated JupyterLab server for the session.

The server and the browser are started once and shared by every notebook's test; each test opens its notebook in a
fresh browser context (its own viewport, storage and console), in a JupyterLab workspace of its own (no notebook or
panel left open by an earlier test comes back), and shuts its kernel down when it is done.

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
import tempfile
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

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

    def url(self, path: str, workspace: str | None = None) -> str:
        """``path`` opened in JupyterLab; in the named ``workspace`` (a fresh, empty layout) when given."""
        prefix = f"/lab/workspaces/{workspace}" if workspace else "/lab"
        return f"{self.base}{prefix}/tree/{path}?token={self.token}"

    def log_text(self, start: int = 0) -> str:
        """The server's log (kernels included), from byte offset ``start`` (see :meth:`log_size`)."""
        with open(self.log, "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")

    def log_size(self) -> int:
        return self.log.stat().st_size

    def _api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.base}/api/{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Ends every session and kernel (closing a browser page leaves the kernel running on the server)."""
        for session in self._api("sessions"):
            self._api(f"sessions/{session['id']}", method="DELETE")
        for kernel in self._api("kernels"):
            self._api(f"kernels/{kernel['id']}", method="DELETE")


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


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory, chromium):
    """A JupyterLab server on loopback with fresh config, runtime, data, settings and workspace directories.

    Its root mirrors the repository where the notebooks need it: ``notebooks/`` holds copies of every notebook
    (so a test never writes into the checkout), and ``benchmarks`` links to the checkout's, whose committed results
    notebooks 04–06 read as ``../benchmarks/results``. Kernel specs and lab extensions (ipywidgets) still come from
    this environment's ``share/jupyter``, which stays on Jupyter's data path.
    """
    tmp_path = tmp_path_factory.mktemp("jupyterlab")
    root, state = tmp_path / "lab", tmp_path / "jupyter"
    (root / "notebooks").mkdir(parents=True)
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy(notebook, root / "notebooks" / notebook.name)
    (root / "benchmarks").symlink_to(ROOT / "benchmarks", target_is_directory=True)
    dirs = {name: state / name for name in ("config", "data", "settings", "workspaces", "ipython")}
    for d in dirs.values():
        d.mkdir(parents=True)
    # The kernels talk to the server over Unix sockets in here (KernelManager.transport=ipc), not over loopback TCP
    # ports, so no ZMQ client of another process on this machine can reach them: with TCP, while other kernels ran
    # beside the test, its kernel once logged "ValueError: DELIM not in msg_list" tracebacks (foreign frames on its
    # shell port, presumably a client still reconnecting to a port it had used). Short: socket paths are < 108 bytes.
    dirs["runtime"] = pathlib.Path(tempfile.mkdtemp(prefix="jtk-lab-"))
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
           "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: the test drives JupyterLab's own commands
           "--KernelManager.transport=ipc"]
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
        shutil.rmtree(dirs["runtime"], ignore_errors=True)


@pytest.fixture(scope="session")
def browser(chromium):
    """Chromium, launched once (Playwright with ``executable_path``); tests open their own contexts in it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


AXE_JS = pathlib.Path(os.environ.get("JTK_AXE_JS") or pathlib.Path(__file__).parent / "node_modules" / "axe-core"
                      / "axe.min.js")
"""axe-core's browser build: npm's, pinned in tests/browser/package.json (``npm ci --prefix tests/browser``)."""


@pytest.fixture(scope="session")
def axe_source(chromium) -> str:
    """The source of axe-core, to inject into a page; missing: skipped, or failed under ``JTK_REQUIRE_BROWSER=1``."""
    if not AXE_JS.is_file():
        _unavailable(f"axe-core is not installed ({AXE_JS} is missing); run `npm ci --prefix tests/browser`")
    return AXE_JS.read_text(encoding="utf-8")
