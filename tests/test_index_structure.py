"""The image index's structure, read from the source with ``ast`` (issue 25): the facade on top of its parts, no
import cycle among them, and the vector backend chosen in one place and used only through its interface."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The image index and everything it is made of or feeds.
INDEX_MODULES = ["indexer/image_index.py", "indexer/filtered_view.py", "indexer/search_filters.py"]
INDEX_PACKAGES = ["indexer/store", "indexer/distributed"]
BACKEND_CLASSES = {"FaissFileVectors", "MmapIvfIndex", "MilvusVectors", "MmapBuilder"}
# Where a backend class may be named: its own module, and the one module that chooses the backend.
BACKEND_HOMES = {
    "indexer/store/vectors.py",
    "indexer/store/mmap_index.py",
    "indexer/store/milvus_vectors.py",
    "indexer/store/vector_files.py",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def index_files() -> list[Path]:
    files = [REPO / name for name in INDEX_MODULES]
    for package in INDEX_PACKAGES:
        files += sorted((REPO / package).glob("*.py"))
    return files


def imported_modules(path: Path, known: set[str]) -> Iterator[str]:
    """Every project module ``path`` imports, wherever the import statement is (top level, function body,
    ``if TYPE_CHECKING``): a cycle through any of them is still a cycle for a reader."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield submodule if submodule in known else node.module


def import_graph() -> dict[str, set[str]]:
    files = index_files()
    known = {module_name(path) for path in files}
    return {
        module_name(path): {
            name for name in imported_modules(path, known) if name in known and name != module_name(path)
        }
        for path in files
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_image_index() -> None:
    graph = import_graph()
    assert "indexer.store.photo_ingest" in graph and "indexer.image_index" in graph  # the scan sees the modules
    assert cycles(graph) == []


def test_the_facade_is_on_top_of_its_parts() -> None:
    """``indexer/store`` is what ``ImageIndex`` is made of: none of it imports the facade (nor its users)."""
    graph = import_graph()
    upward = {"indexer.image_index", "indexer.filtered_view", "indexer.distributed.ray_index"}
    offenders = {module: sorted(graph[module] & upward) for module in graph if module.startswith("indexer.store.")}
    assert {module: found for module, found in offenders.items() if found} == {}


def backend_references(path: Path) -> set[str]:
    """Backend class names ``path`` uses (imports, calls, ``isinstance`` checks)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    names |= {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    return names & BACKEND_CLASSES


def test_the_backend_is_chosen_in_one_place() -> None:
    """Outside their own modules, backend classes are named only by ``vector_files`` (which picks one); everything
    else — the facade, ingest, maintenance, the service, the CLI, training — sees ``VectorBackend``. So no
    ``isinstance`` on a backend can exist there either."""
    offenders = {}
    for package in ("app", "indexer", "training"):
        for path in sorted((REPO / package).rglob("*.py")):
            relative = str(path.relative_to(REPO))
            if relative in BACKEND_HOMES:
                continue
            found = backend_references(path)
            if found:
                offenders[relative] = sorted(found)
    assert offenders == {}


def test_no_isinstance_on_a_vector_backend() -> None:
    checked = 0
    for package in ("app", "indexer", "training"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
                    checked += 1
                    classes = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    classes |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                    assert not classes & (BACKEND_CLASSES | {"VectorIndex"}), (path, ast.unparse(node))
    assert checked > 10  # the walk sees the project's isinstance calls


def test_the_backend_interface_has_only_what_the_index_uses() -> None:
    """Every ``VectorBackend`` member is used by the facade or its parts (an unused one is a burden on every new
    backend); ``__len__`` is ``len()``."""
    tree = ast.parse((REPO / "indexer/store/backend.py").read_text(encoding="utf-8"))
    protocol = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "VectorBackend")
    members = {node.name for node in protocol.body if isinstance(node, ast.FunctionDef)} - {"__len__"}
    users = ["image_index.py", "store/photo_ingest.py", "store/maintenance.py", "store/index_state.py"]
    users.append("store/vector_files.py")
    used: set[str] = set()
    for name in users:
        source = ast.parse((REPO / "indexer" / name).read_text(encoding="utf-8"))
        used |= {node.attr for node in ast.walk(source) if isinstance(node, ast.Attribute)}
    assert len(members) >= 10 and members - used == set()
