"""The query side of the library: every model built from settings in one place (:mod:`.models`), and the
pipeline from a query's text to hits (:mod:`.pipeline`) — used by the service, the CLI, the tagger,
``polyglot evaluate`` and the benchmarks alike, so what is measured is what is served."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from indexer.query.models import Models, ModelsError, load_alignments, load_models, load_text_tower
    from indexer.query.pipeline import (
        QueryCache,
        QueryPipeline,
        QueryTextError,
        checked_query,
        clean_query,
        detect_language,
        warm_up_language_detection,
    )

# Each name from the module that defines it, imported when first asked for: the models import torch (~3 s), which
# `polyglot search` does without for a text query (indexer/query/onnx_text_side.py) but would pay here when it only
# wanted the query text's cleaning from the pipeline.
_HOME = {
    **dict.fromkeys(("Models", "ModelsError", "load_alignments", "load_models", "load_text_tower"), "models"),
    **dict.fromkeys(
        (
            "QueryCache",
            "QueryPipeline",
            "QueryTextError",
            "checked_query",
            "clean_query",
            "detect_language",
            "warm_up_language_detection",
        ),
        "pipeline",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"indexer.query.{_HOME[name]}"), name)
    globals()[name] = value  # once: later look-ups (and monkeypatching) see a plain module attribute
    return value


__all__ = [
    "Models",
    "ModelsError",
    "QueryCache",
    "QueryPipeline",
    "QueryTextError",
    "checked_query",
    "clean_query",
    "detect_language",
    "load_alignments",
    "load_models",
    "load_text_tower",
    "warm_up_language_detection",
]
