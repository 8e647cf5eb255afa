"""The image index's structure, read from the source with ``ast`` (issue 25): the facade on top of its parts, and
the vector backend chosen in one place and used only through its interface. (No import cycle anywhere:
``tests/house/test_import_graph.py``, whose graph reader this uses.)"""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_graph import import_graph

REPO = Path(__file__).resolve().parents[2]
BACKEND_CLASSES = {"FaissFileVectors", "MmapIvfIndex", "MilvusVectors", "MmapBuilder"}
# Where a backend class may be named: its own module, and the one module that chooses the backend.
BACKEND_HOMES = {
    "indexer/store/vectors.py",
    "indexer/store/mmap_index.py",
    "indexer/store/milvus_vectors.py",
    "indexer/store/vector_files.py",
}


def test_the_facade_is_on_top_of_its_parts() -> None:
    """``indexer/store`` is what ``ImageIndex`` is made of: none of it imports the facade or its users, and the
    roles go one way: facade → ingest → maintenance → shared state → backends."""
    graph = import_graph()
    upward = {"indexer.image_index", "indexer.filtered_view", "indexer.distributed.ray_index", "indexer.watch"}
    store = {module: imports for module, imports in graph.items() if module.startswith("indexer.store.")}
    assert len(store) > 15  # the reader sees the package
    assert {module: sorted(imports & upward) for module, imports in store.items() if imports & upward} == {}
    layers = ["indexer.store.photo_ingest", "indexer.store.maintenance", "indexer.store.index_state"]
    for lower, module in enumerate(layers):
        assert not graph[module] & set(layers[:lower]), (module, graph[module] & set(layers[:lower]))
    assert "indexer.store.backend" in graph["indexer.store.index_state"]
    assert not graph["indexer.store.backend"] & {name for name in graph if name.startswith("indexer.")}


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
    users = [
        "image_index.py",
        "store/photo_ingest.py",
        "store/maintenance.py",
        "store/revisions.py",
        "store/index_state.py",
    ]
    users.append("store/vector_files.py")
    used: set[str] = set()
    for name in users:
        source = ast.parse((REPO / "indexer" / name).read_text(encoding="utf-8"))
        used |= {node.attr for node in ast.walk(source) if isinstance(node, ast.Attribute)}
    assert len(members) >= 10 and members - used == set()
