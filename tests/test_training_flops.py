"""benchmarks/training_flops.py: the training FLOPs of a grid, the count behind testbed_speed.py's FLOP floor."""

import sys
from pathlib import Path

import pytest

import jtk
from jtk import testbed, train as train_lib

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def flops():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import training_flops

    return training_flops


def _by_hand(agent, problems):
    """Σ over training groups (shared by the τ of a seed, temperature and num_train) of steps × minibatch × networks
    × 3 × 2 × Σ fan_in · fan_out, without the padding of chunks."""
    total = 0.0
    for key in {p.training_problem for p in problems}:
        sizes = (key.input_dim, *agent.hidden, key.num_classes)
        per_row = 6.0 * sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
        total += agent.num_steps * train_lib.batch_bucket(key.num_train, agent.batch_size) * agent.num_networks * per_row
    return total


@pytest.mark.parametrize("name, kw", [("mlp", {}), ("ensemble+", {"num_members": 10})])
def test_grid_training_flops_counts_every_training_group(flops, name, kw):
    agent = jtk.agents.make(name, **kw)
    # 4 seeds per (num_train, temperature): chunks of 4 or 8 groups, powers of two, so no padded groups
    problems = testbed.grid(temperatures=(0.1, 0.5), num_train=(1, 10, 100), seeds=4)
    assert flops.grid_training_flops(agent, problems) == pytest.approx(_by_hand(agent, problems))
    # mlp at n = 100: 1000 steps × 100 rows × 6 × (2·50 + 50·50 + 50·2) FLOPs per training group
    one = testbed.grid(temperatures=(0.1,), num_train=(100,), seeds=1, taus=(1, 10))
    mlp = jtk.agents.make("mlp")
    assert flops.grid_training_flops(mlp, one) == pytest.approx(1000 * 100 * 6 * 2700)


def test_padded_groups_are_counted(flops):
    agent = jtk.agents.make("mlp")
    problems = testbed.grid(temperatures=(0.1,), num_train=(100,), seeds=3)  # 3 groups, padded to 4
    assert flops.grid_training_flops(agent, problems) == pytest.approx(_by_hand(agent, problems) * 4 / 3)
