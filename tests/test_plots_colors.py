"""Colours: WCAG contrast, CIELAB against published values, the Machado et al. (2009) simulation, and every
categorical palette of the figures kept apart under protanopia, deuteranopia and tritanopia."""

import itertools

import numpy as np
import pytest

from jtk.course import export
from jtk.plots import active, coins, colors, regression, testbed

# Figures draw a palette's colours together; each must stay distinguishable for a dichromat, each line must show
# on the white background (WCAG 2.1 1.4.11: 3:1 for graphics), and line style + marker tell them apart as well.
PALETTES = {
    "agents": {name: style for name, style in testbed.AGENT_STYLES.items()},
    "regression methods": dict(regression.METHOD_STYLES),
    "TAL criteria": dict(active.CRITERION_STYLES),
    "decision policies": {f"policy {i}": (c, ls, "o") for i, (c, ls) in
                          enumerate(zip(coins.POLICY_COLORS, coins.POLICY_STYLES))},
}


# ------------------------------------------------------------------ contrast (WCAG 2.x definition)
def test_contrast_ratio_matches_the_wcag_definition():
    assert colors.contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert colors.contrast_ratio("#ffffff", "#ffffff") == pytest.approx(1.0)
    # WebAIM's checker: #767676 on white is the lightest grey that passes AA, 4.54:1; #777777 fails with 4.48:1
    assert colors.contrast_ratio("#767676", "#fff") == pytest.approx(4.54, abs=0.005)
    assert colors.contrast_ratio("#777777", "#fff") == pytest.approx(4.48, abs=0.005)
    assert colors.contrast_ratio("tab:blue", "white") == pytest.approx(colors.contrast_ratio("#1f77b4", "#ffffff"))
    with pytest.raises(ValueError, match="color must be"):
        colors.contrast_ratio("#12", "#fff")


# ------------------------------------------------------------------ CIELAB and the CVD simulation
@pytest.mark.parametrize("rgb, lab", [
    ((1.0, 1.0, 1.0), (100.0, 0.0, 0.0)),
    ((1.0, 0.0, 0.0), (53.24, 80.09, 67.20)),  # the standard sRGB primaries in CIELAB (D65)
    ((0.0, 1.0, 0.0), (87.73, -86.18, 83.18)),
    ((0.0, 0.0, 1.0), (32.30, 79.19, -107.86)),
    ((0.5, 0.5, 0.5), (53.39, 0.0, 0.0)),
])
def test_cielab_of_reference_colours(rgb, lab):
    np.testing.assert_allclose(colors.to_lab(np.array(rgb)), lab, atol=0.02)


@pytest.mark.parametrize("kind", sorted(colors.MACHADO_2009))
def test_simulation_keeps_greys_and_matches_the_matrix_in_linear_light(kind):
    m = colors.MACHADO_2009[kind]
    np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=2e-6)  # neutral stays neutral (Machado et al., §4)
    greys = np.linspace(0, 1, 5)[:, None].repeat(3, axis=1)
    np.testing.assert_allclose(colors.simulate_cvd(greys, kind), greys, atol=1e-5)
    # one colour by hand: sRGB → linear (IEC 61966-2-1) → matrix → clip → sRGB
    c = np.array([0.8, 0.3, 0.1])
    lin = np.array([((v + 0.055) / 1.055) ** 2.4 if v > 0.04045 else v / 12.92 for v in c])
    out = np.clip(m @ lin, 0, 1)
    expected = np.array([1.055 * v ** (1 / 2.4) - 0.055 if v > 0.0031308 else 12.92 * v for v in out])
    np.testing.assert_allclose(colors.simulate_cvd(c[None], kind)[0], expected, atol=1e-9)


def test_red_and_green_collapse_for_deuteranopes_and_fade_for_protanopes_but_not_for_tritanopes():
    red_green = ["#d62728", "#2ca02c"]  # matplotlib's tab:red and tab:green, a classic confusion pair
    d = {vision: delta for vision, (delta, _, _) in colors.min_cvd_distance(red_green).items()}
    assert d["normal"] > 100
    assert d["deuteranopia"] < 10  # the hue difference is gone
    assert d["protanopia"] < d["normal"] / 3  # only lightness is left (red looks dark to a protanope)
    assert d["tritanopia"] > 100
    with pytest.raises(ValueError, match="kind must be one of"):
        colors.simulate_cvd(np.zeros((1, 3)), "achromatopsia")


# ------------------------------------------------------------------ the figures' palettes
@pytest.mark.parametrize("name", sorted(PALETTES))
def test_palette_stays_apart_under_every_simulated_deficiency(name):
    styles = PALETTES[name]
    distances = colors.min_cvd_distance([c for c, _, _ in styles.values()])
    labels = list(styles)
    for vision, (delta, i, j) in distances.items():
        assert delta >= colors.MIN_DELTA_E, (f"{name}: {labels[i]} and {labels[j]} are only ΔE {delta:.1f} apart "
                                             f"under {vision} (need {colors.MIN_DELTA_E})")


@pytest.mark.parametrize("name", sorted(PALETTES))
def test_palette_lines_show_on_white_and_differ_by_more_than_colour(name):
    styles = PALETTES[name]
    for label, (color, _, _) in styles.items():
        assert colors.contrast_ratio(color, "#ffffff") >= 3.0, f"{name}: {label}'s {color} is too light on white"
    if name != "decision policies":  # four policies: four line styles (their markers are the same dots)
        pairs = [(ls, marker) for _, ls, marker in styles.values()]
        assert len(set(pairs)) == len(pairs), f"{name}: two entries share line style and marker"
        assert len({m for _, _, m in styles.values()}) == len(styles), f"{name}: a marker is used twice"
    else:
        assert len({ls for _, ls, _ in styles.values()}) == len(styles)


def test_unknown_agents_get_palette_colours_and_a_marker():
    color, ls, marker = testbed.agent_style("my_agent", 3)
    assert color in [c for c, _, _ in testbed.AGENT_STYLES.values()] and ls and marker


# ------------------------------------------------------------------ page colours of jtk export
@pytest.mark.parametrize("var, color", sorted(export.PAGE_COLORS.items()))
def test_exported_page_text_colours_reach_aa(var, color):
    for background in export.PAGE_BACKGROUNDS:
        assert colors.contrast_ratio(color, background) >= 4.5, (var, color, background)


def test_exported_controls_focus_ring_and_pressed_buttons():
    assert colors.contrast_ratio(export.FOCUS_RING, "#ffffff") >= 3.0  # WCAG 2.1 1.4.11 non-text contrast
    assert colors.contrast_ratio(*export.PRESSED) >= 4.5
    for a, b in itertools.combinations(export.PAGE_BACKGROUNDS, 2):
        assert colors.contrast_ratio(a, b) < 1.2  # the two backgrounds the text colours are checked on are light
