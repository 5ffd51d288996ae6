"""jtk.regression.coverage_readings: the distance to the paper and the closest reading, on rows made up here."""


import pandas as pd
import pytest

from jtk.regression import coverage_readings as cr

# Results through numpy/scipy's BLAS or LAPACK, or compared with stored numbers: .ci/run reruns them under another
# OpenBLAS core type (docs/development.md, "Numerics on other CPUs").
pytestmark = pytest.mark.numerics


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
        assert set(methods) <= set(cr.METHODS) | ({"Ens"} if name == cr.LAB else set()), name
    assert "Ens" in cr.READINGS[cr.LAB][2]  # the plain ensemble beside the lab configuration: EnsAdvA without FGSM


def test_the_fgsm_table_orders_the_steps_marks_the_default_and_ends_with_the_plain_ensemble():
    steps = {cr.LAB: 0.20, "FGSM step 0.001": 0.26, "FGSM step 0.05": 0.14, "FGSM step 0.2": 0.18}
    cov = {(r, "EnsAdvA", f): c + (0.1 if f == 5.0 else 0.0) for r, c in steps.items() for f in (1.0, 5.0)}
    cov |= {(cr.LAB, "Ens", 1.0): 0.17, (cr.LAB, "Ens", 5.0): 0.23, (cr.LAB, "EnsBS", 1.0): 0.9,
            (cr.LAB, "EnsBS", 5.0): 0.7}
    lines = cr.fgsm_report(_rows(cov)).splitlines()
    table = [ln for ln in lines if ln.startswith("| ")]
    assert table[0] == ("| method | coverage f=1 | coverage f=5 | uncertainty f=1 | uncertainty f=5 | RMSE f=1 "
                        "| RMSE f=5 |")
    assert [row.split(" | ")[0] for row in table[1:]] == [
        "| EnsAdvA, FGSM step 0.001", "| EnsAdvA, FGSM step 0.01 (default)", "| EnsAdvA, FGSM step 0.05",
        "| EnsAdvA, FGSM step 0.2", "| Ens (no adversarial term)"]
    assert table[2] == "| EnsAdvA, FGSM step 0.01 (default) | 0.200 | 0.300 | 0.050 | 0.075 | 0.300 | 0.300 |"
    assert "EnsAdvA covers 0.14–0.36" in lines[-1]  # over the four steps and both f_main
    assert "the plain ensemble covers 0.17 (f_main = 1) and 0.23 (f_main = 5)" in lines[-1]


def test_the_pages_two_sections_are_what_the_stored_csv_gives():
    from jtk._docs import markers

    page = cr.PAGE.read_text()
    df = pd.read_csv(cr.OUT)
    for name, text in (("coverage-readings", cr.report(df)[0]), ("coverage-readings-fgsm", cr.fgsm_report(df))):
        begin, end = markers(name)
        assert page.count(begin) == 1 and page.count(end) == 1, name
        assert page.split(begin, 1)[1].split(end, 1)[0].strip("\n") == text.strip("\n"), (
            f"docs/coverage.md's {name!r} section is stale: run jtk reproduce coverage-readings")
