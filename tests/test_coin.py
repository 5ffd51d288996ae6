import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jtk.envs import Coin

FAIR = Coin((0.5,), (1.0,))
EXTREME = Coin((0.0, 1.0), (0.5, 0.5))


def test_paper_coins_have_equal_marginals_but_different_joints():
    assert FAIR.marginal() == EXTREME.marginal() == 0.5
    np.testing.assert_allclose(FAIR.joint(2), np.full((2, 2), 0.25))
    np.testing.assert_allclose(EXTREME.joint(2), [[0.5, 0.0], [0.0, 0.5]])


def test_joint_of_many_flips_only_all_equal_sequences_for_extreme_coin():
    j = EXTREME.joint(5)
    assert j.shape == (2,) * 5
    assert j[(1,) * 5] == j[(0,) * 5] == 0.5
    assert np.isclose(j.sum(), 1.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=4), st.integers(1, 6), st.data())
def test_joint_matches_brute_force_enumeration(biases, flips, data):
    w = np.asarray(data.draw(st.lists(st.floats(0.01, 1), min_size=len(biases), max_size=len(biases))))
    coin = Coin(tuple(biases), tuple(w / w.sum()))
    joint = coin.joint(flips)
    assert np.isclose(joint.sum(), 1.0)
    for seq in itertools.product((0, 1), repeat=flips):
        expect = sum(p * np.prod([b if o else 1 - b for o in seq]) for b, p in zip(coin.biases, coin.prior))
        assert np.isclose(joint[seq], expect)
    # the marginal of the joint is the one-flip marginal
    assert np.isclose(joint.sum(axis=tuple(range(1, flips))) [1], coin.marginal())


def test_posterior_is_bayes_rule_and_chains():
    coin = Coin((0.2, 0.5, 0.9), (0.3, 0.3, 0.4))
    post = coin.posterior([1, 1, 0])
    w = np.array([0.3 * 0.2 ** 2 * 0.8, 0.3 * 0.5 ** 3, 0.4 * 0.9 ** 2 * 0.1])
    np.testing.assert_allclose(post.prior, w / w.sum())
    np.testing.assert_allclose(coin.posterior([1]).posterior([1, 0]).prior, post.prior)
    # predictive of the next flip = ratio of sequence probabilities
    assert np.isclose(post.marginal(), coin.sequence_probability([1, 1, 0, 1]) / coin.sequence_probability([1, 1, 0]))


def test_extreme_coin_is_known_after_one_flip():
    assert EXTREME.posterior([1]).marginal() == 1.0
    assert EXTREME.posterior([0]).marginal() == 0.0
    assert FAIR.posterior([1, 1, 1]).marginal() == 0.5


def test_sample_is_deterministic_and_consistent():
    bias, flips = EXTREME.sample(10, seed=3)
    assert bias in (0.0, 1.0) and np.all(flips == bias)
    assert EXTREME.sample(10, seed=3)[0] == bias


@pytest.mark.parametrize("biases, prior, match", [
    ((1.5,), (1.0,), "biases"), ((0.5, 0.2), (1.0,), "prior"), ((0.5,), (0.5,), "prior"),
    ((np.nan,), (1.0,), "biases"), ((), (), "biases"),
])
def test_bad_coins_are_rejected(biases, prior, match):
    with pytest.raises(ValueError, match=match):
        Coin(biases, prior)


def test_bad_outcomes_are_rejected():
    with pytest.raises(ValueError, match="outcomes"):
        FAIR.posterior([0, 2])
    with pytest.raises(ValueError, match="probability 0"):
        EXTREME.posterior([0, 1])
    with pytest.raises(ValueError, match="flips"):
        FAIR.joint(0)
