"""Bad inputs to jtk.envs (the generative models)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import numpy as np
import pytest

import jtk
import jtk.envs.classification as ENVC
import jtk.envs.classification as ENVCL
import jtk.envs.coin as ENVCOIN
import jtk.envs.gp as ENVGP
import jtk.envs.uci
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (call, case, cases, env, KEY, refused_clearly, reg_env, TE, VE)


# --- jtk.envs.Coin
Coin = jtk.envs.Coin
case(jtk.envs.Coin, "biases-str", call(Coin, ("a",), (1.0,)), TE, "biases")
case(jtk.envs.Coin, "bias>1", call(Coin, (1.5,), (1.0,)), VE, "biases")
case(jtk.envs.Coin, "prior-nan", call(Coin, (0.5,), (np.nan,)), VE, "prior")
case(jtk.envs.Coin, "prior-sum", call(Coin, (0.2, 0.8), (0.5, 0.6)), VE, "prior")
case(jtk.envs.Coin, "length-mismatch", call(Coin, (0.2, 0.8), (1.0,)), VE, "prior")
case(jtk.envs.Coin, "empty", call(Coin, (), ()), VE, "biases")
case(jtk.envs.Coin, "complex", call(Coin, (0.5 + 1j,), (1.0,)), TE, "biases")
case(jtk.envs.Coin.joint, "flips-0", lambda: Coin((0.5,), (1.0,)).joint(0), VE, "flips")
case(jtk.envs.Coin.joint, "flips-float", lambda: Coin((0.5,), (1.0,)).joint(2.0), TE, "flips")
case(jtk.envs.Coin.joint, "flips-huge", lambda: Coin((0.5,), (1.0,)).joint(10 ** 6), VE, "flips")
case(jtk.envs.Coin.sample, "seed-2**32", lambda: Coin((0.5,), (1.0,)).sample(3, seed=2 ** 32), VE, "seed")
case(jtk.envs.Coin.sample, "seed-bool", lambda: Coin((0.5,), (1.0,)).sample(3, seed=True), TE, "seed")
case(jtk.envs.Coin.posterior, "outcomes-2", lambda: Coin((0.5,), (1.0,)).posterior([0, 2]), VE, "outcomes")

# --- jtk.envs.MLPClassification
MLP = jtk.envs.MLPClassification
for tid, t, e in [("0", 0.0, VE), ("neg", -1.0, VE), ("nan", np.nan, VE), ("inf", np.inf, VE), ("1e-45", 1e-45, VE),
                  ("1e-7", 1e-7, VE), ("str", "0.1", TE), ("none", None, TE), ("bool", True, TE),
                  ("complex", 0.1 + 0j, TE)]:
    case(jtk.envs.MLPClassification, f"temperature-{tid}", call(MLP, temperature=t), e, "temperature")
for sid, s, e in [("neg", -1, VE), ("2**32", 2 ** 32, VE), ("2**40", 2 ** 40, VE), ("2**70", 2 ** 70, VE),
                  ("float", 1.0, TE), ("bool", True, TE), ("str", "0", TE), ("key-batch", "KEYS", VE)]:
    build = (lambda: MLP(0.1, seed=__import__("jax").random.split(__import__("jax").random.key(0), 2))) \
        if s == "KEYS" else call(MLP, 0.1, seed=s)
    case(jtk.envs.MLPClassification, f"seed-{sid}", build, e, "seed")
case(jtk.envs.MLPClassification, "input_dim-0", call(MLP, 0.1, input_dim=0), VE, "input_dim")
case(jtk.envs.MLPClassification, "input_dim-float", call(MLP, 0.1, input_dim=2.0), TE, "input_dim")
case(jtk.envs.MLPClassification, "num_classes-1", call(MLP, 0.1, num_classes=1), VE, "num_classes")
case(jtk.envs.MLPClassification, "num_classes-1e9", call(MLP, 0.1, num_classes=10 ** 9), VE, "num_classes")
case(jtk.envs.MLPClassification, "hidden-empty", call(MLP, 0.1, hidden=()), VE, "hidden")
case(jtk.envs.MLPClassification, "hidden-0", call(MLP, 0.1, hidden=(50, 0)), VE, "hidden[1]")
case(jtk.envs.MLPClassification, "hidden-int", call(MLP, 0.1, hidden=50), TE, "hidden")
case(jtk.envs.MLPClassification, "hidden-huge", call(MLP, 0.1, hidden=(10 ** 6, 10 ** 6)), VE, "hidden")
case(jtk.envs.MLPClassification, "activation-unknown", call(MLP, 0.1, activation="relu6"), VE, "activation")
case(jtk.envs.MLPClassification, "unknown-kwarg", call(MLP, 0.1, temprature=0.1), TE, "temprature")
case(jtk.envs.MLPClassification.sample, "n-neg", lambda: env().sample(-1), VE, "n")
case(jtk.envs.MLPClassification.sample, "n-float", lambda: env().sample(3.0), TE, "n")
case(jtk.envs.MLPClassification.sample, "n-bool", lambda: env().sample(True), TE, "n")
case(jtk.envs.MLPClassification.sample, "n-huge", lambda: env().sample(10 ** 12), VE, "n")
case(jtk.envs.MLPClassification.sample, "seed-2**32", lambda: env().sample(3, seed=2 ** 32), VE, "seed")
case(jtk.envs.MLPClassification.sample, "seed-neg", lambda: env().sample(3, seed=-1), VE, "seed")
case(jtk.envs.MLPClassification.sample_inputs, "n-huge", lambda: env().sample_inputs(10 ** 12), VE, "n")
case(jtk.envs.MLPClassification.mean_entropy, "num_inputs-0", lambda: env().mean_entropy(0), VE, "num_inputs")
for meth in ("logits", "probs", "function"):
    case(getattr(jtk.envs.MLPClassification, meth), "x-1d", lambda m=meth: getattr(env(), m)(np.zeros(2)), VE, "x")
    case(getattr(jtk.envs.MLPClassification, meth), "x-wrong-d", lambda m=meth: getattr(env(), m)(np.zeros((3, 5))), VE, "x")
    case(getattr(jtk.envs.MLPClassification, meth), "x-nan", lambda m=meth: getattr(env(), m)(np.full((3, 2), np.nan)), VE, "x")
    case(getattr(jtk.envs.MLPClassification, meth), "x-1e39-float64",
         lambda m=meth: getattr(env(), m)(np.array([[1e39, 0.0]])), VE, "x")
    case(getattr(jtk.envs.MLPClassification, meth), "x-str", lambda m=meth: getattr(env(), m)(np.array([["a", "b"]])), TE, "x")
    case(getattr(jtk.envs.MLPClassification, meth), "x-complex",
         lambda m=meth: getattr(env(), m)(np.zeros((3, 2), complex)), TE, "x")

# --- regression environments
for cls, arg, bad in [(jtk.envs.SinusoidRegression, "f_main", 0.0), (jtk.envs.StyblinskiTangRegression, "dim", 0)]:
    case(cls, f"{arg}-bad", call(cls, bad), VE, arg)
    case(cls, f"{arg}-str", call(cls, "1"), TE, arg)
    case(cls, "noise_std-neg", call(cls, noise_std=-1.0), VE, "noise_std")
    case(cls, "num_train-0", call(cls, num_train=0), VE, "num_train")
    case(cls, "seed-2**32", call(cls, seed=2 ** 32), VE, "seed")
    case(cls, "unknown-kwarg", call(cls, nosie_std=1.0), TE, "nosie_std")
case(jtk.envs.PolynomialRegression, "noise_std-nan", call(jtk.envs.PolynomialRegression, noise_std=np.nan), VE, "noise_std")
case(jtk.envs.PolynomialRegression, "grid_size-1", call(jtk.envs.PolynomialRegression, grid_size=1), VE, "grid_size")
case(jtk.envs.PolynomialRegression, "num_train-float", call(jtk.envs.PolynomialRegression, num_train=10.5), TE, "num_train")
case(jtk.envs.PolynomialRegression, "seed-bool", call(jtk.envs.PolynomialRegression, seed=False), TE, "seed")
case(jtk.envs.SinusoidRegression.features, "x-3d", lambda: reg_env().features(np.zeros((2, 2, 2))), VE, "x")
case(jtk.envs.SinusoidRegression.features, "x-wrong-d", lambda: reg_env().features(np.zeros((4, 3))), VE, "x")
case(jtk.envs.SinusoidRegression.mean, "x-inf", lambda: reg_env().mean(np.array([[np.inf]])), VE, "x")
case(jtk.envs.SinusoidRegression.sample_train, "seed-neg", lambda: reg_env().sample_train(-1), VE, "seed")
case(jtk.envs.SinusoidRegression.sample_train, "seed-2**33", lambda: reg_env().sample_train(2 ** 33), VE, "seed")
case(jtk.envs.SinusoidRegression.sample_targets, "num_sets-0", lambda: reg_env().sample_targets(0, 0), VE, "num_sets")

# --- GP environment / kernels
case(jtk.envs.ReLUKernelGP, "input_dim-0", call(jtk.envs.ReLUKernelGP, input_dim=0), VE, "input_dim")
case(jtk.envs.ReLUKernelGP, "noise_var-neg", call(jtk.envs.ReLUKernelGP, noise_var=-1.0), VE, "noise_var")
case(jtk.envs.relu_kernel, "x1-nan", call(jtk.envs.relu_kernel, np.array([[np.nan]])), VE, "x1")
case(jtk.envs.relu_kernel, "x2-wrong-d", call(jtk.envs.relu_kernel, np.zeros((2, 1)), np.zeros((2, 3))), VE, "x2")
case(jtk.envs.toy_split_1d, "num_pool-0", call(jtk.envs.toy_split_1d, num_pool=0), VE, "num_pool")
case(jtk.envs.toy_split_1d, "seed-2**32", call(jtk.envs.toy_split_1d, seed=2 ** 32), VE, "seed")
case(jtk.envs.toy_split_1d, "num_pool-huge", call(jtk.envs.toy_split_1d, num_pool=10 ** 7), VE, "num_pool")


# ------------------------------------------------------------------ cases added with the inventory (issue #48 item 5)

# coin helpers
for fn in (ENVCOIN.decision_table, ENVCOIN.decision_summary):
    case(fn, "horizon-0", call(fn, 0), VE, "horizon")
    case(fn, "horizon-float", call(fn, 2.5), TE, "horizon")
    case(fn, "coins-list", call(fn, 3, coins=[1]), TE, "coins")
case(ENVCOIN.expected_cumulative_heads, "policy-unknown", call(ENVCOIN.expected_cumulative_heads, "greedy", 3), VE,
     "policy")
case(ENVCOIN.expected_cumulative_heads, "horizon-neg", call(ENVCOIN.expected_cumulative_heads, "marginal", -1), VE,
     "horizon")

# GP environment
case(ENVGP.relu_network_kernel_mc, "x1-nan", call(ENVGP.relu_network_kernel_mc, np.full((2, 1), np.nan),
                                                  np.zeros((2, 1))), VE, "x1")
case(ENVGP.relu_network_kernel_mc, "num_hidden-0", call(ENVGP.relu_network_kernel_mc, np.zeros((2, 1)),
                                                        np.zeros((2, 1)), num_hidden=0), VE, "num_hidden")
case(ENVGP.relu_network_kernel_mc, "bias0_var-neg", call(ENVGP.relu_network_kernel_mc, np.zeros((2, 1)),
                                                         np.zeros((2, 1)), bias0_var=-1.0), VE, "bias0_var")
case(ENVGP.check_split_memory, "n-neg", call(ENVGP.check_split_memory, -1), VE, "n")
case(ENVGP.check_split_memory, "n-str", call(ENVGP.check_split_memory, "5"), TE, "n")
case(jtk.envs.ReLUKernelGP.sample_split, "num_pool-0", lambda: jtk.envs.ReLUKernelGP().sample_split(num_pool=0), VE,
     "num_pool")
case(jtk.envs.ReLUKernelGP.sample_split, "seed-2**32", lambda: jtk.envs.ReLUKernelGP().sample_split(seed=2 ** 32), VE,
     "seed")
case(jtk.envs.ReLUKernelGP.sample_split, "num_train-neg",
     lambda: jtk.envs.ReLUKernelGP().sample_split(num_train=-1), VE, "num_train")

# the testbed prior's functional core (keys, parameters, data): pure and jittable, its arguments may be traced, so
# only the host-side entry points (lab_keys' static lab, sample_lab_data) validate values
case(ENVC.lab_keys, "lab-unknown", call(ENVC.lab_keys, 0, lab="nope"), VE, "lab")
case(ENVC.sample_lab_data, "temperature-0", call(ENVC.sample_lab_data, 0, 0.0, 10, 10, np.zeros((4, 2))), VE,
     "temperature")
case(ENVC.sample_lab_data, "grid-nan", call(ENVC.sample_lab_data, 0, 0.1, 10, 10, np.full((4, 2), np.nan)), VE,
     "grid")
case(ENVC.sample_inputs, "key-float", call(ENVC.sample_inputs, 0.5, 3, 2), TE, "key PRNG")
case(ENVC.sample_inputs, "n-neg", lambda: ENVC.sample_inputs(KEY(), -1, 2), VE, "n")
case(ENVC.sample_prior_params, "hidden-0", lambda: ENVC.sample_prior_params(KEY(), hidden=(0,)), VE, "hidden")
case(ENVC.sample_prior_params, "num_classes-1", lambda: ENVC.sample_prior_params(KEY(), num_classes=1), VE,
     "num_classes")
case(ENVC.sample_prior_params, "key-int", call(ENVC.sample_prior_params, 3), TE, "key")
case(ENVC.sample_labels, "key-int", call(ENVC.sample_labels, 3, np.zeros((3, 2))), TE, "key")
case(ENVC.sample_data, "n-neg", lambda: ENVC.sample_data(KEY(), env().params, 0.1, -1), VE, "n")

# the testbed prior's settings and draws
case(ENVC.ProblemSettings, "input_dim-0", call(ENVC.ProblemSettings, input_dim=0), VE, "input_dim")
case(ENVC.ProblemSettings, "activation-unknown", call(ENVC.ProblemSettings, activation="relu6"), VE, "activation")
case(ENVC.problem_keys, "key-int", call(ENVC.problem_keys, 3), TE, "key")
case(ENVC.sample_problem, "settings-dict", lambda: ENVC.sample_problem({}, KEY(), 0.1, 10), TE, "settings")
case(ENVC.sample_test, "settings-dict", lambda: ENVC.sample_test({}, 10, 1, env().params, KEY(), 0.1), TE, "settings")
case(ENVCL.problem_key, "seed-neg", call(ENVCL.problem_key, -1, 0.1, 10), VE, "seed")
case(ENVCL.problem_key, "temperature-0", call(ENVCL.problem_key, 0, 0.0, 10), VE, "temperature")
case(ENVCL.problem_key, "num_train-float", call(ENVCL.problem_key, 0, 0.1, 2.5), TE, "num_train")
case(ENVCL.bandit_keys, "seed-2**32", call(ENVCL.bandit_keys, 2 ** 32), VE, "seed")
case(ENVCL.environment_logits, "temperature-0",
     lambda: ENVCL.environment_logits(env().params, np.zeros((3, 2)), 0.0), VE, "temperature")
case(ENVCOIN.check_coins, "list", call(ENVCOIN.check_coins, [1]), TE, "coins")
case(ENVCOIN.check_coins, "not-a-coin", call(ENVCOIN.check_coins, {"a": 0.5}), TE, "coins['a']")
UCI = jtk.envs.uci
case(UCI.uci_path, "name-unknown", call(UCI.uci_path, "mnist"), VE, "name boston")
case(UCI.uci_path, "root-int", call(UCI.uci_path, "boston", 3), TE, "root")
case(UCI.verify_uci, "name-unknown", call(UCI.verify_uci, "Boston"), VE, "name")
case(UCI.verify_uci, "root-empty", call(UCI.verify_uci, "boston", "/nonexistent/uci"), UCI.UCIChecksumError,
     "boston data.txt missing")
case(UCI.load_uci, "name-list", call(UCI.load_uci, ["boston"]), VE, "name")
case(UCI.load_uci, "columns-unknown", call(UCI.load_uci, "boston", "last"), VE, "columns authors index")


def test_large_seeds_do_not_wrap_and_keys_still_work():
    import jax
    env0 = jtk.envs.MLPClassification(0.1, seed=0)
    env_max = jtk.envs.MLPClassification(0.1, seed=2 ** 32 - 1)
    env_key = jtk.envs.MLPClassification(0.1, seed=jax.random.key(0))
    x = np.zeros((3, 2), np.float32)
    assert not np.allclose(env0.logits(x), env_max.logits(x))
    np.testing.assert_allclose(env0.logits(x), env_key.logits(x))


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
