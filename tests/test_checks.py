"""Every check passes a right answer, gives a specific hint for a plausible wrong one, and never crashes.

The kernel-level attacks on `jtk grade` are in test_grading_attacks.py.
"""

import io

import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp

from jtk import checks, nets
from jtk.course import _answers, _judge
from _misconceptions import coin_product_of_marginals  # the flips as independent given the mean bias


# ---------- right answers
def coin_joint(biases, prior, flips):
    out = np.zeros((2,) * flips)
    for idx in np.ndindex(*out.shape):
        h = sum(idx)
        out[idx] = sum(p * b ** h * (1 - b) ** (flips - h) for b, p in zip(biases, prior))
    return out


def joint_ll(logits, y):
    lp = np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0].sum(-1)
    return logsumexp(lp) - np.log(len(lp))


def member_logits(params, prior_params, x, prior_scale):
    return nets.mlp_apply(params, x) + prior_scale * nets.mlp_apply(prior_params, x)


def blr_posterior(phi, y, noise_std):
    gram_inv = np.linalg.inv(phi.T @ phi)
    return gram_inv @ phi.T @ y, noise_std ** 2 * gram_inv


def try_then_commit(biases, prior, horizon):
    b, p = np.asarray(biases), np.asarray(prior)
    heads = float(p @ b)
    value = heads
    for outcome, prob in ((1, heads), (0, 1 - heads)):
        if prob > 0:
            w = p * (b if outcome else 1 - b)
            value += prob * (horizon - 1) * max(float(w @ b / w.sum()), 0.5)
    return value


def thompson_action(member_logits, seed):
    k = np.random.default_rng(seed).integers(len(member_logits))
    return int(np.argmax(member_logits[k, :, 1] - member_logits[k, :, 0]))


def next_pick(cov, chosen, pool, test, noise_var):
    best, best_score = None, -np.inf
    for p in pool:
        if p in chosen:
            continue
        s = list(chosen) + [p]
        sig_ss = cov[np.ix_(s, s)] + noise_var * np.eye(len(s))
        sig_us = cov[np.ix_(test, s)]
        rho2 = np.einsum("us,st,ut->u", sig_us, np.linalg.inv(sig_ss), sig_us) / np.diag(cov)[test]
        score = -np.log1p(-rho2).sum()
        if score > best_score:
            best, best_score = p, score
    return best


RIGHT = {
    "coin_joint": coin_joint, "try_then_commit": try_then_commit,
    "joint_log_likelihood": joint_ll, "prior_member": member_logits, "blr_posterior": blr_posterior,
    "batch_mig_step": next_pick, "thompson_action": thompson_action,
}


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_answers_pass(name, hidden, capsys):
    checks.CHECKS[name](RIGHT[name], seed=0, hidden=hidden)
    out = capsys.readouterr().out
    assert out.startswith("✓") and ("hidden" in out) == hidden


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_hidden_cases_differ_from_visible_ones(name):
    visible, hidden = _judge.cases(name, 0, False), _judge.cases(name, 0, True)
    assert repr(visible) != repr(hidden)


def test_cases_are_reproducible_per_seed_and_differ_between_seeds():
    cases = lambda seed: repr(_judge.cases("coin_joint", seed))
    assert cases(3) == cases(3) != cases(4)


# ---------- plausible wrong answers get specific hints
def mean_of_logliks(logits, y):
    return np.take_along_axis(log_softmax(logits, -1), y[None, :, None], -1)[..., 0].sum(-1).mean()


WRONG = [
    ("coin_joint", coin_product_of_marginals, "independent given the bias", "coin.product_of_marginals"),
    ("coin_joint", lambda b, p, f: np.flip(coin_joint(b, p, f)), "index 0 is tails", "coin.heads_tails_swapped"),
    ("try_then_commit", lambda b, p, h: h * max(float(np.dot(p, b)), 0.5), "marginal alone", "ttc.marginal_only"),
    ("try_then_commit", lambda b, p, h: 3.0, "averaged over the two outcomes", "ttc.wrong_value"),
    ("joint_log_likelihood", mean_of_logliks, "averaged the log-likelihoods", "jll.mean_of_logs"),
    ("joint_log_likelihood", lambda lg, y: joint_ll(lg, y) + np.log(len(lg)), "divide by M", "jll.forgot_divide_by_m"),
    ("prior_member", lambda p, q, x, s: nets.mlp_apply(p, x) + nets.mlp_apply(q, x), "multiply the prior network",
     "prior.unscaled"),
    ("blr_posterior", lambda phi, y, s: (blr_posterior(phi, y, s)[0], s * np.linalg.inv(phi.T @ phi)),
     "σ² (the variance), not σ", "blr.std_not_variance"),
    ("batch_mig_step", lambda cov, chosen, pool, test, nv: int([p for p in pool if p not in chosen][
        int(np.argmax([-np.log1p(-cov[p, test] ** 2 / ((cov[p, p] + nv) * np.diag(cov)[test])).sum()
                       for p in pool if p not in chosen]))]), "MIG's best single point", "batchmig.used_mig"),
    ("thompson_action", lambda logits, seed: int(np.argmax(np.exp(log_softmax(logits, -1))[..., 1].mean(0))),
     "*mean* prediction", "thompson.greedy_on_mean"),
]


@pytest.mark.parametrize("name, fn, hint, code", WRONG, ids=[w[3] for w in WRONG])
def test_wrong_answers_get_a_specific_hint_and_code(name, fn, hint, code):
    with pytest.raises(checks.CheckFailed) as info:
        checks.CHECKS[name](fn, seed=1)
    assert hint in str(info.value), str(info.value)
    assert info.value.code == code and code in checks.MISCONCEPTIONS


def test_every_code_a_judge_can_raise_is_listed():
    import inspect
    import re

    source = inspect.getsource(_judge)
    raised = set(re.findall(r'"((?:coin|ttc|jll|prior|blr|batchmig|thompson|generic)\.[a-z_]+)"', source))
    assert raised <= set(checks.MISCONCEPTIONS), raised - set(checks.MISCONCEPTIONS)


# ---------- partial credit, recording, the guard and the record format
def test_partial_credit_counts_cases():
    def only_two_flips(biases, prior, flips):
        return coin_joint(biases, prior, flips) if flips == 2 else np.zeros((2,) * flips)

    result = checks.run_check("coin_joint", only_two_flips, seed=5)
    assert 2 <= result.passed < result.total == 10
    assert {f.code for f in result.failures} == {"coin.not_normalised"}


def test_recorded_answers_are_judged_the_same_by_the_grader():
    """What the grading worker sends back (encoded answers) is judged as the self-check judges the same answers."""
    cases = _judge.cases("joint_log_likelihood", 1234)
    records = [_answers.encode(_answers.capture(mean_of_logliks, args)) for args in cases]
    graded = _judge.evaluate("joint_log_likelihood", records, 1234)
    direct = checks.run_check("joint_log_likelihood", mean_of_logliks, seed=1234)
    assert graded == direct and not graded.ok


def test_the_reference_cannot_be_called_even_through_a_saved_reference():
    from jtk.envs import Coin

    saved = Coin.joint
    for fn in (lambda b, p, f: Coin(b, p).joint(f), lambda b, p, f: saved(Coin(b, p), f)):
        result = checks.run_check("coin_joint", fn, seed=0)
        assert result.passed == 0 and {f.code for f in result.failures} == {"uses_reference"}
        assert "Coin.joint" in result.failures[0].message
    assert Coin((0.5,), (1.0,)).joint(1).tolist() == [0.5, 0.5]  # and it works again afterwards


def test_every_forbidden_function_exists_where_the_guard_looks_for_it():
    import importlib
    import inspect

    for name, paths in checks.FORBIDDEN.items():
        for path, label in _answers._forbidden_codes(paths).items():
            module, qualname = next(p for p in paths if p.endswith(":" + label)).split(":")
            obj = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            code = inspect.unwrap(getattr(obj, "__func__", obj)).__code__
            assert (code.co_filename, _answers._qualname(code)) == path, (name, path)


def test_switching_off_the_guard_is_caught():
    import sys

    from jtk.envs import Coin

    def sneaky(b, p, f):
        sys.setprofile(None)
        return Coin(b, p).joint(f)

    result = checks.run_check("coin_joint", sneaky, seed=0)
    assert result.passed == 0 and "guard" in result.failures[0].message


def test_functions_the_exercise_invites_stay_allowed():
    # 1b's text invites Coin.posterior and Coin.marginal
    from jtk.envs import Coin

    def with_posterior(biases, prior, horizon):
        coin = Coin(tuple(biases), tuple(prior))
        p = coin.marginal()
        return p + sum(q * (horizon - 1) * max(coin.posterior([o]).marginal(), 0.5)
                       for o, q in ((1, p), (0, 1 - p)) if q > 0)

    assert checks.run_check("try_then_commit", with_posterior, seed=0).ok


def test_records_never_unpickle():
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    import base64

    forged = {"npy": base64.b64encode(buf.getvalue()).decode()}
    assert isinstance(_answers.decode(forged), _answers.Opaque)
    for junk in (None, 3, "x", {"npy": "!!"}, {"seq": "no"}, {"raised": 1}, {"opaque": [1]}):
        _answers.decode(junk)  # never raises
    value = (np.arange(3.0), np.eye(2))
    back = _answers.decode(_answers.encode(value))
    assert isinstance(back, tuple) and np.array_equal(back[1], np.eye(2))
    assert _answers.decode(_answers.encode(2.5)).shape == ()
    assert isinstance(_answers.decode(_answers.encode("forty-two")), _answers.Opaque)


def test_a_failed_check_shows_only_its_message():
    with pytest.raises(checks.CheckFailed) as info:
        checks.check_coin_joint(coin_product_of_marginals, seed=0)
    lines = info.value._render_traceback_()
    assert len(lines) == 1 and "Hint" in lines[0] and "Traceback" not in lines[0]
    assert isinstance(info.value, AssertionError)


def test_seed_accepts_a_jax_key_and_rejects_nonsense():
    import jax

    assert checks.case_seed(jax.random.key(3)) == checks.case_seed(jax.random.key(3))
    with pytest.raises(TypeError, match="seed"):
        checks.case_seed("3")
    with pytest.raises(ValueError, match="seed"):
        checks.case_seed(-1)


# ---------- nothing a student writes crashes a check
def not_implemented(*args):
    raise NotImplementedError("write your answer here")


@pytest.mark.parametrize("name", sorted(checks.CHECKS))
@pytest.mark.parametrize("bad, message", [
    (not_implemented, "not implemented yet"),
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    (lambda *a: "forty-two", ""),
    (lambda *a: np.full((3, 3, 3), np.nan), ""),
    (lambda *a: None, ""),
    (42, "expected a function"),
    (lambda *a: __import__("sys").exit(3), "SystemExit"),
    (lambda *a: {"a": 1}, ""),
    (lambda *a: np.zeros(10 ** 6), ""),
])
def test_bad_answers_are_reported_not_crashed(name, bad, message):
    with pytest.raises(AssertionError) as info:
        checks.CHECKS[name](bad, seed=2)
    assert message in str(info.value)
    assert str(info.value).startswith("Exercise")


# ---------- time limits count CPU time, not wall time (a busy machine must not fail a correct answer)
def _coin_case():
    check = _judge.check_by_name("coin_joint")
    return check, check.cases(np.random.default_rng(0), False)[0]


def test_a_function_that_waits_is_not_out_of_cpu_time():
    """Waiting (as a descheduled process on a busy machine does) costs no CPU time: a 0.3 s CPU budget lets a
    function that sleeps 0.6 s of wall time return its answer."""
    import time

    def slow_but_correct(biases, prior, flips):
        time.sleep(0.6)
        return coin_joint(biases, prior, flips)

    check, args = _coin_case()
    with _answers._Budget(1.0) as budget:
        assert budget.run_seconds == pytest.approx(0.3)
        answer = _answers.capture(slow_but_correct, args, budget, check.forbidden)
    np.testing.assert_allclose(answer, coin_joint(*args))


def test_a_function_that_computes_forever_runs_out_of_its_running_share():
    """A loop is stopped once it has run for RUN_SHARE of the call's seconds (plus the grace), not all of them."""
    import time

    def spins(biases, prior, flips):
        while True:
            pass

    check, args = _coin_case()
    start = time.process_time()
    with _answers._Budget(2.0) as budget:
        out = _answers.capture(spins, args, budget, check.forbidden)
    spent = time.process_time() - start
    assert out == _answers.Raised("timeout", "0.6")
    assert 0.6 <= spent < 0.6 + _answers.GRACE_SECONDS + 0.5 < 2.0
    code, message = _judge._raised_failure(out, args)
    assert code == "generic.timeout" and "0.6 s of CPU time (JAX compilation not counted)" in message


def _compiles(budget, until):
    """Compiles new programs (one per new shape, as a jitted answer does on new cases) until ``until()``."""
    import jax

    n = 1
    while not until():
        n += 1
        jax.jit(lambda v: (v @ v.T).sum())(np.ones((n, 3)))


def test_the_timer_never_rearms_once_it_is_being_stopped():
    """A ring that lands while the timer is being stopped must not arm the timer again: it would outlive the
    handler, and SIGPROF's default action ends the process (a dead grading kernel)."""
    import signal

    check, args = _coin_case()
    with _answers._Budget(1.0) as budget:
        timer = _answers._Timer(budget)
        with timer:
            pass
        timer._ring(signal.SIGPROF, None)  # as if the signal had arrived between disarming and restoring
        assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_jax_compilation_is_not_counted_against_a_correct_answer():
    """A jitted answer compiles for each new shape of the cases: that time is credited, so an answer that spends
    twice its running share compiling still returns."""
    from jax import monitoring

    check, args = _coin_case()
    with _answers._Budget(3.0) as budget:
        def compiles_then_answers(biases, prior, flips):
            _compiles(budget, lambda: budget.compiled > 2 * budget.run_seconds)
            return coin_joint(biases, prior, flips)

        answer = _answers.capture(compiles_then_answers, args, budget, check.forbidden)
    assert budget.compiled > 2 * budget.run_seconds
    np.testing.assert_allclose(answer, coin_joint(*args))
    compiled = budget.compiled  # the budget stops listening when it ends
    monitoring.record_event_duration_secs("/jax/core/compile/backend_compile_duration", 1.0)
    assert budget.compiled == compiled


def test_compilation_is_credited_only_up_to_the_calls_seconds():
    """An answer that compiles forever, or reports fake compilations, is still stopped: compilation is credited
    up to the call's seconds, then it counts as running."""
    import time

    from jax import monitoring

    check, args = _coin_case()
    with _answers._Budget(0.5) as budget:
        start = time.process_time()
        out = _answers.capture(lambda *a: _compiles(budget, lambda: False), args, budget, check.forbidden)
        spent = time.process_time() - start
    assert out == _answers.Raised("timeout", "0.15")
    assert budget.compiled > 0.5 and spent < 0.5 + 0.15 + _answers.GRACE_SECONDS + 1.0

    def fakes(biases, prior, flips):
        monitoring.record_event_duration_secs("/jax/core/compile/backend_compile_duration", 1e6)
        while True:
            pass

    with _answers._Budget(0.5) as budget:
        start = time.process_time()
        out = _answers.capture(fakes, args, budget, check.forbidden)
        spent = time.process_time() - start
    assert out == _answers.Raised("timeout", "0.15") and spent < 0.5 + 0.15 + _answers.GRACE_SECONDS + 0.5


def test_an_answer_that_clears_jaxs_listeners_only_loses_its_own_credit(monkeypatch):
    from jax import monitoring
    from jax._src import monitoring as listeners

    for name in ("_event_listeners", "_event_duration_secs_listeners", "_event_time_span_listeners",
                 "_scalar_listeners"):  # other tests' listeners come back afterwards
        monkeypatch.setattr(listeners, name, list(getattr(listeners, name)))

    def clears(biases, prior, flips):
        monitoring.clear_event_listeners()
        return coin_joint(biases, prior, flips)

    check, args = _coin_case()
    with _answers._Budget(1.0) as budget:
        answer = _answers.capture(clears, args, budget, check.forbidden)
    np.testing.assert_allclose(answer, coin_joint(*args))
