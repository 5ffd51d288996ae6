"""Containment for untrusted code: the grading and challenge workers, their limits and what they can reach.

``jtk grade`` runs each notebook in a worker process (:mod:`jtk.course._grading_worker`) and ``jtk challenge score``
each submission in one (:mod:`jtk.course._challenge_worker`). A worker starts through
``jtk/course/_kernel_launcher.py`` (:func:`launcher`), which sets the limits below before any untrusted code runs,
and talks to its parent over two pipes (:class:`Worker`).

A sandbox is contained as a whole, not process by process: its memory and its number of tasks (processes and
threads) are limits on all its processes together, and its CPU weight is one share, however many processes it
starts (:class:`Group`: a control group of its own, v2 or v1, where this machine lets the grader make one; else
:class:`_Supervisor`, which measures the sandbox's process tree and ends it). The grader is never in that group, so
a limit ends the submission's processes and never the grader. When the worker is closed, every process of its group
is killed and the group removed. Per-process limits (``RLIMIT_AS``, ``RLIMIT_FSIZE``, no core dumps) stay beneath:
a single process over its address space gets a ``MemoryError`` it can report.

What each mode protects (``--sandbox MODE``):

=======  ===============================================================================================
mode     what the untrusted code can reach
=======  ===============================================================================================
bwrap    Only what :func:`bwrap_args` mounts, read-only: the system's ``/usr`` (and its ``/bin``, ``/lib``
         links), a few files of ``/etc`` (:data:`ETC_FILES`), the Python installation and environment,
         and jtk, where the grading worker gets a copy holding only the modules its exercise needs (deny
         by default), whose reference functions are stubs (:func:`stubbed_package`). Writable: a private
         ``/tmp`` (its home and working directory) and ``/dev/shm``, each a RAM-backed tmpfs of a fixed
         size counted against the memory limit, gone when the worker ends. No network (not even loopback),
         no other process (its own pid namespace), no capability, running as an unprivileged uid (65534)
         in a user namespace. No source tree, no ``.git``, no solutions, no salt, no grade file and no
         other submission exists in its view.
user     (grader running as root, no bwrap) the worker runs as a separate unprivileged uid, one per worker
         slot, in its own 0700 directory, with the limits of ``none``: it cannot signal the grader or write
         its files, and what it leaves behind is killed and removed after each notebook. It *can* read every
         world-readable file and use the network. jtk's reference functions are reachable.
none     the limits only: the whole sandbox's memory, tasks and CPU share, each process's address space
         (``RLIMIT_AS``), one file's size (``RLIMIT_FSIZE``), no core dumps, the time limits. It runs with
         the grader's rights. For trusted notebooks (your own tests).
auto     bwrap when it works on this machine, else user when running as root and the Python installation
         is readable by other users, else none (with a warning).
=======  ===============================================================================================
"""

from __future__ import annotations

import ast
import collections
import functools
import itertools
import os
import pathlib
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Sequence

import numpy as np

from jtk import _checks

MODES = ("auto", "none", "user", "bwrap")

UID_BASE = 61000  # workers of slot k run as uid UID_BASE + k in user mode
SANDBOX_UID = 65534  # the uid inside bwrap's user namespace ("nobody")

ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd",
             "/etc/group", "/etc/nsswitch.conf", "/etc/mime.types")
"""The files of ``/etc`` a bwrap worker sees (what the dynamic loader, Python and matplotlib read)."""

MALLOC_ARENA_MAX = "2"
"""glibc's malloc arenas per worker: each thread's arena reserves 64 MiB of address space, so under ``RLIMIT_AS``
the threads of JAX and LLVM exhaust the limit long before the memory (with glibc's default the worker could not
start JAX under 2 GiB; with 2 arenas it starts and compiles under 1 GiB)."""

SHM_BYTES = 64 * 2 ** 20
"""Size of a bwrap worker's ``/dev/shm``."""

DEFAULT_PROCESSES = max(512, 8 * (os.cpu_count() or 1))
"""Tasks (processes and threads together) one sandbox may hold: 512, or 8 per core on machines of more than 64 cores
(JAX, XLA and OpenBLAS start a few threads per core, so an honest worker needs tens); a fork bomb stops here."""

CPU_WEIGHT = 100
"""A sandbox's CPU weight (cgroup v2's scale, where 100 is the default; v1's ``cpu.shares`` gets 1024 × weight / 100).
Every sandbox gets the same weight: two entries scored side by side share the CPU equally, whatever either starts."""


def tmp_bytes(memory: int) -> int:
    """Size of a bwrap worker's ``/tmp`` (its home) for a memory limit: an eighth of it, at most 512 MiB."""
    _checks.integer("memory", memory, minimum=1)
    return int(min(512 * 2 ** 20, memory // 8))


def address_space(memory: int, mode: str) -> int:
    """The worker's ``RLIMIT_AS``: in bwrap, ``memory`` less the RAM its tmpfs mounts may hold.

    Raises:
      ValueError: a memory limit too small to leave the worker 256 MiB.
    """
    _checks.integer("memory", memory, minimum=1)
    _checks.one_of("mode", mode, [m for m in MODES if m != "auto"])
    left = memory - (tmp_bytes(memory) + SHM_BYTES if mode == "bwrap" else 0)
    if left < 256 * 2 ** 20:
        raise ValueError(f"memory must leave the worker at least 256 MiB besides its temporary space, got "
                         f"{memory} bytes")
    return int(left)


# ------------------------------------------------------------------ which mode works here
_PROBE_OPTIONS = ("--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                  "--cap-drop", "ALL", "--die-with-parent", "--new-session")


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can start the sandbox of :func:`bwrap_args` here (it needs user
    namespaces)."""
    if shutil.which("bwrap") is None:
        return False
    try:
        done = subprocess.run([*bwrap_args(), sys.executable, "-I", "-c", "pass"], capture_output=True, timeout=60)
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
    """Whether workers can run as another uid: the grader is root and Python and jtk are readable by others."""
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
        raise ValueError("sandbox 'bwrap' needs a working bubblewrap with user namespaces (Debian/Ubuntu: apt-get "
                         "install bubblewrap); starting its sandbox failed or bwrap is not installed")
    if mode == "user" and not user_works():
        raise ValueError("sandbox 'user' needs the grader to run as root and Python and jtk to be readable by other "
                         f"users (Python here: {os.path.realpath(sys.executable)})")
    return mode


# ------------------------------------------------------------------ what a worker sees
@functools.lru_cache(maxsize=None)
def package_dir() -> str:
    """The directory of the jtk package that workers import: the one ``python -I`` finds (an editable install's is
    in the checkout). It may differ from this process's jtk, e.g. a grader started with ``python -m`` from a
    checkout imports the checkout's, while its workers import the installed wheel's."""
    done = subprocess.run([sys.executable, "-I", "-c", "import importlib.util, os; "
                           "print(os.path.dirname(os.path.realpath(importlib.util.find_spec('jtk').origin)))"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"{sys.executable} -I cannot find jtk: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


def launcher() -> str:
    """``_kernel_launcher.py`` of the jtk that workers import (run as a script: it imports no jtk). Inside bwrap only
    that jtk is mounted, so the launcher must be its own, not this process's."""
    return os.path.join(package_dir(), "course", "_kernel_launcher.py")


def runtime_paths() -> list[str]:
    """The Python installation and environment a worker must see (jtk's own package is :func:`package_dir`)."""
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                                           os.path.dirname(os.path.realpath(sys.executable)))}
    keep = []
    for path in sorted(paths):  # a path inside another is bound with it
        if not any(path.startswith(k + os.sep) for k in keep) and os.path.exists(path):
            keep.append(path)
    return keep


def worker_env(home: str, extra: dict | None = None) -> dict[str, str]:
    """A worker's whole environment: nothing of the grader's (no secrets, no ``JPY_*``), its home and caches in its
    own writable directory."""
    _checks.path("home", home)
    extra = _checks.mapping("extra", extra)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), "MPLBACKEND": "agg",
           "MPLCONFIGDIR": os.path.join(home, ".matplotlib"), "XDG_CACHE_HOME": os.path.join(home, ".cache"),
           "IPYTHONDIR": os.path.join(home, ".ipython"), "PYTHONDONTWRITEBYTECODE": "1",
           "JTK_COMPILATION_CACHE": "0", "MALLOC_ARENA_MAX": MALLOC_ARENA_MAX}
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "XLA_FLAGS"):  # numerics the grader itself runs with
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(extra or {})
    return env


def bwrap_args(*, package: str | None = None, memory: int = 4 * 2 ** 30, home: str = "/tmp",
               binds: Sequence[tuple[str, str]] = ()) -> list[str]:
    """bwrap's command line: an empty root with only the system, Python and jtk mounted read-only.

    Args:
      package: a directory to mount over jtk's own (:func:`package_dir`), e.g. :func:`stubbed_package`'s copy.
      memory: the worker's memory limit; its ``/tmp`` holds :func:`tmp_bytes` of it.
      home: the worker's working directory: its ``/tmp``, or one of ``binds``.
      binds: more (outside path, inside path) pairs to mount read-only, e.g. a challenge submission's folder.
    """
    _checks.integer("memory", memory, minimum=1)
    _checks.path("home", home)
    if package is not None:
        _checks.path("package", package)
    for i, pair in enumerate(binds):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise TypeError(f"binds[{i}] must be an (outside path, inside path) pair of str, got {pair!r}")
    args = [shutil.which("bwrap") or "bwrap", *_PROBE_OPTIONS, "--hostname", "jtk-sandbox",
            "--tmpfs", "/", "--size", str(tmp_bytes(memory)), "--tmpfs", "/tmp", "--dev", "/dev",
            "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", "--proc", "/proc", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    for path in runtime_paths():
        if path != "/usr" and not path.startswith("/usr/"):
            args += ["--ro-bind", path, path]
    real = package_dir()
    args += ["--ro-bind", package or real, real]
    for outside, inside in binds:
        args += ["--ro-bind", outside, inside]
    args += ["--remount-ro", "/", "--chdir", home]
    return args


# ------------------------------------------------------------------ jtk with its answers taken out
JUDGE_STUB = ('"""Not available while an exercise is graded: the checks\' cases and reference answers live in the '
              'grader\'s process (docs/grading.md)."""\n\nraise ImportError("jtk\'s exercise checks (their cases and '
              'reference answers) are not available while an exercise is graded")\n')


class _Stubber(ast.NodeTransformer):
    """Replaces the body of each function named in ``targets`` (qualified names) by a NotAvailable stub."""

    def __init__(self, module: str, targets: set[str]):
        self.module, self.targets, self.found, self.scope = module, targets, set(), []

    def _visit_def(self, node):
        self.scope.append(node.name)
        qualname = ".".join(self.scope)
        self.generic_visit(node)
        self.scope.pop()
        if qualname in self.targets:
            self.found.add(qualname)
            node.body = ast.parse(f"from jtk.course._answers import NotAvailable\n"
                                  f"raise NotAvailable({self.module + ':' + qualname!r})").body
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _visit_def

    def visit_ClassDef(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        return node


def package_modules(root=None) -> dict[str, pathlib.Path]:
    """Every module of the jtk package at ``root`` (default :func:`package_dir`): dotted name -> its file (a package's
    is its ``__init__.py``)."""
    root = pathlib.Path(package_dir()) if root is None else _checks.path("root", root)
    if not root.is_dir():
        raise ValueError(f"root must be the folder of a jtk package, got {str(root)!r} (not a directory)")
    out = {}
    for file in sorted(root.rglob("*.py")):
        parts = file.relative_to(root).with_suffix("").parts
        if "__pycache__" in parts or "_labs" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(("jtk", *parts))] = file
    return out


def _imported(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """The dotted names an ``import`` statement anywhere in ``tree`` (functions included) names: ``import a.b`` gives
    a.b; ``from a import b`` gives a and a.b (b may be a module); relative imports are resolved."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join([*here, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_closure(roots: Sequence[str], modules: dict[str, pathlib.Path] | None = None) -> frozenset[str]:
    """The jtk modules ``roots`` need: each root, its parent packages, and what they import, followed through every
    ``import`` statement of jtk's source (inside functions too, so a lazy import is followed), to a fixed point.

    Args:
      roots: dotted module names; those that are not jtk modules are ignored.
      modules: :func:`package_modules`' result (default: jtk's).
    """
    if isinstance(roots, (str, bytes)) or not hasattr(roots, "__iter__"):
        raise TypeError(f"roots must be a sequence of dotted module names (e.g. ['jtk.envs']), got "
                        f"{_checks.describe(roots)}")
    modules = package_modules() if modules is None else _checks.instance(
        "modules", modules, dict, "a dict of module name -> file (package_modules')")
    seen: set[str] = set()
    todo = [r for r in roots if isinstance(r, str)]
    while todo:
        name = todo.pop()
        if name not in modules or name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]
        file = modules[name]
        tree = ast.parse(file.read_text())
        todo += [n for n in _imported(tree, name, file.name == "__init__.py") if n.startswith("jtk")]
    return frozenset(seen)


WORKER_MODULES = ("jtk", "jtk.course._kernel_launcher", "jtk.course._grading_worker", "jtk.course._answers",
                  "jtk.course._wire", "jtk.checks")
"""What every grading worker runs (its launcher) and imports before any student code, and ``jtk.checks`` (what every exercise imports to
check itself): the roots of each exercise's allowlist (:func:`jtk.course.exercises.allowed_modules`)."""


def stubbed_package(dest, stubbed: Sequence[str] | None = None, allowed=None) -> pathlib.Path:
    """A copy of the jtk package at ``dest/jtk`` in which the exercises' answers cannot be computed.

    Deny by default: with ``allowed`` (dotted module names, e.g. :func:`jtk.course.exercises.allowed_modules`) the
    copy holds those modules' files and no other jtk module, so what an exercise does not need is not importable
    whether or not anyone listed it. The judge (``jtk/course/_judge.py``: cases, reference answers) is replaced by a
    module whose import raises, and each function of ``stubbed`` (default: ``jtk.course._judge.STUBBED``,
    ``"module:qualname"``) in a module of the copy by one that raises :class:`jtk.course._answers.NotAvailable`: the
    functions an exercise asks for stay out of reach in the modules it does need. No bytecode is copied
    (``__pycache__`` would hold the originals), nor the labs the wheel carries.

    Raises:
      ValueError: a function of ``stubbed`` that is not in jtk's source.
    """
    _checks.path("dest", dest)
    if stubbed is not None and (isinstance(stubbed, (str, bytes)) or not all(isinstance(f, str) for f in stubbed)):
        raise TypeError(f"stubbed must be a list of 'module:qualname' strings or None, got {stubbed!r}")
    if allowed is not None and (isinstance(allowed, (str, bytes)) or not all(isinstance(m, str) for m in allowed)):
        raise TypeError(f"allowed must be a collection of dotted module names or None, got {allowed!r}")
    if stubbed is None:
        from jtk.course import _judge

        stubbed = _judge.STUBBED
    src = pathlib.Path(package_dir())
    out = pathlib.Path(dest) / "jtk"
    keep = None if allowed is None else {f for m, f in package_modules(src).items() if m in set(allowed)}

    def ignore(folder, names):
        skipped = set(shutil.ignore_patterns("__pycache__", "*.pyc", "_labs")(folder, names))
        if keep is not None:  # neither a module off the list nor a folder without one (a namespace package)
            skipped |= {n for n in names if n.endswith(".py") and pathlib.Path(folder, n) not in keep}
            skipped |= {n for n in names if os.path.isdir(os.path.join(folder, n))
                        and not any(pathlib.Path(folder, n) in f.parents for f in keep)}
        return skipped

    shutil.copytree(src, out, ignore=ignore, symlinks=False)
    (out / "course" / "_judge.py").write_text(JUDGE_STUB)
    by_module = collections.defaultdict(set)
    for path in stubbed:
        module, qualname = path.split(":")
        by_module[module].add(qualname)
    for module, qualnames in by_module.items():
        parts = module.split(".")[1:]
        file = out.joinpath(*parts[:-1], parts[-1] + ".py") if parts else out / "__init__.py"
        if not file.exists() and allowed is not None and module not in allowed:
            continue  # not in the copy at all
        tree = ast.parse(file.read_text())
        stubber = _Stubber(module, qualnames)
        tree = ast.fix_missing_locations(stubber.visit(tree))
        if stubber.found != qualnames:
            raise ValueError(f"stubbed names functions that {module} does not define: {sorted(qualnames - stubber.found)}")
        file.write_text(ast.unparse(tree) + "\n")
    for path in [out, *out.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return out


# ------------------------------------------------------------------ limits on the whole sandbox
CONTROLLERS = ("memory", "pids", "cpu")
"""The control-group controllers a sandbox's limits use."""


def _mounts() -> tuple[str | None, dict[str, str]]:
    """(the cgroup2 mount point or None, {v1 controller: its mount point}) from ``/proc/self/mountinfo``."""
    v2, v1 = None, {}
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return None, {}
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields, tail = head.split(), tail.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2" and v2 is None:
            v2 = fields[4]
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in CONTROLLERS:
                    v1.setdefault(option, fields[4])
    return v2, v1


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and ``""`` -> its v2 path (``/proc/self/cgroup``)."""
    out = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f.read().splitlines():
                _, controllers, path = line.split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _write(path: str, value) -> bool:
    try:
        with open(path, "w") as f:
            f.write(str(value))
        return True
    except OSError:
        return False


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _probe(parent: str, controller: str | None, v2: bool) -> bool:
    """Whether a group made in ``parent`` gets ``controller`` (None: whether a group can be made there at all)."""
    probe = os.path.join(parent, f"jtk-probe-{os.getpid()}-{threading.get_ident()}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    try:
        if controller is None:
            return True
        if v2:
            if controller not in _read(os.path.join(probe, "cgroup.controllers")).split():
                _write(os.path.join(parent, "cgroup.subtree_control"), f"+{controller}")
            return controller in _read(os.path.join(probe, "cgroup.controllers")).split()
        first = {"memory": "memory.limit_in_bytes", "pids": "pids.max", "cpu": "cpu.shares"}[controller]
        return os.access(os.path.join(probe, first), os.W_OK)
    finally:
        try:
            os.rmdir(probe)
        except OSError:
            pass


@functools.lru_cache(maxsize=None)
def cgroups() -> dict[str, tuple[str, bool]]:
    """Where this process can make a sandbox's control groups: controller -> (parent directory, is it cgroup v2).

    Keys are among :data:`CONTROLLERS`, plus ``"kill"``: a cgroup v2 directory where a group can be made even with
    no controller, which still holds every process started in it (none escapes by double-forking) and kills them
    all at once (``cgroup.kill``). For each controller cgroup v2 is tried first, then v1; in each, this process's
    own group first (a delegated subtree), then the hierarchy's root (root only). ``JTK_SANDBOX_CGROUPS=0`` turns
    control groups off (the supervisor then measures the process tree instead).
    """
    if os.environ.get("JTK_SANDBOX_CGROUPS", "1") == "0" or not sys.platform.startswith("linux"):
        return {}
    v2, v1 = _mounts()
    own = _own_paths()
    found: dict[str, tuple[str, bool]] = {}
    if v2 is not None:
        for parent in dict.fromkeys((v2 + own.get("", "/").rstrip("/"), v2)):
            for controller in (*CONTROLLERS, None):
                key = controller or "kill"
                if key not in found and os.path.isdir(parent) and _probe(parent, controller, True):
                    found[key] = (parent, True)
    for controller, mount in v1.items():
        if controller in found:
            continue
        for parent in dict.fromkeys((mount + own.get(controller, "/").rstrip("/"), mount)):
            if os.path.isdir(parent) and _probe(parent, controller, False):
                found[controller] = (parent, False)
                break
    return found


class Group:
    """One sandbox's control groups: its memory, tasks and CPU weight as limits on all its processes together.

    Made with :func:`cgroups`' controllers (any of them may be missing: ``controllers`` says which hold). A
    process joins by writing its pid to each of :meth:`procs_files` before it runs untrusted code (the launcher
    does, ``--cgroup``); its children are then in the group too, and no fork leaves it.

    Args:
      memory: bytes all its processes may hold together (resident memory and its RAM-backed files).
      processes: tasks (processes and threads) it may hold together.
      cpu_weight: its CPU weight (:data:`CPU_WEIGHT`).
    """

    _count = itertools.count()

    def __init__(self, *, memory: int, processes: int = DEFAULT_PROCESSES, cpu_weight: int = CPU_WEIGHT):
        _checks.integer("memory", memory, minimum=1)
        _checks.integer("processes", processes, minimum=1)
        _checks.integer("cpu_weight", cpu_weight, minimum=1, maximum=10000)
        self.memory, self.processes = memory, processes
        self.dirs: dict[str, tuple[str, bool]] = {}  # controller or "kill" -> (the group's directory, v2)
        name = f"jtk-{os.getpid()}-{next(self._count)}"
        made: dict[str, str] = {}  # parent -> the group made there (v2 controllers share one group)
        for key, (parent, v2) in cgroups().items():
            path = made.get(parent) or os.path.join(parent, name)
            if parent not in made:
                try:
                    os.mkdir(path)
                except OSError:
                    continue
                made[parent] = path
            if self._limit(key, path, v2, memory, processes, cpu_weight):
                self.dirs[key] = (path, v2)
        self.controllers = frozenset(k for k in self.dirs if k != "kill")

    @staticmethod
    def _limit(key: str, path: str, v2: bool, memory: int, processes: int, weight: int) -> bool:
        join = functools.partial(os.path.join, path)
        if key == "kill":
            return True
        if key == "memory":
            if v2:
                _write(join("memory.swap.max"), 0)
                _write(join("memory.oom.group"), 1)  # the kernel ends the whole sandbox, not one of its processes
                return _write(join("memory.max"), memory)
            ok = _write(join("memory.limit_in_bytes"), memory)
            _write(join("memory.memsw.limit_in_bytes"), memory)  # with swap accounting: no swapping past the limit
            return ok
        if key == "pids":
            return _write(join("pids.max"), processes)
        return _write(join("cpu.weight"), weight) if v2 else _write(join("cpu.shares"), max(2, weight * 1024 // 100))

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid to, to join every group of this sandbox."""
        return sorted({os.path.join(path, "cgroup.procs") for path, _ in self.dirs.values()})

    def pids(self) -> set[int]:
        """Every process in the sandbox's groups now."""
        out = set()
        for path in self.procs_files():
            out.update(int(p) for p in _read(path).split() if p.isdigit())
        return out

    def limit_hit(self) -> str | None:
        """``"memory"`` when the kernel killed a process of the sandbox for its memory limit, ``"processes"`` when a
        fork or thread was refused for its task limit, else None."""
        if "memory" in self.dirs:
            path, v2 = self.dirs["memory"]
            text = _read(os.path.join(path, "memory.events" if v2 else "memory.oom_control"))
            if _field(text, "oom_kill") or _field(text, "oom"):
                return "memory"
        if "pids" in self.dirs:
            if _field(_read(os.path.join(self.dirs["pids"][0], "pids.events")), "max"):
                return "processes"
        return None

    def peak(self) -> dict[str, int | None]:
        """The most memory (bytes) and tasks the sandbox held at once, where the kernel counts them."""
        memory = tasks = None
        if "memory" in self.dirs:
            path, v2 = self.dirs["memory"]
            memory = _int_of(_read(os.path.join(path, "memory.peak" if v2 else "memory.max_usage_in_bytes")))
        if "pids" in self.dirs:
            tasks = _int_of(_read(os.path.join(self.dirs["pids"][0], "pids.peak")))
        return {"memory": memory, "processes": tasks}

    def kill(self) -> None:
        """Kills every process of the sandbox, and what it forks while dying."""
        if "kill" in self.dirs:  # cgroup v2's one write that kills the group; the loop covers v1 and late forks
            _write(os.path.join(self.dirs["kill"][0], "cgroup.kill"), 1)
        for _ in range(200):
            left = self.pids()
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kills what is left and removes the groups (a group with a process in it cannot be removed)."""
        self.kill()
        for path in sorted({p for p, _ in self.dirs.values()}):
            for _ in range(100):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.02)
        self.dirs = {}


def _field(text: str, name: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == name and parts[1].isdigit():
            return int(parts[1])
    return 0


def _int_of(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


class _Supervisor:
    """Where no control group holds a limit: measures the sandbox's process tree and ends it when it goes over.

    Every ``interval`` seconds it follows the children of every process it has seen (so a child re-parented by a
    double fork is still followed when it was seen once), sums their memory (resident, less what is shared, plus
    the largest shared part once; over the limit, confirmed by the proportional set size, which counts a page that
    forks share once) and their tasks, and kills them all when either is over its limit. It is a
    fallback: a process forked and orphaned between two looks is not seen (a control group has no such gap).
    """

    def __init__(self, root: int, *, memory: int | None, processes: int | None, interval: float = 0.1):
        import psutil

        self._psutil = psutil
        self.memory, self.processes, self.interval = memory, processes, interval
        self.hit: str | None = None
        self.peak_memory = self.peak_processes = 0
        self._seen: dict[int, object] = {}
        self._stop = threading.Event()
        try:
            self._seen[root] = psutil.Process(root)
        except psutil.Error:
            pass
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def alive(self) -> list:
        """The processes of the sandbox still running (its tree, and every process seen in it once)."""
        psutil = self._psutil
        for proc in list(self._seen.values()):
            try:
                for child in proc.children(recursive=True):
                    self._seen.setdefault(child.pid, child)
            except psutil.Error:
                pass
        out = []
        for pid, proc in list(self._seen.items()):
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    out.append(proc)
                    continue
            except psutil.Error:
                pass
            del self._seen[pid]
        return out

    def _watch(self) -> None:
        psutil = self._psutil
        while not self._stop.wait(self.interval):
            procs = self.alive()
            memory = tasks = shared = 0
            for proc in procs:
                try:
                    info = proc.memory_info()
                    memory += info.rss - info.shared
                    shared = max(shared, info.shared)
                    tasks += proc.num_threads()
                except psutil.Error:
                    pass
            memory += shared
            if self.memory is not None and memory > self.memory:
                memory = self._proportional(procs)  # forks share pages copy-on-write: count each page once
            self.peak_memory, self.peak_processes = max(self.peak_memory, memory), max(self.peak_processes, tasks)
            over = ("memory" if self.memory is not None and memory > self.memory else
                    "processes" if self.processes is not None and tasks > self.processes else None)
            if over:
                self.hit = self.hit or over
                self.kill()

    def _proportional(self, procs) -> int:
        """The tree's proportional set size: each page shared by n processes counted 1/n in each (exact for forked
        children, whose pages are shared copy-on-write; slower to read, so read only to confirm a breach)."""
        total = 0
        for proc in procs:
            try:
                total += proc.memory_full_info().pss
            except (self._psutil.Error, AttributeError):
                pass
        return total

    def kill(self) -> None:
        for _ in range(3):
            procs = self.alive()
            if not procs:
                return
            for proc in procs:
                try:
                    proc.kill()
                except self._psutil.Error:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.kill()


def processes_of(worker: "Worker") -> list[int]:
    """The pids of every process of ``worker``'s sandbox now (its control group, else its supervised tree)."""
    _checks.instance("worker", worker, Worker)
    if worker.group.dirs:
        return sorted(worker.group.pids())
    if worker.supervisor is not None:
        return sorted(p.pid for p in worker.supervisor.alive())
    return [worker.proc.pid]


# ------------------------------------------------------------------ a running worker
class WorkerError(Exception):
    """The worker did not answer as the protocol says: ``kind`` is ``timeout``, ``died`` or ``invalid``."""

    def __init__(self, kind: str, message: str = ""):
        super().__init__(message or kind)
        self.kind = kind


class Worker:
    """An untrusted process and its two pipes, read and written with deadlines; contained as a whole (:class:`Group`,
    else :class:`_Supervisor`), and every process of it killed on :meth:`Worker.close`.

    Args:
      cmd: the worker's command (e.g. ``[sys.executable, "-I", "-B", "-m", "jtk.course._grading_worker"]``).
      mode: ``none``, ``user`` or ``bwrap`` (:func:`resolve`'s result).
      memory: the memory limit in bytes of the whole sandbox, all its processes together (its tmpfs mounts count
        against it in bwrap); each process's address space is limited too (:func:`address_space`).
      workdir: its working directory outside bwrap (``none`` / ``user``; made and removed by the caller).
      package: what bwrap mounts over jtk (:func:`stubbed_package`), or None for jtk itself.
      uid: the uid of a ``user``-mode worker.
      env: extra environment variables.
      processes: tasks (processes and threads) the whole sandbox may hold.
      cpu_weight: the sandbox's CPU weight (:data:`CPU_WEIGHT`), one share however many processes it starts.
      binds: (outside, inside) folders bwrap mounts read-only (e.g. a challenge submission's).
      cwd: the working directory inside bwrap (one of ``binds``; default its ``/tmp``).

    Attributes:
      limit_hit: after :meth:`close`, ``"memory"`` or ``"processes"`` when the sandbox went over that limit of the
        whole sandbox, else None.
      peak: after :meth:`close`, ``{"memory": bytes, "processes": tasks}`` the sandbox held at most (None where
        nothing measured it).
    """

    STDERR_TAIL = 4000

    def __init__(self, cmd: Sequence[str], *, mode: str, memory: int, workdir: str | None = None,
                 package: str | None = None, uid: int | None = None, env: dict | None = None,
                 processes: int = DEFAULT_PROCESSES, cpu_weight: int = CPU_WEIGHT,
                 binds: Sequence[tuple[str, str]] = (), cwd: str | None = None):
        if isinstance(cmd, (str, bytes)) or not all(isinstance(c, str) for c in _checks.nonempty("cmd", cmd, "str")):
            raise TypeError(f"cmd must be a non-empty list of str (a command line), got {cmd!r}")
        _checks.one_of("mode", mode, [m for m in MODES if m != "auto"])
        if mode != "bwrap":
            _checks.path("workdir", workdir)
        if uid is not None:
            _checks.integer("uid", uid, minimum=UID_BASE)
        home = "/tmp" if mode == "bwrap" else workdir
        inside = (cwd or home) if mode == "bwrap" else workdir
        self.group = Group(memory=memory, processes=processes, cpu_weight=cpu_weight)
        join = os.pathsep.join(self.group.procs_files())
        full = [sys.executable, "-I", launcher(), "--memory", str(address_space(memory, mode)),
                "--workdir", inside, "--uid", str(uid if uid is not None else -1), "--", *cmd]
        if mode == "bwrap":  # the group is joined outside bwrap (its /sys is not in the sandbox's view)
            full = [*bwrap_args(package=package, memory=memory, home=inside, binds=binds), *full]
            if join:
                full = [sys.executable, "-I", "-S", launcher(), "--cgroup", join, "--", *full]
        elif join:
            full[3:3] = ["--cgroup", join]
        self.mode, self.uid = mode, uid
        self.limit_hit: str | None = None
        self.peak: dict = {"memory": None, "processes": None}
        try:
            self.proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         cwd=workdir or "/", env=worker_env(home, env), start_new_session=True,
                                         close_fds=True)
        except BaseException:
            self.group.remove()
            raise
        missing = {"memory", "pids"} - self.group.controllers
        self.supervisor = None if not missing else _Supervisor(
            self.proc.pid, memory=memory if "memory" in missing else None,
            processes=processes if "pids" in missing else None)
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        self._buffer = bytearray()
        self._stderr = collections.deque(maxlen=64)  # the last chunks of what the worker wrote to stderr
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        fd = self.proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self._stderr.append(chunk[-self.STDERR_TAIL:])

    def stderr_tail(self) -> str:
        """The last characters the worker wrote to stderr (bounded: a flood costs the grader nothing)."""
        return b"".join(self._stderr)[-self.STDERR_TAIL:].decode(errors="replace")

    def _wait(self, fd: int, write: bool, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise WorkerError("timeout")
        r, w, _ = select.select([] if write else [fd], [fd] if write else [], [], left)
        if not (r or w):
            raise WorkerError("timeout")

    def send(self, obj, deadline: float) -> None:
        """Writes one frame (:func:`jtk.course._wire.frame_bytes`) before ``deadline`` (``time.monotonic()``)."""
        from jtk.course import _wire

        data = memoryview(_wire.frame_bytes(obj))
        while data:
            self._wait(self._in, True, deadline)
            try:
                n = os.write(self._in, data)
            except BlockingIOError:
                continue
            except OSError:
                raise WorkerError("died", "the worker died") from None
            data = data[n:]

    def _take(self, n: int, deadline: float) -> bytes:
        while len(self._buffer) < n:
            self._wait(self._out, False, deadline)
            chunk = os.read(self._out, max(1 << 16, n - len(self._buffer)))
            if not chunk:
                raise WorkerError("died", "the worker died")
            self._buffer += chunk
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def recv(self, deadline: float, max_bytes: int = 1 << 20, array: bool = False):
        """Reads one frame before ``deadline``, of at most ``max_bytes``: a JSON object (a dict), or with ``array`` a
        ``.npy`` array.

        Raises:
          WorkerError: ``timeout``, ``died``, or ``invalid`` (too large, malformed, not of the kind expected).
        """
        from jtk.course import _wire

        length, kind = _wire.HEADER.unpack(self._take(_wire.HEADER.size, deadline))
        if length > max_bytes:
            raise WorkerError("invalid", f"the worker sent {length} bytes where at most {max_bytes} were expected")
        try:
            obj = _wire.decode_frame(kind, self._take(length, deadline))
        except _wire.WireError as err:
            raise WorkerError("invalid", f"the worker sent a malformed frame ({err})") from None
        if array and not isinstance(obj, np.ndarray):
            raise WorkerError("invalid", "the worker sent a frame that is not an array")
        if not array and not isinstance(obj, dict):
            raise WorkerError("invalid", "the worker sent a frame that is not an object")
        return obj

    def request(self, obj: dict, deadline: float, max_bytes: int = 1 << 20) -> dict:
        """:meth:`send`, then :meth:`recv`."""
        self.send(obj, deadline)
        return self.recv(deadline, max_bytes)

    def close(self) -> None:
        """Kills the worker and everything it started (its group, its supervised tree, its process group; in user mode
        every process of its uid), records :attr:`limit_hit` and :attr:`peak`, and removes its control groups."""
        self.limit_hit = self.group.limit_hit() or (self.supervisor.hit if self.supervisor else None)
        self.peak = self.group.peak()
        if self.supervisor is not None:
            self.supervisor.stop()
            self.limit_hit = self.limit_hit or self.supervisor.hit
            for key, seen in (("memory", self.supervisor.peak_memory), ("processes", self.supervisor.peak_processes)):
                self.peak[key] = self.peak[key] if self.peak[key] is not None else seen
        self.group.kill()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.mode == "user" and self.uid is not None:
            kill_user_processes(self.uid)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._drain.join(timeout=5)
        try:
            self.proc.stderr.close()
        except OSError:
            pass
        self.group.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def die_with_parent(parent: int | None = None) -> None:
    """Has the kernel kill this process when its parent dies (Linux ``PR_SET_DEATHSIG``): a grader's pool process,
    and with it its sandbox (bwrap ``--die-with-parent``), never outlives the grader, however the grader ended.
    ``parent``: the pid the caller expects as its parent (if it is already gone, this process exits now)."""
    if parent is not None:
        _checks.integer("parent", parent, minimum=1)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def kill_user_processes(uid: int) -> None:
    """Kills every process of ``uid`` (user mode: what a worker left behind). Needs root."""
    _checks.integer("uid", uid, minimum=UID_BASE)  # a worker's uid: never root's or a person's
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


def remove_tree(path) -> None:
    """Removes a directory that untrusted code wrote into, even one it made read-only or unreadable."""
    path = _checks.path("path", path)
    def retry(func, failed, _exc):
        try:
            parent = os.path.dirname(failed)
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, stat.S_IRWXU)
            func(failed)
        except OSError:
            pass

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=retry)
        if os.path.lexists(path):
            shutil.rmtree(path, onerror=retry)
