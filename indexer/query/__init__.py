"""The query pipeline: every model built from settings in one place (:mod:`.models`), and one object that turns
texts or images into vectors and vectors into hits (:mod:`.pipeline`) — used by the service, the CLI, the
tagger, ``polyglot evaluate`` and the benchmarks alike, so what is measured is what is served."""

from indexer.query.cache import QueryCache
from indexer.query.models import Models, ModelsError, load_alignments, load_models, load_text_tower
from indexer.query.pipeline import QueryPipeline

__all__ = [
    "Models",
    "ModelsError",
    "QueryCache",
    "QueryPipeline",
    "load_alignments",
    "load_models",
    "load_text_tower",
]
