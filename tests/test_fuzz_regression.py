"""Bad inputs to jtk.regression (the regression models and the coverage studies)
give a clear ValueError / TypeError before any compute.

The cases and what they share are in tests/_fuzz.py; tests/test_fuzz_inventory.py checks that every public
callable has one.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

import jtk
import jtk.regression.batched as BATCHED  # (the PPC study's training engine)
import jtk.regression.coverage_readings as SREAD
import jtk.regression.coverage_study as SCOV
from _fuzz import per_test_timeout  # noqa: F401 - autouse: a bad input must fail fast
from _fuzz import (call, case, cases, frame_of, GP_ORACLE, KEY, R, refused_clearly, reg_env, TE, VE)


@functools.lru_cache(None)
def blr():
    e = reg_env()
    return jtk.regression.BayesianLinearRegression(e.features, e.noise_std)


@functools.lru_cache(None)
def blr_post():
    x, y = reg_env().sample_train(0)
    return blr().fit(x, y)

# --- regression models
BLR = jtk.regression.BayesianLinearRegression
case(jtk.regression.BayesianLinearRegression, "noise_std-0", lambda: BLR(reg_env().features, 0.0), VE, "noise_std")
case(jtk.regression.BayesianLinearRegression, "features-not-callable", call(BLR, 3, 1.0), TE, "features")
RX = lambda: reg_env().sample_train(0)[0]  # noqa: E731
case(jtk.regression.BayesianLinearRegression.fit, "y-rows", lambda: blr().fit(RX(), np.zeros(len(RX()) - 1)), VE, "y")
case(jtk.regression.BayesianLinearRegression.fit, "y-nan", lambda: blr().fit(RX(), np.full(len(RX()), np.nan)), VE, "y")
case(jtk.regression.BayesianLinearRegression.fit, "x-rank-deficient", lambda: blr().fit(np.zeros((60, 1)), np.zeros(60)), VE, "x")
case(jtk.regression.BayesianLinearRegression.fit, "x-3d", lambda: blr().fit(np.zeros((5, 1, 1)), np.zeros(5)), VE, "x")
case(jtk.regression.BayesianLinearRegression.fit, "empty", lambda: blr().fit(np.zeros((0, 1)), np.zeros(0)), VE, "x")
case(jtk.regression.blr.BLRPosterior.predict, "x-nan", lambda: blr_post().predict(np.full((3, 1), np.nan)), VE, "x")
case(jtk.regression.blr.BLRPosterior.predict, "x-wrong-d", lambda: blr_post().predict(np.zeros((3, 4))), VE, "x")
case(jtk.regression.blr.BLRPosterior.sample_functions, "num_samples-0", lambda: blr_post().sample_functions(np.zeros((3, 1)), 0), VE,
     "num_samples")
case(jtk.regression.blr.BLRPosterior.sample_functions, "num_samples-float", lambda: blr_post().sample_functions(np.zeros((3, 1)), 2.5), TE,
     "num_samples")
case(jtk.regression.blr.BLRPosterior.sample_functions, "num_samples-huge", lambda: blr_post().sample_functions(np.zeros((3, 1)), 10 ** 12),
     VE, "num_samples")
case(jtk.regression.blr.BLRPosterior.sample_functions, "seed-2**32", lambda: blr_post().sample_functions(np.zeros((3, 1)), 2, seed=2 ** 32),
     VE, "seed")
case(jtk.regression.blr.BLRPosterior.covariance, "x-inf", lambda: blr_post().covariance(np.full((3, 1), np.inf)), VE, "x")
case(jtk.regression.blr.BLRPosterior.covariance, "x-huge-n", lambda: blr_post().covariance(np.zeros((10 ** 6, 1), np.float32)), VE, "x")
case(jtk.regression.GPRegression, "noise_var-neg", call(jtk.regression.GPRegression, noise_var=-1.0), VE, "noise_var")
case(jtk.regression.GPRegression, "num_restarts-0", call(jtk.regression.GPRegression, num_restarts=0), VE, "num_restarts")
case(jtk.regression.GPRegression.fit, "x-nan", lambda: jtk.regression.GPRegression().fit(np.full((4, 1), np.nan), np.zeros(4)), VE,
     "x")
GP_POST = functools.lru_cache(None)(lambda: jtk.regression.GPRegression(kernel=jtk.envs.ReLUKernelGP(), noise_var=0.01)
                                   .fit(np.linspace(-1, 1, 5)[:, None], np.zeros(5)))
case(jtk.regression.gp.GaussianProcessPosterior.covariance, "x-huge-n", lambda: GP_POST().covariance(np.zeros((10 ** 6, 1))), VE, "x")
case(jtk.regression.gp.GaussianProcessPosterior.sample_functions, "num_samples-huge",
     lambda: GP_POST().sample_functions(np.zeros((3, 1)), 10 ** 12), VE,
     "num_samples")
case(jtk.regression.gp.GaussianProcessPosterior.sample_functions, "seed-2**32",
     lambda: GP_POST().sample_functions(np.zeros((3, 1)), 2, seed=2 ** 32), VE,
     "seed")
case(jtk.regression.MonteCarloGP, "num_samples-0", lambda: jtk.regression.MonteCarloGP(jtk.regression.GPRegression(), 0), VE,
     "num_samples")
case(jtk.regression.DeepRegression, "method-unknown", call(jtk.regression.DeepRegression, "XX"), VE, "method")
case(jtk.regression.DeepRegression, "num_members-0", call(jtk.regression.DeepRegression, "Ens", num_members=0), VE, "num_members")
case(jtk.regression.make_regression, "preset-unknown", call(jtk.regression.make_regression, "Ens", preset="huge"), VE, "preset")
case(jtk.regression.make_regression, "unknown-override", call(jtk.regression.make_regression, "Ens", num_member=3), TE, "num_member")
case(jtk.regression.BBBRegression, "hidden-0", call(jtk.regression.BBBRegression, hidden=0), VE, "hidden")
case(jtk.regression.SGLDRegression, "step_size-neg", call(jtk.regression.SGLDRegression, step_size=-1.0), VE, "step_size")

# --- coverage
C = jtk.regression.coverage
case(jtk.regression.coverage.coverage_study, "k-1", lambda: C.coverage_study(reg_env(), ["BLR"], k=1, progress=False), VE, "k")
case(jtk.regression.coverage.coverage_study, "k-float", lambda: C.coverage_study(reg_env(), ["BLR"], k=10.0, progress=False), TE, "k")
case(jtk.regression.coverage.coverage_study, "k-huge", lambda: C.coverage_study(reg_env(), ["BLR"], k=10 ** 9, progress=False), VE, "k")
case(jtk.regression.coverage.coverage_study, "method-unknown", lambda: C.coverage_study(reg_env(), ["GP2"], k=2, progress=False), VE,
     "methods")
case(jtk.regression.coverage.coverage_study, "seed-2**32", lambda: C.coverage_study(reg_env(), ["BLR"], k=2, seed=2 ** 32,
                                                              progress=False), VE, "seed")
case(jtk.regression.coverage.coverage_study, "preset-unknown", lambda: C.coverage_study(reg_env(), ["BLR"], k=2, preset="xl",
                                                                  progress=False), VE, "preset")
case(jtk.regression.coverage.coverage_study, "env-none", lambda: C.coverage_study(None, ["BLR"], k=2, progress=False), TE, "env")
case(jtk.regression.coverage.sweep_f_main, "f_mains-neg", lambda: C.sweep_f_main([-1.0], ["BLR"], k=2, progress=False), VE, "f_mains")
case(jtk.regression.coverage.sweep_f_main, "f_mains-empty", lambda: C.sweep_f_main([], ["BLR"], k=2, progress=False), VE, "f_mains")
case(jtk.regression.coverage.sweep_f_main, "f_mains-scalar", lambda: C.sweep_f_main(3.0, ["BLR"], k=2, progress=False), TE, "f_mains")
case(jtk.regression.coverage.sweep_dim, "dims-0", lambda: C.sweep_dim([0], ["BLR"], k=2, progress=False), VE, "dims")
case(jtk.regression.coverage.sweep_dim, "dims-empty", lambda: C.sweep_dim([], ["BLR"], k=2, progress=False), VE, "dims")
case(jtk.regression.coverage.sweep_dim, "dims-scalar", lambda: C.sweep_dim(2, ["BLR"], k=2, progress=False), TE, "dims")
case(jtk.regression.coverage.summarize, "not-a-frame", call(C.summarize, [1, 2]), TE, "per_input")
case(jtk.regression.coverage.at_inputs, "coordinates-nan", lambda: C.at_inputs(pd.DataFrame({"x": [0.0]}), [np.nan]), VE, "coordinates")
case(jtk.regression.coverage.at_inputs, "coordinates-scalar", lambda: C.at_inputs(pd.DataFrame({"coordinate": [0.0]}), 1.0), VE,
     "coordinates")
case(jtk.regression.coverage.at_inputs, "coordinates-nested", lambda: C.at_inputs(pd.DataFrame({"coordinate": [0.0]}), [[1.0, 2.0]]), VE,
     "coordinates")
RXY = lambda: reg_env().sample_train(0)  # noqa: E731

# coverage tables
case(C.lemma1_check, "not-a-mapping", call(C.lemma1_check, [1, 2]), TE, "results")
case(C.per_input_table, "not-a-mapping", call(C.per_input_table, [1, 2]), TE, "results")
case(C.per_input_table, "value-not-a-result", call(C.per_input_table, {"a": 1}), TE, "results")
case(C.summary_table, "not-a-mapping", call(C.summary_table, "abc"), TE, "results")
case(C.sweep, "values-empty", lambda: C.sweep(jtk.envs.SinusoidRegression, [], "f_main", ["BLR"], k=2,
                                              progress=False), VE, "values")
case(C.sweep, "make_env-not-callable", lambda: C.sweep(3, [1.0], "f_main", ["BLR"], k=2, progress=False), TE,
     "make_env")
case(C.sweep, "k-1", lambda: C.sweep(jtk.envs.SinusoidRegression, [1.0], "f_main", ["BLR"], k=1, progress=False), VE,
     "k")

# regression: GP helpers and every model's fit / posterior
GPR = R.gp
case(GPR.rbf_kernel, "x1-nan", call(GPR.rbf_kernel, np.full((2, 1), np.nan)), VE, "x1")
case(GPR.rbf_kernel, "lengthscale-0", call(GPR.rbf_kernel, np.zeros((2, 1)), lengthscale=0.0), VE, "lengthscale")
case(GPR.rbf_kernel, "x2-wrong-d", call(GPR.rbf_kernel, np.zeros((2, 1)), np.zeros((2, 3))), VE, "x2")
case(GPR.kernel_diag, "kernel-not-callable", call(GPR.kernel_diag, 3, np.zeros((2, 1))), TE, "kernel")
case(GPR.kernel_diag, "chunk-0", call(GPR.kernel_diag, GPR.rbf_kernel, np.zeros((2, 1)), chunk=0), VE, "chunk")
case(GPR.condition, "y-rows", call(GPR.condition, GPR.rbf_kernel, np.zeros((3, 1)), np.zeros(2), 0.1), VE, "y")
case(GPR.condition, "noise_var-neg", call(GPR.condition, GPR.rbf_kernel, np.zeros((3, 1)), np.zeros(3), -0.1), VE,
     "noise_var")
case(GPR.gaussian_log_likelihood, "var-neg", call(GPR.gaussian_log_likelihood, np.zeros(3), np.zeros(3),
                                                  -np.ones(3)), VE, "var")
case(GPR.gaussian_log_likelihood, "shape-mismatch", call(GPR.gaussian_log_likelihood, np.zeros(3), np.zeros(4),
                                                         np.ones(3)), VE, "mean")
case(GPR.rbf_neg_log_marginal_likelihood, "x-nan",
     call(GPR.rbf_neg_log_marginal_likelihood, np.zeros(3), np.full((3, 1), np.nan), np.zeros(3), 0.1), VE, "x")
case(GPR.GaussianProcessPosterior.predict, "x-nan", lambda: GP_POST().predict(np.full((3, 1), np.nan)), VE, "x")
case(GPR.GaussianProcessPosterior.predict, "x-wrong-d", lambda: GP_POST().predict(np.zeros((3, 2))), VE, "x")
MC_GP_POST = functools.lru_cache(None)(lambda: R.MonteCarloGP(GP_ORACLE(), 4).fit(*RXY()))
case(GPR.SampledGPPosterior.sample_functions, "num_samples-0",
     lambda: MC_GP_POST().sample_functions(np.zeros((3, 1)), 0), VE, "num_samples")
case(R.base.SampledRegressionPosterior.predict, "x-nan", lambda: MC_GP_POST().predict(np.full((3, 1), np.nan)), VE,
     "x")
case(R.base.SampledRegressionPosterior.covariance, "x-wrong-d", lambda: MC_GP_POST().covariance(np.zeros((3, 2))), VE,
     "x")
for cls in (R.DeepRegression, R.BBBRegression, R.SGLDRegression, R.hmc.HMCRegression, R.nng.NNGRegression,
            R.fbnn.FBNNRegression):
    make_model = (lambda c=cls: c("Ens")) if cls is R.DeepRegression else cls
    case(cls.fit, "x-nan", lambda m=make_model: m().fit(np.full((5, 1), np.nan), np.zeros(5)), VE, "x")
    case(cls.fit, "y-rows", lambda m=make_model: m().fit(np.zeros((5, 1)), np.zeros(4)), VE, "y")
    case(cls.fit, "seed-2**32", lambda m=make_model: m().fit(*RXY(), seed=2 ** 32), VE, "seed")
for cls, kw, arg in [(R.hmc.HMCRegression, dict(samples_per_chain=0), "samples_per_chain"),
                     (R.nng.NNGRegression, dict(learning_rate=-1.0), "learning_rate"),
                     (R.fbnn.FBNNRegression, dict(num_steps=0), "num_steps")]:
    case(cls, f"{arg}-bad", call(cls, **kw), VE, arg)
    case(cls, "unknown-kwarg", call(cls, not_a_setting=1), TE, "not_a_setting")

# regression: the deep presets and the sampled GP
for factory in (R.deep.BD, R.deep.CD, R.deep.VD, R.deep.Ens, R.deep.EnsAdvA, R.deep.EnsBS):
    case(factory, "preset-unknown", call(factory, preset="huge"), VE, "preset")
    case(factory, "unknown-kwarg", call(factory, num_member=3), TE, "num_member")
case(R.MonteCarloGP.fit, "x-nan", lambda: R.MonteCarloGP(GP_ORACLE(), 4).fit(np.full((4, 1), np.nan), np.zeros(4)),
     VE, "x")
case(R.MonteCarloGP.fit, "seed-2**32", lambda: R.MonteCarloGP(GP_ORACLE(), 4).fit(*RXY(), seed=2 ** 32), VE, "seed")


# regression posteriors of the cheap BNN fits (the others' fits take ~15-25 s on a shared CPU)
NNG_POST = functools.lru_cache(None)(lambda: R.nng.NNGRegression(hidden=8, num_steps=2, num_moment_samples=4).fit(*RXY()))
FBNN_POST = functools.lru_cache(None)(lambda: R.fbnn.FBNNRegression(hidden=8, num_steps=2).fit(*RXY()))
case(R.bnn.WeightSamplingPosterior.sample_functions, "num_samples-0",
     lambda: NNG_POST().sample_functions(np.zeros((3, 1)), 0), VE, "num_samples")
case(R.bnn.WeightSamplingPosterior.sample_functions, "x-nan",
     lambda: NNG_POST().sample_functions(np.full((3, 1), np.nan), 2), VE, "x")
case(R.bnn.WeightSamplingPosterior.sample_functions, "seed-2**32",
     lambda: NNG_POST().sample_functions(np.zeros((3, 1)), 2, seed=2 ** 32), VE, "seed")
for meth in ("predict", "covariance", "features"):
    case(getattr(R.fbnn.FBNNPosterior, meth), "x-nan", lambda m=meth: getattr(FBNN_POST(), m)(np.full((3, 1), np.nan)),
         VE, "x")
    case(getattr(R.fbnn.FBNNPosterior, meth), "x-wrong-d", lambda m=meth: getattr(FBNN_POST(), m)(np.zeros((3, 2))), VE,
         "x")
case(R.fbnn.FBNNPosterior.sample_functions, "num_samples-0", lambda: FBNN_POST().sample_functions(np.zeros((3, 1)), 0),
     VE, "num_samples")
case(R.fbnn.FBNNPosterior.sample_functions, "seed-neg", lambda: FBNN_POST().sample_functions(np.zeros((3, 1)), 2,
                                                                                             seed=-1), VE, "seed")
case(R.bnn.full_batch, "y-rows", call(R.bnn.full_batch, np.zeros((4, 1)), np.zeros(3)), VE, "y")
case(R.bnn.full_batch, "x-nan", call(R.bnn.full_batch, np.full((4, 1), np.nan), np.zeros(4)), VE, "x")
case(R.bnn.stack_full_batches, "lengths-differ", call(R.bnn.stack_full_batches, [np.zeros((4, 1))], [np.zeros(4),
                                                                                                     np.zeros(4)]),
     VE, "ys")
case(R.bnn.layer_scales, "hidden-0", call(R.bnn.layer_scales, 1, 0), VE, "hidden")
case(R.bnn.init_raw, "key-int", call(R.bnn.init_raw, 3, 1, 8), TE, "key")
case(R.bnn.apply_raw_numpy, "chunk-0", lambda: R.bnn.apply_raw_numpy(None, np.zeros((3, 1)), chunk=0), VE, "chunk")
case(R.fbnn.init_params, "hidden-0", lambda: R.fbnn.init_params(KEY(), 1, 0), VE, "hidden")

for fn, arg, nargs, exc in [
        (R.deep.glorot_mlp, "key", 2, TE)]:
    case(fn, f"{arg}-text", call(fn, "bad-text", *[None] * (nargs - 1)), exc, arg)

for mod in (SCOV, SREAD):  # every study's command: argv is a list of str or None
    short = mod.__name__.rsplit(".", 1)[1]
    case(mod.main, f"{short}-argv-str", call(mod.main, "--preset quick"), TE, "argv")
    case(mod.main, f"{short}-argv-int", call(mod.main, ["--seeds", 3]), TE, "argv")
# --- jtk.regression.coverage_study
case(SCOV.truth_table, "f_mains-neg", call(SCOV.truth_table, (1.0, -2.0)), VE, "f_mains[1]")
case(SCOV.truth_table, "f_mains-str", call(SCOV.truth_table, "1"), TE, "f_mains")
case(SCOV.truth_table, "input_scales-empty", call(SCOV.truth_table, input_scales=()), VE, "input_scales")
case(SCOV.truth_table, "input_scales-nan", call(SCOV.truth_table, input_scales=(np.nan,)), VE, "input_scales[0]")
# --- jtk.regression.coverage_readings
case(SREAD.run, "k-1", call(SREAD.run, 1), VE, "k")
case(SREAD.run, "k-float", call(SREAD.run, 20.0), TE, "k")
case(SREAD.run, "seed-neg", call(SREAD.run, 20, seed=-1), VE, "seed")
case(SREAD.report, "df-list", call(SREAD.report, [1]), TE, "df")
case(SREAD.report, "df-columns", call(SREAD.report, frame_of(method=["BLR"])), VE, "df coverage_in")
case(SREAD.report, "df-no-lab-rows", call(SREAD.report, pd.DataFrame(columns=list(SREAD.ROW_COLUMNS))), VE,
     "df EnsAdvA")
BX, BY, BKEYS = np.zeros((2, 4, 3)), np.zeros((2, 4)), np.array([[0, 1], [0, 2]], np.uint32)  # 2 raw keys
for fn, good in ((BATCHED.bbb_many, jtk.regression.BBBRegression(num_steps=1)),
                 (BATCHED.sgld_many, jtk.regression.SGLDRegression(burn_in=1, samples_per_chain=2)),
                 (BATCHED.networks_many, jtk.regression.make_regression("BD", preset="lab"))):
    case(fn, "model-wrong-family", call(fn, object(), BKEYS, BX, BY), TE, "model")
    case(fn, "ys-wrong-shape", call(fn, good, BKEYS, BX, np.zeros((2, 5))), VE, "ys")
    case(fn, "keys-one-short", call(fn, good, BKEYS[:1], BX, BY), VE, "keys")
    case(fn, "vectorize-str", lambda f=fn, g=good: f(g, BKEYS, BX, BY, vectorize="yes"), TE, "vectorize")
ENS_ARGS = dict(hidden=3, num_members=2, epochs=(1, 2), keys=BKEYS[None], xs=BX, ys=BY, learning_rates=[0.01],
                noise_var=0.01, dropout_rate=0.05)
for cid, change, exc, names in (("epochs-descending", {"epochs": (2, 1)}, VE, "epochs"),
                                ("epochs-int", {"epochs": 5}, TE, "epochs"),
                                ("learning_rates-negative", {"learning_rates": [-0.1]}, VE, "learning_rates"),
                                ("keys-not-per-rate", {"keys": BKEYS}, VE, "keys"),
                                ("dropout_rate-one", {"dropout_rate": 1.0}, VE, "dropout_rate"),
                                ("noise_var-zero", {"noise_var": 0.0}, VE, "noise_var")):
    case(BATCHED.ensemble_snapshots, cid, lambda c=change: BATCHED.ensemble_snapshots(**{**ENS_ARGS, **c}), exc, names)
# the posteriors check x before they touch the fitted state, so a stand-in with the input dimension serves (no fit)
PARTICLES = lambda: R.bnn.ParticlePosterior(samples=None, input_dim=1)  # noqa: E731
DEEP_POST = lambda: R.deep.DeepRegressionPosterior(R.deep.make_regression("Ens"), None, 1)  # noqa: E731
for post, cls in ((PARTICLES, R.bnn.ParticlePosterior), (DEEP_POST, R.deep.DeepRegressionPosterior)):
    for meth in ("predict", "covariance"):
        case(getattr(cls, meth), "x-wrong-d", lambda p=post, m=meth: getattr(p(), m)(np.zeros((3, 2))), VE, "x")
        case(getattr(cls, meth), "x-1d", lambda p=post, m=meth: getattr(p(), m)(np.zeros(3)), VE, "x")
    case(cls.sample_functions, "num_samples-0", lambda p=post: p().sample_functions(np.zeros((3, 1)), 0), VE,
         "num_samples")
    case(cls.sample_functions, "x-nan", lambda p=post: p().sample_functions(np.full((3, 1), np.nan), 2), VE, "x")
HMC_KW = dict(step_size=0.1, num_leapfrog=2, burn_in=0, thin=1, num_samples=2)
case(R.hmc.hmc_chain, "num_samples-0", lambda: R.hmc.hmc_chain(lambda q, h: 0.0, 0.0, {}, KEY(), **{
    **HMC_KW, "num_samples": 0}), VE, "num_samples")
case(R.hmc.hmc_chain, "thin-0", lambda: R.hmc.hmc_chain(lambda q, h: 0.0, 0.0, {}, KEY(), **{**HMC_KW, "thin": 0}),
     VE, "thin")
case(R.hmc.hmc_chain, "num_leapfrog-float", lambda: R.hmc.hmc_chain(lambda q, h: 0.0, 0.0, {}, KEY(), **{
    **HMC_KW, "num_leapfrog": 2.5}), TE, "num_leapfrog")
case(R.hmc.hmc_chain, "key-int", lambda: R.hmc.hmc_chain(lambda q, h: 0.0, 0.0, {}, 0, **HMC_KW), TE, "key")
case(R.hmc.hmc_chain, "log_prob-none", lambda: R.hmc.hmc_chain(None, 0.0, {}, KEY(), **HMC_KW), TE, "log_prob")
case(R.hmc.hmc_chain, "target_accept-1", lambda: R.hmc.hmc_chain(lambda q, h: 0.0, 0.0, {}, KEY(), **HMC_KW,
                                                                  target_accept=1.0), VE, "target_accept")
EM_KW = dict(step_size=0.01, learning_rate=0.01, em_scale=1.0, num_leapfrog=2, steps_per_em=2, adapt_steps=1,
             burn_in=0, thin=1, num_samples=2)
em_chain = lambda *a, **kw: lambda: R.hmc.em_hmc_chain(*a, **{**EM_KW, **kw})  # noqa: E731
case(R.hmc.em_hmc_chain, "key-int", em_chain(lambda q, h: 0.0, 0.0, {}, 0), TE, "key")
case(R.hmc.em_hmc_chain, "log_prob-none", em_chain(None, 0.0, {}, KEY()), TE, "log_prob")
case(R.hmc.em_hmc_chain, "steps_per_em-0", em_chain(lambda q, h: 0.0, 0.0, {}, KEY(), steps_per_em=0), VE,
     "steps_per_em")
case(R.hmc.em_hmc_chain, "num_samples-1", em_chain(lambda q, h: 0.0, 0.0, {}, KEY(), num_samples=1), VE,
     "burn_in thin num_samples")  # the authors' schedule keeps no state
case(R.hmc.em_hmc_chain, "target_accept-1", em_chain(lambda q, h: 0.0, 0.0, {}, KEY(), target_accept=1.0), VE,
     "target_accept")
case(R.hmc.em_hmc_chain, "adaptation_rate-neg", em_chain(lambda q, h: 0.0, 0.0, {}, KEY(), adaptation_rate=-0.1),
     VE, "adaptation_rate")
case(R.hmc.kept_em_steps, "thin-0", call(R.hmc.kept_em_steps, 100, 0, 10), VE, "thin")
case(R.hmc.kept_em_steps, "burn_in-neg", call(R.hmc.kept_em_steps, -1, 100, 10), VE, "burn_in")
case(R.hmc.kept_em_steps, "num_samples-float", call(R.hmc.kept_em_steps, 100, 100, 10.0), TE, "num_samples")
case(R.nng.noisy_kfac, "num_steps-0", lambda: R.nng.noisy_kfac(KEY(), None, [0, 0], None, {}, num_steps=0), VE,
     "num_steps")
case(R.nng.noisy_kfac, "key-int", lambda: R.nng.noisy_kfac(7, None, [0, 0], None, {}, num_steps=2), TE, "key")
case(jtk.regression.gp.gram_posterior, "gram-not-square",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4)[:3], [0], [0.0], [1], 0.01), VE, "gram")
case(jtk.regression.gp.gram_posterior, "gram-asymmetric",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4) + np.triu(np.ones((4, 4)), 1), [0, 1], [0.0, 0.0], [2], 0.01),
     VE, "gram")
case(jtk.regression.gp.gram_posterior, "gram-nan-at-a-target",
     lambda: jtk.regression.gp.gram_posterior(np.where(np.eye(4) > 0, np.nan, 0.5), [0], [0.0], [2], 0.01), VE,
     "gram")
case(jtk.regression.gp.gram_posterior, "observed-out-of-range",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4), [4], [0.0], [1], 0.01), VE, "observed gram")
case(jtk.regression.gp.gram_posterior, "targets-float",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4), [0], [0.0], [1.5], 0.01), TE, "targets")
case(jtk.regression.gp.gram_posterior, "y-short",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4), [0, 1], [0.0], [2], 0.01), VE, "y observed")
case(jtk.regression.gp.gram_posterior, "noise_var-negative",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4), [0], [0.0], [2], -1.0), VE, "noise_var")
case(jtk.regression.gp.gram_posterior, "full_covariance-text",
     lambda: jtk.regression.gp.gram_posterior(np.eye(4), [0], [0.0], [2], 0.01, full_covariance="yes"), TE,
     "full_covariance")


@pytest.mark.parametrize("build, exc, names", cases(__name__))
def test_bad_input_is_refused_clearly(build, exc, names):
    refused_clearly(build, exc, names)
