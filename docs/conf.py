"""Sphinx configuration of jtk's course site: guides, labs, results, API reference and changelog.

Build it with ``.ci/build-site OUT_DIR`` (the labs exported, warnings as errors, links checked), or the Sphinx part
alone with ``.venv/bin/sphinx-build -W --keep-going -n docs OUT_DIR``. Everything is offline: the theme bundles its
fonts and scripts, math is rendered to MathML at build time (``_ext/mathml.py``), and no inventory is fetched.
"""

from __future__ import annotations

import os
import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JAX_PLATFORMS", "cpu")  # autodoc imports jtk; the site needs no accelerator

import jtk  # noqa: E402

project = "jtk"
author = "the jtk authors"
copyright = "the jtk authors, Apache-2.0"
release = version = jtk.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "mathml",  # _ext/mathml.py: math and math_block nodes, and the labs' d_KL^τ notation, as MathML
    "jtk_api",  # _ext/jtk_api.py: the jtk-module directive of docs/api/, and names re-exported by packages
    "jtk_labs",  # _ext/jtk_labs.py: the jtk-lab directive of docs/labs/ (interactive page and downloads)
    "theme_a11y",  # _ext/theme_a11y.py: accessible names the theme leaves out (folded navigation entries)
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_templates", "_static", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
language = "en"

# --- MyST: $…$ and $$…$$ math, amsmath environments, ::: fences, definition lists, heading anchors for #links
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# --- The API reference: one page per public module (docs/api/), Google-style docstrings
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_mock_imports: list[str] = []
autosummary_generate = False  # the pages are docs/api/*.rst; the jtk-module directive fills them
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True
add_module_names = False
python_display_short_literal_types = True

# --- Warnings are errors (-W) and cross-references are checked (-n). No inventory of another project is fetched
# (the build is offline), so references to third-party and standard-library types cannot resolve: those, and only
# those, are not reported.
nitpicky = True
THIRD_PARTY = ("numpy", "np", "jax", "jnp", "jaxlib", "pandas", "pd", "matplotlib", "mpl", "plt", "ipywidgets",
               "widgets", "sklearn", "scipy", "optax", "seaborn", "dask", "distributed", "nbformat", "nbclient",
               "nbconvert", "IPython", "tqdm", "filelock", "psutil", "latex2mathml", "typing_extensions", "chex",
               "jupyter_client", "t")  # t: ``import typing as t``
STDLIB = ("pathlib", "os", "collections", "concurrent", "typing", "types", "subprocess", "threading", "argparse",
          "dataclasses", "datetime", "enum", "io", "re", "logging", "multiprocessing", "queue", "random",
          "zipfile", "json", "csv", "signal", "tempfile", "contextlib", "functools", "numbers", "abc")
nitpick_ignore_regex = [
    ("py:.*", rf"(?:{'|'.join(THIRD_PARTY + STDLIB)})(?:\..*)?"),
    # jtk's private modules (jtk._memory, jtk.widgets._app) are not documented; docstrings may still name them.
    ("py:.*", r"jtk(?:\.\w+)*\._\w+(?:\..*)?"),
    # Nor are private functions (the studies' docstrings name their helpers, e.g. :func:`_ensemble_train_batched`).
    ("py:.*", r"_\w+"),
]


# --- HTML: pydata-sphinx-theme, whose colours are chosen for WCAG 2.1 AA contrast; no analytics, no remote assets
html_theme = "pydata_sphinx_theme"
html_title = f"jtk {release}"
html_static_path = ["_static"]
html_css_files = ["jtk.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
    "use_edit_page_button": False,
}
html_context = {"default_mode": "light"}
html_math_renderer = "mathml"


def setup(app):
    # Shell sessions and CSV samples in the guides: CSV has no Pygments lexer, so it is shown as plain text.
    from pygments.lexers.special import TextLexer

    app.add_lexer("csv", TextLexer)
