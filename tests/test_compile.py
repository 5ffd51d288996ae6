"""jtk._compile: the testbed's programs compile at LLVM optimisation level 1 on the CPU, per program, opt-out."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jtk import _compile, testbed


def test_options_on_the_cpu_and_the_opt_out(monkeypatch):
    monkeypatch.delenv("JTK_FAST_COMPILE", raising=False)
    expected = {"xla_backend_optimization_level": 1} if jax.default_backend() == "cpu" else None
    assert _compile.compiler_options() == expected
    monkeypatch.setenv("JTK_FAST_COMPILE", "0")
    assert _compile.compiler_options() is None


def test_jit_matches_jax_jit_and_sets_no_global_flags():
    def f(x, n):
        return jnp.cumsum(jnp.sin(x) ** n)

    fast = _compile.jit(f, static_argnums=1)
    x = jnp.linspace(0.0, 3.0, 101)
    np.testing.assert_allclose(fast(x, 2), jax.jit(f, static_argnums=1)(x, 2), rtol=1e-6)
    assert fast.__name__ == "f" and "xla_backend_optimization_level" not in (jax.config.values.get("xla_flags") or "")
    assert "sine" in fast.lower(x, 2).as_text()  # lowering works
    # the testbed's programs are built this way
    assert isinstance(testbed._train_states, _compile._Jit) and isinstance(testbed._eval_chunk, _compile._Jit)
