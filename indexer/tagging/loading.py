"""Build a ready :class:`Tagger` from settings: the CNN, the text tower, and every current vocabulary."""

from __future__ import annotations

from indexer.embedders import TextEmbedder
from indexer.encoders import create_image_encoder
from indexer.settings import IndexerSettings
from indexer.tagging.settings import TaggingSettings
from indexer.tagging.sources import CaptionRetriever
from indexer.tagging.store import VocabularyStore
from indexer.tagging.tagger import Tagger
from indexer.tower import tower_fingerprint


def load_text_embedder(settings: IndexerSettings) -> TextEmbedder:
    text = TextEmbedder.from_tower(settings.tower_path, settings.resolved_models_dir, device=settings.device)
    text.load()
    return text


def load_tagger(
    settings: IndexerSettings,
    tag_settings: TaggingSettings | None = None,
    captions: CaptionRetriever | None = None,
    text: TextEmbedder | None = None,
) -> Tagger:
    """Load models and vocabularies (slow: seconds). Raises ``FileNotFoundError``/``ValueError`` with clear text."""
    text = text or load_text_embedder(settings)
    if text.tower.image_encoder != settings.image_encoder:
        raise ValueError(
            f"the text tower targets {text.tower.image_encoder!r} features but the image encoder is "
            f"{settings.image_encoder!r} (set POLYGLOT_IMAGE_ENCODER or use a matching tower)"
        )
    image_encoder = create_image_encoder(settings.image_encoder, device=settings.device)
    image_encoder.load()
    store = VocabularyStore.beside_index(settings.resolved_index_dir)
    return Tagger(
        image_encoder,
        text,
        text.tower.image_space,
        store.load_all(),
        settings=tag_settings or TaggingSettings(),
        captions=captions,
        fingerprint=tower_fingerprint(text.tower, text.bridge),
        store=store,
    )
