"""check_agent: probes an agent for the mistakes that silently corrupt testbed scores, before a long run.

Coherent samples across duplicate inputs, seed determinism, shapes, NaN/inf, mixture weights, marginal-only
sampling, and an estimate of the paper grid's time (``jtk testbed --check``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from jtk import _checks, executors, train as train_lib
from jtk.agents import base as agents_base
from jtk.testbed.engine import agent_name, agent_seed, evaluate, load_problem, make_chunks, _num_components
from jtk.testbed.grids import PAPER_TAUS, Problem, paper_problems

__all__ = ["Probe", "AgentReport", "check_agent", "PROBES"]


@dataclass(frozen=True)
class Probe:
    """One probe of :func:`check_agent`: its name, verdict, explanation and run time in seconds."""

    name: str
    ok: bool
    message: str
    seconds: float


@dataclass(frozen=True)
class AgentReport:
    """What :func:`check_agent` found: ``ok`` is True when every probe passed.

    Attributes:
      agent: the agent's name.
      probes: one :class:`Probe` per check, in the order run.
      estimated_paper_seconds: estimated wall time of the 420-problem paper grid
        on this machine (None when not estimated or when evaluation failed).
    """

    agent: str
    probes: tuple[Probe, ...]
    estimated_paper_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.probes)

    @property
    def failures(self) -> list[Probe]:
        return [p for p in self.probes if not p.ok]

    def __str__(self) -> str:
        verdict = "OK" if self.ok else f"FAILED ({len(self.failures)} of {len(self.probes)} probes)"
        lines = [f"check_agent({self.agent}): {verdict}"]
        lines += [f"  [{'ok' if p.ok else 'FAIL':>4}] {p.name:<16} {p.seconds:6.2f} s  {p.message}"
                  for p in self.probes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html
        verdict = "OK" if self.ok else f"FAILED ({len(self.failures)} of {len(self.probes)} probes)"
        rows = "".join(
            f"<tr><td>{'✓' if p.ok else '✗'}</td><td>{html.escape(p.name)}</td><td>{p.seconds:.2f} s</td>"
            f"<td style='text-align:left'>{html.escape(p.message)}</td></tr>" for p in self.probes)
        return (f"<b>check_agent({html.escape(self.agent)}): {verdict}</b><table><tr><th></th><th>probe</th>"
                f"<th>time</th><th style='text-align:left'>message</th></tr>{rows}</table>")


def _probe(name: str, fn) -> Probe:
    """Runs ``fn() -> (ok, message)``; an exception is a failed probe carrying its message."""
    t0 = time.perf_counter()
    try:
        ok, message = fn()
    except Exception as err:  # a probe reports; it never crashes the check
        ok, message = False, f"raised {type(err).__name__}: {err}"
    return Probe(name, bool(ok), message, time.perf_counter() - t0)


def _paper_grid_estimate(agent, name: str, prior: agents_base.ProblemInfo, seed: int) -> tuple[bool, str, float]:
    """Times one training group (τ = 1 and 10 at n = 100) twice and extrapolates to the 420 problems."""
    group = [Problem(temperature=prior.temperature, num_train=100, tau=tau, seed=seed, input_dim=prior.input_dim,
                     num_classes=prior.num_classes) for tau in PAPER_TAUS]
    t0 = time.perf_counter()
    evaluate(agent, group, name=name, progress=False)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    evaluate(agent, group, name=name, progress=False)
    run = time.perf_counter() - t0
    paper = paper_problems()
    num_groups = len({p.training_problem for p in paper})
    if isinstance(agent, agents_base.JaxAgent):
        shapes = {(train_lib.capacity_for(c[0][0].num_train), train_lib.batch_bucket(c[0][0].num_train,
                   agent.batch_size), c.size) for c in make_chunks(paper, agent)}
        compile_s = max(first - run, 0.0)
        threads = executors.local_threads(len(shapes) + num_groups, [agent])
        total = len(shapes) * compile_s + num_groups * run / threads
        how = (f"{len(shapes)} minibatch sizes × {compile_s:.1f} s of compilation (at most: the sizes compile as "
               f"branches of one program, for less) + {num_groups} training groups × {run:.2f} s / {threads} "
               f"thread{'s' if threads > 1 else ''} (one group at n = 100, timed after compilation; vectorised chunks "
               f"are usually faster per group)")
    else:
        total = num_groups * run
        how = f"{num_groups} training groups × {run:.2f} s (one group at n = 100; the fit time depends on n)"
    return True, f"estimate ≈ {total / 60:.1f} min for the paper grid: {how}", total


def _nonfinite_logits(logits) -> tuple[int, int, int, int]:
    """(NaN, ±inf, finite beyond float32's range, rows with a zero float32 probability) among logits [..., K].

    What the testbed scores is the float32 log-softmax: a logit of ±1e300 is ±inf there, and so is a gap between
    two classes beyond float32's range; either gives an observed label of that class probability exactly 0.
    """
    out = np.asarray(logits)
    if not (np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.integer)):
        return 0, 0, 0, 0
    wide = out.astype(np.float64)
    nan, inf = int(np.isnan(wide).sum()), int(np.isinf(wide).sum())
    huge = int((np.isfinite(wide) & (np.abs(wide) > np.finfo(np.float32).max)).sum())
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # numpy: no compilation in a worker
        z = wide.astype(np.float32)
        z = z - z.max(axis=-1, keepdims=True)  # float32, as scored: a gap beyond float32's range is -inf
        lp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    zero = int((np.isneginf(lp).any(axis=-1) & ~np.isnan(lp).any(axis=-1)).sum()) if lp.ndim else 0
    return nan, inf, huge, zero


@dataclass(frozen=True)
class ProbeSubject:
    """What the probes of :func:`check_agent` share: the fitted posterior, the problem's sizes, the number of samples
    drawn and the generator of the probes' inputs (one generator, drawn from in the order of :data:`PROBES`)."""

    posterior: Any
    d: int
    k: int
    m: int
    sample_seed: int
    rng: np.random.Generator

    def draw(self, x, seed: int | None = None, num: int | None = None) -> np.ndarray:
        """``posterior.sample_logits(x, num, seed)`` as a numpy array (defaults: M samples, the problem's seed)."""
        return np.asarray(self.posterior.sample_logits(np.asarray(x, np.float32), self.m if num is None else num,
                                                       self.sample_seed if seed is None else seed))


def probe_shapes(s: ProbeSubject) -> tuple[bool, str]:
    """``sample_logits(x, M, seed)`` is a float array [M, n, K]; ``components``, where present, [C, n, K]."""
    x = s.rng.normal(size=(8, s.d)).astype(np.float32)
    out = s.draw(x)
    if out.ndim != 3 or out.shape != (s.m, 8, s.k) or not np.issubdtype(out.dtype, np.floating):
        return False, (f"sample_logits(x [8, {s.d}], {s.m}, seed) gave {out.dtype} {out.shape}; "
                       f"expected float [{s.m}, 8, {s.k}]")
    msg = f"sample_logits → {out.dtype} [{s.m}, 8, {s.k}]"
    c = _num_components(s.posterior)
    if c:
        comps = np.asarray(s.posterior.components(x))
        if comps.shape != (c, 8, s.k):
            return False, f"components(x [8, {s.d}]) gave {comps.shape}; expected [num_components={c}, 8, {s.k}]"
        msg += f"; components → [{c}, 8, {s.k}]"
    return True, msg


def probe_finite(s: ProbeSubject) -> tuple[bool, str]:
    """No NaN / ±inf, no logit beyond float32's range and no zero float32 probability among sampled logits."""
    x = 3.0 * s.rng.normal(size=(500, s.d))
    found = [("sampled logits", s.draw(x))]
    if _num_components(s.posterior):
        found.append(("components", np.asarray(s.posterior.components(np.asarray(x, np.float32)))))
    counts = [_nonfinite_logits(out) for _, out in found]
    nan, inf, huge, zero = (sum(c[i] for c in counts) for i in range(4))
    size = sum(out.size for _, out in found)
    what = " and ".join(w for w, _ in found)
    if nan or inf or huge or zero:
        return False, (f"{nan} NaN and {inf} ±inf of {size} {what} at inputs ~ N(0, 9 I), {huge} beyond "
                       f"float32's range (±1e300-style: ±inf once scored in float32), {zero} rows with a class of "
                       f"probability exactly 0 in float32: one label of that class makes the KL of its τ-sample "
                       f"+inf. jtk.testbed's d_KL clips such values to the largest finite one, as the reference "
                       f"does (frac_finite < 1, an InfiniteKLWarning), which can read better than an honest agent; "
                       f"a class challenge marks the entry invalid. Keep logits finite, e.g. clip probabilities "
                       f"before the log; NaN poisons the score")
    return True, f"all {size} {what} finite, with no zero probability, at inputs ~ N(0, 9 I)"


def probe_coherence(s: ProbeSubject) -> tuple[bool, str]:
    """Repeated input rows get identical logits within every sample: sample m is one function."""
    base = s.rng.normal(size=(6, s.d)).astype(np.float32)
    order = np.array([0, 1, 2, 3, 4, 5, 0, 3, 0, 5, 2])
    out = s.draw(base[order])  # [M, 11, K]
    first = {}
    gaps = []
    for row, src in enumerate(order):
        if src in first:
            a, b = out[:, first[src]], out[:, row]
            gaps.append(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a)), axis=-1))  # [M]
        else:
            first[src] = row
    gap = np.max(gaps, axis=0)  # [M] worst relative gap per sample
    bad = int(np.sum(gap > 1e-5))
    if bad:
        return False, (f"identical input rows got different logits within {bad} of {s.m} samples (max relative "
                       f"|Δ| {gap.max():.3g}): sample m must be one function evaluated at every input, not a "
                       f"fresh member / noise draw per input row")
    return True, f"repeated rows identical within every sample (max relative |Δ| {gap.max():.1e})"


def probe_seed(s: ProbeSubject) -> tuple[bool, str]:
    """The same seed gives the same samples."""
    x = s.rng.normal(size=(16, s.d))
    a, b, c = s.draw(x, s.sample_seed), s.draw(x, s.sample_seed), s.draw(x, (s.sample_seed + 1) % 2 ** 31)
    if not np.allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True):
        return False, f"the same seed gave different samples (max |Δ| {np.nanmax(np.abs(a - b)):.3g})"
    other = "changes them" if not np.allclose(a, c) else "gives the same samples (a deterministic posterior)"
    return True, f"the same seed gives identical samples; another seed {other}"


def probe_mixture_weights(s: ProbeSubject) -> tuple[bool, str]:
    """``log_weights()``, where present, is [C] without NaN / +inf and normalised."""
    mixture = agents_base.as_mixture(s.posterior)
    if mixture is None:
        return True, "not a finite mixture (no components / num_components): nothing to check"
    c = int(mixture.num_components)
    lw = mixture.log_weights()
    if lw is None:
        return True, f"uniform mixture of {c} component{'s' if c > 1 else ''}"
    lw = np.asarray(lw, np.float64)
    if lw.shape != (c,) or np.any(np.isnan(lw)) or np.any(lw == np.inf):
        return False, f"log_weights() must be [{c}] without NaN/+inf, got shape {lw.shape}"
    total = float(np.logaddexp.reduce(lw))
    if abs(total) > 1e-4:
        return False, f"log_weights() are not normalised: logsumexp = {total:.3g} (must be 0)"
    return True, f"{c} weights, logsumexp = {total:.1e}, Kish ESS {np.exp(-np.logaddexp.reduce(2 * lw)):.1f}"


def probe_joint_dependence(s: ProbeSubject) -> tuple[bool, str]:
    """The marginal-only check: samples at inputs 1e-4 apart are correlated where they differ."""
    anchors = s.rng.normal(size=(64, s.d))
    u = s.rng.normal(size=(64, s.d))
    near = anchors + 1e-4 * u / np.linalg.norm(u, axis=1, keepdims=True)
    out = s.draw(np.concatenate([anchors, near]))  # [M, 128, K]
    z = out - out.mean(-1, keepdims=True)  # logits are defined up to a constant per class vector
    za, zn = z[:, :64], z[:, 64:]
    probs = np.exp(out - out.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    spread = probs[:, :64].std(axis=0).max(-1)  # [64] largest class-probability std over samples
    varying = spread >= 1e-3
    if not varying.any():
        return True, ("samples agree at every anchor (probability spread < 1e-3): joint = product of "
                      "marginals by construction; the agent expresses no epistemic uncertainty here")
    za, zn = za[:, varying] - za[:, varying].mean(0), zn[:, varying] - zn[:, varying].mean(0)
    cov = (za * zn).sum((0, 2))
    corr = cov / np.sqrt((za ** 2).sum((0, 2)) * (zn ** 2).sum((0, 2)) + 1e-30)
    med = float(np.median(corr))
    if med < 0.5:
        return False, (f"samples differ (median probability spread {np.median(spread[varying]):.3g}) but are "
                       f"uncorrelated between inputs 1e-4 apart (median correlation {med:.2f} over "
                       f"{int(varying.sum())} anchors): they behave as independent draws per input, so joint "
                       f"predictions equal the product of marginals (marginal-only)")
    return True, (f"median correlation {med:.3f} between samples at inputs 1e-4 apart over "
                  f"{int(varying.sum())} anchors where samples differ: joint predictions carry the dependence")

PROBES = (("shapes", probe_shapes), ("finite", probe_finite), ("coherence", probe_coherence), ("seed", probe_seed),
          ("mixture weights", probe_mixture_weights), ("joint dependence", probe_joint_dependence))
"""The probes :func:`check_agent` runs after ``fit``, in order: (name, function of a ``ProbeSubject``)."""


def check_agent(agent, prior: agents_base.ProblemInfo | None = None, *, seed: int = 0, num_samples: int = 100,
                estimate_time: bool = True) -> AgentReport:
    """Probes an agent for the mistakes that silently corrupt testbed scores, before a long run.

    Fits the agent once on a testbed training set (from ``prior``: input_dim,
    num_classes, num_train, temperature) and runs these probes:

    * ``fit``: ``fit(x, y, seed, prior)`` returns without error.
    * ``shapes``: ``sample_logits(x, M, seed)`` is a float array [M, n, K]; if
      the posterior has ``components`` / ``num_components``: [C, n, K] with C
      equal to ``num_components``.
    * ``finite``: no NaN/inf among M × 500 sampled logits (inputs ~ N(0, 9 I),
      beyond the training data; the components too for a finite mixture), no
      logit beyond float32's range (±1e300 is ±inf once scored) and no class
      of probability exactly 0 in float32 (-inf logits): a label of that class
      would make its τ-sample's KL +inf, which d_KL's clip rule would hide.
    * ``coherence``: a call whose x repeats rows gives identical logits to the
      repeated rows within every sample (``|Δ| ≤ 1e-5 · max(1, |logit|)``). Sample
      m must be *one* function at all inputs; an agent that draws a fresh
      member, dropout mask or weight sample per input row fails here.
    * ``seed``: the same seed gives the same samples (a different seed may or
      may not change them: a deterministic posterior is fine).
    * ``mixture weights``: ``log_weights()``, when present, is [C], has no NaN
      and logsumexp(log_weights) = 0 within 1e-4.
    * ``joint dependence``: the marginal-only check. For 64 anchor inputs x it
      asks for x and x + 1e-4·u (u a random unit direction) in one call and
      correlates, across the M samples, the centred logits at the two. Any
      posterior over functions that are continuous at the scale of 1e-4 gives a
      correlation near 1, so its joint predictions of nearby (and repeated,
      as in polyadic τ-batches) inputs differ from the product of its
      marginals; samples drawn independently per input give a correlation
      near 0, i.e. joint = product of marginals: d_KL^τ of such an agent is
      that of a marginal predictor whatever its marginals. Fails when the
      samples differ at the anchors (probability spread ≥ 1e-3) and the median
      correlation is below 0.5. A posterior whose samples agree is reported,
      not failed: it expresses no epistemic uncertainty, honestly. (Comparing
      joint log-likelihoods of polyadic τ = 10 batches with the product of
      marginals tests the same dependence, but with sampled labels it needs
      thousands of batches to separate the two at realistic spreads; the
      correlation at near-identical inputs sees it directly.)
    * ``paper grid time`` (``estimate_time``): times ``evaluate`` on one
      training group (τ = 1 and 10, n = 100, 1000 test τ-samples) twice —
      compile + run, then run — and extrapolates to the 210 training groups of
      the paper grid, adding one compilation per minibatch size (an upper
      bound: the sizes compile as branches of one program). An estimate, not
      a measurement: n changes the cost of non-JAX agents.

    Args:
      agent: an agent name or any object with ``fit`` (see :func:`evaluate`).
      prior: the problem to probe on (default: d = 2, K = 2, n = 10, ρ = 0.1, τ = 10).
      seed: seed of the problem and of the agent.
      num_samples: M, posterior samples drawn per probe.
      estimate_time: run the ``paper grid time`` probe.

    Returns:
      An :class:`AgentReport`; ``str(report)`` is one line per probe.
    """
    if isinstance(agent, str):
        name, agent = agent, agents_base.make(agent)
    else:
        name = agent_name(agent, None)
    if not callable(getattr(agent, "fit", None)):
        raise TypeError(f"agent must be an agent name or an object with a fit(x, y, seed, prior) method, "
                        f"got {type(agent).__name__}")
    if prior is None:
        prior = agents_base.ProblemInfo(input_dim=2, num_classes=2, num_train=10, temperature=0.1, tau=10)
    if not isinstance(prior, agents_base.ProblemInfo):
        raise TypeError(f"prior must be a jtk.agents.ProblemInfo or None, got {type(prior).__name__}")
    seed = _checks.seed_int("seed", seed)
    m = _checks.integer("num_samples", num_samples, minimum=2)
    problem = Problem(temperature=prior.temperature, num_train=max(prior.num_train, 1), tau=max(prior.tau, 1),
                      seed=seed, input_dim=prior.input_dim, num_classes=prior.num_classes)
    d, k = problem.input_dim, problem.num_classes
    _, data, _ = load_problem(problem)
    x_train, y_train = np.asarray(data.x[:problem.num_train]), np.asarray(data.y[:problem.num_train])
    rng = np.random.default_rng(seed)
    sample_seed = agent_seed(problem, problem.tau)
    probes = []
    state: dict[str, Any] = {}

    def fit():
        state["posterior"] = agent.fit(x_train, y_train, seed=agent_seed(problem, 0), prior=problem.prior())
        return True, f"fit on n = {problem.num_train} (d = {d}, K = {k}, ρ = {problem.temperature:g})"

    probes.append(_probe("fit", fit))
    post = state.get("posterior")
    if post is None:
        return AgentReport(name, tuple(probes))

    subject = ProbeSubject(post, d, k, m, sample_seed, rng)
    for probe_name, fn in PROBES:
        probes.append(_probe(probe_name, functools.partial(fn, subject)))
    estimate = None
    if estimate_time:
        t0 = time.perf_counter()
        try:
            ok, msg, estimate = _paper_grid_estimate(agent, name, prior, seed)
        except Exception as err:
            ok, msg = False, f"evaluate raised {type(err).__name__}: {err}"
        probes.append(Probe("paper grid time", ok, msg, time.perf_counter() - t0))
    return AgentReport(name, tuple(probes), estimate)
