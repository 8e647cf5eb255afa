"""Build a ready :class:`Tagger` from the query pipeline's models: the CNN, the text tower, every vocabulary."""

from __future__ import annotations

from indexer.asset_paths import SHIPPED_CONCEPTS
from indexer.concepts.lexicon import ConceptLexicon
from indexer.query.models import Models
from indexer.settings import Settings
from indexer.tagging.cached import embed_cached
from indexer.tagging.concepts import ConceptTagger, concept_vectors
from indexer.tagging.shipped import ShippedVocabularies
from indexer.tagging.source_tags import CaptionRetriever, clean_class_name
from indexer.tagging.store import VocabularyStore
from indexer.tagging.tagger import Tagger


def load_tagger(
    models: Models,
    settings: Settings,
    captions: CaptionRetriever | None = None,
) -> Tagger:
    """A tagger over ``models`` (from :func:`indexer.query.load_models`), the vocabularies built beside the index
    and the shipped ones (each embedded when its language is first asked for, then cached by the text side's
    fingerprint). Blocking: loads the CNN if it is not yet; embeds the CNN's class names, the ImageNet source tags,
    through the features cache (seconds the first time, then read back); ``settings.tagging``: POLYGLOT_TAG_*.
    The concept lexicon (POLYGLOT_TAG_LEXICON_DIR, default the shipped one) is loaded and checked here, its concept
    vectors read from the models folder (``polyglot models fetch`` computes them there) or the cache; else embedded
    now, about a minute.
    Raises ``FileNotFoundError``/``ValueError`` (a bad lexicon file: :class:`~indexer.concepts.LexiconError`)."""
    lexicon = ConceptLexicon.load(settings.tagging.lexicon_dir or SHIPPED_CONCEPTS)  # first: a bad file fails fast
    if not models.image_encoder.loaded:
        models.image_encoder.load()
    text = models.text
    store = VocabularyStore.beside_index(settings.resolved_index_dir)
    shipped = ShippedVocabularies(
        text, text.fingerprint, settings.resolved_cache_dir, english_weight=settings.tagging.english_weight
    )
    vectors, _ = concept_vectors(
        lexicon, text, text.fingerprint, settings.resolved_cache_dir, shipped_dir=settings.resolved_models_dir
    )
    concepts = ConceptTagger(
        lexicon,
        vectors,
        models.image_encoder.class_names,
        shipped,
        weight=settings.tagging.concept_weight,
        generality=settings.tagging.concept_generality,
        frequency=settings.tagging.concept_frequency,
    )
    tagger = Tagger(
        models.image_encoder,
        text,
        models.image_space,
        store.load_all(),
        settings=settings.tagging,
        captions=captions,
        fingerprint=text.fingerprint,
        store=store,
        shipped=shipped,
        concepts=concepts,
    )
    names = list(dict.fromkeys(tag for tag in map(clean_class_name, models.image_encoder.class_names) if tag))
    tagger.remember_sources(names, embed_cached(text, names, settings.resolved_cache_dir))
    return tagger
