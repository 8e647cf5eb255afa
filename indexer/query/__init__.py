"""The query side of the library: every model built from settings in one place (:mod:`.models`), and the
pipeline from a query's text to hits (:mod:`.pipeline`) — used by the service, the CLI, the tagger,
``polyglot evaluate`` and the benchmarks alike, so what is measured is what is served."""

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
