"""jtk._compile: jtk's programs compile with fast-compiling options on the CPU, per program, opt-out; long-running
programs (the testbed's training) with level 1 only; an option the jaxlib does not know is left out."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jtk import _compile

from jtk.testbed import engine


def test_options_on_the_cpu_and_the_opt_out(monkeypatch):
    monkeypatch.delenv("JTK_FAST_COMPILE", raising=False)
    monkeypatch.delenv("JTK_COMPILER_OPTIONS", raising=False)
    cpu = jax.default_backend() == "cpu"
    gpu = {"xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": False}
    expected = {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False} if cpu else gpu
    assert _compile.compiler_options() == expected
    assert _compile.compiler_options(long_running=True) == ({"xla_backend_optimization_level": 1} if cpu else gpu)
    monkeypatch.setenv("JTK_FAST_COMPILE", "0")
    assert _compile.compiler_options() is None and _compile.compiler_options(long_running=True) is None


def test_the_gpu_options_are_chosen_by_the_backend(monkeypatch):
    """On a GPU every program gets GPU_COMPILER_OPTIONS (no autotuning, cuBLAS matrix products), whatever it runs."""
    monkeypatch.delenv("JTK_FAST_COMPILE", raising=False)
    monkeypatch.delenv("JTK_COMPILER_OPTIONS", raising=False)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert _compile._defaults("gpu", True) == _compile._defaults("gpu", False) == _compile.GPU_COMPILER_OPTIONS
    assert _compile._defaults("tpu", False) == {}
    # this CPU jaxlib knows the names (one option list for every backend), so the GPU set is what a GPU run gets
    assert _compile.compiler_options() == _compile.GPU_COMPILER_OPTIONS


def test_user_options_are_added_and_checked_before_any_program_compiles(monkeypatch):
    monkeypatch.delenv("JTK_FAST_COMPILE", raising=False)
    monkeypatch.setenv("JTK_COMPILER_OPTIONS", '{"xla_backend_optimization_level": 2, "xla_gpu_autotune_level": 4}')
    options = _compile.compiler_options()
    assert options["xla_backend_optimization_level"] == 2 and options["xla_gpu_autotune_level"] == 4
    monkeypatch.setenv("JTK_FAST_COMPILE", "0")  # jtk's own dropped, the user's kept
    assert _compile.compiler_options() == {"xla_backend_optimization_level": 2, "xla_gpu_autotune_level": 4}
    np.testing.assert_allclose(_compile.jit(lambda x: x * 2.0, long_running=True)(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    for text, match in (("[1", "must be a JSON object .* got '\\[1' \\(Expecting"),
                        ('["xla_backend_optimization_level"]', "must be a JSON object of XLA option names and values"),
                        ('{"xla_backend_optimization_level": [1]}', "booleans, numbers or strings"),
                        ('{"xla_no_such_option": 1}', "refuses the option xla_no_such_option=1")):
        monkeypatch.setenv("JTK_COMPILER_OPTIONS", text)
        with pytest.raises(ValueError, match=f"JTK_COMPILER_OPTIONS.*{match}"):
            _compile.compiler_options()


def test_an_option_this_jaxlib_does_not_know_is_left_out(monkeypatch):
    """XLA refuses an unknown option only when it compiles: every jtk program would fail on a jaxlib without it."""
    if jax.default_backend() != "cpu":
        pytest.skip("jtk passes no options off the CPU")
    with pytest.raises(Exception, match="xla_cpu_no_such_option"):  # what jtk would hit without the check
        jax.jit(lambda x: x + 1, compiler_options={"xla_cpu_no_such_option": True}).lower(np.float32(0)).compile()
    monkeypatch.setitem(_compile.CPU_COMPILER_OPTIONS, "xla_cpu_no_such_option", True)
    monkeypatch.setattr(_compile, "_known_options", functools.lru_cache(maxsize=None)(_compile._known_options.__wrapped__))
    assert "xla_cpu_no_such_option" not in _compile.compiler_options()
    assert _compile.compiler_options()["xla_cpu_use_fusion_emitters"] is False
    np.testing.assert_allclose(_compile.jit(lambda x: x * 3.0)(jnp.arange(3.0)), [0.0, 3.0, 6.0])


def test_the_testbeds_grid_programs_are_long_running_and_its_data_programs_compile_fast(monkeypatch):
    """Training and scoring run for seconds per chunk (the faster program pays); drawing data and initialising start
    every cold run's critical path (the faster compile pays). The golden test checks the scores stayed put."""
    assert engine._finish_states._long_running and engine._train_states._long_running
    assert engine._eval_chunk._long_running
    assert not engine._start_states._long_running and not engine._make_training_batch._long_running
    seen = []
    real = _compile.compiler_options
    monkeypatch.setattr(_compile, "compiler_options", lambda long_running=False: seen.append(long_running) or
                        real(long_running))
    long, short = _compile.jit(lambda x: x * 2.0, long_running=True), _compile.jit(lambda x: x * 2.0)
    np.testing.assert_allclose(long(jnp.arange(3.0)), short(jnp.arange(3.0)))
    assert seen == [True, False]


def test_jit_matches_jax_jit_and_sets_no_global_flags():
    def f(x, n):
        return jnp.cumsum(jnp.sin(x) ** n)

    fast = _compile.jit(f, static_argnums=1)
    x = jnp.linspace(0.0, 3.0, 101)
    np.testing.assert_allclose(fast(x, 2), jax.jit(f, static_argnums=1)(x, 2), rtol=1e-6)
    assert fast.__name__ == "f" and "xla_backend_optimization_level" not in (jax.config.values.get("xla_flags") or "")
    assert "sine" in fast.lower(x, 2).as_text()  # lowering works
    # the testbed's programs are built this way
    assert isinstance(engine._train_states, _compile._Jit) and isinstance(engine._eval_chunk, _compile._Jit)


def test_every_jitted_function_in_jtk_compiles_through_jtk_compile():
    """A ``jax.jit`` elsewhere would compile at XLA's default level: twice the compile time of a lab's first cell."""
    import ast
    import pathlib

    import jtk

    root = pathlib.Path(jtk.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "_compile.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr == "jit" and isinstance(node.value, ast.Name)
                    and node.value.id == "jax"):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == [], found
    from jtk.testbed import bandit
    from jtk.agents import base

    assert isinstance(bandit._run_chunk, _compile._Jit) and isinstance(base.train_many, _compile._Jit)


def test_jit_hands_on_the_jitted_functions_attributes():
    fast = _compile.jit(lambda x: x + 1)
    fast(jnp.zeros(3))
    assert fast._cache_size() == 1
    fast(jnp.zeros(4))
    assert fast._cache_size() == 2
    assert "add" in fast.trace(jnp.zeros(3)).jaxpr.pretty_print()


def test_a_jtk_jit_called_inside_jit_vmap_or_grad_works():
    inner = _compile.jit(lambda x: jnp.sin(x) * 2.0)
    outer = _compile.jit(lambda x: inner(x) + 1.0)
    x = jnp.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(outer(x), np.sin(np.asarray(x)) * 2.0 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(inner)(x), inner(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: inner(v).sum())(x), 2.0 * np.cos(np.asarray(x)), rtol=1e-6)


def _program(x, n):
    return jnp.cumsum(jnp.sin(x) ** n)


def test_kept_programs_load_in_a_new_process_without_tracing(tmp_path, monkeypatch):
    """A kept program is written once; a new _Jit of the same name (what a new process builds) runs the stored
    executable without tracing or lowering (it never builds its jax.jit); another static value, shape or jtk
    source is another program."""
    monkeypatch.setattr(_compile, "executable_dir", lambda: tmp_path)
    x = jnp.linspace(0.0, 3.0, 101)
    expected = np.asarray(jax.jit(_program, static_argnums=1)(x, 2))
    first = _compile.jit(_program, static_argnums=1, keep="tests.program")
    np.testing.assert_array_equal(first(x, 2), expected)
    assert len(list(tmp_path.glob("*.bin"))) == 1
    again = _compile.jit(_program, static_argnums=1, keep="tests.program")  # a new process's
    np.testing.assert_array_equal(again(x, 2), expected)
    assert again._jitted is None  # loaded: nothing traced, lowered or compiled
    again(x, 3)  # another static value
    again(jnp.linspace(0.0, 1.0, 7), 2)  # another shape
    assert len(list(tmp_path.glob("*.bin"))) == 3
    from jtk.testbed import bandit

    monkeypatch.setattr(bandit, "CHUNK", 100)  # a constant set by hand (programs read such constants as they trace)
    patched = _compile.jit(_program, static_argnums=1, keep="tests.program")
    patched(x, 2)
    assert patched._jitted is not None and len(list(tmp_path.glob("*.bin"))) == 4  # not the kept one
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "executable_dir", lambda: tmp_path)
    monkeypatch.setattr(bandit, "make_problems", lambda *a, **k: None)  # a function replaced at run time
    replaced = _compile.jit(_program, static_argnums=1, keep="tests.program")
    replaced(x, 2)
    assert replaced._jitted is not None and len(list(tmp_path.glob("*.bin"))) == 5
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "executable_dir", lambda: tmp_path)
    monkeypatch.setattr(_compile, "_source_digest", lambda: "another jtk")
    other = _compile.jit(_program, static_argnums=1, keep="tests.program")
    other(x, 2)
    assert other._jitted is not None and len(list(tmp_path.glob("*.bin"))) == 6  # never loads another jtk's


def test_a_torn_entry_is_compiled_again_and_the_store_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setattr(_compile, "executable_dir", lambda: tmp_path)
    x = jnp.arange(5.0)
    _compile.jit(_program, static_argnums=1, keep="tests.torn")(x, 1)
    (entry,) = tmp_path.glob("*.bin")
    whole = entry.stat().st_size
    entry.write_bytes(entry.read_bytes()[:100])  # cut short, as by a killed writer on a disk without rename
    second = _compile.jit(_program, static_argnums=1, keep="tests.torn")
    np.testing.assert_allclose(second(x, 1), np.cumsum(np.sin(np.arange(5.0))), rtol=1e-6)
    assert second._jitted is not None and entry.stat().st_size == whole  # compiled again, rewritten whole
    third = _compile.jit(_program, static_argnums=1, keep="tests.torn")
    third(x, 1)
    assert third._jitted is None
    monkeypatch.undo()
    monkeypatch.setenv("JTK_EXECUTABLE_CACHE", "0")
    assert _compile.executable_dir() is None


def test_only_programs_with_a_stable_name_and_static_arguments_are_kept():
    with pytest.raises(ValueError, match="keep=True"):
        _compile.jit(lambda x: x, keep=True)
    with pytest.raises(ValueError, match="keep=True"):
        _compile.jit(_program, keep=True)  # not a module of jtk: its name is no promise
    program = _compile.jit(_program, static_argnums=1, keep="tests.unstable")
    assert program.program_key(jnp.zeros(2), 2) is not None
    assert program.program_key(jnp.zeros(2), object()) is None  # printed with its address: not kept
    assert program.program_key(jnp.zeros(2), jnp.sin) is None  # a function: not kept

    @dataclasses.dataclass(frozen=True)
    class Researchers:  # defined outside jtk (a notebook's subclass, say): its source is in no key
        width: int = 3

    assert program.program_key(jnp.zeros(2), Researchers()) is None
    from jtk.testbed import bandit

    # dataclasses are described by every field: two agents differing in one setting are two programs
    a, b = bandit.make_policy("ensemble", num_members=3), bandit.make_policy("ensemble", num_members=4)
    assert _compile._static_description(a) != _compile._static_description(b)
    assert _compile._static_description(a) == _compile._static_description(bandit.make_policy("ensemble",
                                                                                              num_members=3))


def test_a_program_in_jaxs_persistent_cache_is_kept_whole(tmp_path, monkeypatch):
    """JAX's persistent cache already holds the program (an earlier run, another version of jtk): the kept copy is
    compiled afresh, since one loaded from that cache serializes without its machine code on the CPU, and the new
    process's copy runs."""
    if not jax.config.jax_compilation_cache_dir:
        pytest.skip("JAX's persistent compilation cache is off")
    monkeypatch.setattr(_compile, "executable_dir", lambda: tmp_path)
    previous = jax.config.jax_persistent_cache_min_compile_time_secs
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        x = jnp.linspace(0.0, 2.0, 33)
        expected = np.asarray(jax.jit(_program, static_argnums=1)(x, 5))  # now in JAX's cache
        jax.clear_caches()
        np.testing.assert_array_equal(_compile.jit(_program, static_argnums=1, keep="tests.cached")(x, 5), expected)
        # loaded in this process, where it was compiled before: it runs, or it is compiled again and runs
        loaded = _compile.jit(_program, static_argnums=1, keep="tests.cached")
        np.testing.assert_array_equal(loaded(x, 5), expected)
        np.testing.assert_array_equal(loaded(x, 5), expected)
    finally:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", previous)


def test_the_store_drops_the_least_recently_used_programs_past_its_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(_compile, "executable_dir", lambda: tmp_path)
    program = _compile.jit(_program, static_argnums=1, keep="tests.trim")
    program(jnp.zeros(3), 1)
    (first,) = tmp_path.glob("*.bin")
    size = first.stat().st_size
    monkeypatch.setenv("JTK_CACHE_MAX_GB", str(2.5 * size / 2 ** 30))  # the store: 1.25 programs
    import os

    os.utime(first, (1, 1))  # long unused
    program(jnp.zeros(4), 1)
    assert [p.name for p in tmp_path.glob("*.bin")] != [first.name] and not first.exists()
    assert len(list(tmp_path.glob("*.bin"))) == 1
    monkeypatch.setenv("JTK_CACHE_MAX_GB", "0")
    assert _compile.store_limit_bytes() == -1
