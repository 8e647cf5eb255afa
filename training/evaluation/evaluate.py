"""Retrieval evaluation of a text tower (or the zero-training label bridge) on a split.

Per language present in the split: text→image and image→text Recall@1/5/10 over the split's image pool, their
mean mR, and the average A of mR over languages (SMALR's metrics). Plus a text-only cross-lingual check as in
the DPCCA paper: caption→caption R@1 between two languages describing the same images.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

import numpy as np

from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.tower import TextTower
from training.bridge import LanguageBridge
from training.data.features import text_embeddings
from training.data.prepared import PreparedSplit
from training.evaluation.retrieval_metrics import KS, c2c_recall_at_1, language_recalls, recall_sum
from training.evaluation.retrieval_metrics import t2i_ranks as exact_t2i_ranks


@dataclass
class Evaluation:
    report: dict[str, Any]  # the JSON: {"pool_images", "languages": {...}, "A"}
    c2c: dict[str, float] = field(default_factory=dict)  # "en→de": R@1
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)  # lang → source → {"t2i", "queries"}
    t2i_ranks: np.ndarray | None = None  # (n_captions,) each caption's own image's rank, when kept

    @property
    def rsum(self) -> float:
        return float(sum(recall_sum(block) for block in self.report["languages"].values()))


def evaluate_vectors(
    images: np.ndarray,
    texts: np.ndarray,
    split: PreparedSplit,
    langs: Sequence[str] | None = None,
    rows: np.ndarray | None = None,
    with_c2c: bool = True,
    t2i_ranks: np.ndarray | None = None,
) -> Evaluation:
    """``images`` (n_images, D) and ``texts`` (n_captions, D): unit vectors in one space, aligned with ``split``.
    ``t2i_ranks`` (one per caption): text→image ranks found elsewhere (the served index), else exact ones."""
    rows = np.arange(len(texts)) if rows is None else rows
    languages: dict[str, Any] = {}
    for lang in langs or split.languages:
        lang_rows = rows[split.caption_lang[rows] == lang]
        if len(lang_rows):
            given = t2i_ranks[lang_rows] if t2i_ranks is not None else None
            languages[lang] = language_recalls(images, texts[lang_rows], split.caption_image[lang_rows], given)
    report = {
        "pool_images": len(images),
        "languages": languages,
        "A": float(np.mean([block["mR"] for block in languages.values()])) if languages else 0.0,
    }
    if not with_c2c:  # the quick per-epoch check of training: recalls only
        return Evaluation(report)
    return Evaluation(
        report,
        caption_to_caption(texts, split, list(languages)),
        recalls_by_source(images, texts, split, rows, t2i_ranks),
    )


def recalls_by_source(
    images: np.ndarray,
    texts: np.ndarray,
    split: PreparedSplit,
    rows: np.ndarray | None = None,
    t2i_ranks: np.ndarray | None = None,
) -> dict[str, dict[str, Any]]:
    """Text→image recalls per language and caption source (e.g. Multi30K task-1 translations vs independently
    written task-2 captions): separates what the language costs from what the kind of caption costs."""
    if split.caption_source is None:
        return {}
    table: dict[str, dict[str, Any]] = {}
    evaluated = np.zeros(len(split.caption_lang), dtype=bool)
    evaluated[np.arange(len(texts)) if rows is None else rows] = True
    for lang in split.languages:
        in_lang = evaluated & (split.caption_lang == lang)
        for source in sorted(set(split.caption_source[in_lang].tolist())):
            chosen = np.flatnonzero(in_lang & (split.caption_source == source))
            ranks = (
                exact_t2i_ranks(texts[chosen], split.caption_image[chosen], images)
                if t2i_ranks is None
                else t2i_ranks[chosen]
            )
            t2i = {f"r{k}": float(np.mean(ranks < k)) for k in KS}
            table.setdefault(lang, {})[source or "unknown"] = {"t2i": t2i, "queries": len(chosen)}
    return table


def first_caption_rows(split: PreparedSplit, langs: Sequence[str] | None = None) -> np.ndarray:
    """One caption per (image, language): the first in file order (Multi30K task 1 for en/de/fr/cs)."""
    seen: set[tuple[int, str]] = set()
    keep = []
    wanted = set(langs) if langs else None
    for row, (image, lang) in enumerate(zip(split.caption_image.tolist(), split.caption_lang.tolist(), strict=True)):
        if (wanted is None or lang in wanted) and (image, lang) not in seen:
            seen.add((image, lang))
            keep.append(row)
    return np.array(keep, dtype=np.int64)


def caption_to_caption(texts: np.ndarray, split: PreparedSplit, langs: Sequence[str]) -> dict[str, float]:
    """R@1 of retrieving, among language b's first captions, the one of the same image as a's first caption."""
    first: dict[str, dict[int, int]] = {}
    for row in first_caption_rows(split, langs).tolist():
        first.setdefault(str(split.caption_lang[row]), {})[int(split.caption_image[row])] = row
    table: dict[str, float] = {}
    for a, b in permutations(sorted(first), 2):
        shared = sorted(set(first[a]) & set(first[b]))
        if shared:
            source = texts[[first[a][image] for image in shared]]
            target = texts[[first[b][image] for image in shared]]
            table[f"{a}→{b}"] = c2c_recall_at_1(source, target)
    return table


def _tower_texts(tower: TextTower, split: PreparedSplit, bridge: LanguageBridge | None) -> np.ndarray:
    """The split's captions through the (bridged) tower alone, from the split's cached sentence embeddings."""
    if bridge is not None and bridge.text_encoder != tower.text_encoder:
        raise ValueError(
            f"the language bridge is for text encoder {bridge.text_encoder!r}, but the tower was trained on "
            f"{tower.text_encoder!r}: remove its bridge.json or use --no-bridge"
        )
    sentences = split.text_embeddings
    return tower.embed(bridge.apply(sentences, split.caption_lang.tolist()) if bridge is not None else sentences)


def evaluate_tower(
    tower: TextTower,
    split: PreparedSplit,
    langs: Sequence[str] | None = None,
    bridge: LanguageBridge | None = None,
) -> Evaluation:
    """One tower on the split's cached sentence embeddings (training's model card; the CLI's ``polyglot
    evaluate`` measures the served pipeline instead, :mod:`training.evaluation.served_eval`)."""
    images = tower.image_space.apply(split.image_features)
    return evaluate_vectors(images, _tower_texts(tower, split, bridge), split, langs)


def label_bridge_images(
    image_encoder: ImageEncoder, text_encoder: TextEncoder, features: np.ndarray, cache_dir: Any
) -> np.ndarray:
    """Zero-training baseline: each image = its ImageNet class probabilities · the class names' sentence embeddings."""
    if not image_encoder.loaded:
        image_encoder.load()
    names = text_embeddings(text_encoder, image_encoder.class_names, cache_dir, desc="class names")
    probabilities = np.concatenate(
        [image_encoder.classify(features[s : s + 512]) for s in range(0, len(features), 512)]
    )
    vectors = probabilities @ names
    return (vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def evaluate_label_bridge(
    image_encoder: ImageEncoder, text_encoder: TextEncoder, split: PreparedSplit, cache_dir: Any
) -> Evaluation:
    images = label_bridge_images(image_encoder, text_encoder, split.image_features, cache_dir)
    ranks = exact_t2i_ranks(split.text_embeddings, split.caption_image, images)
    evaluation = evaluate_vectors(images, split.text_embeddings, split, t2i_ranks=ranks)
    evaluation.t2i_ranks = ranks
    return evaluation
