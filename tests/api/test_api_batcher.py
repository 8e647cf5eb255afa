"""The search micro-batcher: concurrent requests share one call, each gets its own row, errors reach all."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from app.engine import Batcher


def test_concurrent_requests_are_coalesced_and_answered_in_order() -> None:
    calls: list[list[int]] = []
    gate = threading.Event()

    def work(items: Sequence[int]) -> list[int]:
        calls.append(list(items))
        if len(calls) == 1:
            gate.wait(5)  # hold the first batch so the others queue up behind it
        return [item * 10 for item in items]

    async def scenario() -> list[int]:
        batcher: Batcher[int] = Batcher(work, max_batch=4, workers=1)
        await batcher.start()
        try:
            first = asyncio.create_task(batcher.submit(0))
            await asyncio.sleep(0.05)
            rest = [asyncio.create_task(batcher.submit(i)) for i in range(1, 7)]
            await asyncio.sleep(0.05)
            gate.set()
            return [await first] + [await task for task in rest]
        finally:
            await batcher.stop()

    assert asyncio.run(scenario()) == [0, 10, 20, 30, 40, 50, 60]
    assert calls == [[0], [1, 2, 3, 4], [5, 6]]


def test_a_lone_request_does_not_wait() -> None:
    async def scenario() -> float:
        batcher: Batcher[int] = Batcher(lambda items: list(items), max_batch=32, workers=2)
        await batcher.start()
        try:
            start = time.perf_counter()
            assert await batcher.submit(5) == 5
            return time.perf_counter() - start
        finally:
            await batcher.stop()

    assert asyncio.run(scenario()) < 0.5


def test_errors_reach_every_request_in_the_batch_and_the_worker_survives() -> None:
    def work(items: Sequence[int]) -> list[int]:
        if 13 in items:
            raise ValueError("unlucky")
        return list(items)

    async def scenario() -> None:
        batcher: Batcher[int] = Batcher(work, max_batch=8, workers=1)
        await batcher.start()
        try:
            with pytest.raises(ValueError, match="unlucky"):
                await batcher.submit(13)
            assert await batcher.submit(7) == 7
        finally:
            await batcher.stop()

    asyncio.run(scenario())


def test_workers_run_their_thread_init_and_stop_cleanly() -> None:
    names: list[str] = []

    async def scenario() -> None:
        batcher: Batcher[int] = Batcher(
            lambda items: list(items),
            max_batch=4,
            workers=2,
            thread_init=lambda: names.append(threading.current_thread().name),
        )
        await batcher.start()
        assert await batcher.submit(3) == 3
        await batcher.stop()
        with pytest.raises(RuntimeError, match="start"):
            await batcher.submit(4)

    asyncio.run(scenario())
    assert sorted(names) == ["search-batch-0", "search-batch-1"]


def test_a_cancelled_request_is_skipped_and_the_rest_answered() -> None:
    seen: list[list[int]] = []
    gate = threading.Event()

    def work(items: Sequence[int]) -> list[int]:
        seen.append(list(items))
        if len(seen) == 1:
            gate.wait(5)
        return list(items)

    async def scenario() -> int:
        batcher: Batcher[int] = Batcher(work, max_batch=8, workers=1)
        await batcher.start()
        try:
            first = asyncio.create_task(batcher.submit(1))
            await asyncio.sleep(0.05)
            doomed = asyncio.create_task(batcher.submit(2))
            kept = asyncio.create_task(batcher.submit(3))
            await asyncio.sleep(0.05)
            doomed.cancel()
            await asyncio.sleep(0.05)
            gate.set()
            await first
            return await kept
        finally:
            await batcher.stop()

    assert asyncio.run(scenario()) == 3
    assert seen == [[1], [3]]
