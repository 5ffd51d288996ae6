"""Every registered agent's quick-grid scores are bit-identical to tests/data/quick_grid_golden.csv.

The golden file was written by tests/data/make_quick_grid_golden.py; a refactor that moves code must not move a
number. Regenerate it only with a change that is meant to change scores.

What jtk promises (docs/reference.md, "Reproducibility across machines"): the same bits wherever the numerics key
(machine and the vector ISA XLA compiles for, recorded beside the golden file) and the versions are the same,
whatever the load, threads or cache; elsewhere agreement within ``jtk verify``'s tolerance. The suite runs under
``--xla_cpu_max_isa=AVX2`` (tests/conftest.py), so every x86-64 CPU with AVX2 checks the bits.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from jtk import _info, agents, results

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
import make_quick_grid_golden as golden  # noqa: E402

GOLDEN = pd.read_csv(golden.PATH)
with open(golden.NUMERICS_PATH) as _f:
    WRITTEN_ON = json.load(_f)



def test_golden_covers_every_registered_agent():
    assert sorted(GOLDEN["agent"].unique()) == sorted(agents.names())


@pytest.mark.parametrize("name", sorted(GOLDEN["agent"].unique()))
def test_quick_grid_scores_are_bit_identical(name):
    expected = GOLDEN[GOLDEN["agent"] == name].reset_index(drop=True)
    assert json.loads(expected["config"][0]) == golden.CONFIGS.get(name, {})
    got = golden.scores(name).reset_index(drop=True)
    # A CSV round trip at 17 significant digits is exact for float64.
    got = pd.read_csv(pd.io.common.StringIO(got.to_csv(index=False, float_format="%.17g")))
    here = _info.numerics()["numerics_key"]
    if here == WRITTEN_ON["numerics_key"]:
        pd.testing.assert_frame_equal(got[expected.columns], expected, check_exact=True)
    else:  # another vector ISA (or architecture): the promise is jtk verify's tolerance
        pd.testing.assert_frame_equal(got[expected.columns], expected, check_exact=False,
                                      rtol=results.CROSS_MACHINE_RTOL, atol=results.CROSS_MACHINE_ATOL)
    assert np.isfinite(expected["kl"]).all() and len(expected) == 16


def test_the_suite_checks_bits_on_every_x86_64_cpu_with_avx2():
    """conftest.py caps XLA at AVX2, so an AVX2 or AVX-512 machine has the golden file's key and checks the bits."""
    numerics = _info.numerics()
    if numerics["cpu_isa"] in ("AVX2", "AVX512"):
        assert numerics["numerics_key"] == WRITTEN_ON["numerics_key"] == "x86_64/AVX2"
