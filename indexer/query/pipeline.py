"""``QueryPipeline``: texts or images → unit vectors in the image space → hits.

Every text query, whatever its language (or none detected), takes the one text side of :class:`Models` — the
shipped student reads the ~100 languages of its e5 trunk itself — in one encoder call per batch, through the
query cache. With ``clc`` (per call, or POLYGLOT_CLC by default) a query is also translated into
POLYGLOT_CLC_LANGUAGES by the configured translator and the scores of all versions are combined
(:mod:`indexer.query.clc`: CLC-A average, CLC-C classifier re-ranking).

Thread-safe: the service calls it from its search threads, ``polyglot evaluate`` and ``polyglot search``
directly. Anything that searches (the image index, an in-memory index in evaluation) is a :class:`VectorSearch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar, cast

import numpy as np
from PIL import Image

from indexer.indexer_settings import IndexerSettings
from indexer.query.cache import QueryCache
from indexer.query.clc import ClcError, ClcMode, Versions, rerank
from indexer.query.models import Models

H = TypeVar("H", covariant=True)
HitT = TypeVar("HitT")


class VectorSearch(Protocol[H]):
    """Anything that answers a batch of unit query vectors with hits, best first (the image index)."""

    def search(self, vectors: np.ndarray, k: int) -> Sequence[Sequence[H]]: ...


class CandidateVectors(Protocol):
    """An index that can also return stored vectors by id (CLC-C re-ranks candidates by their exact scores)."""

    def vectors(self, ids: Sequence[int]) -> np.ndarray: ...


class QueryPipeline:
    def __init__(self, models: Models, settings: IndexerSettings, cache: QueryCache | None = None) -> None:
        self.models = models
        self.settings = settings
        self.cache = cache if cache is not None else QueryCache(settings.query_cache_size)

    # ------------------------------------------------------------------ languages
    @property
    def languages(self) -> list[str] | None:
        """The languages queries may name (the text side's encoder's; None: it declares none and accepts any)."""
        langs = self.models.text.languages
        return sorted(langs) if langs is not None else None

    def supports(self, lang: str) -> bool:
        return self.models.text.encoder.supports(lang)

    @property
    def encoder_name(self) -> str:
        """The text encoder that embeds every query, as the service reports it to clients (``e5-student``)."""
        return self.models.text.encoder.name

    # ------------------------------------------------------------------ text → vectors → hits
    def embed_queries(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        """Unit query vectors, each text in its language (one for all, or one per text; a research tower's
        bridge reads it), in one encoder call for the texts the query cache does not hold."""
        per_text = [langs] * len(texts) if langs is None or isinstance(langs, str) else list(langs)
        # A bridge maps some languages apart, so the language is part of the key.
        keys = [f"{lang}\x00{text}" for text, lang in zip(texts, per_text, strict=True)]
        vectors: list[np.ndarray | None] = [self.cache.get(key) for key in keys]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if missing:
            fresh = self.models.text.embed([texts[i] for i in missing], [per_text[i] for i in missing])
            for row, i in enumerate(missing):
                vectors[i] = fresh[row]
                self.cache.put(keys[i], fresh[row])
        if not vectors:
            return np.empty((0, self.models.text.dim), dtype=np.float32)
        return np.stack([v for v in vectors if v is not None])

    def search_texts(
        self, index: VectorSearch[HitT], items: Sequence[tuple[str, str | None, int]], clc: ClcMode | None = None
    ) -> list[list[HitT]]:
        """``(text, lang, depth)`` → the best ``depth`` hits of each, with one search call for all. ``clc``:
        cross-lingual consistency for these queries (None: POLYGLOT_CLC)."""
        if not items:
            return []
        mode = self.check_clc(clc)
        texts, langs = [text for text, _, _ in items], [lang for _, lang, _ in items]
        depth = max(depth for _, _, depth in items)
        if mode == "off":
            hits = index.search(self.embed_queries(texts, langs), depth)
        else:
            hits = self.search_versions(index, self.clc_versions(texts, langs), depth, mode)
        return [list(row[:depth]) for row, (_, _, depth) in zip(hits, items, strict=True)]

    # ------------------------------------------------------------------ cross-lingual consistency
    def check_clc(self, clc: ClcMode | None) -> ClcMode:
        """The CLC mode a search uses; :class:`ClcError` when it cannot run with the loaded parts."""
        mode: ClcMode = clc or self.settings.clc
        if mode != "off" and self.models.translator is None:
            raise ClcError(f"clc={mode} needs a query translator: set POLYGLOT_CLC_TRANSLATOR (gloss, retrieval or mt)")
        if mode == "classifier" and self.models.clc_classifier is None:
            raise ClcError("clc=classifier needs a CLC-C model: set POLYGLOT_CLC_CLASSIFIER (polyglot clc fit)")
        return mode

    @property
    def clc_languages(self) -> list[str]:
        """The translation targets (a classifier's own languages: its inputs are fixed)."""
        classifier = self.models.clc_classifier
        return list(classifier.languages) if classifier is not None else list(self.settings.clc_languages)

    def clc_versions(self, texts: Sequence[str], langs: Sequence[str | None]) -> Versions:
        """Each query and its translations into the CLC languages, embedded as queries in those languages."""
        translator, targets = self.models.translator, self.clc_languages
        assert translator is not None  # check_clc
        n = len(texts)
        vectors = np.zeros((n, 1 + len(targets), self.models.text.dim), dtype=np.float32)
        present = np.zeros((n, 1 + len(targets)), dtype=bool)
        vectors[:, 0], present[:, 0] = self.embed_queries(texts, langs), True
        wanted: list[tuple[int, int]] = []  # (query row, slot)
        extra_texts: list[str] = []
        extra_langs: list[str | None] = []
        for slot, target in enumerate(targets, start=1):
            rows = [i for i, lang in enumerate(langs) if lang != target]
            found = translator.translate([texts[i] for i in rows], [langs[i] for i in rows], target)
            for i, translation in zip(rows, found, strict=True):
                if translation and translation != texts[i]:
                    wanted.append((i, slot))
                    extra_texts.append(translation)
                    extra_langs.append(target)
        if wanted:
            embedded = self.embed_queries(extra_texts, extra_langs)
            rows_, slots = np.array([w[0] for w in wanted]), np.array([w[1] for w in wanted])
            vectors[rows_, slots], present[rows_, slots] = embedded, True
        return Versions(vectors, present)

    def search_versions(
        self, index: VectorSearch[HitT], versions: Versions, depth: int, mode: ClcMode
    ) -> Sequence[Sequence[HitT]]:
        """The best ``depth`` hits of queries' versions: CLC-A's one search, or CLC-C's re-ranking of it."""
        if mode == "average":
            return index.search(versions.average(), depth)
        return self._clc_classify(index, versions, depth)

    def _clc_classify(self, index: VectorSearch[HitT], versions: Versions, depth: int) -> list[list[HitT]]:
        """CLC-C: the CLC-A search's best candidates, re-ranked by the classifier over their per-version scores."""
        if not hasattr(index, "vectors"):
            raise ClcError("clc=classifier needs an index that returns stored vectors")
        source = cast(CandidateVectors, index)
        classifier = self.models.clc_classifier
        assert classifier is not None  # check_clc
        pool = max(depth, self.settings.clc_candidates)
        found = index.search(versions.average(), pool)
        ids = [[int(cast(Any, hit).id) for hit in row] for row in found]
        width = max((len(row) for row in ids), default=0)
        candidates = np.zeros((len(ids), width, self.models.text.dim), dtype=np.float32)
        for row, row_ids in enumerate(ids):
            if row_ids:
                candidates[row, : len(row_ids)] = source.vectors(row_ids)
        order, scores = rerank(versions, classifier, ids, candidates)
        by_id = [{int(cast(Any, hit).id): hit for hit in row} for row in found]
        return [
            [replace_score(by_id[row][i], s) for i, s in zip(order[row], scores[row], strict=True)]
            for row in range(len(ids))
        ]

    # ------------------------------------------------------------------ images → vectors
    def embed_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Unit image vectors (frozen CNN + the towers' image space): what the index stores for a photo."""
        encoder = self.models.image_encoder
        encoder.load()  # idempotent and thread-safe
        return self.models.image_space.apply(encoder.predict(images))


def replace_score(hit: HitT, score: float) -> HitT:
    """The hit with the score shown to users (hits are small dataclasses: ``Hit(id, score)``)."""
    import dataclasses

    return dataclasses.replace(hit, score=score) if dataclasses.is_dataclass(hit) else hit  # type: ignore[type-var]
