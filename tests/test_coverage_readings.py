"""benchmarks/coverage_readings.py: the distance to the paper and the closest reading, on rows made up here."""

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import coverage_readings as cr  # noqa: E402


def _rows(cov: dict) -> pd.DataFrame:
    rows = []
    for (reading, method, f_main), c in cov.items():
        rows.append({"reading": reading, "f_main": f_main, "method": method, "k": 20, "coverage_in": c,
                     "rmse_in": 0.3, "uncertainty_in": c / 4, "seconds": 1.0})
    for reading in {r for r, _, _ in cov}:
        for f_main in (1.0, 5.0):
            rows.append({"reading": reading, "f_main": f_main, "method": "BLR", "k": 20, "coverage_in": 0.95,
                         "rmse_in": 0.2, "uncertainty_in": 0.2, "seconds": 0.1})
    return pd.DataFrame(rows)


def test_distance_is_the_mean_gap_to_the_paper_and_the_closest_reading_is_named():
    base = "jtk lab (input_scale 8)"
    df = _rows({(base, "EnsAdvA", 1.0): 0.25, (base, "EnsAdvA", 5.0): 0.40,
                ("32 members", "EnsAdvA", 1.0): 0.85, ("32 members", "EnsAdvA", 5.0): 0.90,
                (base, "EnsBS", 1.0): 0.95, (base, "EnsBS", 5.0): 0.80,
                ("32 members", "EnsBS", 1.0): 0.75, ("32 members", "EnsBS", 5.0): 0.70})
    text, table = cr.report(df)
    dist = table.set_index(["method", "reading"])["distance"]
    # mean of |0.25 − 0.95| and |0.40 − 1.0|; the paper: 0.95 at f_main = 1, 1.0 at 5
    assert dist[("EnsAdvA", base)] == pytest.approx((0.70 + 0.60) / 2)
    assert dist[("EnsAdvA", "32 members")] == pytest.approx((0.10 + 0.10) / 2)
    assert dist[("EnsBS", base)] == pytest.approx((0.0 + 0.20) / 2)
    assert "**EnsAdvA**: closest reading *32 members*, distance 0.10" in text
    assert "**EnsBS**: closest reading *jtk lab (input_scale 8)*, distance 0.10" in text
    assert "covered 0.95–0.95" in text  # BLR, the check beside every cell
    assert "coverage stays at or below 0.90" in text


def test_every_reading_changes_one_setting_of_the_lab_configuration():
    base_scale, base_overrides, _ = cr.READINGS["jtk lab (input_scale 8)"]
    assert base_overrides == {}
    for name, (scale, overrides, methods) in cr.READINGS.items():
        assert len(overrides) + (scale != base_scale) <= 1, name
        assert set(methods) <= set(cr.METHODS), name
