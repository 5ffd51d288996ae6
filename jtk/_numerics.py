"""Numerical helpers shared by the numpy (float64) regression and active-learning code: BLAS threads and RNGs."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, TypeVar

import jax
import numpy as np

from jtk import _checks

_F = TypeVar("_F", bound=Callable[..., Any])
_CONTROLLER: list = []


def serial_blas(fn: _F) -> _F:
    """Runs ``fn`` with one BLAS thread.

    The matrices here are small (≤ a few thousand rows): multi-threaded OpenBLAS
    gains little on them and, on a laptop or CI box whose cores are busy,
    its spinning threads slow a Cholesky down many times (docs/platforms.md, "BLAS threads").
    Uses threadpoolctl (a scikit-learn dependency); a no-op without it.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _CONTROLLER:
            try:
                import threadpoolctl
                _CONTROLLER.append(threadpoolctl.ThreadpoolController())
            except Exception:  # pragma: no cover - threadpoolctl missing or broken
                _CONTROLLER.append(None)
        ctl = _CONTROLLER[0]
        ctx = ctl.limit(limits=1, user_api="blas") if ctl is not None else contextlib.nullcontext()
        with ctx:
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def numpy_rng(seed: Any, name: str = "seed") -> np.random.Generator:
    """A numpy Generator seeded from an int or a JAX PRNG key (deterministic)."""
    key = _checks.as_key(seed, name)
    return np.random.default_rng(np.asarray(jax.random.key_data(key), dtype=np.uint32).tolist())
