"""Concepts: the WordNet noun concepts people photograph and their names in many languages (:mod:`.lexicon`)."""

from indexer.concepts.lexicon import Concept, ConceptLexicon, LexiconError

__all__ = ["Concept", "ConceptLexicon", "LexiconError"]
