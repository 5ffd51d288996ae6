"""The Bayes-optimal reference: the testbed prior conditioned on the training data, by importance sampling.

The testbed's generative model is known (Osband et al. 2022, §3.1 and App. B):
an environment is an MLP f drawn from the prior and labels are
y ~ softmax(f(x) / ρ). The exact posterior predictive of a τ-sample is

    p(y_{1:τ} | x_{1:τ}, D) = E_{f ~ p(f | D)} Π_t softmax(f(x_t)/ρ)[y_t],

the lowest d_KL^τ any agent can reach on average. This agent estimates it by
self-normalised importance sampling with the prior as proposal:

1. draw N environments f_i from the prior (N = ``num_particles``);
2. weight each by its training likelihood, log w_i = Σ_j log softmax(f_i(x_j)/ρ)[y_j];
3. resample C = ``num_components`` slots systematically (each f_i gets
   ⌊C w_i⌋ or ⌈C w_i⌉ slots, merged into one weighted component), giving a
   weighted finite mixture, scored exactly through ``log_weights``.

The likelihoods are computed in chunks of about ``chunk_elements``
(environment × training point) pairs (``lax.map`` over chunks, ``vmap``
inside), so memory stays bounded for any N; only the training rows that can be
valid are touched (``specialize`` sets the static row count to the next power
of two ≥ n). Environments are regenerated from their index, so the state is
O(C).

**Effective sample size.** The estimate is only as good as the Kish ESS
(Σw)²/Σw² of the N weights, stored in the state (``diagnostics``). With a
prior proposal the ESS collapses as n grows or ρ shrinks (the posterior
becomes far narrower than the prior); where it is below ~100 the mixture is a
handful of environments and the agent is *not* Bayes-optimal — its scores
there are an upper bound at best. docs/results.md reports the ESS per problem
and uses the agent only where it is adequate.

**Validity.** The agent is exact only when its generative configuration
matches the problem's: the same ``hidden`` widths, ``activation``, input
dimension and number of classes as the environment (the paper's grid: d = 2,
(50, 50) ReLU, K = 2), and the problem's temperature, read from
``prior.temperature``. Custom finite priors can be plugged in with
``env_sampler`` / ``env_apply`` (used by the tests to compare with exact
enumeration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _checks, nets, train as train_lib
from jtk.agents.base import JaxAgent, ProblemInfo, register
from jtk.agents.zoo_common import chunked_map, effective_sample_size, systematic_resample
from jtk.envs.classification import sample_prior_params


class BayesOptimalState(NamedTuple):
    base_key: jax.Array  # key; particle i is env_sampler(fold_in(base_key, i))
    index: jax.Array  # [C] int32 particle of each component
    log_w: jax.Array  # [C] log mixture weights (−inf for merged duplicates)
    inv_temperature: jax.Array  # [] 1/ρ
    ess: jax.Array  # [] Kish effective sample size of the N importance weights
    log_evidence: jax.Array  # [] log p(D) estimate: log-mean-exp of the N log-likelihoods


@dataclass(frozen=True, kw_only=True)
class BayesOptimalAgent(JaxAgent):
    """Exact posterior predictive of the testbed prior by importance sampling (a weighted mixture).

    Attributes:
      num_particles: N environments drawn from the prior (16 384); rounded up to whole chunks.
      num_components: C mixture slots after systematic resampling (512).
      chunk_elements: environment × training-row pairs per vectorised step (2¹⁸), bounds memory.
      hidden: hidden widths of the generative MLP ((50, 50), the testbed's).
      activation: hidden activation of the generative MLP ("relu").
      env_sampler: optional ``(key, input_dim, num_classes) -> params`` replacing the testbed prior.
      env_apply: optional ``(params, x [n, d]) -> f(x) [n, K]`` matching ``env_sampler``.
      batch_size: cap on the static number of training rows used (set per problem by ``specialize``).
      num_classes: outputs; set from the prior by ``fit`` and the testbed.

    Hyper keys (``hyper(prior)``, traced per problem):
      inv_temperature: 1 / ρ, the generative model's inverse temperature.
    """

    num_particles: int = 16_384
    num_components: int = 512
    chunk_elements: int = 2 ** 18
    hidden: tuple[int, ...] = (50, 50)
    activation: str = "relu"
    env_sampler: Callable[..., Any] | None = None
    env_apply: Callable[..., Any] | None = None
    batch_size: int = 2 ** 20

    def __check_init__(self):
        _checks.integer("num_particles", self.num_particles, minimum=1)
        _checks.integer("num_components", self.num_components, minimum=1)
        _checks.integer("chunk_elements", self.chunk_elements, minimum=1)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden))
        nets.activation_fn(self.activation)
        if (self.env_sampler is None) != (self.env_apply is None):
            raise ValueError("env_sampler and env_apply must be given together, got only "
                             f"{'env_sampler' if self.env_apply is None else 'env_apply'}")
        for name in ("env_sampler", "env_apply"):
            fn = getattr(self, name)
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None, got {type(fn).__name__}")

    @property
    def num_networks(self) -> int:
        """Components per problem (the testbed sizes its chunks of vmapped problems by it)."""
        return self.num_components

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {"inv_temperature": 1.0 / prior.temperature}

    def _sample_env(self, key, input_dim):
        if self.env_sampler is not None:
            return self.env_sampler(key, input_dim, self.num_classes)
        return sample_prior_params(key, input_dim, self.hidden, self.num_classes)

    def _apply_env(self, params, x):
        if self.env_apply is not None:
            return self.env_apply(params, x)
        return nets.mlp_apply(params, x, self.activation)

    def particle_logits(self, base_key, index, x, inv_temperature) -> jax.Array:
        """Logits f_i(x)/ρ of particle ``index``: x [n, d] → [n, K]."""
        params = self._sample_env(jax.random.fold_in(base_key, index), x.shape[1])
        return self._apply_env(params, x) * inv_temperature

    def train(self, key, data: train_lib.Dataset, hyper) -> BayesOptimalState:
        rows = min(self.batch_size, data.x.shape[0])
        x, y = data.x[:rows], data.y[:rows]
        mask = (jnp.arange(rows) < data.n).astype(jnp.float32)
        chunk = max(1, min(self.num_particles, self.chunk_elements // rows))
        num_chunks = -(-self.num_particles // chunk)
        base_key, k_resample = jax.random.split(key)
        inv_t = hyper["inv_temperature"]

        def loglik(i):
            logp = jax.nn.log_softmax(self.particle_logits(base_key, i, x, inv_t), -1)  # [rows, K]
            return jnp.sum(jnp.take_along_axis(logp, y[:, None], -1)[:, 0] * mask)

        ll = chunked_map(loglik, jnp.arange(num_chunks * chunk, dtype=jnp.int32), chunk)  # [N]
        index, log_w = systematic_resample(k_resample, ll, self.num_components)
        log_evidence = jax.nn.logsumexp(ll) - jnp.log(ll.shape[0])
        return BayesOptimalState(base_key, index.astype(jnp.int32), log_w, jnp.asarray(inv_t, jnp.float32),
                                 effective_sample_size(ll), log_evidence)

    def components(self, state: BayesOptimalState, x) -> jax.Array:
        return chunked_map(lambda i: self.particle_logits(state.base_key, i, x, state.inv_temperature),
                           state.index)  # [C, n, K]

    def log_weights(self, state: BayesOptimalState) -> jax.Array:
        return state.log_w

    @staticmethod
    def diagnostics(state: BayesOptimalState) -> dict[str, float]:
        """ESS and log-evidence of a fitted state (one problem)."""
        return {"ess": float(state.ess), "log_evidence": float(state.log_evidence),
                "distinct_components": int(np.sum(np.isfinite(np.asarray(state.log_w))))}


@register("bayes_optimal")
def bayes_optimal(**kw) -> BayesOptimalAgent:
    """Importance-sampled exact posterior predictive of the testbed prior ((50, 50) ReLU; §3.1, App. B)."""
    return BayesOptimalAgent(**kw)
