import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jtk import nets
from jtk.envs import MLPClassification
from jtk.envs.classification import sample_prior_params

# docs/reference.md, "Generative model": mean Bernoulli entropy (nats) of p(y|x) under the prior, d = 2.
REFERENCE_ENTROPY = {0.01: 0.027, 0.1: 0.234, 0.5: 0.576}


@pytest.mark.parametrize("temperature", sorted(REFERENCE_ENTROPY))
def test_mean_entropy_matches_reference_prior(temperature):
    keys = jax.random.split(jax.random.key(7), 1000)
    x = jax.random.normal(jax.random.key(8), (1000, 200, 2))
    f = jax.vmap(lambda k, xx: nets.mlp_apply(sample_prior_params(k), xx))(keys, x)
    p = jax.nn.softmax(f / temperature, -1)
    entropy = float(jnp.mean(-jnp.sum(jax.scipy.special.xlogy(p, p), -1)))
    assert abs(entropy - REFERENCE_ENTROPY[temperature]) < 0.03


def test_prior_weights_are_truncated_normal_with_fan_in_scaling():
    params = jax.vmap(lambda k: sample_prior_params(k, input_dim=4))(jax.random.split(jax.random.key(0), 400))
    (w1, b1), (w2, b2), (w3, b3) = params
    # truncated at ±2 std, std = 1/sqrt(fan_in) before truncation (no variance correction)
    assert float(jnp.max(jnp.abs(w2))) <= 2 / np.sqrt(50) + 1e-6
    trunc_std = np.sqrt(1 - 2 * 2 * np.exp(-2) / np.sqrt(2 * np.pi) / (2 * 0.97724987 - 1))
    assert abs(float(jnp.std(w2)) - trunc_std / np.sqrt(50)) < 0.01 / np.sqrt(50) * 5
    assert abs(float(jnp.std(b1)) - 0.5) < 0.02  # N(0, 1/d) with d = 4
    assert float(jnp.max(jnp.abs(b2))) == 0.0 and float(jnp.max(jnp.abs(b3))) == 0.0


def test_logits_probs_and_sampling_are_consistent():
    env = MLPClassification(temperature=0.1, seed=3)
    x, y = env.sample(2000, seed=1)
    assert x.shape == (2000, 2) and y.shape == (2000,) and set(np.unique(y)) <= {0, 1}
    np.testing.assert_allclose(env.probs(x), jax.nn.softmax(env.function(x) / 0.1), rtol=1e-5)
    np.testing.assert_allclose(env.probs(x).sum(-1), 1.0, rtol=1e-5)
    # labels follow p(y=1|x): compare the empirical rate with the mean probability
    assert abs(float(np.mean(y)) - float(jnp.mean(env.probs(x)[:, 1]))) < 0.03
    # same seed, same environment; a JAX key works as a seed
    assert np.allclose(MLPClassification(0.1, seed=3).function(x), env.function(x))
    assert np.allclose(MLPClassification(0.1, seed=jax.random.key(3)).function(x), env.function(x))


@pytest.mark.parametrize("activation", sorted(nets.ACTIVATIONS))
def test_every_activation_and_shape_option_works(activation):
    env = MLPClassification(0.5, input_dim=3, hidden=(8, 8, 8), activation=activation, num_classes=4, seed=1)
    x, y = env.sample(5, seed=0)
    assert env.probs(x).shape == (5, 4) and y.max() < 4


@pytest.mark.parametrize("kwargs, match", [
    ({"temperature": 0.0}, "temperature"), ({"temperature": -1.0}, "temperature"),
    ({"temperature": float("nan")}, "temperature"), ({"temperature": 0.1, "activation": "cosine"}, "activation"),
    ({"temperature": 0.1, "input_dim": 0}, "input_dim"), ({"temperature": 0.1, "num_classes": 1}, "num_classes"),
])
def test_bad_environment_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MLPClassification(**kwargs)


def test_bad_inputs_name_the_argument():
    env = MLPClassification(0.1)
    with pytest.raises(ValueError, match=r"x must have shape \[n, 2\]"):
        env.probs(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="x must be finite"):
        env.probs(np.array([[0.0, np.inf]]))
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        env.logits(np.zeros(3))
    with pytest.raises(TypeError, match="seed"):
        MLPClassification(0.1, seed="zero")


# ------------------------------------------------------------------ one draw for the testbed, the bandit and the labs
def test_the_testbed_problem_is_mlp_classification_of_its_environment_key():
    from jtk import testbed
    from jtk.envs import classification as cl

    problem = testbed.Problem(temperature=0.1, num_train=10, tau=1, seed=4, num_test=5)
    params, data, test = testbed.load_problem(problem)
    keys = cl.problem_keys(cl.problem_key(4, jnp.float32(0.1), 10))
    env = MLPClassification(0.1, seed=keys.environment)
    for (w, b), (w2, b2) in zip(params, env.params):  # equal up to float32 rounding (jitted vs eager)
        np.testing.assert_allclose(w, w2, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(b, b2, rtol=1e-6, atol=1e-7)
    x, y = env.sample(data.x.shape[0], seed=keys.train)  # the padded capacity, then the first n rows
    np.testing.assert_allclose(data.x[:10], x[:10], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(data.y[:10], y[:10])
    assert np.all(np.asarray(data.x[10:]) == 0.0) and int(data.n) == 10
    np.testing.assert_allclose(test.true_logits, env.logits(test.x), rtol=1e-6)


def test_sample_problem_is_jittable_and_vmappable_over_keys():
    from jtk.envs import classification as cl

    settings = cl.ProblemSettings(capacity=8)
    keys = jax.vmap(cl.problem_key)(jnp.arange(3, dtype=jnp.uint32), jnp.full(3, 0.1, jnp.float32),
                                    jnp.full(3, 8, jnp.int32))
    params, data = jax.jit(jax.vmap(cl.sample_problem, in_axes=(None, 0, None, None)), static_argnums=0)(
        settings, keys, jnp.float32(0.1), 8)
    assert data.x.shape == (3, 8, 2) and data.y.shape == (3, 8) and params[0][0].shape == (3, 2, 50)
    one_params, one_data = cl.sample_problem(settings, keys[1], jnp.float32(0.1), 8)
    np.testing.assert_allclose(data.x[1], one_data.x, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(params[0][0][1], one_params[0][0], rtol=1e-6, atol=1e-7)


def test_lab_data_keeps_one_environment_across_temperatures_and_nests_training_sets():
    from jtk.envs import classification as cl

    grid = np.zeros((4, 2), np.float32)
    warm, cold = cl.sample_lab_data(3, 0.5, 20, 50, grid), cl.sample_lab_data(3, 0.05, 20, 50, grid)
    np.testing.assert_array_equal(warm.x_train, cold.x_train)  # same inputs; labels flip only near the boundary
    assert np.mean(warm.y_train == cold.y_train) > 0.5
    short = cl.sample_lab_data(3, 0.5, 5, 50, grid)
    np.testing.assert_array_equal(short.x_train, warm.x_train[:5])
    np.testing.assert_array_equal(short.y_train, warm.y_train[:5])
    env = MLPClassification(0.5, seed=3)  # lab_keys: the environment is the one of the seed
    np.testing.assert_allclose(warm.grid_probs, np.asarray(env.probs(grid))[:, 1], rtol=1e-5)
    lp = np.log(np.take_along_axis(np.asarray(env.probs(warm.x_test)), warm.y_test[:, None], 1)[:, 0])
    np.testing.assert_allclose(warm.true_logprobs, lp, rtol=1e-4, atol=1e-5)
