"""A text ``GET /search`` runs through at most 12 project modules (issue 25), whatever the query's language.

The walk is ``benchmarks/query_walk.py`` (its table for the shipped student is in CONTRIBUTING.md); here it runs
on the test suite's fake encoders, through the real service (lifespan, micro-batcher, thread pool, index).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import clear_polyglot_env

ROOT = Path(__file__).resolve().parents[2]


def query_walk() -> ModuleType:
    spec = importlib.util.spec_from_file_location("query_walk", ROOT / "benchmarks" / "query_walk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["query_walk"] = module
    spec.loader.exec_module(module)
    return module


def test_a_text_query_runs_through_at_most_12_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)  # no ./.env
    walk = query_walk()
    result = walk.run("fixtures", ["en", "fr", "none"], tmp_path / "models")
    assert result["models"] == "fixtures"
    for lang, found in result["walks"].items():
        modules = found["modules"]
        # The walk sees the whole way, from the HTTP layer to the index and the metadata: a tracer that saw
        # nothing would pass the bound.
        for module in ("app.middleware", "app.routers.search", "app.engine", "indexer.query.pipeline"):
            assert module in modules, (lang, modules)
        assert "indexer.image_index" in modules and "app.record_cache" in modules, (lang, modules)
        assert len(modules) == found["count"] <= walk.LIMIT == 12, (lang, modules)


def test_module_names_are_the_project_files_only() -> None:
    walk = query_walk()
    assert walk.module_of(str(ROOT / "app" / "engine.py")) == "app.engine"
    assert walk.module_of(str(ROOT / "indexer" / "query" / "__init__.py")) == "indexer.query"
    assert walk.module_of(str(ROOT / "tests" / "conftest.py")) is None
    assert walk.module_of("/usr/lib/python3.11/json/__init__.py") is None
