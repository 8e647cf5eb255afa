"""The text half of the shared space, ready to use: text → index space.

``TextEmbedder`` = sentence encoder + trained :class:`~indexer.tower.TextTower` (the shipped student,
:class:`~indexer.student.encoder.StudentEmbedder`, is one whose encoder is its own trained trunk; a research tower's
is a frozen multilingual encoder, with its optional language bridge). The image half is the image encoder followed
by the fixed :class:`~indexer.image_space.ImageSpace` normalisation (``ImageIndex`` and the query pipeline apply
it). Both give float32 unit vectors, so inner product = cosine similarity everywhere (FAISS, tagging, captions).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.bridge import LanguageBridge
from indexer.encoders.base import TextEncoder
from indexer.encoders.factory import create_text_encoder
from indexer.sentence_cache import cached_sentences
from indexer.tower import TextTower

ASSETS = Path(__file__).parent / "assets"
SHIPPED_STUDENT = ASSETS / "student"
RESEARCH_TOWERS = ("tower", "tower-muse")  # the MLP towers of docs/results.md, kept to measure and compare


def shipped_tower_path() -> Path:
    """The served text side unless POLYGLOT_TOWER_PATH says otherwise: the trained student
    (``indexer/assets/student``, :mod:`indexer.student`; docs/student.md)."""
    return SHIPPED_STUDENT


def research_tower_path(name: str = "tower") -> Path:
    """A shipped research tower (MLP over frozen encoders; nothing serves it by default): ``tower``
    (``muse+e5-small`` with its Czech language bridge) or ``tower-muse`` (mUSE only)."""
    if name not in RESEARCH_TOWERS:
        raise ValueError(f"no research tower {name!r}; shipped: {', '.join(RESEARCH_TOWERS)}")
    return ASSETS / name


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
        folder = tower_path or research_tower_path()
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
