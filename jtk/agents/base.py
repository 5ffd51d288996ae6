"""The Agent / Posterior protocol, the registry, and the base class of jtk's JAX agents.

Any object with ``fit(x, y, seed=0, prior=None) -> posterior`` is an agent, and
any object with ``sample_logits(x, num_samples, seed) -> [M, n, K]`` is a
posterior (``typing.Protocol``, as in neural_testbed): a researcher's own model
works with the testbed without subclassing anything.

A posterior that is a finite mixture of C functions also implements
:class:`MixturePosterior` (``num_components``, ``components(x) -> [C, n, K]``,
``log_weights() -> [C] or None``): the testbed then enumerates the components
exactly. :func:`as_mixture` is the one place that decides whether a posterior
is one (a third-party posterior without ``log_weights`` counts as uniform).

jtk's own agents subclass :class:`JaxAgent`, which splits an agent into two
pure functions of one problem, ``train(key, data, hyper) -> state`` and
``components(state, x) / sample(state, x, key, M)``. ``fit`` jits them for one
problem; the testbed ``vmap``s the same functions over many problems at once.
Gradient-trained agents build ``train`` from ``init`` / ``loss`` /
``finalize`` and the shared loop of :mod:`jtk.train`; the neural bandit
(:mod:`jtk.testbed.bandit`) runs the same pieces online.

Agents are frozen, keyword-only dataclasses (hashable: static ``jax.jit``
arguments). The fields every agent shares are declared and checked once:
``batch_size`` / ``num_classes`` on :class:`JaxAgent`, ``learning_rate`` /
``num_steps`` / ``hidden`` on :class:`NeuralAgent`; a subclass checks its own
fields in ``__check_init__`` (equinox's idea: each class's hook runs after its
bases'), and may redeclare a shared field to change its default. A renamed
keyword keeps working for a deprecation period through
``renamed_keywords`` (in the constructor and in :func:`make`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jtk import _checks, _compile, _memory, train as train_lib


# The public surface (docs/api); the helpers not listed are jtk's internals (tests may use them).
__all__ = ["ProblemInfo", "Posterior", "Agent", "MixturePosterior", "as_mixture", "register", "names", "make",
           "check_training_data", "check_query", "check_fit_memory", "check_sample_memory", "JaxAgent",
           "NeuralAgent", "fit_many", "JaxPosterior", "JaxMixturePosterior"]


@dataclass(frozen=True)
class ProblemInfo:
    """What the testbed tells an agent about a problem (the reference's ``PriorKnowledge``).

    Agents receive it as the ``prior`` argument of ``fit`` (the protocol's name, kept from the reference).

    Attributes:
      input_dim: input dimension d.
      num_classes: number of classes K.
      num_train: number of training points n.
      temperature: the generative model's temperature ρ.
      tau: the order of the joint predictions it will be scored on.
    """

    input_dim: int
    num_classes: int
    num_train: int
    temperature: float = 1.0
    tau: int = 1

    def __post_init__(self):
        _checks.integer("prior.input_dim", self.input_dim, minimum=1)
        _checks.integer("prior.num_classes", self.num_classes, minimum=2)
        _checks.integer("prior.num_train", self.num_train, minimum=0)
        _checks.temperature("prior.temperature", self.temperature)
        _checks.integer("prior.tau", self.tau, minimum=1)


@runtime_checkable
class Posterior(Protocol):
    """A trained agent's belief over functions."""

    def sample_logits(self, x, num_samples: int, seed=0) -> Any:
        """x [n, d] → logits [M, n, K]; sample m is one function at all n inputs."""


@runtime_checkable
class Agent(Protocol):
    """Anything that turns training data into a Posterior."""

    def fit(self, x, y, seed=0, prior: ProblemInfo | None = None) -> Posterior:
        """x [n, d], y [n] int labels → Posterior."""


@runtime_checkable
class MixturePosterior(Posterior, Protocol):
    """A posterior that is a finite mixture of C functions, which the testbed scores by exact enumeration.

    Attributes:
      num_components: C ≥ 1, the number of mixture components.
    """

    num_components: int

    def components(self, x) -> Any:
        """x [n, d] → logits [C, n, K]: all C functions at all n inputs."""

    def log_weights(self) -> Any | None:
        """Normalised log mixture weights [C], or None for a uniform mixture."""


class _UniformMixture:
    """A posterior with ``num_components`` and ``components`` but no ``log_weights``: a uniform mixture."""

    def __init__(self, posterior):
        self._posterior = posterior
        self.num_components = int(posterior.num_components)

    def components(self, x):
        return self._posterior.components(x)

    def log_weights(self):
        return None

    def sample_logits(self, x, num_samples: int, seed=0):
        return self._posterior.sample_logits(x, num_samples, seed)


def as_mixture(posterior: Any) -> MixturePosterior | None:
    """The posterior as a :class:`MixturePosterior`, or None when it is not a finite mixture.

    A finite mixture has an integer ``num_components`` ≥ 1 and a callable ``components``;
    ``log_weights`` is optional (absent: uniform weights), as the researchers' guide promises (docs/researchers.md,
    "Evaluate your own agent").
    """
    c = getattr(posterior, "num_components", None)
    if not (isinstance(c, numbers.Integral) and not isinstance(c, bool) and c > 0):
        return None
    if not callable(getattr(posterior, "components", None)):
        return None
    if isinstance(posterior, MixturePosterior) and callable(posterior.log_weights):
        return posterior
    return _UniformMixture(posterior)


# ---------------------------------------------------------------- renamed keywords
def renamed_keywords(**renames: str | tuple[str, Callable[[Any], Any]]):
    """Class decorator: old keyword names of an agent keep working, with a DeprecationWarning.

    ``@renamed_keywords(length_scale="l2_scale")`` above ``@dataclass``; a value
    ``(new, convert)`` also converts the old value (``prior_variance=("l2_scale", lambda v: 1 / v)``).
    The constructor and :func:`make` accept the old name; reading ``agent.<old>`` works too (and warns).
    """

    def deco(cls):
        table = {**getattr(cls, "renamed", {}),
                 **{old: (new, None) if isinstance(new, str) else tuple(new) for old, new in renames.items()}}
        cls.renamed = table
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kw):
            init(self, *args, **translate_renamed(type(self), kw, f"jtk.agents.{type(self).__name__}", stacklevel=2))

        cls.__init__ = __init__
        for old, (new, convert) in table.items():
            if old not in cls.__dict__ and convert is None:  # a converted name defines its own property
                setattr(cls, old, _renamed_property(cls.__name__, old, new))
        return cls

    return deco


def _renamed_property(cls_name: str, old: str, new: str) -> property:
    def get(self):
        warnings.warn(f"jtk.agents.{cls_name}.{old} is deprecated; use {new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    return property(get, doc=f"Deprecated: read ``{new}``.")


def translate_renamed(cls: type, kw: dict[str, Any], where: str, stacklevel: int = 2, warn: bool = True
                      ) -> dict[str, Any]:
    """``kw`` with the deprecated keyword names of ``cls`` (``cls.renamed``) replaced by the new ones.

    Raises:
      TypeError: both the old and the new name were given.
    """
    table = getattr(cls, "renamed", None)
    if not table or not any(k in table for k in kw):
        return kw
    out = dict(kw)
    for old, (new, convert) in table.items():
        if old not in out:
            continue
        if new in out:
            raise TypeError(f"{where} got both {old}= (deprecated) and {new}=; pass only {new}=")
        value = out.pop(old)
        out[new] = value if convert is None else convert(value)
        if warn:
            how = "" if convert is None else f" (= {new}={out[new]!r})"
            warnings.warn(f"{where}({old}=...) is deprecated; use {new}=...{how}", DeprecationWarning,
                          stacklevel=stacklevel + 1)
    return out


# ---------------------------------------------------------------- registry
_REGISTRY: dict[str, Callable[..., Agent]] = {}


def register(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Decorator adding an agent factory to the registry under ``name``."""
    _checks.instance("name", name, str, "an agent name (str)")
    if not name:
        raise ValueError("name must be a non-empty agent name, got ''")

    def deco(factory):
        _REGISTRY[name] = factory
        return factory

    return deco


def names() -> list[str]:
    """Names accepted by :func:`make`, sorted."""
    return sorted(_REGISTRY)


def make(name: str, **hyperparameters) -> Agent:
    """Builds a registered agent, e.g. ``make("ensemble+", num_members=10)``.

    Keywords are checked against the agent's dataclass fields (and its factory's own
    arguments, such as sgmcmc's ``preset``); a renamed keyword (``length_scale``,
    ``weight_decay``, ``prior_variance`` → ``l2_scale``) still works and warns.

    Raises:
      ValueError: unknown name (the message lists the known ones, with a "did you mean").
      TypeError: a hyperparameter the agent does not have; the message names the agent,
        the bad keyword, close matches ("did you mean") and the valid names.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        close = difflib.get_close_matches(name, names(), n=3) if isinstance(name, str) else []
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"name must be one of {names()}, got {name!r}{hint}")
    factory = _REGISTRY[name]
    proto = _default_agent(factory)
    hyperparameters = translate_renamed(type(proto), hyperparameters, f"jtk.agents.{name}", stacklevel=2)
    valid = _hyperparameter_names(factory, proto)
    if valid is not None:
        _checks.keywords(f"agent {name!r}", hyperparameters, valid, what="hyperparameter")
    try:
        return factory(**hyperparameters)
    except TypeError as err:
        if "unexpected keyword" in str(err):
            raise TypeError(f"agent {name!r} got an unknown hyperparameter: {err}") from None
        raise


@functools.lru_cache(maxsize=None)
def _default_agent(factory: Callable[..., Agent]) -> Any:
    """The agent a factory builds with no arguments (None when it needs some)."""
    try:
        return factory()
    except Exception:  # a factory that needs arguments: let it report unknown ones itself
        return None


def _hyperparameter_names(factory: Callable[..., Agent], proto: Any = None) -> list[str] | None:
    """Keywords a factory accepts: its own, or (for ``**kwargs`` factories) its default agent's fields."""
    valid = _checks.call_keywords(factory)
    if valid is not None:
        return valid
    proto = _default_agent(factory) if proto is None else proto
    if not dataclasses.is_dataclass(proto):
        return None
    own = [p.name for p in inspect.signature(factory).parameters.values()
           if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return own + [f.name for f in dataclasses.fields(proto) if f.init]


# ---------------------------------------------------------------- validation
def check_training_data(x, y, prior: ProblemInfo | None) -> tuple[np.ndarray, np.ndarray, ProblemInfo]:
    """Validates a training set and fills in a default prior (temperature 1, τ 1)."""
    _checks.as_float_array("x", x, ndim=2, dtype=_checks.jax_float_dtype())  # finite in the working dtype
    x = _checks.as_float_array("x", x, ndim=2)
    if prior is not None and not isinstance(prior, ProblemInfo):
        raise TypeError(f"prior must be a jtk.agents.ProblemInfo or None, got {type(prior).__name__}")
    num_classes = prior.num_classes if prior is not None else 2
    y = _checks.as_labels("y", y, num_classes=max(num_classes, 2) if prior is not None else np.iinfo(np.int32).max,
                          ndim=1)
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"x and y must have the same number of rows, got x {x.shape} and y {y.shape}")
    if prior is None:
        prior = ProblemInfo(input_dim=x.shape[1], num_classes=max(2, int(y.max()) + 1 if y.size else 2),
                      num_train=x.shape[0])
    elif not isinstance(prior, ProblemInfo):
        raise TypeError(f"prior must be a jtk.agents.ProblemInfo or None, got {type(prior).__name__}")
    if prior.input_dim != x.shape[1]:
        raise ValueError(f"x must have prior.input_dim={prior.input_dim} columns, got shape {x.shape}")
    return x, y, prior


def check_query(x, input_dim: int, num_samples: int | None = None) -> np.ndarray:
    _checks.as_float_array("x", x, ndim=2, dtype=_checks.jax_float_dtype())  # finite in the working dtype
    x = _checks.as_float_array("x", x, ndim=2)
    if x.shape[1] != input_dim:
        raise ValueError(f"x must have shape [n, {input_dim}], got {x.shape}")
    if num_samples is not None:
        _checks.integer("num_samples", num_samples, minimum=1)
    return x


def _network_size(agent: Any, input_dim: int, num_classes: int) -> tuple[float, float, float]:
    """(members, parameters per member, widest layer) of an agent's networks, from its usual fields."""
    hidden = tuple(getattr(agent, "hidden", (50, 50)) or ())
    members = float(agent.num_networks if isinstance(agent, JaxAgent) else 1)
    params = _memory.mlp_params((input_dim, *hidden, num_classes))
    return members, params, float(max((*hidden, num_classes)))


def check_fit_memory(agent: Any, num_train: int, input_dim: int, num_classes: int) -> None:
    """Refuses a fit whose data, parameters and optimiser state cannot fit in the memory budget.

    Estimate (float32): data padded to a bucket (2 × n × (d + 2)), parameters with
    gradients and Adam moments (4 × members × params; ×2 for Gaussian weights
    such as bbb), and one minibatch of activations per member.
    """
    _checks.integer("num_train", num_train, minimum=0), _checks.integer("input_dim", input_dim, minimum=1)
    _checks.integer("num_classes", num_classes, minimum=2)
    members, params, width = _network_size(agent, input_dim, num_classes)
    batch = min(float(num_train), float(getattr(agent, "batch_size", 100) or 100))
    factor = 8.0 if hasattr(agent, "num_index_samples") else 4.0
    total = (_memory.nbytes(2, num_train, input_dim + 2) + _memory.nbytes(factor, members, params)
             + _memory.nbytes(2, members, batch, width * 4))
    _memory.check_budget(f"fit of {type(agent).__name__}: num_train {num_train} × input_dim {input_dim}, "
                         f"{members:.0f} members × {params:.0f} params (num_classes {num_classes}), float32",
                         total, "lower num_train, num_members, hidden or num_classes")


def check_sample_memory(agent: Any, num_samples: int, num_inputs: int, input_dim: int, num_classes: int) -> None:
    """Refuses ``sample_logits`` whose output and activations (float32) exceed the memory budget."""
    _checks.integer("num_samples", num_samples, minimum=1), _checks.integer("num_inputs", num_inputs, minimum=0)
    _checks.integer("input_dim", input_dim, minimum=1), _checks.integer("num_classes", num_classes, minimum=2)
    members, _, width = _network_size(agent, input_dim, num_classes)
    if isinstance(agent, JaxAgent) and agent.is_mixture:  # C components evaluated once, then M of them gathered
        total = _memory.nbytes(members, num_inputs, num_classes + width) + _memory.nbytes(num_samples, num_inputs,
                                                                                         num_classes)
    else:  # M forward passes: the output and one hidden layer per sample
        total = _memory.nbytes(num_samples, num_inputs, num_classes + width)
    _memory.check_budget(f"num_samples {num_samples} × num_inputs {num_inputs} × (num_classes {num_classes} + "
                         f"widest layer) float32", total, "lower num_samples or evaluate x in chunks")


# ---------------------------------------------------------------- JAX agents
@dataclass(frozen=True, kw_only=True)
class JaxAgent:
    """Base class of jtk's agents: pure per-problem functions plus generic ``fit``.

    Subclasses are frozen, keyword-only dataclasses (hashable, so their methods
    can be static arguments to ``jax.jit``) and implement:

    * ``hyper(prior) -> dict`` of traced scalars (L2 scale, prior scale, ...),
      so a new temperature or num_train never recompiles; each agent's class
      docstring lists its keys under "Hyper keys";
    * either ``init(key, data, hyper) -> (trainable, fixed)``,
      ``loss(trainable, fixed, batch, hyper, key)`` and optionally
      ``finalize(trainable, fixed) -> state`` (gradient-trained agents: the
      generic ``train`` runs the shared loop, and ``jtk.testbed.bandit`` can update
      them online with ``online_hyper``), or their own
      ``train(key, data, hyper) -> state``: one problem, pure;
    * either ``components(state, x) -> [C, n, K]`` for a posterior that is a
      mixture of C functions (exact enumeration; uniform unless
      ``log_weights(state) -> [C]`` says otherwise: :attr:`is_mixture` is
      true and ``fit`` returns a :class:`MixturePosterior`),
      or ``sample(state, x, key, num_samples) -> [M, n, K]`` only.

    Fields are checked in ``__post_init__``: this class's ``__check_init__``
    first, then each subclass's own ``__check_init__`` (a subclass defines one
    for its own fields and does not call ``super()``; it may normalise a field
    with ``object.__setattr__``, e.g. a list of widths into a tuple).

    Attributes:
      batch_size: minibatch size (the whole set when n is smaller); agents
        without minibatches read it as their static cap on training rows.
        ``specialize`` sets it per problem (100).
      num_classes: number of outputs K; ``fit`` and the testbed set it from the prior (2).
    """

    batch_size: int = 100
    num_classes: int = 2
    whole_set: bool = dataclasses.field(default=False, init=False, repr=False)
    """Set by :meth:`specialize` when every training set fits in one minibatch: steps take all rows, drawing no
    random numbers (:func:`jtk.train.sample_batch`). Not a hyperparameter; part of the compiled program's key."""

    def __post_init__(self):
        for cls in reversed(type(self).__mro__):
            check = cls.__dict__.get("__check_init__")
            if check is not None:
                check(self)

    def __check_init__(self):
        _checks.integer("batch_size", self.batch_size, minimum=1)
        _checks.integer("num_classes", self.num_classes, minimum=2)

    @property
    def is_mixture(self) -> bool:
        """True when the posterior is a finite mixture: the agent implements ``components``."""
        return type(self).components is not JaxAgent.components

    @property
    def num_networks(self) -> int:
        """Networks trained or evaluated side by side per problem (ensemble members, mixture slots): 1.

        Sizes the testbed's chunks of vmapped problems and the memory estimates.
        """
        return 1

    def hyper(self, prior: ProblemInfo) -> dict[str, float]:
        return {}

    # ------------------------------------------------------------ learners
    # Gradient-trained agents implement init / loss / finalize instead of train:
    # the generic ``train`` below runs them through the shared training loop,
    # and the neural bandit (jtk.testbed.bandit) updates them online, a few steps per
    # observation, with the entries of ``annealed`` in hyper decayed as 1/t.
    annealed: ClassVar[tuple[str, ...]] = ()

    @property
    def incremental(self) -> bool:
        """True when the agent can be updated online (it implements ``init`` and ``loss``)."""
        return type(self).init is not JaxAgent.init

    def init(self, key, data: train_lib.Dataset, hyper) -> tuple[Any, Any]:
        """Initial ``(trainable, fixed)`` parameters for inputs like ``data.x``.

        ``fixed`` holds what is never trained (prior networks, bootstrap weights,
        prior outputs cached at the rows of ``data``: ``batch.index`` in
        :meth:`loss` refers to those rows).
        """
        raise NotImplementedError(f"{type(self).__name__} has no init/loss: it cannot be trained online")

    def loss(self, trainable, fixed, batch: train_lib.Batch, hyper, key) -> jax.Array:
        """Scalar training loss on one minibatch, regularisers included (weights from ``hyper``)."""
        raise NotImplementedError

    def finalize(self, trainable, fixed) -> Any:
        """The posterior state (used by ``components`` / ``sample``) from trained and fixed parts."""
        return trainable

    def online_hyper(self, prior: ProblemInfo) -> dict[str, float]:
        """Hyperparameters for online learning at t = 1; ``annealed`` entries are divided by t.

        The reference bandit (docs/reference.md, "Bandit"; App. E) replaces the dataset-size
        regulariser by a weight decay annealed as 1/t.
        """
        raise NotImplementedError(f"{type(self).__name__} defines no online hyperparameters")

    def optimizer(self) -> optax.GradientTransformation:
        """Adam with the agent's ``learning_rate`` (the reference optimiser of every agent)."""
        return optax.adam(self.learning_rate)

    def train(self, key, data: train_lib.Dataset, hyper) -> Any:
        """Trains on one problem: ``init``, then ``num_steps`` of the shared loop, then ``finalize``."""
        return self.finish_training(self.start_training(key, data, hyper), data, hyper)

    def start_training(self, key, data: train_lib.Dataset, hyper) -> tuple[Any, Any, jax.Array]:
        """The first half of :meth:`train`: ``(trainable, fixed, key of the steps)`` from ``init``.

        It does not depend on ``batch_size``, so the testbed compiles it once for every minibatch size of a grid.
        """
        k_init, k_train = jax.random.split(key)
        trainable, fixed = self.init(k_init, data, hyper)
        return trainable, fixed, k_train

    def finish_training(self, started: tuple[Any, Any, jax.Array], data: train_lib.Dataset, hyper) -> Any:
        """The second half of :meth:`train`: :meth:`run_steps` from :meth:`start_training`'s result, then
        ``finalize``."""
        trainable, fixed, k_train = started
        return self.finalize(self.run_steps(trainable, fixed, data, hyper, k_train), fixed)

    def run_steps(self, trainable, fixed, data: train_lib.Dataset, hyper, key, indices=None) -> Any:
        """``num_steps`` steps of the shared loop (:func:`jtk.train.train`) on ``loss``: the trained parameters.

        ``indices``: the steps' minibatch rows if already drawn with ``key`` (:func:`jtk.train.batch_indices`).
        """

        def loss_fn(params, batch, hyper_, k):
            return self.loss(params, fixed, batch, hyper_, k)

        trainable, _ = train_lib.train(loss_fn, trainable, data, hyper, key, optimizer=self.optimizer(),
                                       num_steps=self.num_steps, batch_size=self.batch_size,
                                       whole_set=self.whole_set, indices=indices)
        return trainable

    def components(self, state, x) -> jax.Array:
        raise NotImplementedError

    def log_weights(self, state) -> jax.Array | None:
        """Log mixture weights [C] of the components, or None for a uniform mixture."""
        return None

    def sample(self, state, x, key, num_samples: int) -> jax.Array:
        """Default for mixtures: draw components (by their weights) with replacement."""
        comps = self.components(state, x)  # [C, n, K]
        log_w = self.log_weights(state)
        if log_w is None:
            idx = jax.random.randint(key, (num_samples,), 0, comps.shape[0])
        else:
            idx = jax.random.categorical(key, log_w, shape=(num_samples,))
        return comps[idx]

    def specialize(self, prior: ProblemInfo) -> "JaxAgent":
        """This agent with its static shapes set for a problem: classes and minibatch size.

        Compiled code is keyed on these, so num_train values that share a
        batch bucket (and all temperatures) reuse one compilation.
        """
        size = train_lib.batch_bucket(prior.num_train, self.batch_size)
        agent = dataclasses.replace(self, batch_size=size, num_classes=prior.num_classes)
        # A bucket below batch_size is a power of two ≥ n: the whole set is every step's minibatch.
        object.__setattr__(agent, "whole_set", size < self.batch_size)
        return agent

    def fit(self, x, y, seed=0, prior: ProblemInfo | None = None) -> "JaxPosterior":
        """Trains on x [n, d], y [n] and returns a :class:`JaxPosterior`.

        Raises:
          ValueError or TypeError: bad x, y, prior or seed (an int in [0, 2**32) or a PRNG key).
          jtk._memory.MemoryBudgetError: a ValueError when the data, parameters and
            optimiser state cannot fit in the memory budget (checked before training).
        """
        shape = getattr(x, "shape", None)
        if shape is not None and len(shape) == 2:  # refuse a hopeless size before converting or scanning x
            check_fit_memory(self, int(shape[0]), int(shape[1]),
                             prior.num_classes if isinstance(prior, ProblemInfo) else getattr(self, "num_classes", 2))
        x, y, prior = check_training_data(x, y, prior)
        key = _checks.as_key(seed)
        prior = dataclasses.replace(prior, num_train=x.shape[0])
        check_fit_memory(self, x.shape[0], prior.input_dim, prior.num_classes)
        data = train_lib.pad_dataset(x, y)
        hyper = {k: jnp.asarray(v, jnp.float32) for k, v in self.hyper(prior).items()}
        agent = self.specialize(prior)
        return _posterior(agent, _train_one(agent, key, data, hyper), prior.input_dim)


@dataclass(frozen=True, kw_only=True)
class NeuralAgent(JaxAgent):
    """Base class of the agents trained by stochastic gradients on an MLP: the shared training fields.

    Ensemble, dropout, bbb, hypermodel, epinet, sgmcmc and deep_kernel subclass it;
    a subclass redeclares a field to change its default (bbb: ``learning_rate`` 3e-3).

    Attributes:
      learning_rate: Adam step size (1e-3, the reference's; sgmcmc: the Langevin step η).
      num_steps: training steps (1000).
      hidden: hidden widths of the (base) MLP ((50, 50), the generative model's).
      batch_size: minibatch size (100; the whole set when n is smaller).
      num_classes: number of outputs K; ``fit`` and the testbed set it from the prior (2).
    """

    learning_rate: float = 1e-3
    num_steps: int = 1000
    hidden: tuple[int, ...] = (50, 50)

    def __check_init__(self):
        _checks.positive("learning_rate", self.learning_rate)
        _checks.integer("num_steps", self.num_steps, minimum=1)
        object.__setattr__(self, "hidden", _checks.widths("hidden", self.hidden))


@functools.partial(_compile.jit, static_argnums=(0,))
def _train_one(agent: JaxAgent, key, data, hyper):
    return agent.train(key, data, hyper)


@functools.partial(_compile.jit, static_argnums=(0,))
def train_many(agent: JaxAgent, keys, data: train_lib.Dataset, hyper):
    """``agent.train`` vmapped over problems: keys [P], data and hyper with leading axis P."""
    return jax.vmap(agent.train)(keys, data, hyper)


def fit_many(agent: JaxAgent, xs, ys, priors, seeds) -> list[JaxPosterior]:
    """Fits one agent to many training sets at once (vmap over sets; one compile per shape bucket).

    The result equals ``[agent.fit(x, y, seed, prior) for ...]`` but trains all
    sets sharing a minibatch bucket in one vectorised call: notebooks use it to
    precompute every slider position in about the time of a single fit.

    Args:
      agent: a :class:`JaxAgent`.
      xs: list of P input arrays, each [n_p, d].
      ys: list of P label arrays, each [n_p].
      priors: list of P :class:`ProblemInfo` (or one ProblemInfo for all).
      seeds: list of P ints / keys (or one for all).

    Returns:
      P posteriors in the order given.
    """
    if not isinstance(agent, JaxAgent):
        raise TypeError(f"agent must be a jtk JaxAgent, got {type(agent).__name__}")
    xs, ys = list(xs), list(ys)
    if len(xs) != len(ys) or not xs:
        raise ValueError(f"xs and ys must be non-empty lists of equal length, got {len(xs)} and {len(ys)}")
    priors = list(priors) if isinstance(priors, (list, tuple)) else [priors] * len(xs)
    seeds = list(seeds) if isinstance(seeds, (list, tuple)) else [seeds] * len(xs)
    if not len(priors) == len(seeds) == len(xs):
        raise ValueError(f"priors and seeds must have one entry per training set ({len(xs)}), "
                         f"got {len(priors)} and {len(seeds)}")
    checked = [check_training_data(x, y, pr) for x, y, pr in zip(xs, ys, priors)]
    groups: dict[tuple, list[int]] = {}
    for i, (x, _, pr) in enumerate(checked):
        pr = dataclasses.replace(pr, num_train=x.shape[0])
        checked[i] = (checked[i][0], checked[i][1], pr)
        groups.setdefault((agent.specialize(pr), train_lib.capacity_for(x.shape[0])), []).append(i)
    out: list[JaxPosterior | None] = [None] * len(xs)
    for (specialized, capacity), idx in groups.items():
        data = [train_lib.pad_dataset(checked[i][0], checked[i][1], capacity) for i in idx]
        data = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *data)
        hyper_rows = [agent.hyper(checked[i][2]) for i in idx]
        hyper = {k: jnp.asarray([h[k] for h in hyper_rows], jnp.float32) for k in hyper_rows[0]}
        keys = jnp.stack([_checks.as_key(seeds[i]) for i in idx])
        states = train_many(specialized, keys, data, hyper)
        for j, i in enumerate(idx):
            state = jax.tree_util.tree_map(lambda a: a[j], states)
            out[i] = _posterior(specialized, state, checked[i][2].input_dim)
    return out


@functools.partial(_compile.jit, static_argnums=(0,))
def _components(agent, state, x):
    return agent.components(state, x)


@functools.partial(_compile.jit, static_argnums=(0, 4))
def _sample(agent, state, x, key, num_samples):
    return agent.sample(state, x, key, num_samples)


def _posterior(agent: JaxAgent, state, input_dim: int) -> "JaxPosterior":
    """A :class:`JaxMixturePosterior` for a mixture agent, else a :class:`JaxPosterior`."""
    return (JaxMixturePosterior if agent.is_mixture else JaxPosterior)(agent, state, input_dim)


@dataclass(frozen=True, eq=False)
class JaxPosterior:
    """The posterior of a :class:`JaxAgent` on one training set (a :class:`Posterior`)."""

    agent: JaxAgent
    state: Any
    input_dim: int

    def sample_logits(self, x, num_samples: int = 1, seed=0) -> jax.Array:
        """Draws ``num_samples`` functions, each evaluated at all of x [n, d] → [M, n, K].

        Raises:
          ValueError or TypeError: bad x, num_samples (an int ≥ 1) or seed;
            jtk._memory.MemoryBudgetError (a ValueError) when [M, n, K] cannot fit.
        """
        x = check_query(x, self.input_dim, num_samples)
        key = _checks.as_key(seed)
        check_sample_memory(self.agent, num_samples, x.shape[0], self.input_dim, self.agent.num_classes)
        return _sample(self.agent, self.state, jnp.asarray(x), key, int(num_samples))

    def mean_probs(self, x) -> jax.Array:
        """Marginal predictive p̂(y | x) averaged over the posterior: [n, K] (1000 samples)."""
        return jnp.mean(jax.nn.softmax(self.sample_logits(x, 1000), -1), axis=0)


@dataclass(frozen=True, eq=False)
class JaxMixturePosterior(JaxPosterior):
    """The posterior of a mixture :class:`JaxAgent` (one implementing ``components``): a :class:`MixturePosterior`."""

    @property
    def num_components(self) -> int:
        """C, the number of mixture components (exact enumeration)."""
        log_w = self.agent.log_weights(self.state)
        if log_w is not None:
            return int(log_w.shape[0])
        return int(next(a for a in jax.tree_util.tree_leaves(self.state) if np.ndim(a) >= 1).shape[0])

    def components(self, x) -> jax.Array:
        """All C mixture components at x [n, d] → logits [C, n, K]."""
        return _components(self.agent, self.state, jnp.asarray(check_query(x, self.input_dim)))

    def log_weights(self) -> jax.Array | None:
        """Log weights [C] of the mixture components (None: uniform)."""
        return self.agent.log_weights(self.state)

    def mean_probs(self, x) -> jax.Array:
        """Marginal predictive p̂(y | x), exact over the components: [n, K]."""
        probs = jax.nn.softmax(self.components(x), -1)  # [C, n, K]
        log_w = self.log_weights()
        if log_w is None:
            return jnp.mean(probs, axis=0)
        return jnp.einsum("c,cnk->nk", jax.nn.softmax(log_w), probs)
