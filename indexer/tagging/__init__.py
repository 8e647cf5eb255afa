"""Contextual multilingual image tagging (M3L paper §3.3.2): English source tags → target-language tags.

Modules: ``text`` (tokens, stop words), ``vocabulary`` (building a target vocabulary), ``store`` (versioned
vocabularies on disk), ``source_tags`` (English source tags), ``ranking`` (eq. 3–5), ``tagger`` (the ``Tagger``),
``loading`` (a ready ``Tagger`` from settings), ``TaggingSettings`` (``POLYGLOT_TAG_*``, the ``tagging`` section of :mod:`indexer.settings`). Evaluation-only code
(the word-translation baseline, tag precision metrics) lives in ``training/``. Nothing here does I/O at import.
"""

from indexer.settings import TaggingSettings
from indexer.tagging.ranking import RankedTag, contextual_tags
from indexer.tagging.source_tags import SourceKind
from indexer.tagging.store import VocabularyStore
from indexer.tagging.tagger import Tag, Tagger, UnknownLanguageError
from indexer.tagging.vocabulary import Vocabulary, VocabularyError

__all__ = [
    "RankedTag",
    "SourceKind",
    "Tag",
    "Tagger",
    "TaggingSettings",
    "UnknownLanguageError",
    "Vocabulary",
    "VocabularyError",
    "VocabularyStore",
    "contextual_tags",
]
