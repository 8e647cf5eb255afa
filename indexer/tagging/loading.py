"""Build a ready :class:`Tagger` from the query pipeline's models: the CNN, the text tower, every vocabulary."""

from __future__ import annotations

from indexer.query.models import Models
from indexer.settings import Settings
from indexer.tagging.cached import embed_cached
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
    Raises ``FileNotFoundError``/``ValueError``."""
    if not models.image_encoder.loaded:
        models.image_encoder.load()
    text = models.text
    store = VocabularyStore.beside_index(settings.resolved_index_dir)
    tagger = Tagger(
        models.image_encoder,
        text,
        models.image_space,
        store.load_all(),
        settings=settings.tagging,
        captions=captions,
        fingerprint=text.fingerprint,
        store=store,
        shipped=ShippedVocabularies(
            text, text.fingerprint, settings.resolved_cache_dir, english_weight=settings.tagging.english_weight
        ),
    )
    names = list(dict.fromkeys(tag for tag in map(clean_class_name, models.image_encoder.class_names) if tag))
    tagger.remember_sources(names, embed_cached(text, names, settings.resolved_cache_dir))
    return tagger
