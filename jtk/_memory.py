"""Memory budget: refuse sizes that cannot fit *before* allocating them.

Functions whose memory grows with a user-chosen size (num_samples, num_train,
pool sizes, class counts, hidden widths, grid resolutions) estimate their peak
in bytes and call :func:`check_budget` first. A size that cannot fit raises
:class:`MemoryBudgetError` (a ``ValueError``) with the arithmetic and a hint,
instead of aborting, hanging or failing deep inside JAX / numpy.

The budget is the memory available to this process (:func:`available_bytes`),
or ``JTK_MEMORY_BUDGET_GB`` from the environment when set (e.g. ``0.5``, or
``inf`` to switch the check off). Estimates are lower bounds of the real peak
(the largest arrays a call creates), so a refusal is always justified; a size
that passes can still fail for other reasons.
"""

from __future__ import annotations

import math
import os
import resource

import numpy as np

ENV_VAR = "JTK_MEMORY_BUDGET_GB"


class MemoryBudgetError(ValueError):
    """A requested size needs more memory than the budget (a ``ValueError``)."""


def _format(nbytes: float) -> str:
    if not math.isfinite(nbytes):
        return "unlimited"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes:.0f} B"


def _system_available() -> float:
    try:
        import psutil
        return float(psutil.virtual_memory().available)
    except Exception:  # psutil missing or unsupported platform
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - exotic platforms
        return math.inf


def _rlimit_headroom() -> float:
    """Bytes left under RLIMIT_AS / RLIMIT_DATA (whichever is lower), or inf when unlimited."""
    limit = math.inf
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        res = getattr(resource, name, None)
        if res is None:
            continue
        try:
            soft, _ = resource.getrlimit(res)
        except (ValueError, OSError):  # pragma: no cover
            continue
        if soft != resource.RLIM_INFINITY and soft > 0:
            limit = min(limit, float(soft) - _used_bytes(name))
    return max(limit, 0.0)


def _used_bytes(limit_name: str) -> float:
    """Current virtual size (for RLIMIT_AS) or data size (RLIMIT_DATA) of this process."""
    field = "VmSize:" if limit_name == "RLIMIT_AS" else "VmData:"
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 0.0


def available_bytes() -> float:
    """Bytes this process may still allocate: the budget :func:`check_budget` compares with.

    ``JTK_MEMORY_BUDGET_GB`` (GB, 1e9 bytes; ``inf`` disables the check) wins when set;
    otherwise the smaller of the system's available memory (psutil, else
    ``/proc/meminfo`` MemAvailable, else ``os.sysconf``) and the headroom left
    under ``RLIMIT_AS`` / ``RLIMIT_DATA`` when those are set.

    Raises:
      ValueError: ``JTK_MEMORY_BUDGET_GB`` is set but is not a number > 0.
    """
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        try:
            gb = float(override)
        except ValueError:
            raise ValueError(f"{ENV_VAR} must be a number of GB > 0 (or inf), got {override!r}") from None
        if not gb > 0:
            raise ValueError(f"{ENV_VAR} must be a number of GB > 0 (or inf), got {override!r}")
        return gb * 1e9
    return min(_system_available(), _rlimit_headroom())


def nbytes(*shape: int, dtype=np.float32) -> float:
    """Bytes of an array of ``shape`` (a float, so products of huge sizes never overflow)."""
    return float(math.prod(float(s) for s in shape)) * np.dtype(dtype).itemsize


def check_budget(what: str, nbytes: float, hint: str = "") -> None:
    """Raises :class:`MemoryBudgetError` when an estimated peak exceeds the memory budget.

    Args:
      what: the size arithmetic in words, e.g. ``"num_samples × n × K float32"``.
      nbytes: the estimated peak in bytes.
      hint: what to change, e.g. ``"lower num_samples or evaluate x in chunks"``.

    Raises:
      MemoryBudgetError: ``what = X GB > available Y GB; hint``.
    """
    budget = available_bytes()
    if nbytes > budget:
        msg = f"{what} = {_format(nbytes)} > available {_format(budget)}"
        if os.environ.get(ENV_VAR, "").strip():
            msg += f" ({ENV_VAR})"
        if hint:
            msg += f"; {hint}"
        raise MemoryBudgetError(msg)


def mlp_params(sizes) -> float:
    """Number of weights and biases of an MLP with layer sizes (in, hidden..., out)."""
    sizes = [float(s) for s in sizes]
    return float(sum((a + 1.0) * b for a, b in zip(sizes[:-1], sizes[1:])))
