import gc
import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA's generated code targets AVX2 at most, so CPUs with the same widest ISA give the same bits (an AVX-512 host
# capped at AVX2 is a numerics key of its own: XLA's library kernels follow the host). Set before JAX creates its CPU
# backend; the notebooks' and the grader's kernels inherit it (docs/reference.md, "Reproducibility across machines").
if "--xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
    from jtk._info import PORTABLE_XLA_FLAG

    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {PORTABLE_XLA_FLAG}".strip()


def _memory_maps() -> int:
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module, drop JAX's compiled programs and jtk's kept ones (they are reloaded from the
    persistent cache and jtk's store on use).

    One process runs the whole suite; every compiled CPU program keeps its own memory mappings, and late in a full
    run the process died twice inside JAX's executable (de)serialisation with a NULL pointer in libc, consistent
    with running out of mappings (vm.max_map_count is 65530 here). Releasing the programs module by module keeps the
    count bounded. JTK_TEST_MAPS=1 prints the count after each module.
    """
    yield
    import jax

    if os.environ.get("JTK_TEST_KEEP_PROGRAMS") != "1":
        from jtk import _compile

        jax.clear_caches()
        _compile.clear_programs()  # jtk's kept programs too (loaded again from its store on use)
        gc.collect()
    if os.environ.get("JTK_TEST_MAPS") == "1":
        print(f"\n[memory maps after module: {_memory_maps()}]", flush=True)


@pytest.fixture
def busy_cpus():
    """2 × the cores of processes spinning beside the test (a busy laptop or shared server), killed afterwards.

    For code with threads, time limits or caches: its results must not depend on how the machine schedules it. The
    processes are benchmarks/busy_machine.py's, which stop by themselves even if the test run is killed.
    """
    import sys

    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if benchmarks not in sys.path:  # once, not once per test that asks for the fixture
        sys.path.insert(0, benchmarks)
    from busy_machine import Busy

    with Busy(2 * (os.cpu_count() or 1), seconds=900) as busy:
        yield busy.n
