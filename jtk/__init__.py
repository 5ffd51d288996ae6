"""jtk: a Jupyter-first toolkit for teaching and exploring joint predictive uncertainty.

The library behind the notebooks: generative models (``jtk.envs``), testbed classification
agents (``jtk.agents``), regression models and the coverage study (``jtk.regression``), joint likelihoods and
d_KL^τ (``jtk.likelihood``), the Neural Testbed with its sweeps, bandit and ensemble study (``jtk.testbed``),
active learning and posterior predictive correlations (``jtk.ppc``), figures and apps (``jtk.plots``,
``jtk.widgets``), the instructors' tools (``jtk.course``; students import its checks as ``jtk.checks``), and the
platform at the top level: executors, results files, the ``jtk`` command. The layers, what each package may import,
are in docs/development.md ("Layout") and checked by tests/test_architecture.py.

On import jtk turns on JAX's persistent compilation cache (in
``$JTK_CACHE_DIR``, default ``~/.cache/jtk/xla``), so a second run of a sweep or
a notebook skips XLA compilation. Set ``JTK_COMPILATION_CACHE=0`` to opt out;
a cache directory already configured for JAX is left alone. The cache is capped at
``$JTK_CACHE_MAX_GB`` (2 GB; least recently used entries go first), which also
makes JAX lock the cache while it reads or writes an entry.
"""

import os as _os

# jtk sets no platform: JAX picks its default backend (a GPU where jax[cuda] is installed). Tests, benchmarks, CI and
# Dask workers set JAX_PLATFORMS=cpu themselves where they need the CPU.


def _enable_compilation_cache() -> None:
    if _os.environ.get("JTK_COMPILATION_CACHE", "1") == "0":
        return
    import jax

    if jax.config.jax_compilation_cache_dir:
        return
    path = _os.environ.get("JTK_CACHE_DIR") or _os.path.join(_os.path.expanduser("~"), ".cache", "jtk", "xla")
    try:
        _os.makedirs(path, exist_ok=True)
    except OSError:
        return  # read-only home: run without a persistent cache
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    # A size cap turns on JAX's least-recently-used eviction, and with it a file lock around every cache read and
    # write: without it, two processes (two notebooks, a notebook and a sweep) can write one entry at once or read
    # one half written. The cap keeps a student's disk from filling (JTK_CACHE_MAX_GB, default 2).
    try:
        max_gb = float(_os.environ.get("JTK_CACHE_MAX_GB", "2"))
    except ValueError:
        max_gb = 2.0
    jax.config.update("jax_compilation_cache_max_size", int(max_gb * 2 ** 30) if max_gb > 0 else -1)
    if max_gb > 0:
        _backfill_access_times(path)


def _backfill_access_times(path: str) -> None:
    """Gives every cache entry written without the cap (an older jtk, or ``JTK_CACHE_MAX_GB=0``) the access-time
    file JAX's eviction reads; without it every later cache write fails with a warning. JAX's file names
    (``<key>-cache``, ``<key>-atime``) are its own: if they change, this does nothing."""
    try:
        names = set(_os.listdir(path))
        for name in names:
            if name.endswith("-cache") and name[:-len("-cache")] + "-atime" not in names:
                entry = _os.path.join(path, name)
                stamp = int(_os.stat(entry).st_mtime_ns).to_bytes(8, "little")
                with open(entry[:-len("-cache")] + "-atime", "wb") as f:
                    f.write(stamp)
    except OSError:
        pass


_enable_compilation_cache()

from jtk._info import info  # noqa: E402
from jtk._version import __version__ as __version__  # noqa: E402 (the one version, re-exported)
from jtk.likelihood import accuracy, expected_calibration_error, joint_log_likelihood  # noqa: E402

_SUBMODULES = ("agents", "checks", "course", "envs", "executors", "likelihood", "nets", "plots", "ppc", "regression",
               "results", "testbed", "train", "widgets")
# jtk.checks is the students' name of jtk.course.checks (the very module; no warning, documented there).
_ALIAS_SUBMODULES = {"checks": "jtk.course.checks"}
__all__ = ["accuracy", "expected_calibration_error", "info", "joint_log_likelihood", *_SUBMODULES]


def __getattr__(name: str):
    """Submodules load on first use (``jtk.testbed``, ``from jtk import ppc``): ``import jtk`` stays fast."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"jtk.{name}")
    raise AttributeError(f"module 'jtk' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
