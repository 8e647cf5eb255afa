"""Query translators for cross-lingual consistency: dictionary glosses, retrieval from a multilingual caption
collection, an optional installed MT package, and parallel captions (evaluation only)."""

from indexer.translation.base import QueryTranslator, TranslationError
from indexer.translation.gloss import GlossTranslator
from indexer.translation.mt import MachineTranslator, find_mt_translator
from indexer.translation.parallel import ParallelTranslator
from indexer.translation.retrieval import RetrievalTranslator

__all__ = [
    "GlossTranslator",
    "MachineTranslator",
    "ParallelTranslator",
    "QueryTranslator",
    "RetrievalTranslator",
    "TranslationError",
    "find_mt_translator",
]
