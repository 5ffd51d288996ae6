"""Mathematics in exported pages: TeX and the labs' plain notation (``d_KL^τ``) as MathML, offline.

``jtk export`` renders the notebooks' Markdown without MathJax (no network), so TeX would otherwise reach the
student as source. :func:`protect_math` takes a Markdown cell, replaces every formula outside code by a placeholder
and returns the MathML of each (converted by the pure-Python ``latex2mathml``); after the Markdown is rendered,
:func:`restore_math` puts the MathML in. Chromium, Firefox and Safari render MathML Core natively, and screen
readers read it as mathematics.

What counts as a formula:

* ``$$…$$`` (display) and ``$…$`` (inline) TeX; ``\\$`` stays a dollar sign (the coin "$" of lab 01);
* the labs' plain notation for a symbol with a subscript and a superscript, such as ``d_KL^τ``, ``d_KL^10``
  (:data:`PLAIN_NOTATION`): a single letter, ``_`` and one letter or an upper-case abbreviation, ``^`` and digits,
  a Greek letter or one letter; and a single letter with a one-character subscript, ``f_j``
  (:data:`PLAIN_SUBSCRIPT`). Names such as ``num_train`` or ``f_main`` are not formulas and are left alone.
"""

from __future__ import annotations

import re

PLACEHOLDER = "JTKMATH{:05d}Q"
_PLACEHOLDER_RE = re.compile(r"JTKMATH(\d{5})Q")

PLAIN_NOTATION = re.compile(r"(?<![\w\\$])([A-Za-z])_([A-Z]{2,3}|[A-Za-z])\^(\d+|[A-Za-zα-ωΑ-Ω])(?![\w^])")
"""``d_KL^τ``: base letter, subscript (one letter or a 2–3 letter upper-case abbreviation), superscript."""

PLAIN_SUBSCRIPT = re.compile(r"(?<![\w\\$])([A-Za-zα-ωΑ-Ω])_([A-Za-z0-9])(?![\w^])")
"""``f_j``, ``ρ_j``, ``x_1``: a single letter with a one-character subscript (``f_main`` is a name, not this)."""

_CODE = re.compile(r"(```[\s\S]*?```|~~~[\s\S]*?~~~|`+[^`\n]*`+|<code>[\s\S]*?</code>|<pre>[\s\S]*?</pre>)")
_DISPLAY = re.compile(r"(?<!\\)\$\$([\s\S]+?)(?<!\\)\$\$")
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)([^$\n]+?)(?<!\\)\$(?!\$)")
_GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon", "θ": r"\theta",
          "λ": r"\lambda", "μ": r"\mu", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "φ": r"\phi", "ω": r"\omega"}


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """MathML for a TeX formula (inline, or a block when ``display``).

    Raises:
      ValueError: ``tex`` is empty or latex2mathml cannot parse it (the message names the formula).
    """
    import latex2mathml.converter

    if not isinstance(tex, str) or not tex.strip():
        raise ValueError(f"tex must be a non-empty TeX formula, got {tex!r}")
    try:
        mathml = latex2mathml.converter.convert(tex.strip(), display="block" if display else "inline")
    except Exception as e:  # latex2mathml raises its own exception types for unknown commands and bad braces
        raise ValueError(f"tex must be a formula latex2mathml can convert, got {tex!r} ({type(e).__name__}: "
                         f"{e})") from None
    return mathml


def plain_to_tex(match: re.Match) -> str:
    """TeX for a :data:`PLAIN_NOTATION` or :data:`PLAIN_SUBSCRIPT` match: ``d_KL^τ`` → ``d_{\\mathrm{KL}}^{\\tau}``."""
    base, sub, *sup = match.groups()
    base = _GREEK.get(base, base)
    sub = rf"\mathrm{{{sub}}}" if len(sub) > 1 else sub
    return f"{base}_{{{sub}}}" + (f"^{{{_GREEK.get(sup[0], sup[0])}}}" if sup else "")


def _plain(text: str, convert) -> str:
    text = PLAIN_NOTATION.sub(convert, text)
    return PLAIN_SUBSCRIPT.sub(convert, text)


def protect_math(markdown: str, formulas: list[str]) -> str:
    """``markdown`` with each formula outside code replaced by a placeholder; its MathML appended to ``formulas``.

    Args:
      markdown: the source of a Markdown cell.
      formulas: the list the MathML of the formulas found is appended to (shared by the cells of a page, so the
        placeholders stay unique).
    """
    def stash(mathml: str) -> str:
        formulas.append(mathml)
        return PLACEHOLDER.format(len(formulas) - 1)

    def prose(text: str) -> str:
        text = _DISPLAY.sub(lambda m: stash(tex_to_mathml(m.group(1), display=True)), text)
        text = _INLINE.sub(lambda m: stash(tex_to_mathml(m.group(1))), text)
        return _plain(text, lambda m: stash(tex_to_mathml(plain_to_tex(m))))

    parts = _CODE.split(markdown)
    return "".join(part if i % 2 else prose(part) for i, part in enumerate(parts))


def restore_math(html: str, formulas: list[str]) -> str:
    """Puts the MathML of :func:`protect_math`'s placeholders into rendered HTML."""
    return _PLACEHOLDER_RE.sub(lambda m: formulas[int(m.group(1))], html)


def plain_math_html(html: str) -> str:
    """:data:`PLAIN_NOTATION` in the text of an HTML fragment (a table's headers, say) as MathML; tags untouched."""
    return re.sub(r">([^<>]+)<", lambda m: ">" + _plain(m.group(1), lambda n: tex_to_mathml(plain_to_tex(n)))
                  + "<", html)
