"""Micro-batching of concurrent text searches: one text-encoder, tower and FAISS call for many requests.

Under concurrency each request would otherwise pay a full pass over the index (flat FAISS search is bound
by memory bandwidth: the whole vector matrix is read per query) and a batch-of-one encoder call. Requests
put their query on a queue; a few workers each take *everything waiting* (up to ``max_batch``), run it as
one batch in the thread pool, and hand each request its own rows. There is no waiting for a batch to fill:
a lone request runs at once, so latency at low load is unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

R = TypeVar("R")
Work = Callable[[Sequence[Any]], Sequence[R]]


class Batcher(Generic[R]):
    def __init__(self, run: Callable[..., Awaitable[Any]], work: Work[R], max_batch: int, workers: int) -> None:
        self._run = run  # runs a blocking function in the service's thread pool
        self._work = work  # items → one result per item, in order (blocking)
        self.max_batch = max_batch
        self.workers = workers
        self._queue: asyncio.Queue[tuple[Any, asyncio.Future[R]]] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.batches = 0
        self.items = 0

    async def start(self) -> None:
        """Create the queue and workers on the running event loop (call from the lifespan)."""
        self._queue = asyncio.Queue()
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.workers)]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def submit(self, item: Any) -> R:
        if self._queue is None:
            raise RuntimeError("Batcher.start() was not called")
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        await self._queue.put((item, future))
        return await future

    async def _worker(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            live = [(item, future) for item, future in batch if not future.done()]  # skip cancelled requests
            if not live:
                continue
            self.batches += 1
            self.items += len(live)
            try:
                results = await self._run(self._work, [item for item, _ in live])
            except Exception as exc:  # each request gets the error (turned into a response by its handler)
                for _, future in live:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(live, results, strict=True):
                if not future.done():
                    future.set_result(result)
