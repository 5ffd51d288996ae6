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
    import signal
    import threading
    import time

    monkeypatch.setenv("JTK_THREADS", "1")
    started = []

    def task(i):
        started.append(i)
        if i == 0:  # the notebook's stop button: SIGINT to the main thread, waiting for the tasks, while this runs
            time.sleep(0.3)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.3)
        return i

    with pytest.raises(KeyboardInterrupt):
        executors.map_local(task, range(5), desc="t", progress=False)
    time.sleep(0.3)
    assert started == [0]
