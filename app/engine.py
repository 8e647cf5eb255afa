"""The service's loaded state, where its blocking work runs, and how a request reaches it.

Built once in the lifespan (:func:`load_engine`, run in a worker thread since loading models blocks). What turns
text and images into vectors and hits is :class:`indexer.query.QueryPipeline` — the same object ``polyglot
evaluate`` and ``polyglot search`` use. This module adds what a server needs around it: text searches go to
the search threads of the micro-batcher (:class:`Batcher`, one for every language,
``POLYGLOT_SEARCH_BATCH_WORKERS``), every other blocking call through :meth:`Engine.run`
(``anyio.to_thread.run_sync`` with a limiter of ``POLYGLOT_THREAD_POOL_SIZE``), so the event loop never runs
inference; result pages read metadata through :class:`app.record_cache.RecordCache`. Routers take the engine
with the ``EngineDep`` dependency (503 while the models load).

**The micro-batcher**: one text-encoder, tower and FAISS call for many concurrent text searches. Under
concurrency each request would otherwise pay its own batch-of-one encoder, tower and index calls, each with a
fixed cost (model weights read back into the cache). Requests put their query on a thread-safe queue; a
few dedicated worker threads each take *everything waiting* (up to ``max_batch``), run it as one batch and hand
each request its own row through the event loop. There is no waiting for a batch to fill: a lone request runs at
once, so latency at low load is unchanged.

The workers pull from the queue themselves rather than being dispatched by the event loop: the next batch starts
the moment the previous one ends, even while the loop is busy answering the last batch's requests (measured on 2
cores: dispatching from the loop left the worker idle ~2.7 ms between batches, a fifth of its time).

``components`` holds optional parts loaded by start-up hooks (see ``app/main.py``), e.g. the tagger.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, TypeVar

import anyio
import anyio.to_thread
import numpy as np
from fastapi import Depends, HTTPException, Request, status
from PIL import Image
from threadpoolctl import threadpool_limits

from app.library_folders import LibraryFolders
from app.pixel_budget import PixelBudget
from app.record_cache import RecordCache
from app.schemas.images import ImageMetadata
from app.service_settings import ServiceSettings
from indexer.captions import CaptionIndex
from indexer.captions.cross_lingual import CrossLingualCaptions
from indexer.image_index import Hit, ImageIndex
from indexer.query import Models, QueryPipeline, load_models
from indexer.query.consistency import ClcMode
from indexer.query.models import timed
from indexer.query.pipeline import warm_up_language_detection

_worker_state = threading.local()
T = TypeVar("T")
SearchItem = tuple[str, str | None, int, ClcMode, Callable[[list[Hit]], Any]]


# ------------------------------------------------------------------ the micro-batcher
R = TypeVar("R")
Work = Callable[[Sequence[Any]], Sequence[R]]
_STOP = object()


class Batcher(Generic[R]):
    def __init__(
        self, work: Work[R], max_batch: int, workers: int, thread_init: Callable[[], None] | None = None
    ) -> None:
        self._work = work  # items → one result per item, in order (blocking; runs on a worker thread)
        self._thread_init = thread_init  # per-thread set-up, e.g. pinning OpenMP to one thread
        self.max_batch = max_batch
        self.workers = workers
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.batches = 0
        self.items = 0

    async def start(self) -> None:
        """Start the worker threads (call from the lifespan)."""
        self._threads = [
            threading.Thread(target=self._worker, name=f"search-batch-{n}", daemon=True) for n in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    async def stop(self) -> None:
        """Let the workers finish their batch and exit; requests still queued get a RuntimeError."""
        for _ in self._threads:
            self._queue.put(_STOP)
        threads, self._threads = self._threads, []
        await asyncio.to_thread(_join_all, threads)
        while True:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                break
            if entry is not _STOP:
                _deliver(entry, error=RuntimeError("the service is shutting down"))

    async def submit(self, item: Any) -> R:
        if not self._threads:
            raise RuntimeError("Batcher.start() was not called")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._queue.put((item, future, loop))
        return await future

    def _worker(self) -> None:
        if self._thread_init is not None:
            self._thread_init()
        while True:
            entry = self._queue.get()
            if entry is _STOP:
                return
            batch = [entry]
            while len(batch) < self.max_batch:
                try:
                    entry = self._queue.get_nowait()
                except queue.Empty:
                    break
                if entry is _STOP:  # finish this batch, then let the next get() see the stop again
                    self._queue.put(_STOP)
                    break
                batch.append(entry)
            live = [entry for entry in batch if not entry[1].done()]  # skip cancelled requests
            if not live:
                continue
            with self._lock:
                self.batches += 1
                self.items += len(live)
            try:
                results = self._work([item for item, _, _ in live])
            except Exception as exc:  # each request gets the error (turned into a response by its handler)
                for entry in live:
                    _deliver(entry, error=exc)
                continue
            for entry, result in zip(live, results, strict=True):
                _deliver(entry, result=result)


def _join_all(threads: Sequence[threading.Thread]) -> None:
    for thread in threads:
        thread.join()


def _deliver(
    entry: tuple[Any, asyncio.Future[Any], asyncio.AbstractEventLoop], result: Any = None, error: Any = None
) -> None:
    """Resolve a request's future on its own event loop (futures are not thread-safe)."""
    _, future, loop = entry

    def resolve() -> None:
        if future.done():  # the request was cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(resolve)


# ------------------------------------------------------------------ the engine
@dataclass
class Engine:
    settings: ServiceSettings
    pipeline: QueryPipeline
    images: ImageIndex
    captions: CaptionIndex
    limiter: anyio.CapacityLimiter
    records: RecordCache
    cross_lingual: CrossLingualCaptions
    load_seconds: dict[str, float] = field(default_factory=dict)
    pixels: PixelBudget = field(default_factory=PixelBudget)  # decoded pixels in flight (app/pixel_budget.py)
    # Threads for requests that only read the metadata database (run_database): a database that stops answering
    # holds these, never the pool that searches and /languages need.
    database_limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(4))
    components: dict[str, Any] = field(default_factory=dict)
    # The search threads' micro-batcher (None: POLYGLOT_SEARCH_BATCH_SIZE=1, each search in the thread pool).
    text_batcher: Batcher[Any] | None = None

    @property
    def models(self) -> Models:
        return self.pipeline.models

    async def start(self) -> None:
        """Start the search threads (the text-search micro-batcher); called by the lifespan."""
        if self.settings.service.search_batch_size <= 1:
            return
        batcher: Batcher[Any] = Batcher(
            self.search_and_finish,
            self.settings.service.search_batch_size,
            self.settings.service.search_batch_workers,
            thread_init=self._pin_threads,
        )
        await batcher.start()
        self.text_batcher = batcher

    async def stop(self) -> None:
        batcher, self.text_batcher = self.text_batcher, None
        if batcher is not None:
            await batcher.stop()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking function in the service's bounded thread pool."""
        return await anyio.to_thread.run_sync(self._in_worker, fn, *args, limiter=self.limiter)

    async def run_database(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking function that only reads the metadata database (a record, a page of the list, the
        backends' check) on threads of its own: a silent database once held every thread of the shared pool (8 of 8
        ``GET /images/{id}`` hung), so even ``/languages`` went unanswered. Each call ends within
        ``POLYGLOT_DATABASE_TIMEOUT_SECONDS`` (indexer/store/pg_deadline.py)."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.database_limiter)

    def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        self._pin_threads()
        return fn(*args)

    def _pin_threads(self) -> None:
        # OpenMP thread counts are per calling thread: a worker thread left at the default runs FAISS (and the
        # OpenMP OpenBLAS under it) and torch's MKL matrix products on every core, and the idle OpenMP threads
        # spin between calls (measured: 5x slower searches with two such workers; a spinning MKL thread burning
        # 75% of a core under load). Pin each worker once, for both OpenMP runtimes.
        threads = self.settings.service.inference_threads
        if getattr(_worker_state, "omp_threads", None) != threads:
            import faiss
            import torch

            faiss.omp_set_num_threads(threads)
            torch.set_num_threads(self.settings.models.torch_threads or threads)
            _worker_state.omp_threads = threads

    def search_and_finish(self, items: Sequence[SearchItem]) -> list[Any]:
        """One pipeline search per CLC mode of a batch, then each item's ``finish(hits)`` in the same worker thread:
        a request's page (metadata, response objects) is built without a second hop through the thread pool."""
        hits: list[list[Hit]] = [[] for _ in items]
        for mode in dict.fromkeys(item[3] for item in items):
            rows = [i for i, item in enumerate(items) if item[3] == mode]
            found = self.pipeline.search_texts(self.images, [items[i][:3] for i in rows], clc=mode)
            for i, row in zip(rows, found, strict=True):
                hits[i] = row
        return [finish(row) for row, (*_, finish) in zip(hits, items, strict=True)]

    async def search_text(
        self, text: str, lang: str | None, depth: int, finish: Callable[[list[Hit]], T], clc: ClcMode = "off"
    ) -> tuple[T, str]:
        """``finish(hits)`` of the best ``depth`` hits for a text query in ``lang`` (micro-batched with concurrent
        queries when enabled; ``finish`` runs in the worker thread), and the text encoder that embedded it.
        ``clc``: cross-lingual consistency (checked by the caller with ``pipeline.check_clc``)."""
        item: SearchItem = (text, lang, depth, clc, finish)
        if self.text_batcher is not None:
            answer = await self.text_batcher.submit(item)
        else:
            answer = (await self.run(self.search_and_finish, [item]))[0]
        return answer, self.pipeline.encoder_name

    def metadata(self, ids: Sequence[int], language: str = "en") -> dict[int, ImageMetadata]:
        """The API views of ``ids``, their place lines in ``language``."""
        found = self.records.get_many(ids)
        return found if language == "en" else {i: view.in_language(language) for i, view in found.items()}

    def forget(self, ids: Sequence[int]) -> None:
        self.records.forget(ids)

    def embed_image(self, image: Image.Image) -> np.ndarray:
        return self.pipeline.embed_images([image])[0]

    def close(self) -> None:
        for component in self.components.values():
            closer = getattr(component, "close", None)
            if callable(closer):
                closer()
        self.captions.close()
        self.images.close()


def load_engine(settings: ServiceSettings) -> Engine:
    """Load the models, open the image and caption indexes and warm the encoders (blocking)."""
    import faiss
    import torch

    torch.set_num_threads(settings.models.torch_threads or settings.service.inference_threads)
    faiss.omp_set_num_threads(settings.service.inference_threads)
    # numpy's OpenBLAS (the towers' matrix products) keeps one process-wide pool whose idle threads spin: with
    # its default of one thread per core, a search batch left the other core busy-waiting (measured: the
    # server's CPU time per request doubled under load).
    threadpool_limits(settings.service.inference_threads, user_api="blas")
    # Use BLAS (cache-blocked matrix products) from 2 queries up: a micro-batch then reads the vectors once.
    faiss.cvar.distance_compute_blas_threshold = 2
    models = load_models(settings, threads=settings.service.inference_threads)
    models.text.embed(["warm up"])
    seconds = dict(models.load_seconds)
    images = timed(
        seconds,
        "image_index",
        lambda: ImageIndex.open(settings, image_space=models.image_space, create=True, encoder=models.image_encoder),
    )
    return assemble(settings, QueryPipeline(models, settings), images, seconds)


def assemble(
    settings: ServiceSettings, pipeline: QueryPipeline, images: ImageIndex, seconds: dict[str, float] | None = None
) -> Engine:
    """Finish an engine from a pipeline and an open image index (tests pass small fakes here)."""
    seconds = dict(seconds or {})
    # Loads the image encoder now rather than on the first upload, and checks it end to end.
    timed(seconds, "image_encoder", lambda: pipeline.embed_images([Image.new("RGB", (32, 32), (128, 128, 128))]))
    captions = timed(
        seconds,
        "caption_index",
        lambda: CaptionIndex.from_settings(settings, pipeline.models.text),
    )
    models = pipeline.models
    cross_lingual = CrossLingualCaptions(
        captions, models.text, models.alignments, models.alignment_encoders, settings.query.caption_search_fallback
    )
    warm_up_language_detection()  # caption search: the query's language among all
    warm_up_language_detection(models.text.languages)  # a search answer's label: among the encoder's
    return Engine(
        settings=settings,
        pipeline=pipeline,
        images=images,
        captions=captions,
        limiter=anyio.CapacityLimiter(settings.service.thread_pool_size),
        database_limiter=anyio.CapacityLimiter(settings.service.thread_pool_size),
        records=RecordCache(
            images.store,
            settings.service.record_cache_seconds,
            LibraryFolders(settings.served_roots(images.folder), images.store.folder_values),
        ),
        cross_lingual=cross_lingual,
        load_seconds=seconds,
        pixels=PixelBudget(settings.pixel_budget),
    )


# ------------------------------------------------------------------ how a request reaches it
async def get_engine(request: Request) -> Engine:
    """The loaded engine; 503 while the lifespan is still loading it. ``async`` on purpose: FastAPI runs a plain
    ``def`` dependency in the thread pool, i.e. one thread hop per request for an attribute lookup (measured: a
    sixth of the event loop's time under load)."""
    engine: Engine | None = getattr(request.app.state, "engine", None)
    if engine is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the service is still loading its models; retry")
    return engine


EngineDep = Annotated[Engine, Depends(get_engine)]
