import pandas as pd
import pytest

import jtk
from jtk import executors, testbed


def test_dask_local_cluster_gives_identical_results():
    agent = jtk.agents.make("ensemble+", num_members=2, num_steps=30)
    problems = testbed.grid(temperatures=(0.1, 0.5), num_train=(10, 200), seeds=1)
    local = testbed.evaluate(agent, problems, name="e+", progress=False)
    with executors.executor("dask", n_workers=2) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        remote = testbed.evaluate(agent, problems, executor=client, name="e+", progress=False)
    cols = [c for c in local.columns if not c.endswith("seconds")]
    pd.testing.assert_frame_equal(local[cols], remote[cols])


def test_bad_scheduler_is_a_clear_error():
    with pytest.raises(ValueError, match="scheduler must be"):
        with executors.executor("yarn"):
            pass


def test_map_local_keeps_the_order_uses_threads_and_raises_the_first_error(monkeypatch):
    import threading
    import time

    monkeypatch.setenv("JTK_THREADS", "2")
    names = []

    def task(i):
        time.sleep(0.05 * (3 - i))  # later items finish first
        names.append(threading.current_thread().name)
        return i * i

    assert executors.map_local(task, range(4), desc="t", progress=False) == [0, 1, 4, 9]
    assert len(set(names)) == 2 and all(n.startswith("jtk-local") for n in names)
    assert executors.map_local(task, [], desc="t") == []
    done = []

    def fails(i):
        if i in (1, 2):
            raise ValueError(f"item {i}")
        time.sleep(0.1)
        done.append(i)
        return i

    with pytest.raises(ValueError, match="item 1"):
        executors.map_local(fails, range(4), desc="t", progress=False)
    assert sorted(done) == [0, 3]  # the others ran to the end before the error was raised


def test_map_local_starts_the_costliest_task_first_and_keeps_the_order(monkeypatch):
    monkeypatch.setenv("JTK_THREADS", "1")
    started = []

    def task(i):
        started.append(i)
        return 10 * i

    costs = {0: 1.0, 1: 4.0, 2: 2.0, 3: 4.0}
    assert executors.map_local(task, range(4), desc="t", progress=False, cost=costs.get) == [0, 10, 20, 30]
    assert started == [1, 3, 2, 0]  # descending cost, ties in the items' order
    started.clear()
    executors.map_local(task, range(4), desc="t", progress=False)
    assert started == [0, 1, 2, 3]  # no cost: the items' order


def test_map_local_stops_starting_tasks_after_an_interrupt(monkeypatch):
    """The notebook's stop button: SIGINT to the main thread while a task runs. map_local raises KeyboardInterrupt,
    the tasks not yet started never start, and the running one ends.

    The test installs the handler it relies on (Python's default one, plus a record that it ran): a process started
    with SIGINT ignored, as a shell's background job (``pytest &``) is, keeps it ignored, and the old test then failed
    with "DID NOT RAISE". The running task waits for events rather than fixed times, so a busy machine cannot start
    the queued tasks before the main thread cancels them: for the handler to have run, then for the queued tasks'
    cancellation.
    """
    import concurrent.futures
    import signal
    import threading
    import time

    monkeypatch.setenv("JTK_THREADS", "1")
    started, futures = [], []
    received, finished = threading.Event(), threading.Event()
    submit = concurrent.futures.ThreadPoolExecutor.submit
    monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "submit",
                        lambda pool, *a, **k: futures.append(submit(pool, *a, **k)) or futures[-1])

    def on_sigint(signum, frame):  # as signal.default_int_handler, once
        if not received.is_set():
            received.set()
            raise KeyboardInterrupt

    def task(i):
        started.append(i)
        if i == 0:
            time.sleep(0.3)  # the main thread is (most likely) waiting for the tasks by now
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            received.wait(30)
            deadline = time.monotonic() + 30
            while not all(f.cancelled() for f in futures[1:]) and time.monotonic() < deadline:
                time.sleep(0.01)
            finished.set()
        return i

    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        with pytest.raises(KeyboardInterrupt):
            executors.map_local(task, range(5), desc="t", progress=False)
        assert finished.wait(120)  # no SIGINT is sent after this
    finally:
        signal.signal(signal.SIGINT, old)
    assert received.is_set()
    assert started == [0]
    assert all(f.cancelled() for f in futures[1:])
