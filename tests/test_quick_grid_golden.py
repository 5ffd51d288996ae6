"""Every registered agent's quick-grid scores are bit-identical to tests/data/quick_grid_golden.csv.

The golden file was written by tests/data/make_quick_grid_golden.py before the package layout was reorganised; a
refactor that moves code must not move a number. Regenerate it only with a change that is meant to change scores.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from jtk import agents

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
import make_quick_grid_golden as golden  # noqa: E402

GOLDEN = pd.read_csv(golden.PATH)



def test_golden_covers_every_registered_agent():
    assert sorted(GOLDEN["agent"].unique()) == sorted(agents.names())


@pytest.mark.parametrize("name", sorted(GOLDEN["agent"].unique()))
def test_quick_grid_scores_are_bit_identical(name):
    expected = GOLDEN[GOLDEN["agent"] == name].reset_index(drop=True)
    assert json.loads(expected["config"][0]) == golden.CONFIGS.get(name, {})
    got = golden.scores(name).reset_index(drop=True)
    # A CSV round trip at 17 significant digits is exact for float64.
    got = pd.read_csv(pd.io.common.StringIO(got.to_csv(index=False, float_format="%.17g")))
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_exact=True)
    assert np.isfinite(expected["kl"]).all() and len(expected) == 16
