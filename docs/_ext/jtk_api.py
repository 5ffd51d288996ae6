"""The API reference: ``.. jtk-module:: NAME`` makes one module's page from its docstrings.

Each public module of jtk has one source in ``docs/api/`` holding this directive (``tests/test_site.py`` checks that
every public module has one). The directive writes, for autodoc and autosummary to fill in:

* the module's docstring;
* a summary table of its public names, each linked to where it is documented;
* the documentation of each name defined in the module (classes with their public methods, functions, exceptions,
  and module constants that carry a docstring), in source order;
* for a package, a table of its public submodules, each linked to its own page.

A module's public names are its ``__all__``, else the names it defines that do not start with ``_``. A name a
package re-exports from a public submodule (``jtk.agents.make`` is ``jtk.agents.base.make``) is documented once,
on the submodule's page, and the package's table links there; a name defined in a private module (``jtk.info`` is
``jtk._info.info``) is documented on the public module that exports it.

The same rule resolves cross-references: ``:func:`jtk.agents.make``` and the signature types autodoc writes find
the object where it is documented (the ``missing-reference`` handler below).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import types

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)

# Aliases have no page of their own: jtk.checks is the students' name of jtk.course.checks, documented there.
_jtk = importlib.import_module("jtk")
ALIAS_MODULES = {f"jtk.{name}" for name in _jtk._ALIAS_SUBMODULES}


def is_public(modname: str) -> bool:
    return not any(part.startswith("_") for part in modname.split("."))


def public_modules(root: str = "jtk") -> list[str]:
    """Every public module of the package ``root``, itself included, in name order (aliases left out)."""
    found = [root]
    package = importlib.import_module(root)
    for info in pkgutil.walk_packages(package.__path__, prefix=root + "."):
        if is_public(info.name) and info.name not in ALIAS_MODULES:
            found.append(info.name)
    return sorted(found)


def _defined_in(obj) -> str | None:
    return getattr(obj, "__module__", None) if inspect.isclass(obj) or inspect.isroutine(obj) else None


def public_names(module: types.ModuleType) -> list[str]:
    """``__all__``, else the module's own public classes and functions, its constants (upper-case names it
    assigns) and its other assignments that carry a docstring."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    attr_docs = _attribute_docs(module.__name__)
    assigned = _assigned_names(module)
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or isinstance(obj, types.ModuleType):
            continue
        if _defined_in(obj) == module.__name__:
            names.append(name)
        elif _defined_in(obj) is None and name in assigned and (name in attr_docs or name.isupper()):
            names.append(name)
    return names


def _assigned_names(module: types.ModuleType) -> set[str]:
    """Names the module's own source assigns at top level (so imported constants are not counted as its own)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def _trailing_comment(module: types.ModuleType, name: str) -> str:
    """The ``# comment`` on the line that assigns ``name`` (a constant's only documentation, often)."""
    try:
        source = inspect.getsource(module).splitlines()
    except (OSError, TypeError):
        return ""
    for line in source:
        if line.startswith(f"{name} =") or line.startswith(f"{name}: "):
            _, hash_, comment = line.partition("  # ")
            return comment.strip() if hash_ else ""
    return ""


def _attribute_docs(modname: str) -> set[str]:
    try:
        analyzer = ModuleAnalyzer.for_module(modname)
        return {name for (scope, name) in analyzer.find_attr_docs() if scope == ""}
    except Exception:  # no source (a C extension): no attribute docs
        return set()


def _source_order(modname: str, names: list[str]) -> list[str]:
    try:
        tags = ModuleAnalyzer.for_module(modname).find_tags()
    except Exception:
        return names
    order = {name: tags[name][1] for name in names if name in tags}
    return sorted(names, key=lambda n: (order.get(n, 10**9), names.index(n)))


def documented_where(modname: str, name: str, obj) -> str:
    """The module whose page documents ``modname.name``: its defining module if that is public, else ``modname``."""
    home = _defined_in(obj)
    if home and home != modname and is_public(home) and home.startswith("jtk.") and home not in ALIAS_MODULES:
        return home
    return modname


def module_rst(modname: str) -> list[str]:
    """The reStructuredText the directive parses for ``modname``."""
    module = importlib.import_module(modname)
    lines = [f".. automodule:: {modname}", ""]
    here: list[tuple[str, object]] = []
    table: list[str] = []
    submodules: list[str] = []
    for name in public_names(module):
        try:
            obj = getattr(module, name)
        except AttributeError:
            logger.warning("%s.__all__ names %r, which the module does not have", modname, name, type="jtk_api")
            continue
        if isinstance(obj, types.ModuleType):
            submodules.append(obj.__name__)
            continue
        home = documented_where(modname, name, obj)
        if home == modname:
            here.append((name, obj))
            if _defined_in(obj) or name in _attribute_docs(modname):  # autosummary would show a bare constant's
                table.append(f"~{modname}.{name}")                    # type's docstring (dict, tuple)
        else:
            table.append(f"~{home}.{obj.__qualname__}")
    if hasattr(module, "__path__"):
        submodules = sorted(set(submodules) | {m for m in public_modules(modname) if m.count(".") == modname.count(".") + 1})
    if table:  # autosummary resolves names relative to the current module, and wants them written so
        lines += [".. rubric:: Summary", "", ".. autosummary::", "   :nosignatures:", ""]
        lines += [f"   {_relative(entry, modname)}" for entry in table] + [""]
    if submodules:
        lines += [".. rubric:: Submodules", "", ".. autosummary::", ""]
        lines += [f"   {_relative(m, modname)}" for m in submodules] + [""]
        if modname != "jtk":  # a package's submodules sit under it in the navigation (jtk's own: docs/api/index.md)
            lines += [".. toctree::", "   :hidden:", ""] + [f"   {m}" for m in submodules] + [""]
    for name in _source_order(modname, [n for n, _ in here]):
        obj = getattr(module, name)
        full = f"{modname}.{name}"
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            lines += [f".. autoexception:: {full}", "   :show-inheritance:", ""]
        elif inspect.isclass(obj):
            lines += [f".. autoclass:: {full}", "   :members:", "   :show-inheritance:", ""]
        elif inspect.isroutine(obj):
            lines += [f".. autofunction:: {full}", ""]
        elif name in _attribute_docs(modname):
            lines += [f".. autodata:: {full}"] + ([] if _short(obj) else ["   :no-value:"]) + [""]
        else:  # a constant without a docstring: its value if short, and the comment on its line
            lines += [f".. py:data:: {name}", f"   :module: {modname}"]
            lines += ([f"   :value: {_short(obj)}"] if _short(obj) else []) + [""]
            comment = _trailing_comment(module, name)
            if comment:
                lines += [f"   {_escape(comment)}", ""]
    return lines


def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 60 and "\n" not in text else ""


def _escape(text: str) -> str:
    """A source comment as reStructuredText text: markup characters taken literally (``*``, backquotes, ``|``, and
    a ``_`` that ends a word, which would make a reference; ``d_KL^τ`` stays as it is, for the math transform)."""
    text = "".join("\\" + c if c in "*`|" else c for c in text)
    return re.sub(r"(?<=\w)_(?!\w)", r"\\_", text)


def _relative(name: str, modname: str) -> str:
    tilde = name.startswith("~")
    bare = name.lstrip("~")
    if bare.startswith(modname + "."):
        bare = bare[len(modname) + 1:]
    return ("~" if tilde else "") + bare


class JtkModule(SphinxDirective):
    """``.. jtk-module:: jtk.testbed``: the page of one module (see the module docstring)."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        try:
            rst = module_rst(modname)
        except ImportError as e:
            logger.warning("jtk-module: cannot import %s: %s", modname, e, location=self.get_location())
            return []
        self.env.note_dependency(importlib.import_module(modname).__file__)
        holder = nodes.Element()
        nested_parse_with_titles(self.state, StringList(rst, source=f"<jtk-module {modname}>"), holder)
        return holder.children


def _import_dotted(path: str):
    """The object at the dotted ``path`` (a module, or an attribute of one), or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:
            return None
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def resolve_reexport(app, env, node, contnode):
    """``jtk.agents.make`` → ``jtk.agents.base.make``: a reference to a re-exported name finds its documentation."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    candidates = [target]
    if node.get("py:module") and not target.startswith("jtk"):
        candidates.insert(0, f"{node['py:module']}.{target}")
    for candidate in candidates:
        if not candidate.startswith("jtk."):
            continue
        obj = _import_dotted(candidate)
        home = _defined_in(obj)
        if obj is None or home is None:
            continue
        canonical = f"{home}.{obj.__qualname__}"
        if canonical == candidate:
            continue
        if not is_public(home):  # documented on the public module that exports it, under that module's name
            continue
        domain = env.get_domain("py")
        new = node.deepcopy()
        new["reftarget"] = canonical
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, new, contnode)
    return None


def skip_namedtuple_fields(app, what, name, obj, skip, options):
    """A NamedTuple's fields ("Alias for field number 0") are documented by its docstring's Attributes section, not
    once more as members."""
    return True if type(obj).__name__ == "_tuplegetter" else None


def prose_attribute_docstrings(app, what, name, obj, options, lines):
    """jtk's attribute and property docstrings are prose (``Deprecated: use l2_scale``); napoleon would read the
    text before a first-line colon as the attribute's type. A leading colon tells it there is no type."""
    if what in ("attribute", "data", "property") and lines and ":" in lines[0] and not lines[0].startswith(":"):
        lines[0] = ": " + lines[0]


def setup(app):
    app.add_directive("jtk-module", JtkModule)
    app.connect("missing-reference", resolve_reexport)
    app.connect("autodoc-process-docstring", prose_attribute_docstrings, priority=400)  # before napoleon (500)
    app.connect("autodoc-skip-member", skip_namedtuple_fields)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
