"""Colour checks for the figures and pages (no matplotlib import): text contrast and colour-vision deficiencies.

* :func:`contrast_ratio`: WCAG 2.x contrast of two sRGB colours (text needs ≥ 4.5:1 at level AA, large text and
  focus rings ≥ 3:1).
* :func:`simulate_cvd`: how a colour looks under protanopia, deuteranopia or tritanopia, with the matrices of
  Machado, Oliveira & Fernandes (2009), "A physiologically-based model for simulation of color vision
  deficiency", IEEE TVCG 15(6), Table 1, severity 1.0 (dichromacy), applied to linear sRGB.
* :func:`to_lab` and :func:`min_cvd_distance`: CIELAB (D65) and the smallest CIE76 ΔE between any two colours of
  a palette, with normal vision and under each simulated deficiency. ΔE ≈ 2.3 is a just-noticeable difference;
  lines and markers that must be told apart at a glance need much more (:data:`MIN_DELTA_E`).

The palettes themselves belong to the figures that use them (:data:`jtk.plots.coins.PALETTE`,
:data:`jtk.plots.testbed.AGENT_STYLES`, :data:`jtk.plots.regression.METHOD_STYLES`,
:data:`jtk.plots.active.CRITERION_STYLES`); tests run them through these checks.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

MACHADO_2009 = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
"""Machado et al. (2009) matrices at severity 1.0, acting on linear RGB column vectors."""

MIN_DELTA_E = 15.0
"""Smallest CIE76 ΔE the figures' categorical palettes keep between any two of their colours, under every
simulated deficiency (about six just-noticeable differences; line styles and markers tell them apart as well)."""

_SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                         [0.2126729, 0.7151522, 0.0721750],
                         [0.0193339, 0.1191920, 0.9503041]])
_WHITE_D65 = np.array([0.95047, 1.0, 1.08883])


def to_rgb(color) -> np.ndarray:
    """An sRGB triple in [0, 1] from a hex string ("#1a5fb4", "#15b"), a matplotlib colour name, or a triple."""
    if isinstance(color, str):
        text = color.strip()
        if text.startswith("#") and len(text) in (4, 7):
            digits = text[1:] if len(text) == 7 else "".join(c * 2 for c in text[1:])
            try:
                return np.array([int(digits[i:i + 2], 16) for i in (0, 2, 4)], np.float64) / 255.0
            except ValueError:
                pass
        from matplotlib.colors import to_rgb as mpl_to_rgb  # names such as "tab:red" (imported only for them)

        try:
            return np.asarray(mpl_to_rgb(text), np.float64)
        except ValueError:
            raise ValueError(f"color must be a hex string, a matplotlib colour name or an RGB triple, "
                             f"got {color!r}") from None
    rgb = np.asarray(color, np.float64).reshape(-1)[:3]
    if rgb.shape != (3,) or not np.all(np.isfinite(rgb)) or np.any((rgb < 0) | (rgb > 1)):
        raise ValueError(f"color must be an RGB triple in [0, 1], got {color!r}")
    return rgb


def _rgb_array(name: str, value) -> np.ndarray:
    """[..., 3] finite floats (the colour conversions' input), else a clear error naming ``name``."""
    from jtk import _checks

    c = _checks.as_float_array(name, value, dtype=np.float64)
    if c.shape[-1:] != (3,):
        raise ValueError(f"{name} must be RGB triples [..., 3], got shape {c.shape}")
    return c


def srgb_to_linear(rgb) -> np.ndarray:
    """The sRGB transfer function undone (IEC 61966-2-1): [..., 3] in [0, 1] → linear light."""
    c = _rgb_array("rgb", rgb)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(linear) -> np.ndarray:
    """Linear light [..., 3] → sRGB in [0, 1] (clipped first: a simulated colour can leave the gamut)."""
    c = np.clip(_rgb_array("linear", linear), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def relative_luminance(color) -> float:
    """WCAG 2.x relative luminance of an sRGB colour (0 = black, 1 = white)."""
    r, g, b = srgb_to_linear(to_rgb(color))
    return float(0.2126 * r + 0.7152 * g + 0.0722 * b)


def contrast_ratio(foreground, background) -> float:
    """WCAG 2.x contrast ratio (L1 + 0.05) / (L2 + 0.05) of two colours, from 1 (same) to 21 (black on white).

    >>> round(contrast_ratio("#767676", "#ffffff"), 2)
    4.54
    """
    for name, color in (("foreground", foreground), ("background", background)):
        try:
            to_rgb(color)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
    a, b = relative_luminance(foreground), relative_luminance(background)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def simulate_cvd(colors, kind: str) -> np.ndarray:
    """How sRGB colours [..., 3] look to a person with the colour-vision deficiency ``kind`` (sRGB, [..., 3]).

    Args:
      colors: sRGB values in [0, 1], shape [..., 3] (or anything :func:`to_rgb` reads, one colour).
      kind: "protanopia", "deuteranopia" or "tritanopia" (Machado et al. 2009, severity 1.0).
    """
    if kind not in MACHADO_2009:
        raise ValueError(f"kind must be one of {sorted(MACHADO_2009)}, got {kind!r}")
    rgb = np.asarray([to_rgb(colors)] if isinstance(colors, str) else colors, np.float64)
    if rgb.shape[-1] != 3:
        raise ValueError(f"colors must have shape [..., 3], got {rgb.shape}")
    return linear_to_srgb(srgb_to_linear(rgb) @ MACHADO_2009[kind].T)


def to_lab(rgb) -> np.ndarray:
    """CIELAB (D65 white) of sRGB colours [..., 3] in [0, 1] → [..., 3] (L*, a*, b*)."""
    xyz = srgb_to_linear(np.asarray(rgb, np.float64)) @ _SRGB_TO_XYZ.T / _WHITE_D65
    eps, kappa = 216 / 24389, 24389 / 27
    f = np.where(xyz > eps, np.cbrt(xyz), (kappa * xyz + 16) / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def min_cvd_distance(colors: Sequence) -> dict[str, tuple[float, int, int]]:
    """The smallest CIE76 ΔE between two colours of a palette: vision → (ΔE, i, j) of the closest pair.

    Args:
      colors: at least two colours (anything :func:`to_rgb` reads).

    Returns:
      for "normal" vision and each deficiency of :data:`MACHADO_2009`, the closest pair's ΔE and indices.
    """
    if isinstance(colors, str) or not hasattr(colors, "__iter__"):
        raise TypeError(f"colors must be a sequence of colours, got {colors!r}")
    rgb = np.stack([to_rgb(c) for c in colors])
    if len(rgb) < 2:
        raise ValueError(f"colors must hold at least two colours, got {len(rgb)}")
    out = {}
    for vision in ("normal", *MACHADO_2009):
        lab = to_lab(rgb if vision == "normal" else simulate_cvd(rgb, vision))
        d = np.linalg.norm(lab[:, None] - lab[None], axis=-1)
        d[np.diag_indices(len(rgb))] = np.inf
        i, j = np.unravel_index(int(np.argmin(d)), d.shape)
        out[vision] = (float(d[i, j]), int(min(i, j)), int(max(i, j)))
    return out
