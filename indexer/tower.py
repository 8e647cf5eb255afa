"""The text side: text → sentence encoder → (language bridge) → tower → a unit vector in the image space.

:class:`TextTower` is the trained head: a frozen multilingual sentence embedding → a small MLP → the frozen
image-feature space. :class:`TextEmbedder` runs a sentence encoder, an optional language bridge and a tower as one
``embed(texts, langs)``: what queries, captions and tag vocabularies go through (the shipped student,
:class:`~indexer.student.encoder.StudentEmbedder`, is one whose encoder is its own trained trunk; a research tower's
is a frozen multilingual encoder). Built from settings by :func:`indexer.encoders.factory.build_text_side`.
Every output is float32 unit vectors, so inner product = cosine similarity everywhere (FAISS, tagging, captions).

Architecture from Aggarwal et al., "Towards Zero-shot Cross-lingual Image Retrieval and Tagging" (§3.1):
stacked blocks of fully connected layer → dropout → ReLU → l2-norm; the last block has no l2-norm. Three
blocks, widths [1024, 2048, image-dim], dropout [0.2, 0.1, 0.0] by default.

Saved as ``config.json`` + ``model.safetensors`` (sentence-transformers style) and loaded with
``TextTower(**config)``; this module imports nothing from ``training``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save
from torch import nn

from indexer.atomic import atomic_open, atomic_write_json
from indexer.encoders.base import TextEncoder
from indexer.image_space import ImageSpace
from indexer.sentence_cache import cached_sentences
from indexer.tower_head import head_fingerprint, head_layers, run_head

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"


class SentenceBridge(Protocol):
    """What a text side's language bridge does (the lab's :class:`training.bridge.LanguageBridge`, loaded with a
    research tower through the encoder factory): replace the part of a sentence embedding whose encoder does not
    cover a language."""

    text_encoder: str  # the sentence encoder whose embeddings it maps
    languages: frozenset[str]  # the languages whose embeddings it rewrites
    weight: np.ndarray  # hashed into the text side's fingerprint

    def apply(self, sentences: np.ndarray, langs: str | Sequence[str | None] | None) -> np.ndarray: ...


class L2Norm(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=-1)


class SavedTower(nn.Module):
    """What every tower folder shares: ``config`` (its encoders, image space, model card) and the writing of
    ``config.json`` + ``model.safetensors``. :class:`TextTower` and :class:`training.smalr.SmalrTower` (the lab) extend it."""

    config: dict[str, Any]

    @property
    def image_encoder(self) -> str:
        return str(self.config["image_encoder"])

    @property
    def image_space(self) -> ImageSpace:
        return ImageSpace.from_config(self.config["image_space"])

    def save_pretrained(self, folder: Path, extra: dict[str, Any] | None = None) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {name: tensor.detach().cpu().contiguous() for name, tensor in self.state_dict().items()}
        with atomic_open(folder / WEIGHTS_NAME) as handle:
            handle.write(save(tensors))
        atomic_write_json(folder / CONFIG_NAME, {**self.config, **(extra or {})})


class TextTower(SavedTower):
    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        hidden_dims: Sequence[int] = (1024, 2048),
        dropouts: Sequence[float] = (0.2, 0.1, 0.0),
        final_relu: bool = True,
        text_encoder: str = "muse",
        image_encoder: str = "efficientnet-lite2",
        image_space: dict[str, Any] | None = None,
        languages: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        widths = [*hidden_dims, output_dim]
        if len(dropouts) != len(widths):
            raise ValueError(f"need one dropout per block: {len(widths)} blocks, {len(dropouts)} dropouts")
        self.config: dict[str, Any] = {
            "input_dim": int(input_dim),
            "output_dim": int(output_dim),
            "hidden_dims": [int(w) for w in hidden_dims],
            "dropouts": [float(p) for p in dropouts],
            "final_relu": bool(final_relu),
            "text_encoder": text_encoder,
            "image_encoder": image_encoder,
            "image_space": dict(image_space or {"kind": "l2"}),
            "languages": sorted(languages) if languages else None,
        }
        self.kinds = head_layers(len(widths), final_relu)
        sizes = iter(zip([input_dim, *widths[:-1]], widths, dropouts, strict=True))
        layers: list[nn.Module] = []
        for kind in self.kinds:
            if kind == "linear":
                previous, width, dropout = next(sizes)
                layers.append(nn.Linear(previous, width))
            elif kind == "dropout":
                layers.append(nn.Dropout(dropout))
            else:
                layers.append(nn.ReLU() if kind == "relu" else L2Norm())
        self.mlp = nn.Sequential(*layers)

    @property
    def text_encoder(self) -> str:
        return str(self.config["text_encoder"])

    def forward(self, sentence_embeddings: torch.Tensor) -> torch.Tensor:
        return self.mlp(sentence_embeddings)

    def embed(self, sentence_embeddings: np.ndarray) -> np.ndarray:
        """Sentence embeddings (n, input_dim) → unit vectors in the index space (n, output_dim), float32.

        The same layers as :meth:`forward` in eval mode (dropout off), in numpy over views of the live weights:
        for the few rows of a search batch the cost is reading the weights, and numpy's BLAS call reads them
        back into the cache in half the time of torch's (measured: 0.65 vs 1.21 ms for 4 queries through the
        mUSE tower with a cold cache; equal when warm).
        """
        linears = [
            (layer.weight.detach().numpy(), layer.bias.detach().numpy())
            for layer in self.mlp
            if isinstance(layer, nn.Linear)
        ]
        return run_head(self.kinds, linears, sentence_embeddings)

    @staticmethod
    def read_config(folder: Path) -> dict[str, Any]:
        """A saved tower's config.json (its encoders, image space, model card) without loading the weights."""
        config_path = Path(folder) / CONFIG_NAME
        if not config_path.exists():
            raise FileNotFoundError(f"no text tower at {folder}: {CONFIG_NAME} is missing")
        config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
        return config

    @classmethod
    def from_pretrained(cls, folder: Path) -> TextTower:
        folder = Path(folder)
        config = cls.read_config(folder)
        parameters = inspect.signature(cls.__init__).parameters
        known = {key: value for key, value in config.items() if key in parameters}  # the rest is the model card
        model = cls(**known)
        model.load_state_dict(load_file(str(folder / WEIGHTS_NAME)))
        return model.eval()


def tower_fingerprint(
    tower: TextTower, bridge: SentenceBridge | None = None, encoder: TextEncoder | None = None
) -> str:
    """Identity of the text side: its text encoder, the tower's weights, the language bridge and the encoder's own
    trained weights where it has some (a student's trunk delta: :attr:`TextEncoder.weights_digest`).

    Vectors a text side made (caption indexes, tag vocabularies) are only valid for the same fingerprint; the
    encoder's name is hashed too, as two towers with equal weights on different encoders map other sentences.
    An encoder without weights of its own (every research tower's) adds nothing: those fingerprints are as before.
    Call it through :attr:`TextEmbedder.fingerprint`, which passes all three.
    """
    tensors = ((name, tensor.detach().cpu().numpy()) for name, tensor in tower.state_dict().items())
    return head_fingerprint(
        tower.text_encoder,
        tensors,
        bridge.weight if bridge is not None else None,
        encoder.weights_digest if encoder is not None else None,
    )


class TextEmbedder:
    """Text → image-space vectors: frozen sentence encoder, optional language bridge, trained tower."""

    def __init__(
        self,
        tower: TextTower,
        encoder: TextEncoder,
        bridge: SentenceBridge | None = None,
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

    @property
    def languages(self) -> frozenset[str] | None:
        return self.encoder.languages

    @property
    def dim(self) -> int:
        return int(self.tower.config["output_dim"])

    @property
    def fingerprint(self) -> str:
        """:func:`tower_fingerprint` of this text side: tower, bridge and the encoder's own weights."""
        return tower_fingerprint(self.tower, self.bridge, self.encoder)

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
