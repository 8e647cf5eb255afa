"""The house's import rules, read from the source with ``ast`` (nothing is imported):

- no import cycle between project modules (``app``, ``indexer``, ``training``), counting every import a module
  names — at the top, inside functions (lazy imports), under ``if TYPE_CHECKING:`` (a type's module is a
  dependency too: it only hides the cycle from the interpreter);
- the product never imports the lab: nothing in ``app`` or ``indexer`` imports ``training`` (the lab plugs in
  through entry points: tests/house/test_lab_apart.py);
- the library and the lab never import the service: nothing in ``indexer`` or ``training`` imports ``app``, except
  the lab's commands (``training.cli``), which use the command line's helpers (``app.cli``) they plug into.

``python tests/house/test_import_graph.py`` prints the cycles and the forbidden imports it finds.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "indexer", "training")
# Who may import whom: the house's one-way arrows (CONTRIBUTING.md).
FORBIDDEN = {"indexer": ("app", "training"), "app": ("training",), "training": ("app",)}
# (importer prefix, imported prefix) pairs a FORBIDDEN arrow allows: the lab's commands plug into the CLI.
ALLOWED = (("training.cli", "app.cli"),)
# No cycle is left (the last one, image_index ↔ store/index_stats, went with the index's restructuring by role,
# issue 25): this list is empty and must stay so.
KNOWN_CYCLES: list[list[str]] = []


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name → file, for every module of the project's packages (``pkg/__init__.py`` is ``pkg``)."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _imports(node)


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports: ``from a.b import c`` is ``a.b.c`` when that is a module, else
    ``a.b``; relative imports resolved against ``name``'s package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a non-module name: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted: every import cycle lies in
    one of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def forbidden_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if target.split(".")[0] in FORBIDDEN.get(source.split(".")[0], ())
        and not any(_within(source, a) and _within(target, b) for a, b in ALLOWED)
    )


def test_the_graph_reader_sees_cycles_and_forbidden_arrows(tmp_path: Path) -> None:
    """The checks below would pass on an empty graph: this one shows they find what they look for."""
    files = {
        "indexer/__init__.py": "",
        "indexer/a.py": "from indexer import b\n",
        "indexer/b.py": "def f():\n    from indexer.c import x\n",
        "indexer/c.py": "from . import a\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import app.d\n",
        "indexer/leaf.py": "import app.d\n",
        "app/__init__.py": "",
        "app/d.py": "import indexer.leaf\n",
        "app/cli.py": "def f():\n    from training import lab\n",
        "training/__init__.py": "",
        "training/lab.py": "import app.d\n",
        "training/cli.py": "import app.cli\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["indexer.a"] == {"indexer.b"} and graph["indexer.c"] == {"indexer.a", "app.d"}
    assert cycles(graph) == [["app.d", "indexer.leaf"], ["indexer.a", "indexer.b", "indexer.c"]]
    assert forbidden_imports(graph) == [
        ("app.cli", "training.lab"),
        ("indexer.c", "app.d"),
        ("indexer.leaf", "app.d"),
        ("training.lab", "app.d"),
    ]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == KNOWN_CYCLES


def test_the_product_never_imports_the_lab_nor_the_library_the_service() -> None:
    assert forbidden_imports(import_graph()) == []


if __name__ == "__main__":
    graph = import_graph()
    found = cycles(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, {len(found)} cycles (strongly connected)")
    for component in found:
        print("  cycle:", " ↔ ".join(component))
    for source, target in forbidden_imports(graph):
        print("  forbidden:", source, "→", target)
    sys.exit(1 if found != KNOWN_CYCLES or forbidden_imports(graph) else 0)
