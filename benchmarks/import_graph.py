"""The shape of jtk's import graph: modules, import edges, cycles, upward imports and private names used across
packages. Prints the figures; ``--list`` names every cycle, upward import and private-name site.

    .venv/bin/python benchmarks/import_graph.py [--list]

* The graph is grimp's (the library import-linter runs on): every ``import`` of one jtk module by another, the
  ones inside functions included; an edge is one (importer, imported) pair of modules.
* A cycle is a strongly connected component of two or more modules.
* Upward imports: edges from a lower layer to a higher one, in the layers of docs/development.md (platform →
  envs → agents → regression → testbed / ppc → plots → widgets → course → cli); ``jtk.checks``, the students' name
  of ``jtk.course.checks``, is in the course's layer.
* Private names across packages (tests/test_architecture.py keeps it at 0): a ``_name`` of another package's
  module, imported (``from jtk.testbed import _rows``) or read as an attribute of an imported module
  (``testbed._chunks``), or a private module of another package (``jtk.widgets._app``). A package is
  ``jtk.<name>`` (a subpackage, or a top-level module of its own); jtk's top-level private modules
  (``jtk._checks``, ``jtk._compile``, ...) are the platform's, open to all of jtk, but their private names are not.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "jtk"

# The layer of each top-level name (a package, or a top-level module), lowest first.
LAYERS = (
    ("platform", {"jtk", "_checks", "_compile", "_info", "_version", "_json", "_memory", "_numerics", "executors",
                  "likelihood", "nets", "results", "train", "_docs", "_paths"}),
    ("envs", {"envs"}),
    ("agents", {"agents"}),
    ("regression", {"regression"}),
    ("testbed/ppc", {"testbed", "ppc"}),
    ("plots", {"plots"}),
    ("widgets", {"widgets"}),
    ("course", {"course", "checks"}),
    ("reproduce", {"reproduce"}),
    ("cli", {"cli"}),
)


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "jtk"


def layer(module: str) -> int | None:
    for i, (_, names) in enumerate(LAYERS):
        if top(module) in names:
            return i
    return None


def _path(module: str) -> pathlib.Path | None:
    rel = pathlib.Path(*module.split(".")[1:])
    for cand in (PACKAGE_DIR / rel / "__init__.py", (PACKAGE_DIR / rel).with_suffix(".py")):
        if cand.exists():
            return cand
    return None


def unit(module: str) -> str:
    """The package that owns a module: ``jtk.<name>`` (a subpackage, or a top-level module of its own)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def graph_figures(show: bool) -> dict:
    import grimp

    graph = grimp.build_graph("jtk")
    modules = sorted(graph.modules)
    edges = [(a, b) for a in modules for b in graph.find_modules_directly_imported_by(a) if b in modules]
    # cycles: Tarjan's strongly connected components
    succ = {m: [b for a, b in edges if a == m] for m in modules}
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for m in modules:
        if m not in index:
            strong(m)
    # the package jtk and its own top-level modules are one unit (unit() is jtk.<name>); cycles through the
    # root package are listed but counted apart
    upward = [(a, b) for a, b in edges if layer(a) is not None and layer(b) is not None and layer(a) < layer(b)]
    packages = {}
    for a, b in edges:
        if unit(a) != unit(b):
            packages.setdefault(unit(a), set()).add(unit(b))
    package_cycles = sorted({tuple(sorted((p, q))) for p in packages for q in packages.get(p, ())
                             if p in packages.get(q, set())})
    unplaced = sorted({top(m) for m in modules if layer(m) is None})
    if show:
        for comp in sccs:
            print("cycle:", " ".join(comp))
        for p, q in package_cycles:
            print("package cycle:", p, "<->", q)
        for a, b in upward:
            print(f"upward: {a} ({LAYERS[layer(a)][0]}) -> {b} ({LAYERS[layer(b)][0]})")
        if unplaced:
            print("not in a layer:", unplaced)
    return {"modules": len(modules), "edges": len(edges), "cycles": len(sccs),
            "modules_in_cycles": sum(map(len, sccs)), "package_cycles": len(package_cycles), "upward": len(upward)}


# ---------------------------------------------------------------- private names across packages
def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    return _path(name) is not None


def _resolve_from(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_part(name: str) -> bool:
    """A module name with a private part below a package (``jtk.widgets._app``), not jtk's own ``jtk._checks``."""
    return any(p.startswith("_") for p in name.split(".")[2:])


def private_sites(path: pathlib.Path) -> list[str]:
    here = module_name(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    bound: dict[str, str] = {}  # local name -> jtk module it is bound to
    sites = []

    def check(target_module: str, name: str, lineno: int):
        if unit(target_module) == unit(here):
            return
        full = f"{target_module}.{name}"
        if _is_module(full):
            if _private_module_part(full):
                sites.append(f"{path.relative_to(ROOT)}:{lineno}: {full} (module)")
        elif name.startswith("_") and not name.startswith("__"):
            sites.append(f"{path.relative_to(ROOT)}:{lineno}: {full}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "jtk":
                    if _private_module_part(a.name) and unit(a.name) != unit(here):
                        sites.append(f"{path.relative_to(ROOT)}:{node.lineno}: {a.name} (module)")
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else "jtk"
        elif isinstance(node, ast.ImportFrom):
            src = _resolve_from(node, here, is_package)
            if src.split(".")[0] != "jtk":
                continue
            if _private_module_part(src) and unit(src) != unit(here):
                sites.append(f"{path.relative_to(ROOT)}:{node.lineno}: {src} (module)")
            for a in node.names:
                check(src, a.name, node.lineno)
                if _is_module(f"{src}.{a.name}"):
                    bound[a.asname or a.name] = f"{src}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, cur = [], node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if not isinstance(cur, ast.Name) or cur.id not in bound:
                continue
            mod = bound[cur.id]
            for attr in reversed(chain):
                if _is_module(f"{mod}.{attr}"):
                    if _private_module_part(f"{mod}.{attr}") and unit(mod) != unit(here):
                        pass  # reported where it is imported
                    mod = f"{mod}.{attr}"
                    continue
                if node.attr == attr:  # only the outermost attribute of each chain is this node's
                    check(mod, attr, node.lineno)
                break
    return sorted(set(sites))


def private_figures(show: bool) -> int:
    sites = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if "_labs" in path.parts:
            continue
        sites += private_sites(path)
    if show:
        for s in sites:
            print("private:", s)
    return len(sites)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name every cycle, upward import and private-name site")
    args = parser.parse_args(argv)
    figures = graph_figures(args.list)
    figures["private_names_across_packages"] = private_figures(args.list)
    for k, v in figures.items():
        print(f"{k}: {v}")
    return figures


if __name__ == "__main__":
    main()
