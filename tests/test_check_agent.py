"""jtk.testbed.check_agent: a correct agent passes, broken agents are caught by the probe meant for them."""

import numpy as np
import pytest

import _fakes
import jtk
from jtk import testbed
from jtk.testbed import engine
import _readme


class PerInputMember:
    """A broken ensemble: every input row of every sample gets its own random member (marginals are right)."""

    def __init__(self, num_members=5):
        self.inner = jtk.agents.make("ensemble", num_members=num_members, num_steps=50)
        self.name = "per-input-member"

    def fit(self, x, y, seed=0, prior=None):
        self.post = self.inner.fit(x, y, seed=seed, prior=prior)
        return self

    def sample_logits(self, x, num_samples, seed=0):
        comps = np.asarray(self.post.components(x))  # [C, n, K]
        rng = np.random.default_rng(seed)
        pick = rng.integers(0, comps.shape[0], size=(num_samples, comps.shape[1]))  # a member per (sample, row)
        return comps[pick, np.arange(comps.shape[1])[None, :]]  # [M, n, K]


BootstrapLogistic = _readme.agent_class()  # the README's ten-line scikit-learn agent


def by_name(report):
    return {p.name: p for p in report.probes}


def test_a_correct_ensemble_passes_every_probe():
    report = testbed.check_agent(jtk.agents.make("ensemble", num_members=5, num_steps=50), estimate_time=False)
    assert report.ok, str(report)
    probes = by_name(report)
    assert set(probes) == {"fit", "shapes", "finite", "coherence", "seed", "mixture weights", "joint dependence"}
    assert "components → [5, 8, 2]" in probes["shapes"].message
    assert "median correlation" in probes["joint dependence"].message  # members differ: the check really ran
    assert "check_agent(" in str(report) and "<table>" in report._repr_html_()


def test_mlp_passes_and_estimates_the_paper_grid_time():
    report = testbed.check_agent("mlp")
    assert report.ok, str(report)
    assert report.estimated_paper_seconds is not None and report.estimated_paper_seconds > 0
    assert "paper grid" in by_name(report)["paper grid time"].message
    # one function: the dependence probe reports it, it does not fail it
    assert "no epistemic uncertainty" in by_name(report)["joint dependence"].message


def test_a_per_input_member_agent_is_caught_by_the_coherence_probe():
    report = testbed.check_agent(PerInputMember(), estimate_time=False)
    assert not report.ok
    probes = by_name(report)
    assert not probes["coherence"].ok and "one function" in probes["coherence"].message
    assert not probes["joint dependence"].ok and "marginal-only" in probes["joint dependence"].message
    assert probes["shapes"].ok and probes["finite"].ok and probes["seed"].ok


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")  # the -inf it reports
def test_the_readme_scikit_learn_agent_is_coherent_but_gives_infinite_logits_far_out():
    """Justified report: predict_log_proba returns log(0) = -inf where a logistic regression saturates."""
    pytest.importorskip("sklearn")
    report = testbed.check_agent(BootstrapLogistic(), estimate_time=False)
    failed = [p.name for p in report.failures]
    assert failed == ["finite"], str(report)
    assert "±inf" in report.failures[0].message and "0 NaN" in report.failures[0].message

    class Clipped(BootstrapLogistic):  # the fix: clip probabilities before the log
        def sample_logits(self, x, num_samples, seed=0):
            return np.maximum(super().sample_logits(x, num_samples, seed), np.log(1e-12))

    with np.errstate(divide="ignore"):
        assert testbed.check_agent(Clipped(), estimate_time=False).ok


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the dependence probe on ±inf logits
@pytest.mark.parametrize("high, low, what", [(0.0, -np.inf, "±inf"), (0.0, -1e300, "beyond float32's range"),
                                             (1e300, 0.0, "beyond float32's range"),
                                             (3e38, -3e38, "probability exactly 0")])
def test_probability_zero_logits_fail_the_finite_probe_alike(high, low, what):
    """-inf, ±1e300 (±inf once scored in float32) and float32 logits whose gap overflows: each gives a class
    probability 0, so one label of it makes a τ-sample's KL +inf (clipped by the testbed, invalid in a challenge)."""
    report = testbed.check_agent(_fakes.HardMax(high, low), estimate_time=False)
    finite = by_name(report)["finite"]
    assert not finite.ok and what in finite.message and "clips" in finite.message, finite.message
    assert [p.name for p in report.failures] == ["finite"], str(report)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")  # BootstrapLogistic
def test_broken_agents_fail_the_matching_probe():
    class NaNs(BootstrapLogistic):
        def sample_logits(self, x, num_samples, seed=0):
            out = super().sample_logits(x, num_samples, seed)
            out[0, 0, 0] = np.nan
            return out

    class Unseeded(BootstrapLogistic):
        def sample_logits(self, x, num_samples, seed=0):
            return super().sample_logits(x, num_samples, np.random.randint(1 << 30))

    class BadWeights(BootstrapLogistic):
        num_components = 20

        def components(self, x):
            return np.stack([m.predict_log_proba(x) if m is not None else np.log(np.full((len(x), 2), 0.5))
                             for m in self.models])

        def log_weights(self):
            return np.zeros(20)  # not normalised: logsumexp = log 20

    class FitFails:
        def fit(self, x, y, seed=0, prior=None):
            raise RuntimeError("no data")

    pytest.importorskip("sklearn")
    assert not by_name(testbed.check_agent(NaNs(), estimate_time=False))["finite"].ok
    assert not by_name(testbed.check_agent(Unseeded(), estimate_time=False))["seed"].ok
    weights = by_name(testbed.check_agent(BadWeights(), estimate_time=False))["mixture weights"]
    assert not weights.ok and "logsumexp = 3" in weights.message
    report = testbed.check_agent(FitFails(), estimate_time=False)
    assert not report.ok and [p.name for p in report.probes] == ["fit"] and "no data" in report.probes[0].message


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="fit"):
        testbed.check_agent(object())
    with pytest.raises(TypeError, match="prior"):
        testbed.check_agent("mlp", prior={"input_dim": 2})
    with pytest.raises(ValueError, match="num_samples"):
        testbed.check_agent("mlp", num_samples=1)


def test_cli_check_runs_first_and_stops_with_exit_2(monkeypatch, capsys):
    from jtk import cli
    failing = testbed.AgentReport("mlp", (testbed.Probe("coherence", False, "identical input rows differ", 0.1),))
    monkeypatch.setattr(testbed, "check_agent", lambda agent, prior=None: failing)
    called = []
    monkeypatch.setattr(engine, "evaluate_chunk", lambda *a, **k: called.append(1))
    assert cli.main(["testbed", "--agent", "mlp", "--check", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "check_agent: coherence: identical input rows differ" in err and not called
    assert cli.main(["testbed", "--agent", "dropout", "--likelihood", "exact", "--no-progress"]) == 2
    assert "--likelihood exact needs a finite-mixture agent" in capsys.readouterr().err


def test_cli_likelihood_reaches_the_rows(tmp_path):
    from jtk import cli
    import pandas as pd
    out = tmp_path / "rows.csv"
    assert cli.main(["testbed", "--agent", "mlp", "--grid", "quick", "--seeds", "1", "--set", "num_steps=20",
                     "--likelihood", "mc", "--no-progress", "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["likelihood"]) == {"mc1000"}
