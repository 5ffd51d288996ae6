"""What jtk runs on: versions, JAX backend and devices, the compilation cache, optional extras (``jtk info``)."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys

from jtk._version import __version__

EXTRAS = ("dask", "distributed", "jupyterlab", "ipywidgets", "nbclient", "nbval", "playwright", "pytest")


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The full commit of the checkout jtk runs from, or None (not a checkout, no git, or git too slow)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(os.path.join(here, ".git")) or shutil.which("git") is None:
        return None
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


ISA_LEVELS = ("SSE4_2", "AVX", "AVX2", "AVX512")
"""x86-64 vector instruction sets XLA's CPU compiler targets, lowest first (names as in ``--xla_cpu_max_isa``)."""
PORTABLE_XLA_FLAG = "--xla_cpu_max_isa=AVX2"
"""The XLA flag jtk's tests run under: XLA's generated code targets AVX2 at most, so CPUs whose widest vector ISA is
the same give the same bits (docs/reference.md, "Reproducibility across machines"). The cap does not reach XLA's
library kernels (the YNN dot fusions) or its platform-dependent math, which follow the host's own instructions, so an
AVX-512 host capped at AVX2 is its own numerics key (``x86_64/AVX2-on-AVX512/Intel`` on an Intel host). jtk itself
never sets the flag."""


@functools.lru_cache(None)
def _cpu() -> tuple[str | None, frozenset]:
    """The CPU's model name and feature flags (Linux /proc/cpuinfo; elsewhere the platform's processor string)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read(200_000)
    except OSError:
        return platform.processor() or None, frozenset()
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^(?:flags|Features)\s*:\s*(.+)$", text, re.M)
    return (model.group(1).strip() if model else platform.processor() or None,
            frozenset(flags.group(1).split()) if flags else frozenset())


def _level(isa: str | None) -> int | None:
    if not isa:
        return None
    for i in range(len(ISA_LEVELS) - 1, -1, -1):  # AVX512_VNNI and the like count as AVX512
        if isa.upper().startswith(ISA_LEVELS[i]):
            return i
    return None


def numerics() -> dict:
    """What the bits of a CPU result depend on: the CPU, the vector ISA XLA compiles for, and the BLAS kernels.

    XLA's CPU compiler targets the host's widest vector instructions unless ``--xla_cpu_max_isa`` in ``XLA_FLAGS``
    caps them; float reductions are ordered by the vector width, so AVX2 and AVX-512 machines differ in the last
    bits. jtk's testbed agents do not go through the BLAS (their factorisations run in XLA), numpy / scipy code
    does, and OpenBLAS picks its kernels by the CPU.

    Returns:
      ``machine`` (e.g. x86_64), ``cpu`` (model name), ``cpu_vendor`` (Intel, AMD or None, from the model name),
      ``cpu_isa`` (the host's widest ISA of :data:`ISA_LEVELS`), ``xla_cpu_max_isa`` (the cap in XLA_FLAGS, or
      None), ``xla_cpu_isa`` (what XLA targets: the lower of the two), ``numerics_key`` (``machine/xla_cpu_isa``,
      with ``-on-<cpu_isa>`` when a cap lowers XLA's ISA below the host's and ``/<cpu_vendor>`` when known: results
      with equal keys and versions are bit-identical) and ``blas`` (each loaded BLAS: library, version and kernel
      set, via threadpoolctl).
    """
    model, flags = _cpu()
    vendor = _vendor(model)
    machine = platform.machine()
    host = None
    if machine in ("x86_64", "AMD64"):
        host = next((isa for flag, isa in (("avx512f", "AVX512"), ("avx2", "AVX2"), ("avx", "AVX"),
                                           ("sse4_2", "SSE4_2")) if flag in flags), None)
    cap = re.search(r"--xla_cpu_max_isa=(\w+)", os.environ.get("XLA_FLAGS", ""))
    cap = cap.group(1) if cap else None
    levels = [lv for lv in (_level(host), _level(cap)) if lv is not None]
    effective = ISA_LEVELS[min(levels)] if host and levels else host
    key = f"{machine}/{effective or 'native'}"
    if host and effective and effective != host:  # capped: XLA's library kernels still follow the host's ISA
        key += f"-on-{host}"
    if vendor:  # the same ISAs on an Intel and an AMD host gave other bits (docs/reference.md)
        key += f"/{vendor}"
    return {"machine": machine, "cpu": model, "cpu_vendor": vendor, "cpu_isa": host, "xla_cpu_max_isa": cap,
            "xla_cpu_isa": effective, "numerics_key": key, "blas": _blas()}


def gemm_gflops(size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of a float32 size × size matrix product on the default device (best of ``repeats``): what this
    machine's matrix multiply reaches, the yardstick of benchmarks/training_flops.py and the bandit study's speed."""
    import time

    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
    from jtk import _compile

    dot = _compile.jit(jnp.dot)
    dot(a, a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        dot(a, a).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return 2 * size ** 3 / best / 1e9


def _vendor(model: str | None) -> str | None:
    """The vendor, Intel or AMD, when the CPU's model name begins with it (as x86 model names do), else None."""
    for vendor in ("Intel", "AMD"):
        if model and re.match(rf"\s*{vendor}\b", model):
            return vendor
    return None


def _blas() -> str | None:
    try:
        import threadpoolctl
    except ImportError:  # pragma: no cover - a scikit-learn dependency
        return None
    libs = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture') or ''}".strip()
            for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(sorted(set(libs))) or None


def info() -> dict:
    """Versions, the JAX backend and devices, the compilation cache and which optional extras are installed.

    Returns:
      A dict with keys jtk, git_commit, python, platform, jax, jaxlib, backend, devices, jax_platforms (the
      environment variable, or None), compilation_cache, the keys of :func:`jtk._info.numerics` (cpu, cpu_isa,
      xla_cpu_max_isa, xla_cpu_isa, numerics_key, blas; not machine, which platform shows), extras (name -> version
      or None).
    """
    import jax

    return {
        "jtk": __version__, "git_commit": git_commit(), "python": sys.version.split()[0],
        "platform": platform.platform(), "jax": jax.__version__, "jaxlib": _version("jaxlib"),
        "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
        "jax_platforms": os.environ.get("JAX_PLATFORMS"),
        "compilation_cache": jax.config.jax_compilation_cache_dir or None,
        **{k: v for k, v in numerics().items() if k != "machine"},
        "extras": {name: _version(name) for name in EXTRAS},
    }


def provenance() -> dict:
    """What produced a result: jtk version and git commit, JAX / jaxlib and backend, Python, platform, host, and what
    the bits depend on (``numerics``: CPU, the vector ISA XLA targets, BLAS kernels; :func:`numerics`).

    The one owner of provenance: result files (:mod:`jtk.results`, :mod:`jtk.testbed.sweep`) store it; ``jtk info``
    (:func:`info`) shows the same versions and commit with the devices and extras added."""
    import socket

    import jax

    return {"jtk": __version__, "git_commit": git_commit(), "jax": jax.__version__, "jaxlib": _version("jaxlib"),
            "backend": jax.default_backend(), "python": sys.version.split()[0], "platform": platform.platform(),
            "host": socket.gethostname(), "numerics": numerics()}


def format_info(data: dict) -> str:
    """``info()`` as the lines ``jtk info`` prints."""
    lines = [f"{key:18s} {value}" for key, value in data.items() if key != "extras"]
    lines.append("extras             " + ", ".join(f"{k} {v}" if v else f"{k} (not installed)"
                                                  for k, v in data["extras"].items()))
    return "\n".join(lines)
