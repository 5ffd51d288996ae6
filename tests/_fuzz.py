"""What the bad-input tests (tests/test_fuzz_<package>.py) share: the case table, its objects and the per-test timeout.

A case names the entry point, builds its bad call lazily (a callable, so collection is fast), the exception type it
must raise and the argument names its message must mention. Each package's file declares its cases with
:func:`case` and runs them with :func:`refused_clearly`; tests/test_fuzz_inventory.py checks that every public
callable of jtk has a case or a stated exemption.
"""

from __future__ import annotations

import functools
import signal
import sys

import pandas as pd
import pytest

import jtk
import jtk.agents
import jtk.agents.base
import jtk.agents.bayes_optimal
import jtk.agents.bbb
import jtk.agents.deep_kernel
import jtk.agents.dropout
import jtk.agents.ensemble
import jtk.agents.epinet
import jtk.agents.hypermodel
import jtk.agents.nonparametric
import jtk.agents.records
import jtk.agents.sgmcmc
import jtk.course.exercises
import jtk.course.gradebook
import jtk.envs
import jtk.likelihood
import jtk.ppc
import jtk.ppc.active
import jtk.regression
import jtk.regression.blr
import jtk.regression.bnn
import jtk.regression.coverage
import jtk.regression.deep
import jtk.regression.fbnn
import jtk.regression.gp
import jtk.regression.hmc
import jtk.regression.nng
import jtk.results
import jtk.testbed
import jtk.testbed.bandit
import jtk.testbed.ensemble_study
import jtk.testbed.runs
import jtk.testbed.sweep
import jtk.widgets

VE, TE = ValueError, TypeError
TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def per_test_timeout():
    """A bad input must fail fast: guard each case against hangs (no pytest-timeout in the env)."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"case took more than {TIMEOUT_S} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TIMEOUT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------ shared objects (built once, lazily)
@functools.lru_cache(None)
def env():
    return jtk.envs.MLPClassification(temperature=0.1, seed=0)


@functools.lru_cache(None)
def reg_env():
    return jtk.envs.SinusoidRegression(1.0)


def good_problem(**kw):
    args = dict(temperature=0.1, num_train=10, tau=1, seed=0, num_test=10, num_samples=10)
    args.update(kw)
    return jtk.testbed.Problem(**args)


def call(fn, *args, **kwargs):
    return lambda: fn(*args, **kwargs)


GP_ORACLE = functools.lru_cache(None)(lambda: jtk.regression.GPRegression(kernel=jtk.envs.ReLUKernelGP(),
                                                                          noise_var=0.01))
KEY = lambda: __import__("jax").random.key(0)  # noqa: E731
R = jtk.regression
AG = jtk.agents


def frame_of(**cols):
    return pd.DataFrame({k: list(v) for k, v in cols.items()})


# ------------------------------------------------------------------ the table: each test_fuzz_<package>.py declares its
# cases with case(); test_fuzz_inventory.py reads all of them
CASES: dict[str, list] = {}  # test module's name -> its cases (pytest params), in the order declared


COVERED: dict[str, int] = {}  # public callable's key -> number of cases


def key(obj) -> str:
    """A callable's name where it is defined, resolved at run time (``jtk.ppc.active.tig``,
    ``jtk.envs.coin.Coin.joint``): cases follow a function when its module moves."""
    obj = getattr(obj, "__func__", obj)
    return f"{obj.__module__}.{obj.__qualname__}"


def case(covers, cid: str, build, exc, names: str, marks=()):
    """One bad input, registered for the test module whose top level calls this. ``covers``: the public callable
    (or a tuple of them) whose validation the case exercises."""
    covers = covers if isinstance(covers, tuple) else (covers,)
    for obj in covers:
        COVERED[key(obj)] = COVERED.get(key(obj), 0) + 1
    label = key(covers[0]).removeprefix("jtk.")
    module = sys._getframe(1).f_globals["__name__"]
    CASES.setdefault(module, []).append(pytest.param(build, exc, names, id=f"{label}:{cid}", marks=marks))


def cases(module: str) -> list:
    """The cases a test module declared (``cases(__name__)``, after its last ``case``)."""
    return list(CASES.get(module, []))


def all_cases() -> list:
    return [p for params in CASES.values() for p in params]


def refused_clearly(build, exc, names: str) -> None:
    """Runs one case: the call raises ``exc`` whose message names every word of ``names``; ``exc=None`` marks a
    documented valid input, which must simply work."""
    if exc is None:
        build()
        return
    with pytest.raises(exc) as info:
        build()
    message = str(info.value)
    for name in names.split():
        assert name in message, f"message does not name {name!r}: {message}"
