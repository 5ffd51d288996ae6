"""The layout of jtk (docs/development.md, "Layout") stays as designed:

* import-linter's contracts in pyproject.toml hold: the layers (platform → envs / agents → regression → testbed /
  ppc → plots → widgets → course → cli), the independence of the Neural Testbed and the regression studies, and no
  import cycle between jtk's packages and modules at any depth;
* no module uses a private name (``_name``) of another package, nor a private module of another package
  (benchmarks/import_graph.py finds them: ``from jtk.x import _y``, ``x._y`` on an imported jtk module);
* every package declares ``__all__`` and a docstring that says what it owns and what it may import;
* the one alias, ``jtk.checks`` (the students' name of ``jtk.course.checks``), is listed as one, so the site and the
  doctests skip it, and imports without a warning.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import shutil
import subprocess
import sys

import pytest

import jtk

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _import_graph():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "benchmarks" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_import_linter_contracts_hold():
    lint = shutil.which("lint-imports", path=str(pathlib.Path(sys.executable).parent))
    if lint is None:
        pytest.fail("lint-imports is not installed: pip install -c constraints.txt -e '.[dev]' (import-linter)")
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout and "3 kept" in done.stdout, done.stdout[-3000:]


def test_no_private_names_across_packages():
    graph = _import_graph()
    sites = []
    for path in sorted((ROOT / "jtk").rglob("*.py")):
        if "_labs" not in path.parts:
            sites += graph.private_sites(path)
    assert not sites, ("private names used across packages (make the name public in its package, or move the code "
                       "to the package that owns it):\n" + "\n".join(sites))


def test_the_private_name_finder_finds_each_kind_of_use(tmp_path):
    graph = _import_graph()
    probe = ROOT / "jtk" / "testbed" / "_architecture_probe.py"
    probe.write_text("from jtk.ppc.active import _check_split\nfrom jtk import results\nimport jtk.widgets._app\n"
                     "from jtk.agents import base as b\n\n\ndef f():\n    return results._canonical, b._REGISTRY\n")
    try:
        found = graph.private_sites(probe)
    finally:
        probe.unlink()
    assert sorted(s.split(": ", 1)[1] for s in found) == [
        "jtk.agents.base._REGISTRY", "jtk.ppc.active._check_split", "jtk.results._canonical",
        "jtk.widgets._app (module)"]


def _packages():
    return sorted(p.parent for p in (ROOT / "jtk").rglob("__init__.py") if "_labs" not in p.parts)


@pytest.mark.parametrize("init", _packages(), ids=lambda p: ".".join(p.relative_to(ROOT).parts))
def test_every_package_declares_all_and_says_what_it_owns(init):
    tree = ast.parse((init / "__init__.py").read_text())
    doc = ast.get_docstring(tree)
    assert doc and len(doc) > 80, f"{init}: a package docstring saying what it owns and what it may import"
    names = [t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]
    assert "__all__" in names, f"{init}/__init__.py declares no __all__"
    module = importlib.import_module(".".join(init.relative_to(ROOT).parts))
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{module.__name__}.__all__ names what it does not have: {missing}"


def test_the_one_alias_is_the_students_checks():
    """A top-level module that puts another module in its place (``sys.modules[__name__] = ...``) is an alias:
    only ``jtk.checks`` is one, and ``jtk`` lists it as such."""
    aliases = {p.stem for p in (ROOT / "jtk").glob("*.py") if "sys.modules[__name__]" in p.read_text()}
    assert aliases == set(jtk._ALIAS_SUBMODULES) == {"checks"}


def test_jtk_checks_is_the_course_checks_module_without_a_warning():
    import jtk.checks
    import jtk.course.checks

    assert jtk.checks is jtk.course.checks and "checks" in jtk._SUBMODULES


def test_jtk_checks_imports_without_a_warning():
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           "import jtk.checks, jtk.testbed, jtk.ppc, jtk.regression.coverage"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
