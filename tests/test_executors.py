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
