"""Stochastic-gradient MCMC: SGLD with and without momentum (Welling & Teh 2011; Osband et al. 2022, App. C.5).

Target: the posterior over the weights θ of an MLP (50, 50),
exp(−U(θ)) with U(θ) = n · L(θ) and

    L(θ) = mean cross-entropy + l2 · ‖θ‖²,   l2 = l2_scale · sqrt(ρ) · d / n,

i.e. a Gaussian prior of variance 1 / (2 l2_scale sqrt(ρ) d) per weight. The
reference factory parametrises it by a prior variance σ² = 1 / l2_scale
(``prior_variance`` 0.1, so l2_scale 10: 1 / 0.1 == 10.0 exactly in float64). ``U`` is estimated
on minibatches of 100.

Dynamics (the reference's optax SGLD; with momentum it is SGHMC, Chen et al.
2014), with step ε = learning_rate / n, momentum β and algorithm temperature T:

    v ← β v + ε ∇U(θ) − sqrt(2 (1 − β) ε T) ξ,   ξ ~ N(0, I)
    θ ← θ − v

β = 0 is plain SGLD, θ ← θ − ε ∇U + sqrt(2ε) ξ. After ``burn_in`` steps, θ is
kept every ``thin`` steps; the kept samples are the posterior, a uniform
finite mixture (scored by exact enumeration).

Presets:

* ``"reference"``: the paper's schedule, 500 000 steps, burn-in 100 000,
  keep every 1000th (400 samples), chain started at the initialisation.
  Very expensive (the paper notes orders of magnitude more compute).
* ``"fast"`` (default of ``make("sgmcmc")``): the chain starts from the
  regularised MAP fit of the shared training loop (Adam 1e-3, 1000 steps, the
  same loss L — exactly the mlp agent's training with the SGLD prior), then
  runs 12 000 SGLD steps, discards the first 2 000 and keeps every 100th
  (100 samples): 13 000 steps against the mlp's 1000; its cost is measured in
  docs/results.md.

Defaults: learning rate 1e-4, momentum 0.9, l2_scale 10 (prior_variance 0.1), T = 1
(docs/reference.md, "Agent defaults").
The paper's Table 2 row is the best configuration of its sweep (``jtk.testbed.sweep.PAPER_SWEEPS["sgmcmc"]``,
learning rate × prior variance, selected on d_KL^1 + d_KL^10 / 10). On jtk's paper grid with the fast
preset that is ``make("sgmcmc", learning_rate=5e-3, l2_scale=5.0)`` (prior variance 0.2); docs/results.md,
"sgmcmc: the reference defaults vs the paper's tuned row", compares it with the defaults.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import optax

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import NeuralAgent, ProblemInfo, register, renamed_keywords
from jtk.agents.ensemble import masked_cross_entropy
from jtk.agents.zoo_common import flat_mlp, mlp_sizes, mlp_unravel, reference_l2

PRESETS: dict[str, dict[str, int]] = {
    "reference": dict(num_steps=500_000, burn_in=100_000, thin=1000, warm_start_steps=0),
    "fast": dict(num_steps=12_000, burn_in=2_000, thin=100, warm_start_steps=1000),
}


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["PRESETS", "SGMCMCAgent", "sgmcmc", "sgld"]


def langevin_chain(grad_u: Callable[[jax.Array, jax.Array], jax.Array], theta0: jax.Array, key: jax.Array, *,
                   step_size, momentum: float, num_steps: int, burn_in: int, thin: int,
                   temperature=1.0) -> jax.Array:
    """Runs (momentum) SGLD on exp(−U / T) and returns the thinned samples.

    Args:
      grad_u: ``grad_u(theta, key) -> ∇U(θ)`` (a stochastic estimate is fine): [P] → [P].
      theta0: starting point [P].
      key: PRNG key.
      step_size: ε (traced scalar allowed).
      momentum: β in [0, 1).
      num_steps: total steps, burn-in included (static).
      burn_in: steps discarded first (static).
      thin: keep one sample every ``thin`` steps after burn-in (static).
      temperature: algorithm temperature T (1 samples the posterior).

    Returns:
      Samples [S, P], S = (num_steps − burn_in) // thin, taken at the end of each thinning block.
    """
    num_kept = (num_steps - burn_in) // thin
    noise_std = jnp.sqrt(2.0 * (1.0 - momentum) * step_size * temperature)

    def step(carry, k):
        theta, v = carry
        k_grad, k_noise = jax.random.split(k)
        v = momentum * v + step_size * grad_u(theta, k_grad) - noise_std * jax.random.normal(k_noise, theta.shape)
        return (theta - v, v), None

    def block(carry, k):
        carry, _ = jax.lax.scan(step, carry, jax.random.split(k, thin))
        return carry, carry[0]

    k_burn, k_keep = jax.random.split(key)
    carry = (theta0, jnp.zeros_like(theta0))
    if burn_in:
        carry, _ = jax.lax.scan(step, carry, jax.random.split(k_burn, burn_in))
    _, samples = jax.lax.scan(block, carry, jax.random.split(k_keep, num_kept))
    return samples  # [S, P]


def _from_prior_variance(value) -> float:
    """l2_scale = 1 / prior_variance (the reference's parametrisation; prior_variance > 0)."""
    return 1.0 / _checks.positive("prior_variance", value)


@renamed_keywords(prior_variance=("l2_scale", _from_prior_variance))
@dataclass(frozen=True, kw_only=True)
class SGMCMCAgent(NeuralAgent):
    """SGLD / SGHMC over the weights of an MLP; the posterior is the uniform mixture of thinned samples.

    Attributes:
      learning_rate: η; the Langevin step is ε = η / n (1e-4; redeclared from the shared 1e-3).
      momentum: β; 0 gives plain SGLD (0.9).
      l2_scale: λ in l2 = λ · sqrt(ρ) · d / n (10.0). The reference calls its inverse the prior variance
        (``prior_variance`` 0.1 = 1 / λ); jtk's old keyword ``prior_variance=v`` still works as
        ``l2_scale=1 / v``, with a DeprecationWarning.
      alg_temperature: T of the dynamics (1.0 = the posterior).
      num_steps: total SGLD steps, burn-in included (the "fast" preset's 12 000).
      burn_in: SGLD steps discarded.
      thin: keep every ``thin``-th sample after burn-in.
      warm_start_steps: Adam steps (lr ``warm_start_lr``) on L before the chain; 0 starts at the initialisation.
      warm_start_lr: Adam step size of the warm start (1e-3).
      hidden, batch_size, num_classes: the shared training fields
        (:class:`~jtk.agents.base.NeuralAgent`: (50, 50), minibatch 100).

    Hyper keys (``hyper(prior)``, traced per problem):
      l2: λ · sqrt(ρ) · d / n, the weight of ‖θ‖² in L.
      n: the number of training points (U = n · L; the step is η / n).
    """

    learning_rate: float = 1e-4
    momentum: float = 0.9
    l2_scale: float = 10.0
    alg_temperature: float = 1.0
    num_steps: int = PRESETS["fast"]["num_steps"]
    burn_in: int = PRESETS["fast"]["burn_in"]
    thin: int = PRESETS["fast"]["thin"]
    warm_start_steps: int = PRESETS["fast"]["warm_start_steps"]
    warm_start_lr: float = 1e-3

    def __check_init__(self):
        beta = _checks.positive("momentum", self.momentum, allow_zero=True)
        if beta >= 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        _checks.positive("alg_temperature", self.alg_temperature, allow_zero=True)
        _checks.integer("burn_in", self.burn_in, minimum=0)
        _checks.integer("thin", self.thin, minimum=1)
        if (self.num_steps - self.burn_in) // self.thin < 1:
            raise ValueError(f"num_steps must leave at least one kept sample: (num_steps - burn_in) // thin >= 1, "
                             f"got num_steps={self.num_steps}, burn_in={self.burn_in}, thin={self.thin}")
        _checks.integer("warm_start_steps", self.warm_start_steps, minimum=0)
        _checks.positive("warm_start_lr", self.warm_start_lr)

    @property
    def prior_variance(self) -> float:
        """Deprecated: 1 / l2_scale (the reference's parametrisation)."""
        warnings.warn("jtk.agents.SGMCMCAgent.prior_variance is deprecated; use l2_scale (= 1 / prior_variance)",
                      DeprecationWarning, stacklevel=2)
        return 1.0 / self.l2_scale if self.l2_scale else float("inf")

    @property
    def num_samples(self) -> int:
        """Number of kept samples S (mixture components)."""
        return (self.num_steps - self.burn_in) // self.thin

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"l2": reference_l2(prior, self.l2_scale), "n": float(max(prior.num_train, 1))}

    def train(self, key, data: train_lib.Dataset, hyper) -> jax.Array:
        k_init, k_warm, k_chain = jax.random.split(key, 3)
        sizes = mlp_sizes(data.x.shape[1], self.hidden, self.num_classes)
        theta, _ = flat_mlp(k_init, sizes)
        unravel = mlp_unravel(sizes)

        def loss(theta, batch, hyper_, _):  # L(θ) on a minibatch
            return masked_cross_entropy(nets.mlp_apply(unravel(theta), batch.x), batch) \
                + hyper_["l2"] * jnp.sum(jnp.square(theta))

        if self.warm_start_steps:
            theta, _ = train_lib.train(loss, theta, data, hyper, k_warm, optimizer=optax.adam(self.warm_start_lr),
                                       num_steps=self.warm_start_steps, batch_size=self.batch_size)
        grad_l = jax.grad(loss)

        def grad_u(theta, k):
            return hyper["n"] * grad_l(theta, train_lib.sample_batch(k, data, self.batch_size), hyper, k)

        return langevin_chain(grad_u, theta, k_chain, step_size=self.learning_rate / hyper["n"],
                              momentum=self.momentum, num_steps=self.num_steps, burn_in=self.burn_in,
                              thin=self.thin, temperature=self.alg_temperature)  # [S, P]

    def components(self, state: jax.Array, x) -> jax.Array:
        unravel = mlp_unravel(mlp_sizes(x.shape[1], self.hidden, self.num_classes))
        return jax.vmap(lambda th: nets.mlp_apply(unravel(th), x))(state)  # [S, n, K]


@register("sgmcmc")
def sgmcmc(preset: str = "fast", **kw) -> SGMCMCAgent:
    """SGLD, momentum 0.9, lr 1e-4, l2_scale 10 = 1 / prior variance 0.1 (App. C.5); preset "fast" or "reference"."""
    _checks.one_of("preset", preset, tuple(PRESETS))
    return SGMCMCAgent(**{**PRESETS[preset], **kw})


@register("sgld")
def sgld(preset: str = "fast", **kw) -> SGMCMCAgent:
    """Plain SGLD (momentum 0), otherwise as ``sgmcmc`` (App. C.5)."""
    return sgmcmc(preset, **{"momentum": 0.0, **kw})
