"""Query translators for cross-lingual consistency: dictionary glosses, retrieval from a multilingual caption
collection, an optional installed MT package, and parallel captions (evaluation only)."""

from training.translation.base import QueryTranslator, TranslationError
from training.translation.gloss import GlossTranslator
from training.translation.mt import MachineTranslator, find_mt_translator
from training.translation.parallel import ParallelTranslator
from training.translation.retrieval import RetrievalTranslator

__all__ = [
    "GlossTranslator",
    "MachineTranslator",
    "ParallelTranslator",
    "QueryTranslator",
    "RetrievalTranslator",
    "TranslationError",
    "find_mt_translator",
]
