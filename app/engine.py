"""The loaded state of the service: text embedder, image index, caption index, the thread pool's limiter.

Built once in the lifespan (:func:`load_engine`, itself run in a worker thread since loading models blocks).
Text searches go to the micro-batcher's search threads (:mod:`app.batcher`, ``POLYGLOT_SEARCH_BATCH_WORKERS``);
every other blocking call from a request goes through :meth:`Engine.run`, i.e. ``anyio.to_thread.run_sync``
with a :class:`anyio.CapacityLimiter` sized by ``POLYGLOT_THREAD_POOL_SIZE``: the event loop never runs
inference.

``components`` holds optional parts loaded by startup hooks (see ``app/main.py``), e.g. the tagger.

Text queries take one of three routes. ``main`` is the configured tower (the shipped default covers ~100
languages through its e5 half, which costs ~20 ms a query on one core). An optional second tower over a cheaper
encoder (the shipped mUSE tower: ~0.6 ms) maps into the same image space, so both search the one index;
``/search`` queries in a language its encoder declares take it alone (``fast``) or, with
POLYGLOT_FAST_TOWER_USE=ensemble, both towers with their scores averaged (``both``). Every other language, and
queries whose language is unknown, take ``main``. Captions and tags always use ``main``.

With POLYGLOT_LEXICONS_DIR set, a query in a language that has a bilingual dictionary there is also scored by
its word-by-word English gloss, on the same route (cross-lingual consistency: :func:`indexer.embedders.with_glosses`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import numpy as np
from PIL import Image
from sqlalchemy import select
from threadpoolctl import threadpool_limits

from app.batcher import Batcher
from app.schemas.images import ImageMetadata
from app.service_settings import ServiceSettings
from indexer.captions import CaptionIndex
from indexer.embedders import TextEmbedder, mix_towers, with_glosses
from indexer.glosses import LexiconTranslator
from indexer.image_index import Hit, ImageIndex
from indexer.store.metadata import ImageRecord, ImageRow

log = logging.getLogger("app.engine")
_worker_state = threading.local()
T = TypeVar("T")


class QueryCache:
    """A small thread-safe LRU of query text → vector: popular queries skip the text encoder."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
            return vector

    def put(self, key: str, vector: np.ndarray) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


@dataclass
class Engine:
    settings: ServiceSettings
    text: TextEmbedder
    images: ImageIndex
    captions: CaptionIndex
    limiter: anyio.CapacityLimiter
    load_seconds: dict[str, float] = field(default_factory=dict)
    components: dict[str, Any] = field(default_factory=dict)
    query_cache: QueryCache = field(default_factory=lambda: QueryCache(0))
    fast_text: TextEmbedder | None = None
    text_batcher: Batcher[Any] | None = None
    translator: LexiconTranslator | None = None
    _records: dict[int, tuple[float, ImageMetadata]] = field(default_factory=dict)
    _records_lock: threading.Lock = field(default_factory=threading.Lock)

    async def start(self) -> None:
        """Start the search threads (the text-search micro-batcher); called by the lifespan."""
        if self.settings.search_batch_size > 1:
            self.text_batcher = Batcher(
                self.search_and_finish,
                self.settings.search_batch_size,
                self.settings.search_batch_workers,
                thread_init=self._pin_threads,
            )
            await self.text_batcher.start()

    async def stop(self) -> None:
        if self.text_batcher is not None:
            await self.text_batcher.stop()
            self.text_batcher = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking function in the service's bounded thread pool."""
        return await anyio.to_thread.run_sync(self._in_worker, fn, *args, limiter=self.limiter)

    def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        self._pin_threads()
        return fn(*args)

    def _pin_threads(self) -> None:
        # OpenMP thread counts are per calling thread: a worker thread left at the default runs FAISS (and the
        # OpenMP OpenBLAS under it) and torch's MKL matrix products on every core, and the idle OpenMP threads
        # spin between calls (measured: 5x slower searches with two such workers; a spinning MKL thread burning
        # 75% of a core under load). Pin each worker once, for both OpenMP runtimes.
        threads = self.settings.inference_threads
        if getattr(_worker_state, "omp_threads", None) != threads:
            import faiss
            import torch

            faiss.omp_set_num_threads(threads)
            torch.set_num_threads(self.settings.torch_threads or threads)
            _worker_state.omp_threads = threads

    @property
    def text_languages(self) -> list[str] | None:
        langs = self.text.languages
        return sorted(langs) if langs is not None else None

    def supports(self, lang: str) -> bool:
        return self.text.encoder.supports(lang) or self.route(lang) != "main"

    def route(self, lang: str | None) -> str:
        """How a query in ``lang`` is embedded: ``main`` (the main tower), or, when a fast tower is loaded and
        its encoder covers ``lang``, ``fast`` (that tower alone) or ``both`` (POLYGLOT_FAST_TOWER_USE=ensemble)."""
        if self.fast_text is None or lang is None or not self.fast_text.encoder.supports(lang):
            return "main"
        return "both" if self.settings.fast_tower_use == "ensemble" else "fast"

    def route_name(self, route: str) -> str:
        """The encoder(s) behind a route, as reported to clients."""
        names = {"main": self.text.encoder.name}
        if self.fast_text is not None:
            names["fast"] = self.fast_text.encoder.name
            names["both"] = f"{names['main']} & {names['fast']}"
        return names[route]

    def embed_queries(
        self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None, route: str = "main"
    ) -> np.ndarray:
        """Unit query vectors for many texts, each in its language (one for all, or one per text: the language
        bridge needs it); cached ones skip the encoders, the rest go through one encoder call."""
        per_text = [langs] * len(texts) if langs is None or isinstance(langs, str) else list(langs)
        # Towers and bridges give different vectors: the route and the language are part of the key.
        keys = [f"{route}\x00{lang}\x00{text}" for text, lang in zip(texts, per_text, strict=True)]
        vectors: list[np.ndarray | None] = [self.query_cache.get(key) for key in keys]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if missing:
            batch = [texts[i] for i in missing]
            batch_langs = [per_text[i] for i in missing]
            if self.translator is None:
                fresh = self._embed_route(route, batch, batch_langs)
            else:
                fresh = with_glosses(
                    lambda t, ls: self._embed_route(route, t, ls),
                    batch,
                    batch_langs,
                    self.translator,
                    self.settings.lexicon_weight,
                )
            for row, i in enumerate(missing):
                vectors[i] = fresh[row]
                self.query_cache.put(keys[i], fresh[row])
        return np.stack([v for v in vectors if v is not None])

    def _embed_route(self, route: str, texts: Sequence[str], langs: Sequence[str | None]) -> np.ndarray:
        if route == "main" or self.fast_text is None:
            return self.text.embed(texts, langs)
        if route == "fast":
            return self.fast_text.embed(texts, langs)
        weight = self.settings.fast_tower_weight
        return mix_towers(self.text.embed(texts, langs), self.fast_text.embed(texts, langs), weight)

    def gloss(self, text: str, lang: str | None) -> str | None:
        """The English gloss a query is also scored by (None: no dictionary for ``lang``, or the feature off)."""
        if self.translator is None:
            return None
        return self.translator.translate(text, lang) or None

    def search_texts(self, items: Sequence[tuple[str, str | None, int]]) -> list[list[Hit]]:
        """``(text, lang, depth)`` → the best ``depth`` hits of each: one encoder call per route (every language
        of a route in one batch: per-language calls cost a pass over the model weights each), one FAISS call."""
        rows: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(items)
        groups: dict[str, list[int]] = {}
        for i, (_, lang, _) in enumerate(items):
            groups.setdefault(self.route(lang), []).append(i)
        for route, positions in groups.items():
            vectors = self.embed_queries([items[i][0] for i in positions], [items[i][1] for i in positions], route)
            for i, vector in zip(positions, vectors, strict=True):
                rows[i] = vector
        depth = max(d for _, _, d in items)
        hits = self.images.search(np.stack(rows), depth)
        return [row[:d] for row, (_, _, d) in zip(hits, items, strict=True)]

    def search_and_finish(self, items: Sequence[tuple[str, str | None, int, Callable[[list[Hit]], Any]]]) -> list[Any]:
        """:meth:`search_texts`, then each item's ``finish(hits)`` in the same worker thread: a request's page
        (metadata, response objects) is built without a second hop through the thread pool."""
        hits = self.search_texts([(text, lang, depth) for text, lang, depth, _ in items])
        return [finish(row) for row, (*_, finish) in zip(hits, items, strict=True)]

    async def search_text(
        self, text: str, lang: str | None, depth: int, finish: Callable[[list[Hit]], T]
    ) -> tuple[T, str]:
        """``finish(hits)`` of the best ``depth`` hits for a text query in ``lang`` (micro-batched with concurrent
        queries when enabled; ``finish`` runs in the worker thread), and the text encoder(s) that embedded it."""
        item = (text, lang, depth, finish)
        if self.text_batcher is not None:
            answer = await self.text_batcher.submit(item)
        else:
            answer = (await self.run(self.search_and_finish, [item]))[0]
        return answer, self.route_name(self.route(lang))

    def metadata(self, ids: Sequence[int]) -> dict[int, ImageMetadata]:
        """The API view of many images' metadata: recently built ones from memory, the rest from one SQL query.

        Result pages show the same images again and again, and reading a row and validating its view costs more
        than the vector search (measured: ~0.8 ms for a page of 20 before this cache). Entries live
        ``record_cache_seconds`` (metadata edited by another process shows up after that) and are dropped at
        once when this service removes the image.
        """
        now = time.monotonic()
        found: dict[int, ImageMetadata] = {}
        with self._records_lock:
            for i in ids:
                entry = self._records.get(int(i))
                if entry is not None and entry[0] > now:
                    found[int(i)] = entry[1]
        missing = [int(i) for i in ids if int(i) not in found]
        if missing:
            with self.images.store.transaction() as session:
                rows = session.scalars(select(ImageRow).where(ImageRow.id.in_(missing)))
                fresh = {int(row.id): ImageMetadata.from_record(ImageRecord.from_row(row)) for row in rows}
            found.update(fresh)
            ttl = self.settings.record_cache_seconds
            if ttl > 0:
                with self._records_lock:
                    if len(self._records) > 100_000:
                        self._records.clear()
                    self._records.update({i: (now + ttl, view) for i, view in fresh.items()})
        return found

    def forget(self, ids: Sequence[int]) -> None:
        with self._records_lock:
            for i in ids:
                self._records.pop(int(i), None)

    def embed_image(self, image: Image.Image) -> np.ndarray:
        return self.images.embed_image(image)[0]

    def close(self) -> None:
        for component in self.components.values():
            closer = getattr(component, "close", None)
            if callable(closer):
                closer()
        self.captions.close()
        self.images.close()


def _timed(seconds: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = fn()
    seconds[name] = time.perf_counter() - start
    return result


def load_engine(settings: ServiceSettings) -> Engine:
    """Load the text embedder, open the image and caption indexes and warm the encoders (blocking)."""
    import faiss
    import torch

    torch.set_num_threads(settings.torch_threads or settings.inference_threads)
    faiss.omp_set_num_threads(settings.inference_threads)
    # numpy's OpenBLAS (the towers' matrix products) keeps one process-wide pool whose idle threads spin: with
    # its default of one thread per core, a search batch left the other core busy-waiting (measured: the
    # server's CPU time per request doubled under load).
    threadpool_limits(settings.inference_threads, user_api="blas")
    # Use BLAS (cache-blocked matrix products) from 2 queries up: a micro-batch then reads the vectors once.
    faiss.cvar.distance_compute_blas_threshold = 2
    seconds: dict[str, float] = {}

    def load_text(tower_path: Path | None) -> TextEmbedder:
        embedder = TextEmbedder.from_tower(tower_path, settings.resolved_models_dir, device=settings.device)
        if hasattr(embedder.encoder, "threads"):  # ONNX/numpy encoders take their intra-op threads at load
            embedder.encoder.threads = settings.inference_threads
        embedder.load()
        embedder.embed(["warm up"])
        return embedder

    text = _timed(seconds, "text_embedder", lambda: load_text(settings.tower_path))
    if text.tower.image_encoder != settings.image_encoder:
        raise RuntimeError(
            f"the text tower was trained for image encoder {text.tower.image_encoder!r}, but "
            f"POLYGLOT_IMAGE_ENCODER is {settings.image_encoder!r}: set it to {text.tower.image_encoder}"
        )
    fast_path = settings.resolved_fast_tower
    fast = _timed(seconds, "fast_text_embedder", lambda: load_text(fast_path)) if fast_path else None
    if fast is not None:
        check_same_space(text, fast, fast_path)
    images = _timed(
        seconds, "image_index", lambda: ImageIndex.open(settings, image_space=text.tower.image_space, create=True)
    )
    return assemble(settings, text, images, seconds, fast_text=fast)


def check_same_space(main: TextEmbedder, fast: TextEmbedder, fast_path: object) -> None:
    """Both towers must search one index: same image encoder, image space and output size."""
    ours, theirs = main.tower, fast.tower
    same = (
        ours.image_encoder == theirs.image_encoder
        and ours.image_space.fingerprint == theirs.image_space.fingerprint
        and main.dim == fast.dim
    )
    if not same:
        raise RuntimeError(
            f"POLYGLOT_FAST_TOWER {fast_path} maps into {theirs.image_encoder} / "
            f"{theirs.image_space.fingerprint}, the main tower into {ours.image_encoder} / "
            f"{ours.image_space.fingerprint}: train it with --image-space-from the main tower, or set it to off"
        )


def assemble(
    settings: ServiceSettings,
    text: TextEmbedder,
    images: ImageIndex,
    seconds: dict[str, float] | None = None,
    fast_text: TextEmbedder | None = None,
) -> Engine:
    """Finish an engine from a loaded embedder and an open image index (tests pass small fakes here)."""
    seconds = dict(seconds or {})
    # Loads the image encoder now rather than on the first upload, and checks it end to end.
    _timed(seconds, "image_encoder", lambda: images.embed_image(Image.new("RGB", (32, 32), (128, 128, 128))))
    captions = _timed(
        seconds,
        "caption_index",
        lambda: CaptionIndex.open(settings.resolved_captions_dir, text, settings.resolved_cache_dir),
    )
    lexicons = settings.lexicons_dir
    translator = (
        _timed(seconds, "lexicons", lambda: LexiconTranslator.from_folder(lexicons, text.languages))
        if lexicons is not None
        else None
    )
    _warm_langdetect()
    return Engine(
        settings=settings,
        text=text,
        images=images,
        captions=captions,
        limiter=anyio.CapacityLimiter(settings.thread_pool_size),
        load_seconds=seconds,
        query_cache=QueryCache(settings.query_cache_size),
        fast_text=fast_text,
        translator=translator,
    )


def _warm_langdetect() -> None:
    # langdetect loads its profiles lazily and not thread-safely: do it once, before requests arrive.
    from langdetect import DetectorFactory, detect_langs

    DetectorFactory.seed = 0  # deterministic answers for the same text
    detect_langs("warm up the language profiles")
