"""What students read renders without an emoji font: no emoji in the library's messages, the notebooks or the docs.

An emoji (✅, ❌, ⚠️, ⏱️, anything from U+1F000 on) shows as an empty box on a machine without an emoji font (a
fresh Debian server, many lab machines); text symbols such as ✓ and ✗ are in the ordinary text fonts (DejaVu,
Liberation). Checked: every file of jtk/ and docs/ and README.md, and the notebooks of notebooks/, solutions/ and
exercises/, with their saved outputs.
"""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Characters whose default presentation is an emoji (Unicode's Emoji_Presentation) below U+1F000 that text could
# plausibly use, plus the emoji variation selector that turns a text symbol (⚠, ⏱) into an emoji.
EMOJI_BMP = {0x231A, 0x231B, 0x23E9, 0x23EA, 0x23EB, 0x23EC, 0x23F0, 0x23F3, 0x25FD, 0x25FE, 0x2614, 0x2615, 0x267F,
             0x2693, 0x26A1, 0x26AA, 0x26AB, 0x26BD, 0x26BE, 0x26C4, 0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2, 0x26F3,
             0x26F5, 0x26FA, 0x26FD, 0x2705, 0x270A, 0x270B, 0x2728, 0x274C, 0x274E, 0x2753, 0x2754, 0x2755, 0x2757,
             0x2795, 0x2796, 0x2797, 0x27B0, 0x27BF, 0x2B1B, 0x2B1C, 0x2B50, 0x2B55, 0xFE0F}


def emoji_in(text: str) -> list[str]:
    """The emoji characters of ``text`` (each once, in order)."""
    found = [ch for ch in text if ord(ch) in EMOJI_BMP or 0x1F000 <= ord(ch) <= 0x1FAFF]
    return list(dict.fromkeys(found))


def _files():
    for folder, patterns in (("jtk", ("*.py", "*.md")), ("docs", ("*.md", "*.py", "*.html"))):
        for pattern in patterns:
            yield from sorted((ROOT / folder).rglob(pattern))
    yield ROOT / "README.md"
    for folder in ("notebooks", "solutions", "exercises"):
        yield from sorted((ROOT / folder).glob("*.ipynb"))


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_emoji(path):
    found = emoji_in(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: {found} need an emoji font; use a text symbol (✓, ✗, !)"


def test_the_check_marks_are_text_symbols():
    from jtk.course import checks, exercises

    assert emoji_in("✅ ❌ ⚠️ ⏱️ 🎉") == ["✅", "❌", "\ufe0f", "🎉"]
    assert not emoji_in(checks.PASS + "".join(exercises._STATUS_MARK.values()) + "✓✗")
