"""jtk.train: minibatch rows drawn once for several calls, whole-set steps, the CPU cache rule; and the ensemble's
member blocks and split training built on them."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jtk
from jtk.agents import records
from jtk import testbed, train as train_lib
from jtk.testbed import engine
from jtk.agents import ProblemInfo


def _data(n: int, capacity: int = 64, seed: int = 0) -> train_lib.Dataset:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    return train_lib.pad_dataset(x, (x[:, 0] > 0).astype(np.int32), capacity)


def test_batch_indices_are_the_rows_each_step_draws():
    """The same rows as drawing step by step with the loop's key schedule: step i's key is the first half of
    split(split(key, num_steps)[i])."""
    key, data = jax.random.key(3), _data(40)
    rows = np.asarray(train_lib.batch_indices(key, data, 16, 250))  # 250: three chunks of 100, the last padded
    assert rows.shape == (250, 16)
    for i, step_key in enumerate(jax.random.split(key, 250)):
        if i % 37 == 0 or i == 249:
            want = train_lib.sample_batch(jax.random.split(step_key)[0], data, 16).index
            np.testing.assert_array_equal(rows[i], np.asarray(want))
    assert rows.max() < 40 and all(len(set(r)) == 16 for r in rows)  # distinct valid rows in every step


def test_training_on_indices_drawn_beforehand_is_bit_identical():
    data = _data(40)

    def loss(w, batch, hyper, key):
        return jnp.sum(batch.mask * (batch.x @ w - batch.y) ** 2) + 1e-3 * jax.random.normal(key) * jnp.sum(w)

    opt = jtk.agents.make("mlp").optimizer()
    key = jax.random.key(5)
    plain, _ = train_lib.train(loss, jnp.ones(2), data, {}, key, optimizer=opt, num_steps=30, batch_size=16)
    given, _ = train_lib.train(loss, jnp.ones(2), data, {}, key, optimizer=opt, num_steps=30, batch_size=16,
                               indices=train_lib.batch_indices(key, data, 16, 30))
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(given))


def test_a_whole_set_step_takes_every_row_and_draws_nothing():
    data = _data(5)
    batch = train_lib.sample_batch(jax.random.key(0), data, 8, whole_set=True)
    np.testing.assert_array_equal(np.asarray(batch.index), np.arange(8))
    np.testing.assert_array_equal(np.asarray(batch.mask), [1, 1, 1, 1, 1, 0, 0, 0])
    drawn = train_lib.sample_batch(jax.random.key(0), data, 8)  # the draw picks the same valid rows, shuffled
    assert set(np.asarray(drawn.index)[np.asarray(drawn.mask) > 0]) == set(range(5))


def test_the_cpu_block_rule():
    assert train_lib.cpu_block_size(100, 1000) == train_lib.CPU_BLOCK_ROWS // (100 + train_lib.PARAMETER_ROWS)
    assert train_lib.cpu_block_size(1, 3) == 3 and train_lib.cpu_block_size(10 ** 6, 50) == 1
    big = jtk.agents.make("ensemble+", num_members=100).specialize(ProblemInfo(2, 2, 1000))
    assert big.members_per_block() == 5  # the largest divisor of 100 within 700 // 132
    assert jtk.agents.make("ensemble+", num_members=7).specialize(ProblemInfo(2, 2, 1000)).members_per_block() == 7


def test_specialize_marks_whole_set_buckets_and_the_flag_is_no_hyperparameter():
    agent = jtk.agents.make("mlp")
    assert agent.specialize(ProblemInfo(2, 2, 30)).whole_set  # bucket 32 < 100: every row in every step
    assert not agent.specialize(ProblemInfo(2, 2, 100)).whole_set  # bucket 100: n may exceed it
    assert not dataclasses.replace(agent.specialize(ProblemInfo(2, 2, 30)), num_classes=3).whole_set
    with pytest.raises(TypeError, match="whole_set"):
        jtk.agents.make("mlp", whole_set=True)
    assert "whole_set" not in records.agent_config(agent)["fields"]  # manifests record hyperparameters only


def _member_blocks(monkeypatch, per_block):
    monkeypatch.setattr(jtk.agents.ensemble.EnsembleAgent, "members_per_block", lambda self: per_block or
                        self.num_members)


@pytest.mark.parametrize("num_train", [10, 300])  # a whole-set bucket, and one with drawn minibatches
def test_member_blocks_train_the_members_the_whole_ensemble_trains(monkeypatch, num_train):
    """Blocks of members on the same minibatches: the same ensemble up to float rounding of the batched products."""
    agent = jtk.agents.make("ensemble+", num_members=6, num_steps=60)
    problem = testbed.Problem(temperature=0.1, num_train=num_train, tau=1, seed=2)
    _, args = engine._train_inputs(agent, [problem])
    states = {}
    for per_block in (None, 2, 3):
        _member_blocks(monkeypatch, per_block)
        jax.clear_caches()  # the compiled programs are keyed on the agent, not on the patched method
        states[per_block] = engine._train_chunk(*args)[1]
    for per_block in (2, 3):
        for a, b in zip(jax.tree_util.tree_leaves(states[None]), jax.tree_util.tree_leaves(states[per_block])):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-4, atol=2e-5)


def test_split_training_is_the_one_program_training():
    """The testbed's init program + steps program give the bits of agent.train in one program."""
    agent = jtk.agents.make("ensemble+", num_members=4, num_steps=50)
    problems = [testbed.Problem(temperature=0.1, num_train=n, tau=1, seed=s) for n, s in ((10, 0), (10, 1))]
    _, args = engine._train_inputs(agent, problems)
    spec, cfg, seeds, temps, ns, hyper, agent_seeds = args
    _, data = engine._make_training_batch(cfg, seeds, temps, ns)
    one = engine._train_states((spec,), jnp.int32(0), data, hyper, agent_seeds)
    _, split = engine._train_chunk(*args)
    for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(split)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
