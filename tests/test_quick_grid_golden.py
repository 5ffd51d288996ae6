"""Every registered agent's quick-grid scores are bit-identical to this machine's golden file (tests/data/golden/).

The golden files were written by tests/data/make_quick_grid_golden.py; a refactor that moves code must not move a
number. Regenerate them only with a change that is meant to change scores.

What jtk promises (docs/reference.md, "Reproducibility across machines"): the same bits wherever the numerics key
(the machine, the vector ISA XLA compiles for and, under a cap, the host's own ISA; recorded beside each golden
file) and the versions are the same, whatever the load, threads or cache; elsewhere agreement within ``jtk verify``'s
tolerance. A machine whose key has a golden file checks the bits; any other checks the tolerance against each file.
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

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics

WRITTEN_ON = golden.written()  # numerics key -> the writer's numerics
GOLDEN = {key: pd.read_csv(golden.path_for(key)) for key in WRITTEN_ON}
HERE = _info.numerics()["numerics_key"]


def test_there_is_a_golden_file_and_each_covers_every_registered_agent():
    assert GOLDEN, "tests/data/golden/ holds no golden file"
    for key, table in GOLDEN.items():
        assert sorted(table["agent"].unique()) == sorted(agents.names()), key
        assert WRITTEN_ON[key]["numerics_key"] == key


@pytest.mark.parametrize("name", sorted(agents.names()))
def test_quick_grid_scores_are_bit_identical(name):
    got = golden.scores(name).reset_index(drop=True)
    # A CSV round trip at 17 significant digits is exact for float64.
    got = pd.read_csv(pd.io.common.StringIO(got.to_csv(index=False, float_format="%.17g")))
    # This machine's key: the bits. Another key only: jtk verify's cross-machine tolerance against every file.
    compared = {HERE: GOLDEN[HERE]} if HERE in GOLDEN else GOLDEN
    for key, table in compared.items():
        expected = table[table["agent"] == name].reset_index(drop=True)
        assert json.loads(expected["config"][0]) == golden.CONFIGS.get(name, {})
        if key == HERE:
            pd.testing.assert_frame_equal(got[expected.columns], expected, check_exact=True)
        else:
            pd.testing.assert_frame_equal(got[expected.columns], expected, check_exact=False,
                                          rtol=results.CROSS_MACHINE_RTOL, atol=results.CROSS_MACHINE_ATOL)
        assert np.isfinite(expected["kl"]).all() and len(expected) == 16

