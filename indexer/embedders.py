"""The two halves of the shared space, ready to use: text → index space, and image → index space.

``TextEmbedder`` = frozen multilingual sentence encoder + trained :class:`~indexer.tower.TextTower`.
``ImageEmbedder`` = frozen CNN + the fixed :class:`~indexer.image_space.ImageSpace` normalisation.
Both return float32 unit vectors, so inner product = cosine similarity everywhere (FAISS, tagging, captions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from indexer.bridge import LanguageBridge
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.factory import create_image_encoder, create_text_encoder
from indexer.glosses import LexiconTranslator
from indexer.image_space import ImageSpace
from indexer.sentence_cache import cached_sentences
from indexer.tower import TextTower
from indexer.unit import unit_rows

SHIPPED_TOWER = Path(__file__).parent / "assets" / "tower"


def shipped_tower_path() -> Path:
    """The default text tower trained by ``polyglot train`` on the shared train split (see docs/results.md)."""
    return SHIPPED_TOWER


def shipped_fast_tower_path() -> Path:
    """The shipped mUSE-only tower: same image space as the default, an order of magnitude cheaper per query."""
    return SHIPPED_TOWER.parent / "tower-muse"


def mix_towers(first: np.ndarray, second: np.ndarray, weight: float) -> np.ndarray:
    """Ensemble of two towers that share one image space: the unit vector along ``(1-w)·a + w·b``.

    Against unit image vectors this ranks images by ``(1-w)·cos(a, v) + w·cos(b, v)``: the score average of
    SMALR's CLC-A, taken over two towers instead of machine translations of the query.
    """
    return unit_rows((1.0 - weight) * first + weight * second).astype(np.float32)


def with_glosses(
    embed: Callable[[list[str], list[str | None]], np.ndarray],
    texts: Sequence[str],
    langs: Sequence[str | None],
    translator: LexiconTranslator,
    weight: float,
) -> np.ndarray:
    """Query vectors with cross-lingual consistency: each text that has a dictionary for its language is scored
    together with its word-by-word English gloss (:func:`mix_towers` with the gloss's share ``weight``), both
    embedded in one ``embed(texts, langs)`` call; the other texts are embedded as they are."""
    glosses = [translator.translate(text, lang) for text, lang in zip(texts, langs, strict=True)]
    rows = [i for i, gloss in enumerate(glosses) if gloss]
    vectors = embed([*texts, *(glosses[i] or "" for i in rows)], [*langs, *(["en"] * len(rows))])
    direct = vectors[: len(texts)]
    if rows:
        direct[rows] = mix_towers(direct[rows], vectors[len(texts) :], weight)
    return direct


class TextEmbedder:
    """Text → image-space vectors: frozen sentence encoder, optional language bridge, trained tower."""

    def __init__(
        self,
        tower: TextTower,
        encoder: TextEncoder,
        bridge: LanguageBridge | None = None,
        sentence_cache: Path | None = None,
    ) -> None:
        if encoder.name != tower.text_encoder:
            raise ValueError(f"tower was trained on {tower.text_encoder!r} embeddings, not {encoder.name!r}")
        if bridge is not None and bridge.text_encoder != encoder.name:
            raise ValueError(f"the language bridge is for {bridge.text_encoder!r}, not {encoder.name!r}")
        self.tower = tower
        self.encoder = encoder
        self.bridge = bridge
        # Evaluation embeds tens of thousands of captions again and again: through the features cache (keyed by
        # text) they are encoded once. The service leaves it off (its queries are new; the query cache is enough).
        self.sentence_cache = sentence_cache

    @classmethod
    def from_tower(
        cls,
        tower_path: Path | None,
        models_dir: Path,
        device: str = "cpu",
        *,
        bridge: bool = True,
        sentence_cache: Path | None = None,
        backend: str = "auto",
        e5_precision: str = "fp32",
    ) -> TextEmbedder:
        folder = tower_path or shipped_tower_path()
        tower = TextTower.from_pretrained(folder)
        encoder = create_text_encoder(
            tower.text_encoder, models_dir, device=device, backend=backend, e5_precision=e5_precision
        )
        return cls(tower, encoder, LanguageBridge.from_pretrained(folder) if bridge else None, sentence_cache)

    @property
    def languages(self) -> frozenset[str] | None:
        return self.encoder.languages

    @property
    def dim(self) -> int:
        return int(self.tower.config["output_dim"])

    def load(self) -> None:
        self.encoder.load()

    def embed(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        """Unit image-space vectors; ``langs`` (one for all texts, or one per text) lets the bridge act."""
        if self.sentence_cache is not None and self.encoder.dim:
            return self.embed_sentences(cached_sentences(self.encoder, texts, self.sentence_cache), langs)
        return self.embed_sentences(self.encoder.predict(texts), langs)

    def embed_sentences(self, sentences: np.ndarray, langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        """The tower over already encoded (e.g. cached) sentence embeddings."""
        if self.bridge is not None:
            sentences = self.bridge.apply(sentences, langs)
        return self.tower.embed(sentences)


class ImageEmbedder:
    def __init__(self, encoder: ImageEncoder, space: ImageSpace) -> None:
        self.encoder = encoder
        self.space = space

    @classmethod
    def create(cls, spec: str, space: ImageSpace, device: str = "cpu") -> ImageEmbedder:
        return cls(create_image_encoder(spec, device=device), space)

    def load(self) -> None:
        self.encoder.load()

    def features(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Raw pooled CNN features (what the features cache stores)."""
        return self.encoder.predict(images)

    def embed_features(self, features: np.ndarray) -> np.ndarray:
        return self.space.apply(features)

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self.space.apply(self.encoder.predict(images))
