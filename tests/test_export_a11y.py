"""jtk export, accessible: TeX and the labs' notation as MathML, figures with their text alternatives, labelled
controls. (The rendered pages are checked in Chromium with axe-core by tests/browser/test_accessibility.py.)"""

import html
import json
import re

import nbformat
import pytest

from jtk.course import _math, export
from jtk.plots.layout import alt_text
from jtk.widgets import coins as wc


# ------------------------------------------------------------------ mathematics
def test_tex_and_the_plain_notation_become_mathml_outside_code():
    formulas: list[str] = []
    source = (r"Loss $d_{KL}^{\tau}$, display $$\sum_i x_i$$, d_KL^10 and ρ_j; coin \$ and \$; "
              "names num_train, f_main; `d_KL^1` in code\n```\nx = d_KL^2\n```")
    out = _math.protect_math(source, formulas)
    assert len(formulas) == 4 and "$" not in out.replace(r"\$", "")
    assert "num_train, f_main" in out and "`d_KL^1`" in out and "x = d_KL^2" in out  # names and code unchanged
    assert out.count(r"\$") == 2  # the coin "$" stays a dollar sign
    html = _math.restore_math(out, formulas)
    assert html.count("<math") == 4 and 'display="block"' in html
    assert "d_KL" not in html.split("`d_KL^1`")[0]  # no TeX left in the prose before the code
    kl10 = next(f for f in formulas if "<mn>10</mn>" in f)
    assert "<msubsup><mi>d</mi>" in kl10 and '<mi mathvariant="normal">K</mi>' in kl10  # d, KL upright, 10


def test_tex_to_mathml_names_a_formula_it_cannot_convert():
    with pytest.raises(ValueError, match=r"tex must be a formula latex2mathml can convert, got '\\\\frac\{'"):
        _math.tex_to_mathml(r"\frac{")
    with pytest.raises(ValueError, match="tex must be a non-empty TeX formula"):
        _math.tex_to_mathml(" ")


def test_table_headers_with_the_notation_become_mathml():
    html = "<table><tr><th>d_KL^1</th><th>agent</th></tr><tr><td>mlp</td></tr></table>"
    out = _math.plain_math_html(html)
    assert out.count("<math") == 1 and "<th>agent</th>" in out and "d_KL^1" not in out


# ------------------------------------------------------------------ figures
def test_a_figure_output_becomes_an_img_with_its_alt_and_one_without_is_counted():
    fig = wc.joint_grid_figure(2)
    data, metadata = fig._repr_mimebundle_()
    output = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", **data}, metadata=metadata)
    assert export._accessible_output(output) == 0
    img = output["data"]["text/html"]
    assert img.startswith('<img src="data:image/png;base64,iVBORw0KGgo="') and list(output["data"]) == ["text/html"]
    assert f'alt="{html.escape(alt_text(fig))}"' in img
    bare = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})
    assert export._accessible_output(bare) == 1 and "image/png" in bare["data"]


def test_every_captured_frame_has_the_alt_of_the_figure_it_shows():
    spec = export.capture_app(wc.joint_grid_app(flips=3))
    assert spec["views"] == ["Image"] and set(spec["alts"]) == set(spec["frames"])
    for n in (1, 4, wc.MAX_FLIPS):
        (alt,) = spec["alts"][str(n - 1)]
        assert spec["contents"][alt] == alt_text(wc.joint_grid_figure(n))
    (control,) = spec["controls"]
    assert control["label"] == "flips n" and "number of flips" in control["tip"]


def test_a_toggle_without_description_is_labelled_by_the_label_beside_it():
    import ipywidgets as widgets

    from jtk.widgets._app import App

    toggle = widgets.ToggleButtons(options=["a", "b"])
    app = App([widgets.HBox([widgets.Label("agent"), toggle])])
    assert export._describe(toggle, "control 0", app) == "agent"
    assert export._describe(toggle, "control 0") == "control 0"


def test_the_app_block_is_a_named_region_whose_script_labels_every_control():
    spec = export.capture_app(wc.coin_flip_app(seed=0), max_clicks=1)
    block = export.app_html(spec, "jtk-app-1")
    assert 'role="region" aria-label="coin-flipping app"' in block
    data = json.loads(re.search(r'application/json[^>]*>(.*?)</script>', block, flags=re.S).group(1)
                      .replace("<\\/", "</"))
    assert data["views"] == ["HTML", "Image"]  # the status line and the figure: the figure has its alt everywhere
    assert data["alts"] and all(alts[0] is None and alts[1] is not None for alts in data["alts"].values())
    script = block.split("<script>")[1]
    for needle in ("lab.htmlFor=id", 'setAttribute("aria-valuetext"', 'setAttribute("role","group")',
                   'setAttribute("aria-labelledby"', "img.alt="):
        assert needle in script


# ------------------------------------------------------------------ a page
def test_an_exported_page_has_mathml_alt_texts_and_aa_colours(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Math lab\n\nThe loss $\\tau \\cdot d$ and d_KL^10, coin \\$."),
                nbformat.v4.new_code_cell("%matplotlib inline\nfrom jtk.widgets import coins as wc\n"
                                          "wc.joint_grid_figure(2)")]
    path = tmp_path / "math.ipynb"
    nbformat.write(nb, path)
    (result,) = export.export_site([path], tmp_path / "site")
    page = result.page.read_text()
    body = page.split("<body", 1)[1]
    assert body.count("<math") == 2 and "d_KL^10" not in body and "\\tau" not in body
    assert result.title == "Math lab" and result.images_without_alt == 0
    alts = re.findall(r'<img [^>]*alt="([^"]*)"', body)
    assert len(alts) == 1 and alts[0].startswith("Equal marginals, different joints (2 flips). For each coin")
    assert "No description has been provided" not in body
    assert "--jp-mirror-editor-number-color:#007a00" in page and ":focus-visible{outline:3px solid" in page
