"""Containment for grading kernels: resource limits, a separate user, or a bubblewrap sandbox.

``jtk grade`` runs every submission in a fresh IPython kernel started through
``jtk/_kernel_launcher.py`` (``python _kernel_launcher.py ... -- KERNEL COMMAND``), which
sets the limits below in the kernel process before it runs any student code.

What each mode protects (``--sandbox MODE``):

=======  ===============================================================================================
mode     what the student's code cannot do
=======  ===============================================================================================
none     exhaust memory (``RLIMIT_AS``) or disk through one huge file (``RLIMIT_FSIZE``), dump core,
         or run past the per-cell time limit. Nothing else: it runs as the grader's user and can read
         and write whatever that user can, signal the grader, read ``solutions/``. Use it only for
         trusted notebooks (your own tests).
user     (grader running as root) all of ``none``, and the kernel runs as a separate unprivileged uid,
         one per worker slot: it cannot signal the grader or other kernels, cannot write the grader's
         files, the grade files or other submissions' directories (each 0700), and the processes it
         leaves behind are killed after each notebook. It *can* read every world-readable file —
         including ``solutions/`` if that is world-readable — and use the network.
bwrap    all of ``none``, inside Debian's bubblewrap: a read-only view of the file system in which
         only the kernel's own temporary directory is writable; the source notebooks, the
         submissions and the grader's temporary directory are hidden (empty); a private ``/tmp``,
         process and IPC namespace (the grader's processes are invisible, and every process the
         kernel started dies with it). It can still use the network (the kernel talks to the grader
         over loopback TCP) and read other files the grader's user can read.
auto     bwrap when it works on this machine, else user when running as root and the Python
         installation is readable by other users, else none (with a warning).
=======  ===============================================================================================

No mode stops a student from copying jtk's own source (it is open) or from
leaving a kernel idle until the per-cell time limit.
"""

from __future__ import annotations

import functools
import os
import pathlib
import shutil
import signal
import subprocess
import sys
from typing import Sequence

from jupyter_client import AsyncKernelManager

MODES = ("auto", "none", "user", "bwrap")

UID_BASE = 61000  # kernels of worker slot k run as uid UID_BASE + k in user mode
LAUNCHER = str(pathlib.Path(__file__).with_name("_kernel_launcher.py"))  # run as a script: imports no jtk


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can start a sandbox here (it needs user or mount namespaces)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        done = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                               "--die-with-parent", sys.executable, "-c", "pass"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _readable_by_others(path: str) -> bool:
    """Whether every directory on the way to ``path`` lets other users in, and the file is readable by them."""
    p = pathlib.Path(os.path.realpath(path))
    for parent in reversed(p.parents):
        if not os.stat(parent).st_mode & 0o001:
            return False
    return bool(os.stat(p).st_mode & 0o004)


@functools.lru_cache(maxsize=None)
def user_works() -> bool:
    """Whether kernels can run as another uid: the grader is root and Python and jtk are readable by others."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    import jtk

    try:
        return all(_readable_by_others(p) for p in (sys.executable, jtk.__file__, os.__file__))
    except OSError:
        return False


def resolve(mode: str) -> str:
    """The mode that will run: ``auto`` becomes the strongest available one.

    Raises:
      ValueError: an unknown mode, or a mode this machine cannot provide (the message says why).
    """
    if mode not in MODES:
        raise ValueError(f"sandbox must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "auto":
        return "bwrap" if bwrap_works() else "user" if user_works() else "none"
    if mode == "bwrap" and not bwrap_works():
        raise ValueError("sandbox 'bwrap' needs a working bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); "
                         "`bwrap --ro-bind / / true` failed or bwrap is not installed")
    if mode == "user" and not user_works():
        raise ValueError("sandbox 'user' needs the grader to run as root and Python and jtk to be readable by other "
                         f"users (Python here: {os.path.realpath(sys.executable)})")
    return mode


def kernel_env(workdir: str) -> dict[str, str]:
    """The environment of a grading kernel: its home, caches and temporary files live in its own directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JPY_", "JUPYTER_"))}
    env.update(HOME=workdir, TMPDIR=workdir, IPYTHONDIR=os.path.join(workdir, ".ipython"),
               MPLCONFIGDIR=os.path.join(workdir, ".matplotlib"), XDG_CACHE_HOME=os.path.join(workdir, ".cache"),
               PYTHONDONTWRITEBYTECODE="1", JTK_COMPILATION_CACHE="0", MPLBACKEND="agg")
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


class SandboxKernelManager(AsyncKernelManager):
    """A KernelManager whose kernels start through :func:`jtk._kernel_launcher.main` (limits, user) and optionally inside bwrap."""

    def configure(self, *, mode: str, workdir: str, memory: int, uid: int | None, hidden: Sequence[str]) -> None:
        self._jtk = dict(mode=mode, workdir=workdir, memory=memory, uid=uid, hidden=tuple(hidden))
        self.connection_file = os.path.join(workdir, ".kernel.json")

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        cfg = self._jtk
        launcher = [sys.executable, LAUNCHER, "--memory", str(cfg["memory"]), "--workdir", cfg["workdir"],
                    "--uid", str(cfg["uid"] if cfg["uid"] is not None else -1), "--", *cmd]
        if cfg["mode"] != "bwrap":
            return launcher
        return [*bwrap_args(cfg["workdir"], cfg["hidden"]), *launcher]


def runtime_paths() -> list[str]:
    """What a kernel must see: the Python installation and environment, and jtk's own package."""
    import jtk

    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(jtk.__file__),
                                           os.path.dirname(os.path.realpath(sys.executable)))}
    return sorted(paths)


def bwrap_args(workdir: str, hidden: Sequence[str]) -> list[str]:
    """bwrap's command line: read-only root, private /tmp and /dev/shm, ``hidden`` paths emptied, workdir writable.

    The Python environment and jtk are bound again (read-only) after the private /tmp, so a checkout or a virtual
    environment under /tmp still works inside the sandbox.
    """
    args = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    for path in runtime_paths():
        if path == "/tmp" or path.startswith("/tmp/") or path.startswith("/dev/shm/"):
            args += ["--ro-bind", path, path]
    for path in hidden:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            args += ["--tmpfs", real]
        elif os.path.exists(real):
            args += ["--ro-bind", "/dev/null", real]
    real_workdir = os.path.realpath(workdir)
    args += ["--bind", real_workdir, real_workdir, "--chdir", real_workdir, "--unshare-pid", "--unshare-ipc",
             "--unshare-uts", "--die-with-parent", "--new-session"]
    return args


def kill_user_processes(uid: int) -> None:
    """Kills every process of ``uid`` (user mode: what a kernel left behind). Needs root."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)  # as that uid, -1 reaches exactly its processes
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
