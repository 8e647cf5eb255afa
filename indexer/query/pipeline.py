"""``QueryPipeline``: texts or images → unit vectors in the image space → hits.

Text queries take one of three routes. ``main`` is the main tower (the shipped default covers ~100 languages
through its e5 half). An optional fast tower over a cheaper encoder maps into the same image space, so both
search the one index; queries in a language the fast tower's encoder declares take it alone (``fast``) or, with
POLYGLOT_FAST_TOWER_USE=ensemble, both towers with their scores averaged (``both``). Every other language, and
queries whose language is unknown, take ``main``. With English-gloss dictionaries loaded, a query in a language
that has one is also scored by its word-by-word English gloss, on the same route (cross-lingual consistency).

Thread-safe: the service calls it from its search threads, ``polyglot evaluate`` and ``polyglot search``
directly. Anything that searches (the image index, an in-memory index in evaluation) is a :class:`VectorSearch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar

import numpy as np
from PIL import Image

from indexer.embedders import mix_towers, with_glosses
from indexer.indexer_settings import IndexerSettings
from indexer.query.cache import QueryCache
from indexer.query.models import Models

Route = Literal["main", "fast", "both"]


H = TypeVar("H", covariant=True)
HitT = TypeVar("HitT")


class VectorSearch(Protocol[H]):
    """Anything that answers a batch of unit query vectors with hits, best first (the image index)."""

    def search(self, vectors: np.ndarray, k: int) -> Sequence[Sequence[H]]: ...


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

    def search_texts(self, index: VectorSearch[HitT], items: Sequence[tuple[str, str | None, int]]) -> list[list[HitT]]:
        """``(text, lang, depth)`` → the best ``depth`` hits of each, with one search call for all."""
        if not items:
            return []
        vectors = self.embed_queries([text for text, _, _ in items], [lang for _, lang, _ in items])
        hits = index.search(vectors, max(depth for _, _, depth in items))
        return [list(row[:depth]) for row, (_, _, depth) in zip(hits, items, strict=True)]

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
