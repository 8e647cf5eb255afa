"""Evaluate exactly what ``/search`` serves: the query pipeline of the current settings, end to end.

Every caption of the split is a query in its own language and goes through
:meth:`indexer.query.QueryPipeline.embed_queries` — the one text side the service serves (the shipped student,
or the POLYGLOT_TOWER_PATH / ``--tower`` folder with its language bridge) — then through a vector index of the
kind the service would build for a collection the size of the pool (``choose_kind``), so text→image recalls are
those of ``/search``'s ranking. Image→text recalls rank the split's captions exactly, as ``/captions`` does.
Each language's block records the model that answered it (``route``: :attr:`indexer.query.Models.label`, the same
for every language), and ``served`` what was served. With ``clc`` the text→image ranking is
:meth:`QueryPipeline.search_texts`'s with that cross-lingual consistency — the code ``/search?clc=`` runs — over
the pool (image→text keeps the query vectors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from indexer.image_index import Hit
from indexer.query import Models, QueryPipeline
from indexer.query.consistency import ClcMode
from indexer.store.vectors import VectorIndex, VectorIndexSettings, choose_kind
from training.data.prepared import PreparedSplit
from training.evaluation.evaluate import Evaluation, evaluate_vectors
from training.evaluation.retrieval_metrics import KS

DEPTH = max(KS)  # recalls up to R@10 need the ten best hits of each query


@dataclass
class ServedRanking:
    images: np.ndarray  # (n_images, D) the pool's index vectors
    texts: np.ndarray  # (n_captions, D) the query vectors the service computes
    top: np.ndarray  # (n_captions, DEPTH) pool positions of the best images, best first (-1: none)
    kind: str  # the index kind searched
    translated: np.ndarray | None = None  # (n_captions,) translations each query was scored with (CLC only)


def served_queries(pipeline: QueryPipeline, split: PreparedSplit, batch_size: int = 1024) -> np.ndarray:
    """Every caption through the pipeline, in its language (batched: captions share encoder calls)."""
    langs = split.caption_lang.tolist()
    out = np.empty((len(split.caption_text), pipeline.models.text.dim), dtype=np.float32)
    with tqdm(total=len(out), desc="queries through the served pipeline", unit="query") as bar:
        for start in range(0, len(out), batch_size):
            stop = min(start + batch_size, len(out))
            out[start:stop] = pipeline.embed_queries(split.caption_text[start:stop], langs[start:stop])
            bar.update(stop - start)
    return out


class PoolIndex:
    """The pool's vector index with the image index's interface (hits, stored vectors), for the pipeline."""

    def __init__(self, index: VectorIndex, images: np.ndarray) -> None:
        self.index, self.images = index, images

    def search(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        return [
            [Hit(int(i), float(s)) for i, s in zip(r.ids, r.scores, strict=True)] for r in self.index.search(vectors, k)
        ]

    def vectors(self, ids: list[int] | np.ndarray) -> np.ndarray:
        return self.images[np.asarray(ids, dtype=np.int64)]


def served_ranking(
    pipeline: QueryPipeline,
    split: PreparedSplit,
    index_settings: VectorIndexSettings,
    depth: int = DEPTH,
    clc: ClcMode = "off",
) -> ServedRanking:
    """The best ``depth`` pool images of every caption, searched as the service searches its index."""
    images = pipeline.models.image_space.apply(split.image_features)
    kind = choose_kind(len(images), index_settings)
    index = VectorIndex.build(np.arange(len(images)), images, kind, index_settings)
    texts = served_queries(pipeline, split)
    top = np.full((len(texts), depth), -1, dtype=np.int64)
    if clc == "off":
        for start in range(0, len(texts), 4096):
            for row, result in enumerate(index.search(texts[start : start + 4096], depth), start=start):
                top[row, : len(result.ids)] = result.ids
        return ServedRanking(images, texts, top, kind)
    pool, langs = PoolIndex(index, images), split.caption_lang.tolist()
    translated = np.zeros(len(texts), dtype=np.int64)
    with tqdm(total=len(texts), desc=f"queries with clc={clc}", unit="query") as bar:
        for start in range(0, len(texts), 1024):
            stop = min(start + 1024, len(texts))
            # search_texts' two steps, kept apart to count the translations each query got
            versions = pipeline.clc_versions(split.caption_text[start:stop], langs[start:stop])
            for row, hits in enumerate(pipeline.search_versions(pool, versions, depth, clc), start=start):
                top[row, : len(hits)] = [hit.id for hit in hits[:depth]]
            translated[start:stop] = versions.present[:, 1:].sum(axis=1)
            bar.update(stop - start)
    return ServedRanking(images, texts, top, kind, translated)


def is_student(models: Models) -> bool:
    """Whether the served text side is a student (its trunk's ONNX precision is then part of what is served)."""
    from indexer.student.encoder import StudentEmbedder

    return isinstance(models.text, StudentEmbedder)


def ranks_from_top(top: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Rank of each query's own image among its top hits (``top.shape[1]`` when it is not there)."""
    found = top == truth[:, None]
    return np.where(found.any(axis=1), found.argmax(axis=1), top.shape[1])


def evaluate_served(
    pipeline: QueryPipeline, split: PreparedSplit, index_settings: VectorIndexSettings, clc: ClcMode = "off"
) -> Evaluation:
    ranking = served_ranking(pipeline, split, index_settings, clc=clc)
    t2i = ranks_from_top(ranking.top, split.caption_image)
    evaluation = evaluate_vectors(ranking.images, ranking.texts, split, t2i_ranks=t2i)
    evaluation.t2i_ranks = t2i
    models = pipeline.models
    for lang, block in evaluation.report["languages"].items():
        block["route"] = models.label
        if ranking.translated is not None:
            rows = split.caption_lang == lang
            block["clc_translated"] = round(float((ranking.translated[rows] > 0).mean()), 4)
            block["clc_translations_per_query"] = round(float(ranking.translated[rows].mean()), 3)
    settings = pipeline.settings
    evaluation.report["served"] = {
        "model": models.label,
        "text_encoder": models.text.encoder.name,
        "tower_path": models.text_folder or None,
        "precision": getattr(models.text.encoder, "variant", None) if is_student(models) else None,
        "bridge": models.text.bridge is not None,
        "index_kind": ranking.kind,
        "concept_fusion_weight": models.fusion.weight if models.fusion is not None else 0.0,
        "clc": clc,
        "clc_translator": models.translator.name if clc != "off" and models.translator else None,
        "clc_languages": pipeline.clc_languages if clc != "off" else None,
        "clc_classifier": str(settings.query.clc_classifier) if clc == "classifier" else None,
    }
    return evaluation
