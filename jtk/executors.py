"""Where testbed work runs: in this process, on an embedded Dask cluster, or on an existing one.

``jtk.testbed.evaluate`` (and ``jtk.testbed.sweep``) accept any object with
``submit(fn, *args) -> future`` and ``future.result()``, the
``concurrent.futures.Executor`` protocol that ``dask.distributed.Client`` also
speaks. Work is shipped in chunks of problems that share compiled code, so each
worker compiles an agent once and keeps its jit cache warm for later chunks.
Results do not depend on where a chunk runs: every random number comes from the
problem's seed.

Without an executor, jtk's own agents still use every core: XLA's CPU backend
runs one program on one core (the testbed's batched small matrix products are
not split across threads), so :func:`local_threads` chunks run at once, one per
thread, each its own XLA program. A researcher's own agent (an object with
``fit``) runs one chunk at a time, since jtk cannot know its code is thread-safe.
"""

from __future__ import annotations

import contextlib
import numbers
import os
from typing import Any, Callable, Iterator

SCHEDULERS = ("local", "dask")
MAX_LOCAL_THREADS = 4  # each running chunk holds its own training and scoring memory


def host_cores() -> int:
    """The CPU cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def local_threads(num_tasks: int, agents=()) -> int:
    """How many chunks run at once in this process when no executor is given.

    One per CPU core available to the process (``os.sched_getaffinity``), at most
    :data:`MAX_LOCAL_THREADS` and ``num_tasks``, when JAX's default backend is the
    CPU and every agent is one of jtk's (:class:`jtk.agents.JaxAgent`); otherwise
    1. On a GPU one device runs one program at a time, so threads would only add
    memory. ``JTK_THREADS=N`` sets the number (``JTK_THREADS=1``: one chunk at a
    time).

    Args:
      num_tasks: chunks to run.
      agents: the agents whose chunks these are.

    Returns:
      The number of worker threads, ≥ 1.
    """
    import sys

    import jax

    # jtk's own agents are instances of jtk.agents.base.JaxAgent; read from sys.modules, not imported: the platform
    # imports no agent code, and where that module is not loaded no agent can be one of them.
    agents_base = sys.modules.get("jtk.agents.base")
    JaxAgent = getattr(agents_base, "JaxAgent", None)
    from jtk import _checks

    _checks.integer("num_tasks", num_tasks, minimum=0)

    setting = os.environ.get("JTK_THREADS", "").strip()
    if setting:
        if not setting.isdigit() or int(setting) < 1:
            raise ValueError(f"JTK_THREADS must be a positive integer, got {setting!r}")
        wanted = int(setting)
    elif jax.default_backend() != "cpu" or not all(JaxAgent is not None and isinstance(a, JaxAgent) for a in agents):
        return 1
    else:
        wanted = min(host_cores(), MAX_LOCAL_THREADS)
    return max(1, min(wanted, int(num_tasks)))


def map_local(fn, items, *, desc: str, unit: str = "task", progress: bool = True,
              cost: Callable[[Any], float] | None = None) -> list:
    """``[fn(item) for item in items]``, run side by side in :func:`local_threads` worker threads.

    For the labs' studies of jtk's own programs (a bandit agent, a coverage study per f_main): XLA compiles and
    runs with the GIL released, so on two cores two of them compile or train at once. Results come back in the
    order of ``items`` and are the same as a loop's (each task draws its random numbers from its own seeds); if
    tasks fail, the first failing item's error is raised once every task has ended; an interrupt drops the tasks
    not yet started and waits for the running ones. A tqdm bar advances as each task finishes.

    With ``cost``, the tasks start costliest first (ties in the order of ``items``), so that the threads finish
    together instead of one running the longest task alone at the end (without it, lab 4's sweep over f_main = 0.5,
    1, 2, whose costs are 1 : 2 : 4, ran f_main = 2 alone after 0.5 and 1; docs/platforms.md, "Both cores: one
    chunk per thread").

    Args:
      fn: the task, called once per item.
      items: the items (a list or any iterable).
      desc: the progress bar's label.
      unit: the progress bar's unit.
      progress: show the progress bar.
      cost: optional ``cost(item) -> number``, an estimate of the task's run time (any unit); only the order in
        which the tasks start depends on it.

    Returns:
      The results, in the order of ``items``.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from jtk import _checks

    _checks.function("fn", fn)

    from tqdm.auto import tqdm

    items = list(items)
    if not items:
        return []
    order = range(len(items)) if cost is None else sorted(range(len(items)), key=lambda i: -cost(items[i]))
    pool = ThreadPoolExecutor(local_threads(len(items)), thread_name_prefix="jtk-local")
    try:
        with tqdm(total=len(items), desc=desc, unit=unit, disable=not progress) as bar:
            futures = [None] * len(items)
            for i in order:  # the pool starts tasks in the order they are submitted
                futures[i] = pool.submit(fn, items[i])
            for done in as_completed(futures):
                if done.exception() is None:
                    bar.update()
        return [f.result() for f in futures]
    finally:  # an interrupt (the notebook's stop button) drops the tasks not yet started
        pool.shutdown(wait=True, cancel_futures=True)


def check_executor(value, name: str = "executor"):
    """Checks an ``executor=`` argument before any work: None, or an object with ``submit(fn, *args) -> future``.

    Raises:
      TypeError: naming ``name``, what is accepted and what was given (a string such as "dask" gets a hint).
    """
    if value is None or callable(getattr(value, "submit", None)):
        return value
    given = f"{type(value).__name__} {value!r}" if isinstance(value, (str, bytes, numbers.Number)) else \
        f"an object of type {type(value).__name__} without submit"
    hint = ""
    if isinstance(value, str) and value == "local":
        hint = "; pass executor=None to run in this process"
    elif isinstance(value, str) and (value in SCHEDULERS or value.startswith("tcp://")):
        hint = (f"; a scheduler name is not an executor: run inside `with jtk.executors.executor({value!r}) as "
                f"client:` and pass executor=client (or pass a dask.distributed.Client), or use "
                f"`--scheduler {value}` from the command line")
    raise TypeError(f"{name} must be None (run in this process) or an executor with a submit(fn, *args) -> future "
                    f"method (a concurrent.futures.Executor or a dask.distributed.Client), got {given}{hint}")


def _require_dask() -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ValueError("scheduler 'dask' and tcp:// addresses need the dask extra: pip install 'jtk[dask]' "
                         "(or conda install dask distributed)") from None


def check_scheduler(scheduler: str) -> str:
    """``scheduler`` if it is "local", "dask" or a tcp:// address (Dask installed for the latter two), else raises."""
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
    check_scheduler(scheduler)
    from jtk import _checks

    _checks.integer("n_workers", n_workers, minimum=1)
    _checks.integer("threads_per_worker", threads_per_worker, minimum=1)
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
