"""Deep regression with uncertainty: dropout variants and deep ensembles (Schmähling et al., §3).

Six methods, one network and one training loop (:func:`jtk.train.train`):

======= =========================================================== ==========
name    what differs                                                networks
======= =========================================================== ==========
BD      Bernoulli dropout with a fixed rate (Gal 2016)              1
CD      concrete dropout, rate learned (Gal, Hron & Kendall 2017)   1
VD      variational Gaussian dropout, rate learned (Kingma et al.   1
        2015)
Ens     deep ensemble, members differ by initialisation             K
        (Lakshminarayanan et al. 2017)
EnsAdvA ensemble trained on x and FGSM adversarial x' (ibid.)       K
EnsBS   ensemble, each member on a bootstrap resample               K
======= =========================================================== ==========

Every method is the same model: K networks (K = 1 for dropout) 128-64-32 with
leaky ReLU (slope 0.01), a noise layer on the next-to-last layer's output
(identity for ensembles), Xavier (Glorot) initialisation, trained full batch
with Adam on

    loss = Σ_i w_i (y_i − f(x_i))² / (2σ² Σ_i 1)  [+ the same at x_i' for EnsAdvA]
           + (l2 / 2) Σ weights²  + dropout regulariser / n,   l2 = 1/n,

with w_i = 1, or bootstrap counts (EnsBS). σ is the known noise std (§2.2), so
the data term is the Gaussian negative log-likelihood per example and, with
l2 = 1/n, the L2 term is a unit Gaussian prior on the weights (biases are not
penalised, as in MATLAB's default BiasL2Factor = 0). The methods differ only in
three switches — the noise layer, the per-example weights and the adversarial
term — which enter the compiled program as *traced* values: all six methods
(and every f_main, through a traced epoch count in a ``while`` loop) share
one compiled training program per data shape. A function draw m is member
m mod K with its own noise: an ensemble's draws are its K members; a dropout
model's draws are ``num_samples`` Monte-Carlo masks. Prediction = mean of the
draws, uncertainty = their std (§3, "Prediction" and "Uncertainty for an input").

Not stated in the paper, chosen here: BD's rate and CD / VD's initial rate 0.1;
CD's relaxation temperature 0.1 and its regulariser (Gal et al. 2017); VD with
one learned α for the noisy layer and the KL approximation of Kingma et al.
(2015, eq. 14), α ≤ 1; EnsAdvA's FGSM step 0.01 × input range
(Lakshminarayanan et al. 2017).

Presets (``PRESETS``):

* ``paper`` (§3, "Details on the implementation"): hidden (128, 64, 32),
  K = 120 members, Adam 1e-2, L2 1/n, 300·c epochs full batch (c = f_main for
  E.1, the input dimension otherwise), 120 Monte-Carlo draws for dropout.
* ``lab``: hidden (32, 32, 16), K = 8, 100·c epochs, 32 draws, Adam 2e-2 —
  small enough to run a coverage study of all six methods in a notebook
  on a laptop CPU in seconds; qualitatively the same picture (see
  ``jtk.regression.coverage_study`` for the measured comparison).

Example:
  >>> from jtk.envs.regression import SinusoidRegression
  >>> env = SinusoidRegression(f_main=1.0, seed=0)
  >>> model = make_regression("EnsBS", preset="lab").for_problem(env)
  >>> post = model.fit(*env.sample_train(1), seed=0)
  >>> mean, std = post.predict(env.test_inputs())
  >>> mean.shape
  (1000,)
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jtk import _checks, _compile, nets, train as train_lib
from jtk.regression.base import RegressionPosterior  # noqa: F401  (the protocol followed here)

METHODS = ("BD", "CD", "VD", "Ens", "EnsAdvA", "EnsBS")
DROPOUT_METHODS = ("BD", "CD", "VD")

# Kingma, Salimans & Welling (2015), eq. (14): −KL ≈ const + ½ log α + c1 α + c2 α² + c3 α³.
_VD_C = (1.16145124, -1.50204118, 0.58629921)

PRESETS: dict[str, dict[str, Any]] = {
    # §3 "Details on the implementation".
    "paper": dict(hidden=(128, 64, 32), num_members=120, epochs_per_complexity=300, learning_rate=1e-2,
                  num_samples=120),
    # A documented small configuration for notebooks (seconds on a laptop CPU).
    "lab": dict(hidden=(32, 32, 16), num_members=8, epochs_per_complexity=100, learning_rate=2e-2,
                num_samples=32),
}


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["NoiseLayer", "Member", "METHODS", "DROPOUT_METHODS", "PRESETS", "glorot_mlp", "DeepRegression", "NOISE_KINDS",
           "DeepRegressionPosterior", "make_regression", "BD", "CD", "VD", "Ens", "EnsAdvA", "EnsBS"]


class NoiseLayer(NamedTuple):
    """The (learned) rate parameter of the noise on the next-to-last layer."""

    logit: jax.Array  # [] logit of the dropout rate p (BD: fixed, CD / VD: learned)


class Member(NamedTuple):
    net: nets.Params  # MLP parameters
    noise: NoiseLayer


def glorot_mlp(key: jax.Array, sizes: tuple[int, ...]) -> nets.Params:
    """Xavier / Glorot initialisation (§3): ``nets.init_mlp`` rescaled to std sqrt(2 / (fan_in + fan_out))."""
    params = nets.init_mlp(key, sizes)
    return tuple((w * jnp.sqrt(2.0 * w.shape[0] / (w.shape[0] + w.shape[1])), b) for w, b in params)


@dataclass(frozen=True)
class DeepRegression:
    """One of the six deep-regression methods of §3, in either preset.

    Args:
      method: one of ``METHODS``: "BD", "CD", "VD", "Ens", "EnsAdvA", "EnsBS".
      hidden: hidden widths, (128, 64, 32) (§3).
      num_members: ensemble size K, 120 (§3); dropout methods train one network.
      epochs_per_complexity: epochs = round(epochs_per_complexity · complexity), 300 (§3).
      complexity: c, f_main for E.1 and the input dimension otherwise (§3); set
        by :meth:`for_problem`.
      learning_rate: Adam step size, 1e-2 (§3).
      l2_scale: L2 factor times n, i.e. l2 = l2_scale / n on all weights, 1 (§3: "L2 1/n").
      noise_std: the known noise std σ of the data (§2.2); set by :meth:`for_problem`.
      dropout_rate: BD's fixed rate and CD / VD's initial rate, 0.1 (not stated
        in the paper).
      concrete_temperature: temperature of CD's relaxed Bernoulli mask, 0.1 (Gal et al. 2017).
      adversarial_eps: EnsAdvA's FGSM step as a fraction of the training-input
        range, 0.01 (Lakshminarayanan et al. 2017; the paper gives none, and
        larger steps gave *lower* uncertainty: docs/coverage.md, "Defaults the paper leaves open").
      bootstrap_size: EnsBS resample size as a fraction of n, in (0, 1] (1: the
        classical bootstrap). The paper's "train set/2 … pull with back" can be
        read as 0.5, which brings EnsBS's coverage closer to the paper's
        (docs/coverage.md, "Defaults the paper leaves open"). Counts are divided by it, so weights have mean 1.
      num_samples: Monte-Carlo draws for the dropout methods' mean and std, 120.
      negative_slope: leaky-ReLU slope, 0.01 (§3).
      max_epochs: length of the step-key sequence (static), None = num_epochs.
        Training runs num_epochs steps (a traced count, in a ``while`` loop over
        the first num_epochs of ``split(key, max_epochs)``), so a sweep over
        f_main with a common max_epochs compiles once and each f_main costs only
        its own steps. The keys depend on max_epochs, so dropout's noise does too.
    """

    method: str
    hidden: tuple[int, ...] = (128, 64, 32)
    num_members: int = 120
    epochs_per_complexity: float = 300
    complexity: float = 1.0
    learning_rate: float = 1e-2
    l2_scale: float = 1.0
    noise_std: float = 1.0
    dropout_rate: float = 0.1
    concrete_temperature: float = 0.1
    adversarial_eps: float = 0.01
    bootstrap_size: float = 1.0
    num_samples: int = 120
    negative_slope: float = 0.01
    max_epochs: int | None = None

    def __post_init__(self):
        _checks.one_of("method", self.method, METHODS)
        hidden = tuple(self.hidden)
        if not hidden:
            raise ValueError("hidden must list at least one hidden width, got ()")
        object.__setattr__(self, "hidden", tuple(_checks.integer(f"hidden[{i}]", h, minimum=1)
                                                 for i, h in enumerate(hidden)))
        _checks.integer("num_members", self.num_members, minimum=1)
        _checks.positive("epochs_per_complexity", self.epochs_per_complexity)
        _checks.positive("complexity", self.complexity)
        _checks.positive("learning_rate", self.learning_rate)
        _checks.positive("l2_scale", self.l2_scale, allow_zero=True)
        _checks.positive("noise_std", self.noise_std)
        rate = _checks.positive("dropout_rate", self.dropout_rate)
        if rate >= 1:
            raise ValueError(f"dropout_rate must be in (0, 1), got {self.dropout_rate!r}")
        _checks.positive("concrete_temperature", self.concrete_temperature)
        _checks.positive("adversarial_eps", self.adversarial_eps, allow_zero=True)
        if not 0.0 < _checks.positive("bootstrap_size", self.bootstrap_size) <= 1.0:
            raise ValueError(f"bootstrap_size must be in (0, 1], got {self.bootstrap_size!r}")
        _checks.integer("num_samples", self.num_samples, minimum=2)
        _checks.positive("negative_slope", self.negative_slope, allow_zero=True)
        if self.max_epochs is not None:
            _checks.integer("max_epochs", self.max_epochs, minimum=1)

    # ------------------------------------------------------------ configuration
    @property
    def is_ensemble(self) -> bool:
        return self.method not in DROPOUT_METHODS

    @property
    def num_networks(self) -> int:
        """K trained networks: num_members for ensembles, 1 for dropout methods."""
        return self.num_members if self.is_ensemble else 1

    @property
    def num_draws(self) -> int:
        """Function draws behind mean and std: the K members, or num_samples dropout masks."""
        return self.num_members if self.is_ensemble else self.num_samples

    @property
    def num_epochs(self) -> int:
        """round(epochs_per_complexity · complexity), at least 1 (full batch: one step an epoch)."""
        return max(1, int(round(self.epochs_per_complexity * self.complexity)))

    def for_problem(self, env) -> "DeepRegression":
        """This model with σ and the complexity c taken from a regression problem."""
        return dataclasses.replace(self, noise_std=float(env.noise_std), complexity=float(env.complexity))

    @property
    def scan_steps(self) -> int:
        """Length of the compiled training scan: max(num_epochs, max_epochs)."""
        return max(self.num_epochs, self.max_epochs or 0)

    def _flags(self) -> dict[str, jax.Array]:
        """The method as traced switches: one compiled program serves all six methods."""
        return {
            "kind": jnp.asarray(NOISE_KINDS[self.method], jnp.int32),
            "learn_rate": jnp.asarray(self.method in ("CD", "VD")),
            "bootstrap": jnp.asarray(self.method == "EnsBS"),
            "adversarial": jnp.asarray(self.method == "EnsAdvA"),
        }

    def _hyper(self, x: np.ndarray) -> dict[str, jax.Array]:
        n = x.shape[0]
        p = self.dropout_rate
        return {
            **self._flags(),
            "noise_var": jnp.asarray(self.noise_std ** 2, jnp.float32),
            "l2": jnp.asarray(self.l2_scale / n, jnp.float32),
            "n": jnp.asarray(n, jnp.float32),
            "adv_step": jnp.asarray(self.adversarial_eps * (x.max(0) - x.min(0)), jnp.float32),  # [d]
            "bootstrap_draws": jnp.asarray(max(1, round(self.bootstrap_size * n)), jnp.int32),
            "num_epochs": jnp.asarray(self.num_epochs, jnp.int32),
            "learning_rate": jnp.asarray(self.learning_rate, jnp.float32),
            "init_logit": jnp.asarray(np.log(p / (1 - p)), jnp.float32),
            "temperature": jnp.asarray(self.concrete_temperature, jnp.float32),
            "slope": jnp.asarray(self.negative_slope, jnp.float32),
        }

    def _arch(self) -> tuple:
        """The static part: what changes shapes or the scan length."""
        return (self.hidden, self.scan_steps)

    # ------------------------------------------------------------ public API
    def fit(self, x, y, seed=0) -> "DeepRegressionPosterior":
        """Trains on x [n, d], y [n] and returns a posterior (``RegressionPosterior`` protocol)."""
        x, y = _check_xy(x, y)
        key = jax.random.fold_in(_checks.as_key(seed), 0)
        k_train, _ = jax.random.split(key)
        keys = _member_keys(k_train, self.num_networks)  # [K]
        ys = jnp.broadcast_to(jnp.asarray(y, jnp.float32), (self.num_networks, y.shape[0]))
        state = _train_networks(self._arch(), self._hyper(x), keys, jnp.asarray(x, jnp.float32), ys)
        return DeepRegressionPosterior(self, state, x.shape[1])

    def fit_predict_many(self, x, ys, x_test, seed=0, networks_per_call: int | None = None,
                         progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Trains on k training sets sharing inputs x (vmapped) and predicts at x_test.

        Repetition i uses the key ``fold_in(seed, i)`` (as :meth:`fit` with that
        key would), so results do not depend on chunking.

        Args:
          x: shared training inputs [n, d].
          ys: targets of k training sets [k, n].
          x_test: test inputs [n*, d].
          seed: int or PRNG key.
          networks_per_call: networks trained per compiled, vmapped call (None: all
            k·K at once). Repetitions are processed in chunks of
            max(1, networks_per_call // K); methods that end up with the same number
            of networks per call (and the same data shapes) share one compiled
            program — e.g. k for all six methods, so a dropout model does all k
            sets in one call and an ensemble k / K sets per call.
          progress: show a tqdm bar over chunks.

        Returns:
          (mean [k, n*], std [k, n*]) as float64 numpy arrays.
        """
        x = _checks.as_float_array("x", x, ndim=2)
        ys = _checks.as_float_array("ys", ys, ndim=2)
        if ys.shape[1] != x.shape[0]:
            raise ValueError(f"ys must have shape [k, {x.shape[0]}] to match x, got {ys.shape}")
        x_test = _checks.as_float_array("x_test", x_test, ndim=2)
        if x_test.shape[1] != x.shape[1]:
            raise ValueError(f"x_test must have shape [n*, {x.shape[1]}] like x, got {x_test.shape}")
        key = _checks.as_key(seed)
        k, big_k = ys.shape[0], self.num_networks
        if networks_per_call is None:
            chunk = k
        else:
            chunk = min(k, max(1, _checks.integer("networks_per_call", networks_per_call, minimum=1) // big_k))
        hyper = self._hyper(x)
        xj, xtj = jnp.asarray(x, jnp.float32), jnp.asarray(x_test, jnp.float32)
        means, stds = [], []
        starts = range(0, k, chunk)
        if progress:
            from tqdm.auto import tqdm
            starts = tqdm(starts, desc=f"{self.method}: {k} training sets", leave=False)
        for s in starts:
            idx = np.arange(s, s + chunk) % k  # the last chunk wraps around: one compiled shape
            keys, k_pred = _chunk_keys(big_k, key, jnp.asarray(idx))
            yy = jnp.repeat(jnp.asarray(ys[idx], jnp.float32), big_k, axis=0)  # [chunk·K, n]
            state = _train_networks(self._arch(), hyper, keys, xj, yy)
            m, sd = _moments_many(self.num_draws, hyper, state, xtj, k_pred)
            stop = min(chunk, k - s)
            means.append(np.asarray(m[:stop], np.float64))
            stds.append(np.asarray(sd[:stop], np.float64))
        return np.concatenate(means), np.concatenate(stds)


# ---------------------------------------------------------------- the shared model (pure functions)
NOISE_KINDS = {"Ens": 0, "EnsAdvA": 0, "EnsBS": 0, "BD": 1, "CD": 2, "VD": 3}


def _member_keys(key: jax.Array, num: int) -> jax.Array:
    return jax.vmap(lambda j: jax.random.fold_in(key, j))(jnp.arange(num))


@functools.partial(_compile.jit, static_argnums=0)
def _chunk_keys(num_networks: int, key: jax.Array, idx: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The keys of repetitions ``idx`` [c] (repetition i: ``fold_in(key, i)``, as :meth:`DeepRegression.fit` with
    that key): training keys of their networks [c·K] and prediction keys [c]. One program, not a dozen small ones
    compiled op by op."""
    rep_keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(idx)
    k_train, k_pred = jax.vmap(lambda kk: jax.random.split(jax.random.fold_in(kk, 0)))(rep_keys).T
    return jax.vmap(lambda kk: _member_keys(kk, num_networks))(k_train).reshape(-1), k_pred


def _rate(member: Member, hyper) -> jax.Array:
    """The dropout rate p; its gradient flows only for the learned-rate methods (CD, VD)."""
    logit = jnp.where(hyper["learn_rate"], member.noise.logit, jax.lax.stop_gradient(member.noise.logit))
    return jax.nn.sigmoid(logit)


def _noise_layer(h: jax.Array, p: jax.Array, key: jax.Array, hyper, per_example: bool = True) -> jax.Array:
    """Noise on the next-to-last activations h [n, H] (kind 0: none, 1: BD, 2: CD, 3: VD).

    Training draws one mask per example (``per_example``); a posterior function
    draw shares one mask [1, H] across all n inputs, so each draw is one
    function and joint predictions are coherent.

    The kind is shared by all networks of a call (not vmapped), so it is a real branch (``lax.switch``): the
    ensembles draw no random numbers, and each dropout kind computes only its own factor, from the uniforms (u, v)
    that every dropout kind draws from ``key`` (measured in docs/coverage.md, "Timings"):

    * BD (Gal 2016): inverted dropout, keep = [u < 1 − p], h · keep / (1 − p);
    * CD (Gal et al. 2017): relaxed Bernoulli drop mask
      z = sigmoid((logit p + logit u) / t), h · (1 − z) / (1 − p);
    * VD (Kingma et al. 2015): multiplicative Gaussian noise N(1, α),
      α = p / (1 − p) ≤ 1, with ε from (u, v) by Box–Muller.
    """
    eps = 1e-6
    shape = h.shape if per_example else (1, h.shape[-1])

    def uniforms():
        return jax.random.uniform(key, (2, *shape), minval=eps, maxval=1.0 - eps)

    def bernoulli():
        u, _ = uniforms()
        return h * ((u < 1.0 - p) / (1.0 - p))

    def concrete():
        u, _ = uniforms()
        drop = jax.nn.sigmoid((jnp.log(p) - jnp.log1p(-p) + jnp.log(u) - jnp.log1p(-u)) / hyper["temperature"])
        return h * ((1.0 - drop) / (1.0 - p))

    def gaussian():
        u, v = uniforms()
        alpha = jnp.minimum(p / (1.0 - p), 1.0)
        return h * (1.0 + jnp.sqrt(alpha) * jnp.sqrt(-2.0 * jnp.log(u)) * jnp.cos(2.0 * jnp.pi * v))  # Box–Muller

    return jax.lax.switch(hyper["kind"], (lambda: h, bernoulli, concrete, gaussian))


def _forward(member: Member, x: jax.Array, key: jax.Array, hyper, per_example: bool = True) -> jax.Array:
    """One network with one noise draw: x [n, d] → f [n] (per-example masks when training)."""
    h = x
    for w, b in member.net[:-1]:
        h = jax.nn.leaky_relu(h @ w + b, hyper["slope"])
    h = _noise_layer(h, _rate(member, hyper), key, hyper, per_example)
    w, b = member.net[-1]
    return (h @ w + b)[:, 0]


def _regulariser(member: Member, hyper) -> jax.Array:
    """(l2 / 2) Σ weights², with the dropout methods' KL terms divided by n.

    CD (Gal et al. 2017): the layer after the mask is penalised by 1 / (1 − p)
    and the mask entropy H(p) per unit is rewarded. VD (Kingma et al. 2015,
    eq. 14): −KL ≈ ½ log α + c1 α + c2 α² + c3 α³ per weight after the noise.
    """
    weights = [w for w, _ in member.net]
    p = _rate(member, hyper)
    last = jnp.sum(jnp.square(weights[-1]))
    rest = sum(jnp.sum(jnp.square(w)) for w in weights[:-1])
    kind, l2, n = hyper["kind"], hyper["l2"], hyper["n"]
    entropy = -(p * jnp.log(p) + (1.0 - p) * jnp.log1p(-p))
    cd = 0.5 * l2 * (rest + last / (1.0 - p)) - weights[-1].shape[0] * entropy / n
    alpha = jnp.minimum(p / (1.0 - p), 1.0)
    c1, c2, c3 = _VD_C
    neg_kl = 0.5 * jnp.log(alpha) + c1 * alpha + c2 * alpha ** 2 + c3 * alpha ** 3
    plain = 0.5 * l2 * (rest + last)
    return jnp.where(kind == 2, cd, jnp.where(kind == 3, plain - weights[-1].size * neg_kl / n, plain))


def _loss(member: Member, batch: train_lib.Batch, hyper, key: jax.Array) -> jax.Array:
    """Loss of one network on a (full) batch: weighted Gaussian NLL [+ FGSM term] + regulariser."""
    w = batch.mask * hyper["weights"][batch.index]
    denom = 2.0 * hyper["noise_var"] * jnp.maximum(jnp.sum(batch.mask), 1.0)

    def data_term(x):
        return jnp.sum(w * jnp.square(batch.y - _forward(member, x, key, hyper))) / denom

    def adversarial_term(x):
        # EnsAdvA, FGSM (Goodfellow et al. 2015): x' = x + ε · range · sign(∂loss/∂x), no gradient through x'.
        x_adv = jax.lax.stop_gradient(x + hyper["adv_step"] * jnp.sign(jax.grad(data_term)(x)))
        return data_term(x_adv)

    # ``adversarial`` is shared by all networks of a call (not vmapped), so this is a real branch.
    adv = jax.lax.cond(hyper["adversarial"], adversarial_term, lambda x: jnp.zeros(()), batch.x)
    return data_term(batch.x) + adv + _regulariser(member, hyper)


def _example_weights(key: jax.Array, n: int, hyper) -> jax.Array:
    """Per-example weights [n]: ones, or for EnsBS bootstrap counts of m draws with replacement, times n / m."""
    draws = jax.random.randint(key, (n,), 0, n)
    m = hyper["bootstrap_draws"]
    counts = jax.ops.segment_sum((jnp.arange(n) < m).astype(jnp.float32), draws, num_segments=n)
    return jnp.where(hyper["bootstrap"], counts * (n / m), 1.0)


def _train_one(arch: tuple, hyper, key: jax.Array, x: jax.Array, y: jax.Array) -> Member:
    """Initialises and trains one network on one training set, full batch (pure)."""
    hidden, scan_steps = arch
    n = x.shape[0]
    k_init, k_boot, k_train = jax.random.split(key, 3)
    member = Member(glorot_mlp(k_init, (x.shape[1], *hidden, 1)), NoiseLayer(hyper["init_logit"]))
    data = train_lib.Dataset(x, y, jnp.asarray(n, jnp.int32))
    hyper = {**hyper, "weights": _example_weights(k_boot, n, hyper)}
    optimizer = optax.adam(hyper["learning_rate"])
    trained, _ = train_lib.train(_loss, member, data, hyper, k_train, optimizer=optimizer,
                                 num_steps=scan_steps, batch_size=n, active_steps=hyper["num_epochs"])
    return trained


@functools.partial(_compile.jit, static_argnums=0)
def _train_networks(arch: tuple, hyper, keys: jax.Array, x: jax.Array, ys: jax.Array) -> Member:
    """keys [B], x [n, d], ys [B, n] → B trained networks (leaves [B, ...]); one compile per shape."""
    return jax.vmap(lambda k, y: _train_one(arch, hyper, k, x, y))(keys, ys)


def _draws(state: Member, x: jax.Array, key: jax.Array, num_draws: int, hyper) -> jax.Array:
    """Coherent function draws [num_draws, n]: draw m uses member m mod K with its own noise."""
    big_k = jax.tree_util.tree_leaves(state)[0].shape[0]
    members = jnp.arange(num_draws) % big_k

    def one(i, k):
        return _forward(jax.tree_util.tree_map(lambda leaf: leaf[i], state), x, k, hyper, per_example=False)

    return jax.vmap(one)(members, jax.random.split(key, num_draws))


def _moments(state: Member, x: jax.Array, key: jax.Array, num_draws: int, hyper):
    f = _draws(state, x, key, num_draws, hyper)  # [M, n]
    return jnp.mean(f, 0), jnp.std(f, 0, ddof=1)


@functools.partial(_compile.jit, static_argnums=0)
def _moments_many(num_draws: int, hyper, states: Member, x: jax.Array, keys: jax.Array):
    """states leaves [k·K, ...] (repetition by repetition), keys [k] → (mean, std) [k, n*]."""
    k = keys.shape[0]
    states = jax.tree_util.tree_map(lambda leaf: leaf.reshape(k, leaf.shape[0] // k, *leaf.shape[1:]), states)
    return jax.vmap(lambda s, kk: _moments(s, x, kk, num_draws, hyper))(states, keys)


@functools.partial(_compile.jit, static_argnums=3)
def _draws_jit(state, x, key, num_draws, hyper):
    return _draws(state, x, key, num_draws, hyper)


def _check_xy(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = _checks.as_float_array("x", x, ndim=2)
    y = _checks.as_float_array("y", y, ndim=1)
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"x and y must have the same number of rows, got x {x.shape} and y {y.shape}")
    if x.shape[0] < 2:
        raise ValueError(f"x must have at least 2 rows, got {x.shape[0]}")
    return x, y


@dataclass(frozen=True)
class DeepRegressionPosterior:
    """A trained deep-regression model; follows ``jtk.regression.base.RegressionPosterior``."""

    model: DeepRegression
    state: Member  # leaves [K, ...]
    input_dim: int

    def _x(self, x) -> jax.Array:
        x = _checks.as_float_array("x", x, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have shape [n, {self.input_dim}], got {x.shape}")
        return jnp.asarray(x, jnp.float32)

    def _hyper(self):
        return self.model._hyper(np.zeros((2, self.input_dim)))

    @property
    def dropout_rate(self) -> float | None:
        """The (learned) dropout rate p of BD / CD / VD; None for ensembles."""
        if self.model.is_ensemble:
            return None
        return float(jax.nn.sigmoid(self.state.noise.logit[0]))

    def sample_functions(self, x, num_samples: int, seed=0) -> np.ndarray:
        """[num_samples, n] coherent draws (ensembles: members, cycled; dropout: MC masks)."""
        num_samples = _checks.integer("num_samples", num_samples, minimum=1)
        f = _draws_jit(self.state, self._x(x), _checks.as_key(seed), num_samples, self._hyper())
        return np.asarray(f, np.float64)

    def predict(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(mean [n], std [n]) of the model's ``num_draws`` draws (§3), seed 0."""
        f = self.sample_functions(x, self.model.num_draws, 0)
        return f.mean(0), f.std(0, ddof=1)

    def covariance(self, x) -> np.ndarray:
        """[n, n] sample covariance of the ``num_draws`` function draws."""
        f = self.sample_functions(x, self.model.num_draws, 0)
        return np.atleast_2d(np.cov(f, rowvar=False, ddof=1))


# ---------------------------------------------------------------- factories
def make_regression(method: str, preset: str = "paper", **overrides) -> DeepRegression:
    """Builds a method with a preset's settings, e.g. ``make_regression("CD", preset="lab")``.

    Args:
      method: one of ``METHODS``.
      preset: "paper" (§3) or "lab" (small, for notebooks).
      **overrides: any :class:`DeepRegression` field.
    """
    _checks.one_of("method", method, METHODS)
    _checks.one_of("preset", preset, tuple(PRESETS))
    fields = {f.name for f in dataclasses.fields(DeepRegression)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise TypeError(f"make_regression got unknown hyperparameters {unknown}; allowed: {sorted(fields)}")
    return DeepRegression(method=method, **{**PRESETS[preset], **overrides})


def BD(preset: str = "paper", **kw) -> DeepRegression:  # noqa: N802 - the paper's abbreviations
    """Bernoulli (MC) dropout on the next-to-last layer, fixed rate (Gal 2016)."""
    return make_regression("BD", preset, **kw)


def CD(preset: str = "paper", **kw) -> DeepRegression:  # noqa: N802
    """Concrete dropout: the dropout rate is learned (Gal, Hron & Kendall 2017)."""
    return make_regression("CD", preset, **kw)


def VD(preset: str = "paper", **kw) -> DeepRegression:  # noqa: N802
    """Variational (Gaussian) dropout with a learned rate (Kingma, Salimans & Welling 2015)."""
    return make_regression("VD", preset, **kw)


def Ens(preset: str = "paper", **kw) -> DeepRegression:  # noqa: N802
    """Deep ensemble, members differ by initialisation (Lakshminarayanan et al. 2017)."""
    return make_regression("Ens", preset, **kw)


def EnsAdvA(preset: str = "paper", **kw) -> DeepRegression:  # noqa: N802
    """Deep ensemble trained with FGSM adversarial examples (Lakshminarayanan et al. 2017)."""
    return make_regression("EnsAdvA", preset, **kw)


def EnsBS(preset: str = "paper", **kw) -> DeepRegression:  # noqa: N802
    """Deep ensemble, each member trained on a bootstrap resample of the training set."""
    return make_regression("EnsBS", preset, **kw)
