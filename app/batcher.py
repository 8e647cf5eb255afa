"""Micro-batching of concurrent text searches: one text-encoder, tower and FAISS call for many requests.

Under concurrency each request would otherwise pay its own batch-of-one encoder, tower and index calls, each
with a fixed cost (model weights read back into the cache). Requests put their query on a thread-safe queue; a
few dedicated worker threads each take *everything waiting* (up to ``max_batch``), run it as one batch and hand
each request its own row through the event loop. There is no waiting for a batch to fill: a lone request runs at
once, so latency at low load is unchanged.

The workers pull from the queue themselves rather than being dispatched by the event loop: the next batch starts
the moment the previous one ends, even while the loop is busy answering the last batch's requests (measured on 2
cores: dispatching from the loop left the worker idle ~2.7 ms between batches, a fifth of its time).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

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
