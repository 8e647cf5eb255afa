"""``QueryPipeline``: texts or images → unit vectors in the image space → hits.

Text queries take one of three routes. ``main`` is the main tower (the shipped default covers ~100 languages
through its e5 half). An optional fast tower over a cheaper encoder maps into the same image space, so both
search the one index; queries in a language the fast tower's encoder declares take it alone (``fast``) or, with
POLYGLOT_FAST_TOWER_USE=ensemble, both towers with their scores averaged (``both``). Every other language, and
queries whose language is unknown, take ``main``. With English-gloss dictionaries loaded, a query in a language
that has one is also scored by its word-by-word English gloss, on the same route. With ``clc`` (per call, or
POLYGLOT_CLC by default) a query is also translated into POLYGLOT_CLC_LANGUAGES by the configured translator and
the scores of all versions are combined (:mod:`indexer.query.clc`: CLC-A average, CLC-C classifier re-ranking).

Thread-safe: the service calls it from its search threads, ``polyglot evaluate`` and ``polyglot search``
directly. Anything that searches (the image index, an in-memory index in evaluation) is a :class:`VectorSearch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeVar, cast

import numpy as np
from PIL import Image

from indexer.embedders import mix_towers, with_glosses
from indexer.indexer_settings import IndexerSettings
from indexer.query.cache import QueryCache
from indexer.query.clc import ClcError, ClcMode, Versions, rerank
from indexer.query.models import Models

Route = Literal["main", "fast", "both"]


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

    # ------------------------------------------------------------------ languages and routes
    @property
    def languages(self) -> list[str] | None:
        """The languages queries may name (the main encoder's; None: it declares none and accepts any code)."""
        langs = self.models.text.languages
        return sorted(langs) if langs is not None else None

    def supports(self, lang: str) -> bool:
        return self.models.text.encoder.supports(lang) or self.route(lang) != "main"

    def route(self, lang: str | None) -> Route:
        fast, chosen = self.models.fast_text, self.settings.fast_tower_languages
        if (
            fast is None
            or lang is None
            or not fast.encoder.supports(lang)
            or (chosen is not None and lang not in chosen)
        ):
            return "main"
        return "both" if self.settings.fast_tower_use == "ensemble" else "fast"

    def encoder_names(self, route: Route) -> str:
        """The sentence encoder(s) behind a route, as the service reports them to clients."""
        main = self.models.text.encoder.name
        fast = self.models.fast_text.encoder.name if self.models.fast_text is not None else main
        return {"main": main, "fast": fast, "both": f"{main} & {fast}"}[route]

    def route_label(self, lang: str | None) -> str:
        """Which tower(s) answer ``lang``, by folder name: ``main:tower``, ``fast:tower-muse``,
        ``both:tower+tower-muse`` (what ``polyglot evaluate`` records per language)."""
        route = self.route(lang)
        names = self.models.tower_names
        towers = {"main": names.get("main", "main"), "fast": names.get("fast", "fast")}
        towers["both"] = f"{towers['main']}+{towers['fast']}"
        return f"{route}:{towers[route]}"

    def gloss(self, text: str, lang: str | None) -> str | None:
        """The English gloss a query is also scored by (None: no dictionary for ``lang``, or glosses off)."""
        if self.models.glosses is None:
            return None
        return self.models.glosses.translate(text, lang) or None

    # ------------------------------------------------------------------ text → vectors → hits
    def embed_queries(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        """Unit query vectors, each text in its language (one for all, or one per text), on its language's
        route: one encoder call per route (per-language calls would each pay a pass over the weights)."""
        per_text = [langs] * len(texts) if langs is None or isinstance(langs, str) else list(langs)
        out = np.empty((len(texts), self.models.text.dim), dtype=np.float32)
        groups: dict[Route, list[int]] = {}
        for i, lang in enumerate(per_text):
            groups.setdefault(self.route(lang), []).append(i)
        for route, rows in groups.items():
            out[rows] = self._embed_cached(route, [texts[i] for i in rows], [per_text[i] for i in rows])
        return out

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

    def _embed_cached(self, route: Route, texts: list[str], langs: list[str | None]) -> np.ndarray:
        # Towers and bridges give different vectors: the route and the language are part of the key.
        keys = [f"{route}\x00{lang}\x00{text}" for text, lang in zip(texts, langs, strict=True)]
        vectors: list[np.ndarray | None] = [self.cache.get(key) for key in keys]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if missing:
            batch, batch_langs = [texts[i] for i in missing], [langs[i] for i in missing]
            if self.models.glosses is None:
                fresh = self.embed_route(route, batch, batch_langs)
            else:
                fresh = with_glosses(
                    lambda t, ls: self.embed_route(route, t, ls),
                    batch,
                    batch_langs,
                    self.models.glosses,
                    self.settings.lexicon_weight,
                )
            for row, i in enumerate(missing):
                vectors[i] = fresh[row]
                self.cache.put(keys[i], fresh[row])
        return np.stack([v for v in vectors if v is not None])

    def embed_route(self, route: Route, texts: Sequence[str], langs: Sequence[str | None]) -> np.ndarray:
        """The route's tower(s) alone: no cache, no glosses."""
        main, fast = self.models.text, self.models.fast_text
        if route == "main" or fast is None:
            return main.embed(texts, langs)
        if route == "fast":
            return fast.embed(texts, langs)
        return mix_towers(main.embed(texts, langs), fast.embed(texts, langs), self.settings.fast_tower_weight)

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
