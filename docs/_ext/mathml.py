"""Math as MathML, rendered at build time: no MathJax, no network, no TeX left on a page.

Registers the HTML math renderer ``mathml`` (``html_math_renderer = "mathml"`` in conf.py). Inline ``math`` and
display ``math_block`` nodes (MyST ``$…$``, ``$$…$$``, amsmath environments, ``{math}``, docstrings' ``:math:``) are
converted by :func:`jtk.course._math.tex_to_mathml`, the converter ``jtk export`` uses for the lab pages (latex2mathml,
pure Python), so the site and the labs show a formula the same way. Browsers render MathML Core natively and screen
readers read it as mathematics.

The labs' plain notation (``d_KL^τ``, ``d_KL^10``, ``f_j``: :data:`jtk.course._math.PLAIN_NOTATION` and
:data:`jtk.course._math.PLAIN_SUBSCRIPT`) in prose becomes math too, so the docs can keep writing it as the notebooks do.
Code, literals, signatures and parameter names are left alone.

A formula latex2mathml cannot convert is a warning naming it (an error under ``sphinx-build -W``).
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.ext.autosummary import autosummary_table
from sphinx.locale import _
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

from jtk.course import _math

logger = logging.getLogger(__name__)

# Text under these is code or markup, never prose: the plain notation there stays as written.
_NOT_PROSE = (nodes.literal, nodes.FixedTextElement, nodes.raw, nodes.math, nodes.math_block, nodes.target,
              nodes.substitution_definition, nodes.option_string, addnodes.desc_signature, addnodes.literal_strong,
              addnodes.literal_emphasis, addnodes.pending_xref, addnodes.toctree)
# ... except autosummary's table of summary lines, a comment node until it is written as a table: prose.
_PROSE_ALL_THE_SAME = (autosummary_table,)


def _convert(translator, node, tex: str, display: bool) -> str:
    try:
        return _math.tex_to_mathml(tex, display=display)
    except ValueError as e:
        logger.warning("math: %s", e, location=node, type="mathml")
        return f"<code>{translator.encode(tex)}</code>"


def html_visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_convert(self, node, node.astext(), display=False))
    self.body.append("</span>")
    raise nodes.SkipNode


def html_visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node.get("number"):
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    tex = node.astext()
    if not node.get("no-wrap", node.get("nowrap", False)):
        # As Sphinx's MathJax renderer does: blank-line separated equations, and \\ line breaks, are aligned rows.
        parts = [p.strip() for p in tex.split("\n\n") if p.strip()]
        if len(parts) > 1 or r"\\" in tex:
            tex = r"\begin{split}" + r"\\".join(parts) + r"\end{split}"
    self.body.append(_convert(self, node, tex, display=True))
    self.body.append("</div>\n")
    raise nodes.SkipNode


class PlainNotation(SphinxTransform):
    """``d_KL^τ`` and ``f_j`` in prose become math nodes (rendered as MathML like any other formula)."""

    default_priority = 400

    def apply(self, **kwargs) -> None:
        for text in list(self.document.findall(nodes.Text)):
            if not (_math.PLAIN_NOTATION.search(text) or _math.PLAIN_SUBSCRIPT.search(text)):
                continue
            parent = text.parent
            if parent is None or _under(parent, _NOT_PROSE):
                continue
            parent.replace(text, _split(str(text)))


def _under(node, kinds) -> bool:
    while node is not None:
        if isinstance(node, _PROSE_ALL_THE_SAME):
            return False
        if isinstance(node, kinds):
            return True
        node = node.parent
    return False


def _split(text: str) -> list[nodes.Node]:
    """``text`` as Text and math nodes, one math node per plain-notation formula."""
    marks: list[tuple[int, int, str]] = []
    for pattern in (_math.PLAIN_NOTATION, _math.PLAIN_SUBSCRIPT):
        for m in pattern.finditer(text):
            if not any(a < m.end() and m.start() < b for a, b, _ in marks):
                marks.append((m.start(), m.end(), _math.plain_to_tex(m)))
    out: list[nodes.Node] = []
    pos = 0
    for start, end, tex in sorted(marks):
        if start > pos:
            out.append(nodes.Text(text[pos:start]))
        out.append(nodes.math(text[start:end], tex))
        pos = end
    if pos < len(text):
        out.append(nodes.Text(text[pos:]))
    return out


def setup(app):
    app.add_html_math_renderer("mathml", (html_visit_math, None), (html_visit_displaymath, None))
    app.add_transform(PlainNotation)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
