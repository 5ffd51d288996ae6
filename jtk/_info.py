"""What jtk runs on: versions, JAX backend and devices, the compilation cache, optional extras (``jtk info``)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys

EXTRAS = ("dask", "distributed", "jupyterlab", "ipywidgets", "nbclient", "nbval", "playwright", "pytest")


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(here, ".git")) or shutil.which("git") is None:
        return None
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def info() -> dict:
    """Versions, the JAX backend and devices, the compilation cache and which optional extras are installed.

    Returns:
      A dict with keys jtk, git_commit, python, platform, jax, jaxlib, backend, devices, jax_platforms (the
      environment variable, or None), compilation_cache, extras (name -> version or None).
    """
    import jax

    import jtk

    return {
        "jtk": jtk.__version__, "git_commit": _git_commit(), "python": sys.version.split()[0],
        "platform": platform.platform(), "jax": jax.__version__, "jaxlib": _version("jaxlib"),
        "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
        "jax_platforms": os.environ.get("JAX_PLATFORMS"),
        "compilation_cache": jax.config.jax_compilation_cache_dir or None,
        "extras": {name: _version(name) for name in EXTRAS},
    }


def format_info(data: dict) -> str:
    """``info()`` as the lines ``jtk info`` prints."""
    lines = [f"{key:18s} {value}" for key, value in data.items() if key != "extras"]
    lines.append("extras             " + ", ".join(f"{k} {v}" if v else f"{k} (not installed)"
                                                  for k, v in data["extras"].items()))
    return "\n".join(lines)
