"""docs/coverage.md's tables: made by ``jtk reproduce coverage-tables`` (``python -m jtk.regression.coverage_study
--docs``) from the stored CSVs, never by hand."""

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
from jtk._docs import markers  # noqa: E402
from jtk.regression import coverage_study as cs  # noqa: E402


def test_every_table_of_the_page_is_what_the_stored_csvs_give():
    page = (ROOT / "docs" / "coverage.md").read_text()
    tables = cs.doc_tables()
    assert len(tables) == 16
    for name, text in tables.items():
        begin, end = markers(name)
        assert page.count(begin) == 1 and page.count(end) == 1, name
        stored = page.split(begin, 1)[1].split(end, 1)[0].strip("\n")
        assert stored == text, f"docs/coverage.md's {name!r} table is stale: run jtk reproduce coverage-tables"


def _summary(by, values, methods=("BLR", "BD")):
    rows = []
    for v in values:
        for i, m in enumerate(methods):
            for region, shift in (("in", 0.0), ("out", 0.5)):
                rows.append({by: v, "method": m, "region": region, "coverage": 0.1 * (i + 1) + shift / 10,
                             "rmse": v + i + shift, "uncertainty": 12.345 * i + shift})
    return pd.DataFrame(rows)


def test_summary_columns_are_picked_by_value_region_and_rounded_to_two_decimals():
    tables = cs._e1_literal(_summary("f_main", [1.0, 2.0]))
    coverage = tables["coverage-e1-literal-coverage"].splitlines()
    assert coverage[0] == "| method | f=1 out | f=1 in | f=2 out | f=2 in |"
    assert coverage[1] == "|---|---:|---:|---:|---:|"
    assert coverage[2:] == ["| BLR | 0.15 | 0.10 | 0.15 | 0.10 |", "| BD | 0.25 | 0.20 | 0.25 | 0.20 |"]
    rmse = tables["coverage-e1-literal-in"].splitlines()
    assert rmse[0] == "| method | RMSE f=1 | f=2 | uncertainty f=1 | f=2 |"
    assert rmse[3] == "| BD | 2.00 | 3.00 | 12.35 | 12.35 |"  # in distribution only


def test_e2_cells_keep_three_significant_digits_and_coordinates_get_a_minus_sign():
    at = pd.DataFrame([{"requested": lam, "dim": d, "method": "BD", "coverage": 0.5, "rmse": 51.23, "uncertainty": 7.123}
                       for lam in (0.6, 0.07) for d in (1, 2)])
    tables = cs._e2(_summary("dim", [1, 2], methods=("BD",)), at)
    lines = tables["coverage-e2-at-inputs"].splitlines()
    assert lines[0] == "| method | λ=0.6, d=1 | λ=0.6, d=2 | λ=0.07, d=1 | λ=0.07, d=2 |"
    assert lines[2] == "| BD | " + " | ".join(["0.50 / 51.2 / 7.12"] * 4) + " |"
    assert tables["coverage-e2-summary"].splitlines()[0] == (
        "| method | coverage d=1 in | d=1 out | d=2 in | d=2 out | RMSE d=1 in | d=2 in | unc. d=1 in | d=2 in |")
    assert cs._minus(-2.38) == "−2.38" and cs._minus(1.2) == "1.2"


def test_a_missing_row_is_an_error_not_a_blank_cell():
    summary = _summary("f_main", [1.0, 2.0])
    with pytest.raises(KeyError):
        cs._e1_literal(summary[~((summary.method == "BD") & (summary.f_main == 2.0) & (summary.region == "in"))])


def test_a_timing_run_of_one_preset_keeps_the_other_presets_rows(tmp_path):
    path = tmp_path / "coverage_timings.csv"
    row = lambda preset, method, s: {"preset": preset, "method": method, "k": 50, "cold_seconds": s,  # noqa: E731
                                     "warm_seconds": s, "warm_seconds_k50": s, "note": "measured"}
    pd.DataFrame([row("lab", "BD", 9.0), row("paper", "BD", 50.0), row("paper", "Ens", 1432.0)]).to_csv(path,
                                                                                                       index=False)
    merged = cs.merge_timings(path, pd.DataFrame([row("lab", "BD", 3.0), row("lab", "CD", 1.0)]))
    got = [(r.preset, r.method, r.cold_seconds) for r in merged.itertuples()]
    assert got == [("lab", "BD", 3.0), ("paper", "BD", 50.0), ("paper", "Ens", 1432.0), ("lab", "CD", 1.0)]
    assert cs.merge_timings(tmp_path / "none.csv", merged).equals(merged)  # nothing stored yet: the new rows


def test_the_truth_table_counts_points_per_period_of_the_top_frequency_for_both_readings():
    truth = cs.truth_table(f_mains=(1.0, 5.0))
    at = truth.set_index(["input_scale", "f_main"])
    assert at.loc[(1.0, 1.0), "points_per_period"] == pytest.approx(50 / (8 * 1.1))  # 8 periods on [−4, 4]
    assert at.loc[(8.0, 5.0), "points_per_period"] == pytest.approx(50 / (5 * 1.1))  # f_main periods on [−4, 4]
    assert 0.4 < at.loc[(8.0, 1.0), "truth_rms_in"] < 0.7
    lines = cs._truth(truth)["coverage-e1-truth"].splitlines()
    assert lines[0] == "| f_main | 1 | 5 |"
    assert lines[4] == "| training points per period of the top frequency, literal | 5.7 | 1.1 |"
    assert lines[5] == "| training points per period of the top frequency, input_scale 8 | 45.5 | 9.1 |"


def test_a_paper_preset_table_has_one_row_per_method_in_run_order_with_its_k():
    summary = _summary("f_main", [1.0], methods=("BLR", "EnsBS")).assign(k=20)
    lines = cs._paper_e1(summary, "x")["x"].splitlines()
    assert lines[0] == "| method | coverage in | coverage out | RMSE in | uncertainty in | uncertainty out | k |"
    assert lines[3] == "| EnsBS | 0.20 | 0.25 | 2.00 | 12.35 | 12.85 | 20 |"


def test_the_e2_methods_and_the_resampled_ensembles_follow_the_e2_preset():
    methods = cs.lab_methods(0.5, "paper", ["BLR", "BD"])
    assert methods[:2] == ["BLR", "BD"]
    label, model = methods[2]
    assert label == "EnsBS(0.5)" and model.hidden == (128, 64, 32) and model.bootstrap_size == 0.5
    assert cs.lab_methods(1.0) == list(cs.cv.ALL_METHODS)
