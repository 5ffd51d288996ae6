"""Where testbed work runs: in this process, on an embedded Dask cluster, or on an existing one.

``jtk.testbed.evaluate`` (and ``jtk.sweep``) accept any object with
``submit(fn, *args) -> future`` and ``future.result()``, the
``concurrent.futures.Executor`` protocol that ``dask.distributed.Client`` also
speaks. Work is shipped in chunks of problems that share compiled code, so each
worker compiles an agent once and keeps its jit cache warm for later chunks.
Results do not depend on where a chunk runs: every random number comes from the
problem's seed.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

SCHEDULERS = ("local", "dask")


def _require_dask() -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ValueError("scheduler 'dask' and tcp:// addresses need the dask extra: pip install 'jtk[dask]' "
                         "(or conda install dask distributed)") from None


def _check_scheduler(scheduler: str) -> str:
    if not isinstance(scheduler, str) or not (scheduler in SCHEDULERS or scheduler.startswith("tcp://")):
        raise ValueError(f"scheduler must be 'local', 'dask' or a tcp://HOST:PORT address, got {scheduler!r}")
    if scheduler != "local":
        _require_dask()
    return scheduler


@contextlib.contextmanager
def executor(scheduler: str = "local", n_workers: int = 2, threads_per_worker: int = 1) -> Iterator[object]:
    """Context manager giving an executor for ``evaluate(..., executor=...)``.

    Args:
      scheduler: "local" (None: run in this process, vectorised), "dask" (an
        embedded ``LocalCluster`` on the loopback interface), or the address of
        a running Dask scheduler ("tcp://HOST:PORT").
      n_workers: worker processes of the embedded cluster.
      threads_per_worker: threads per worker of the embedded cluster.

    Yields:
      None for "local", else a ``dask.distributed.Client``.
    """
    _check_scheduler(scheduler)
    if scheduler == "local":
        yield None
        return
    from dask.distributed import Client, LocalCluster

    if scheduler == "dask":
        env = {"JAX_PLATFORMS": "cpu", "OMP_NUM_THREADS": str(threads_per_worker)}
        with LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, host="127.0.0.1",
                          dashboard_address=None, processes=True, env=env) as cluster, Client(cluster) as client:
            yield client
    else:
        with Client(scheduler) as client:
            yield client
