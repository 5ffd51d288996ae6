"""The neural bandit: known limits (oracle, uniform), learning, determinism, replay and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jtk
from jtk.testbed import bandit


@pytest.fixture(scope="module")
def problems():
    return bandit.make_problems(input_dim=2, seeds=4)


def test_problems_follow_the_testbed_prior(problems):
    assert problems.actions.shape == (4, 40, 2)  # N = 20 d
    assert problems.probs.shape == (4, 40)
    # Independent check: the same environment through MLPClassification, with the bandit's key schedule
    # (split(fold_in(key(seed), 0xBA4D17)) into an actions key and an environment key) written out here.
    k_actions, k_env = jax.random.split(jax.random.fold_in(jax.random.key(1), 0xBA4D17))
    env = jtk.envs.MLPClassification(0.1, seed=k_env)
    np.testing.assert_array_equal(problems.actions[1], jax.random.normal(k_actions, (40, 2)))
    logits = jtk.nets.mlp_apply(env.params, problems.actions[1]) / 0.1
    p = np.exp(logits[:, 1]) / np.exp(logits).sum(axis=1)
    np.testing.assert_allclose(problems.probs[1], p, rtol=1e-4, atol=1e-6)
    # Low temperature: most mean rewards are close to 0 or 1 (about 68 % under the prior; 50 problems, so the
    # mean is within a few standard errors of that, not at the mercy of 4 draws).
    many = np.asarray(bandit.make_problems(input_dim=2, seeds=50).probs)
    assert np.mean((many < 0.1) | (many > 0.9)) > 0.55


def test_oracle_has_zero_regret(problems):
    res = bandit.run("oracle", problems=problems, horizon=300, progress=False)
    assert res.regret.shape == (4, 300)
    assert np.all(res.regret == 0.0)
    np.testing.assert_array_equal(res.actions, np.broadcast_to(np.argmax(problems.probs, 1)[:, None], (4, 300)))


def test_uniform_regret_matches_closed_form(problems):
    horizon = 4000
    res = bandit.run("uniform", problems=problems, horizon=horizon, progress=False)
    expected = bandit.expected_uniform_regret(problems, horizon)
    p = np.asarray(problems.probs, np.float64)
    per_step_sd = p.std(axis=1)  # sd of max p − p_A for A uniform
    tolerance = 5 * per_step_sd * np.sqrt(horizon)
    assert np.all(np.abs(res.total_regret - expected) <= tolerance), (res.total_regret, expected, tolerance)
    # Every action is pulled about equally often.
    counts = np.stack([np.bincount(a, minlength=40) for a in res.actions])
    assert counts.min() > 0.5 * horizon / 40


def test_thompson_sampling_learns(problems):
    # ensemble+ explores through its prior functions (mlp can lock onto a bad arm: that is §5's point).
    res = bandit.run("ensemble+", problems=problems, horizon=1000, agent_kwargs={"num_members": 10},
                     progress=False)
    uniform = bandit.expected_uniform_regret(problems, 1)  # per step
    late = res.regret[:, -250:].mean(axis=1)
    assert late.mean() < 0.5 * uniform.mean(), (late, uniform)
    assert np.all(res.regret >= 0) and np.all(res.regret <= np.asarray(problems.probs.max(1))[:, None] + 1e-6)


@pytest.mark.parametrize("name,kw", [("ensemble+", {"num_members": 3}), ("dropout", {}), ("bbb", {}),
                                     ("hypermodel", {}), ("ensemble", {"num_members": 3})])
def test_every_paper_agent_runs_online(problems, name, kw):
    res = bandit.run(name, problems=problems, horizon=250, agent_kwargs=kw, progress=False)
    assert res.regret.shape == (4, 250)
    assert np.all(np.isfinite(res.regret))
    # Better than chance over the horizon.
    assert res.total_regret.mean() < bandit.expected_uniform_regret(problems, 250).mean()


def test_runs_are_reproducible_and_independent_of_chunking(problems):
    a = bandit.run("mlp", problems=problems, horizon=300, progress=False)
    b = bandit.run("mlp", problems=problems, horizon=600, progress=False)
    c = bandit.run("mlp", problems=problems, horizon=300, agent_seed=1, progress=False)
    np.testing.assert_array_equal(a.regret, b.regret[:, :300])
    assert not np.array_equal(a.actions, c.actions)


def test_seeds_in_one_program_are_the_runs_of_each_seed(problems, tmp_path):
    """run_seeds: every (seed, problem) is a row of one program, and each seed's numbers are those of its own run,
    on shared problems or on problems of its own; a stopped program continues from its checkpoint."""
    own = [bandit.make_problems(2, seeds=[0, 1]), bandit.make_problems(2, seeds=[5])]
    many = bandit.run_seeds("ensemble+", [3, 7], own, horizon=300, agent_kwargs={"num_members": 3}, progress=False)
    for seed, probs, res in zip([3, 7], own, many):
        alone = bandit.run("ensemble+", problems=probs, horizon=300, agent_seed=seed, progress=False,
                           agent_kwargs={"num_members": 3})
        np.testing.assert_array_equal(res.regret, alone.regret)
        np.testing.assert_array_equal(res.actions, alone.actions)
        assert res.problems.seeds == probs.seeds
    assert many[0].seconds == pytest.approx(2 * many[1].seconds)  # the run's time, shared by rows
    shared = bandit.run_seeds("mlp", 2, problems, horizon=250, progress=False)
    np.testing.assert_array_equal(shared[1].regret, bandit.run("mlp", problems=problems, horizon=250, agent_seed=1,
                                                               progress=False).regret)
    ckpt = tmp_path / "seeds.npz"
    bandit.run_seeds("mlp", [0, 1], own, horizon=250, progress=False, checkpoint=ckpt, checkpoint_seconds=0)
    more = bandit.run_seeds("mlp", [0, 1], own, horizon=500, progress=False, checkpoint=ckpt)
    whole = bandit.run_seeds("mlp", [0, 1], own, horizon=500, progress=False)
    np.testing.assert_array_equal(more[1].regret, whole[1].regret)
    with pytest.raises(ValueError, match="different run"):
        bandit.run_seeds("mlp", [0, 2], own, horizon=500, progress=False, checkpoint=ckpt)
    with pytest.raises(ValueError, match="one BanditProblems per seed"):
        bandit.run_seeds("mlp", [0, 1, 2], own, horizon=10, progress=False)
    with pytest.raises(ValueError, match="share input_dim"):
        bandit.run_seeds("mlp", [0, 1], [own[0], bandit.make_problems(3, seeds=1)], horizon=10, progress=False)
    with pytest.raises(TypeError, match="problems must be"):
        bandit.run_seeds("mlp", [0], "problems", horizon=10, progress=False)


def test_a_stopped_run_continues_from_its_checkpoint(problems, tmp_path):
    """A run that saved its state after 250 steps and was stopped continues to 500 steps from there, with the
    numbers of a run that was never stopped; a checkpoint of another run is refused, not silently reused."""
    ckpt = tmp_path / "run.npz"
    whole = bandit.run("ensemble+", problems=problems, horizon=500, agent_seed=3, progress=False,
                       agent_kwargs={"num_members": 3})
    first = bandit.run("ensemble+", problems=problems, horizon=250, agent_seed=3, progress=False,
                       agent_kwargs={"num_members": 3}, checkpoint=ckpt, checkpoint_seconds=0)
    assert ckpt.exists() and int(np.load(ckpt)["chunks"]) == 1
    calls = []
    original = bandit._run_chunk

    def counting(*args):
        calls.append(int(args[-1]))  # t0 of the chunk
        return original(*args)

    bandit._run_chunk = counting
    try:
        rest = bandit.run("ensemble+", problems=problems, horizon=500, agent_seed=3, progress=False,
                          agent_kwargs={"num_members": 3}, checkpoint=ckpt)
    finally:
        bandit._run_chunk = original
    assert calls == [250]  # only the second chunk ran
    np.testing.assert_array_equal(rest.regret, whole.regret)
    np.testing.assert_array_equal(rest.regret[:, :250], first.regret)
    np.testing.assert_array_equal(rest.actions, whole.actions)
    assert rest.seconds >= first.seconds  # the earlier session's time is counted
    with pytest.raises(ValueError, match="different run"):
        bandit.run("ensemble+", problems=problems, horizon=500, agent_seed=4, progress=False,
                   agent_kwargs={"num_members": 3}, checkpoint=ckpt)


def test_replay_buffer_overwrites_the_oldest():
    policy = bandit.make_policy("mlp", replay_capacity=3)
    actions = jnp.asarray(np.random.default_rng(0).normal(size=(5, 2)), jnp.float32)
    prior = jtk.agents.ProblemInfo(2, 2, 1, 0.1)
    hyper = {k: jnp.float32(v) for k, v in policy.agent.online_hyper(prior).items()}
    assert hyper["l2"] == pytest.approx(2 * 0.1)  # λ · 2ρ / K with K = 1
    state = policy.init(jax.random.key(0), actions, jnp.zeros(5), hyper)
    for t, a in enumerate([4, 1, 2, 3], start=1):
        state = policy.update(state, actions, jnp.int32(a), jnp.int32(t % 2), jnp.int32(t), hyper,
                              jax.random.key(t))
    np.testing.assert_array_equal(state.replay_actions, [3, 1, 2])
    np.testing.assert_array_equal(state.replay_rewards, [0, 0, 1])


@pytest.mark.parametrize("name,kw,expected", [
    ("ensemble+", {"num_members": 10}, {"l2": 2 * 0.1 / 10, "prior_scale": 3 / np.sqrt(0.1)}),
    ("dropout", {}, {"l2": 2 * 0.1}),
    ("bbb", {}, {"kl_weight": 2 * np.sqrt(0.1)}),
    ("hypermodel", {}, {"l2": 2 * 0.1, "prior_scale": 1 / np.sqrt(0.1)}),
])
def test_online_regularisers_follow_the_reference_bandit(name, kw, expected):
    agent = jtk.agents.make(name, **kw)
    hyper = agent.online_hyper(jtk.agents.ProblemInfo(2, 2, 1, 0.1))
    assert hyper == pytest.approx(expected)
    assert set(agent.annealed) <= set(hyper)


def test_frame_has_cumulative_regret(problems):
    res = bandit.run("uniform", problems=problems, horizon=100, progress=False)
    df = res.frame(every=10)
    assert set(df.columns) >= {"agent", "seed", "t", "cumulative_regret", "average_regret"}
    last = df[df.t == 100].sort_values("seed")
    np.testing.assert_allclose(last.cumulative_regret, res.total_regret, rtol=1e-5)


def test_only_online_agents_are_offered():
    names = bandit.online_agents()
    assert set(bandit.PAPER_AGENTS) <= set(names)
    assert "knn" not in names and "sgmcmc" not in names


@pytest.mark.parametrize("kwargs,match", [
    ({"num_actions": 1}, "num_actions"),
    ({"horizon": 0}, "horizon"),
    ({"agent": "nope"}, "agent must be one of"),
    ({"agent": "knn"}, "agent must be one of"),
    ({"input_dim": 0}, "input_dim"),
    ({"temperature": -1.0}, "temperature"),
    ({"seeds": []}, "seeds"),
    ({"steps_per_obs": 0}, "steps_per_obs"),
])
def test_bad_input_is_reported(kwargs, match):
    args = {"agent": "mlp", "horizon": 10, "seeds": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        bandit.run(args.pop("agent"), progress=False, **args)


def test_regret_correlation_matches_numpy_and_brackets_it():
    rng = np.random.default_rng(0)
    kl = np.exp(rng.normal(size=40))
    regret = np.exp(0.8 * np.log(kl) + 0.3 * rng.normal(size=40))
    points = pd.DataFrame({"kl_10": kl, "total_regret": regret})
    out = bandit.regret_correlation(points)
    assert out["r"] == pytest.approx(np.corrcoef(np.log(kl), np.log(regret))[0, 1])
    assert out["lo"] < out["r"] < out["hi"] and out["num_points"] == 40
    unrelated = bandit.regret_correlation(pd.DataFrame({"kl_10": kl, "total_regret": rng.permutation(regret)}))
    assert unrelated["lo"] < 0.3 < out["lo"]
    with pytest.raises(ValueError, match="kl_1"):
        bandit.regret_correlation(points, metric="kl_1")
    with pytest.raises(ValueError, match="positive"):
        bandit.regret_correlation(points.assign(kl_10=-kl))
