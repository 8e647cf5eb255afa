"""Build a ready :class:`Tagger` from the query pipeline's models: the CNN, the text tower, every vocabulary."""

from __future__ import annotations

from indexer.indexer_settings import IndexerSettings
from indexer.query.models import Models
from indexer.tagging.source_tags import CaptionRetriever
from indexer.tagging.store import VocabularyStore
from indexer.tagging.tagger import Tagger
from indexer.tagging.tagging_settings import TaggingSettings
from indexer.tower import tower_fingerprint


def load_tagger(
    models: Models,
    settings: IndexerSettings,
    tag_settings: TaggingSettings,
    captions: CaptionRetriever | None = None,
) -> Tagger:
    """A tagger over ``models`` (from :func:`indexer.query.load_models`) and the vocabularies beside the index
    (blocking: loads the CNN if it is not yet). Raises ``FileNotFoundError``/``ValueError`` with clear text."""
    if not models.image_encoder.loaded:
        models.image_encoder.load()
    text = models.text
    store = VocabularyStore.beside_index(settings.resolved_index_dir)
    return Tagger(
        models.image_encoder,
        text,
        models.image_space,
        store.load_all(),
        settings=tag_settings,
        captions=captions,
        fingerprint=tower_fingerprint(text.tower, text.bridge),
        store=store,
    )
