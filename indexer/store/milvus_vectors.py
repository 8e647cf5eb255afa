"""``POLYGLOT_INDEX_BACKEND=milvus``: the image vectors in a Milvus collection instead of FAISS files.

One of the backends behind :class:`indexer.store.backend.VectorBackend`, so ``ImageIndex`` — and through it the
service and the CLI — use it unchanged; only :mod:`indexer.store.vector_files` picks it. SQL stays the source of truth for
ids and metadata (PostgreSQL in a cluster): a Milvus row is just ``(id = SQL primary key, unit vector)``.

One collection per generation, ``<prefix>_g<time>``, named in the sidecar like an ivf-pq-mmap generation folder:
a rebuild fills a new one and the sidecar switches to it last, so a crash mid-rebuild leaves the old one serving.
Consistency. A Milvus read sees a write once the query nodes' time tick has passed it; a ``Strong`` read waits
for the next tick every time (two ticks measured: 400 ms a search with the stock 200 ms tick,
benchmarks/vector_backends.md). Bookkeeping reads (ids, duplicates) are ``Strong``. Searches and counts use
``POLYGLOT_INDEX_MILVUS_CONSISTENCY``: ``Session`` (default) waits only for this process's own last insert or
delete — a guarantee timestamp taken from the clock when it returned — so the ``ImageIndex`` contract holds
(a search never returns an id this process removed; pymilvus's own Session misses deletes on a 2.3 server) and
later searches do not wait; other processes' writes show within a tick. Inserts are durable once acknowledged
(Milvus writes them to its log before answering), so ``commit`` has nothing to flush.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from indexer.store.backend import SearchResult
from indexer.store.failures import BackendUnavailableError, first_line
from indexer.store.filtered import deepened_search
from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.vectors import _as_ids, _as_matrix, checked_additions

FILES_PREFIX = "milvus:"  # sidecar files.vectors = "milvus:<collection>"
ID, VECTOR = "id", "vector"
INSERT_ROWS = 4_000  # 1280-d float32: 20 MB a message, under Milvus's 64 MB gRPC limit
QUERY_IDS = 4_000  # ids per `id in [...]` expression
MAX_TOPK = 16_384  # Milvus refuses larger limits


class VectorBackendError(RuntimeError):
    """The configured vector backend cannot be used: its client is not installed or its server not reachable."""


class VectorServerError(BackendUnavailableError, VectorBackendError):
    """A call to the Milvus server failed (down, restarting, timed out): an outage, not a bug of the caller."""


_SLOW_CALLS = frozenset({"create_collection", "drop_collection", "load_collection", "create_index"})


class GuardedClient:
    """A ``MilvusClient`` whose every call is bounded by ``POLYGLOT_INDEX_MILVUS_TIMEOUT`` and whose failures
    are :class:`VectorServerError` (one line with the address): the service answers them 503 with Retry-After,
    the CLI prints the line. Without it a dead server gave a traceback from deep in gRPC, and a 500.

    After a failed call the next one first replaces the client (at most once per ``RECONNECT_SECONDS``): pymilvus's
    own recovery gave up on a server that was restarted, and the service stayed unready after Milvus was back."""

    RECONNECT_SECONDS = 1.0

    def __init__(self, connect: Callable[[], Any], settings: VectorIndexSettings) -> None:
        self._connect = connect
        self._client = connect()
        self._uri = settings.milvus_uri
        self._timeout = settings.milvus_timeout
        self._failed_at: float | None = None
        self._lock = threading.Lock()

    def _current(self) -> Any:
        with self._lock:
            if self._failed_at is not None and time.monotonic() - self._failed_at >= self.RECONNECT_SECONDS:
                self._failed_at = time.monotonic()
                try:
                    fresh = self._connect()
                except Exception as exc:
                    raise VectorServerError("vectors", f"Milvus at {self._uri}: {first_line(exc)}") from exc
                old, self._client, self._failed_at = self._client, fresh, None
                with contextlib.suppress(Exception):  # the old channel is dead anyway
                    old.close()
            return self._client

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("create_schema", "prepare_index_params"):
            return getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            method = getattr(self._current(), name)
            # Searches and reads fail fast during an outage; creating (and loading) a collection takes longer.
            kwargs.setdefault("timeout", self._timeout if name not in _SLOW_CALLS else max(self._timeout, 120.0))
            try:
                return method(*args, **kwargs)
            except Exception as exc:  # pymilvus raises MilvusException and raw gRPC errors alike
                with self._lock:
                    self._failed_at = self._failed_at or time.monotonic()
                raise VectorServerError("vectors", f"Milvus at {self._uri}: {first_line(exc)}") from exc

        return call


def _not_mvcc_notice(record: logging.LogRecord) -> bool:
    """Drop pymilvus's warning that a 2.3 server gives no MVCC timestamp to its query iterator (it then uses the
    client's clock, which is what we want): it would print at every index open."""
    return "mvccTs" not in record.getMessage()


def connect(settings: VectorIndexSettings) -> Any:
    """A client for ``settings.milvus_uri`` (imported here: pymilvus is the optional ``cluster`` extra)."""
    try:
        from pymilvus import MilvusClient
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise VectorBackendError("POLYGLOT_INDEX_BACKEND=milvus needs pymilvus: pip install '.[cluster]'") from exc
    # pymilvus logs every failed call (and each retry) with a traceback: during a 35-s outage that was thousands
    # of tracebacks. Failures reach the caller as VectorServerError, which the service logs once per interval.
    for name in ("pymilvus.decorators", "pymilvus.client.connection_manager"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    iterator_log = logging.getLogger("pymilvus.client.iterator.query_iterator")
    if _not_mvcc_notice not in iterator_log.filters:
        iterator_log.addFilter(_not_mvcc_notice)
    try:
        return GuardedClient(
            lambda: MilvusClient(
                uri=settings.milvus_uri, token=settings.milvus_token or "", timeout=settings.milvus_timeout
            ),
            settings,
        )
    except Exception as exc:  # pymilvus raises MilvusException or grpc errors; the user needs the address
        # An outage like any failed call (retrying later may work): `polyglot serve` refuses with this line and
        # the service answers 503, where a VectorBackendError alone escaped `serve` as a traceback.
        raise VectorServerError("vectors", f"cannot reach Milvus at {settings.milvus_uri}: {first_line(exc)}") from exc


class MilvusVectors:
    """Vectors of one generation collection; not thread-safe by itself (ImageIndex holds the lock)."""

    def __init__(self, client: Any, collection: str, dim: int | None, settings: VectorIndexSettings) -> None:
        self.client = client
        self.collection = collection
        self.settings = settings
        self.kind = f"milvus-{settings.milvus_index}"
        self._dim = dim
        self._written_at = 1  # hybrid timestamp (ms << 18) after this process's last write: Session reads wait for it
        self._exists = client.has_collection(collection)
        if self._exists:
            self._dim = self._stored_dim()

    @classmethod
    def open(cls, files_entry: str, dim: int | None, settings: VectorIndexSettings) -> MilvusVectors:
        """The generation a sidecar names (``milvus:<collection>``)."""
        return cls(connect(settings), files_entry.removeprefix(FILES_PREFIX), dim, settings)

    @classmethod
    def new_generation(cls, dim: int | None, settings: VectorIndexSettings) -> MilvusVectors:
        """A new, empty generation (the collection is created by the first ``add``)."""
        return cls(connect(settings), f"{settings.milvus_collection}_g{time.time_ns()}", dim, settings)

    @property
    def files_entry(self) -> str:
        return FILES_PREFIX + self.collection

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        if self._dim is None:
            raise ValueError("empty Milvus generation: its dimension is set by the first add")
        return self._dim

    def _stored_dim(self) -> int:
        fields = self.client.describe_collection(self.collection)["fields"]
        return int(next(f for f in fields if f["name"] == VECTOR)["params"]["dim"])

    def __len__(self) -> int:
        if not self._exists:
            return 0
        # At the search consistency: /search reports the count with every answer, so it waits as searches do.
        rows = self.client.query(
            self.collection,
            filter="",
            output_fields=["count(*)"],
            **self._consistency(),
        )
        return int(rows[0]["count(*)"])

    def ids(self) -> np.ndarray:
        """Every stored id, sorted (paged with a query iterator: the reconcile at open reads them all)."""
        if not self._exists:
            return np.zeros(0, dtype=np.int64)
        found: list[int] = []
        pages = self.client.query_iterator(self.collection, batch_size=10_000, filter=f"{ID} >= 0", output_fields=[ID])
        try:
            while page := pages.next():
                found += [int(row[ID]) for row in page]
        except Exception as exc:  # the iterator's pages are fetched outside the guarded client's calls
            raise VectorServerError("vectors", f"Milvus at {self.settings.milvus_uri}: {first_line(exc)}") from exc
        finally:
            pages.close()
        return np.sort(np.asarray(found, dtype=np.int64))

    def _present(self, ids: np.ndarray) -> np.ndarray:
        """Which of ``ids`` are stored (a boolean mask)."""
        if not self._exists or not len(ids):
            return np.zeros(len(ids), dtype=bool)
        stored: set[int] = set()
        for chunk in _chunks(ids, QUERY_IDS):
            rows = self.client.query(self.collection, ids=[int(i) for i in chunk], output_fields=[ID])
            stored.update(int(row[ID]) for row in rows)
        return np.isin(ids, np.fromiter(stored, dtype=np.int64, count=len(stored)))

    # ------------------------------------------------------------------ mutation
    def _create(self, dim: int) -> None:
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(ID, DataType.INT64, is_primary=True)
        schema.add_field(VECTOR, DataType.FLOAT_VECTOR, dim=dim)
        index = self.client.prepare_index_params()
        if self.settings.milvus_index == "hnsw":
            params = {"M": self.settings.hnsw_m, "efConstruction": self.settings.hnsw_ef_construction}
            index.add_index(field_name=VECTOR, index_type="HNSW", metric_type="IP", params=params)
        else:
            index.add_index(field_name=VECTOR, index_type="FLAT", metric_type="IP", params={})
        self.client.create_collection(self.collection, schema=schema, index_params=index, consistency_level="Strong")
        self._exists, self._dim = True, dim

    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        if self._dim is None:
            self._dim = int(np.atleast_2d(vectors).shape[1])
        id_array, matrix = checked_additions(ids, vectors, self.dim, self._present)
        if not len(id_array):
            return
        if not self._exists:
            self._create(self.dim)
        for start in range(0, len(id_array), INSERT_ROWS):
            rows = [
                {ID: int(i), VECTOR: v}
                for i, v in zip(id_array[start : start + INSERT_ROWS], matrix[start : start + INSERT_ROWS], strict=True)
            ]
            self.client.insert(self.collection, rows)
        self._mark_written()

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        """Remove the given ids (unknown ones are ignored); returns how many were removed."""
        id_array = np.unique(_as_ids(ids))
        doomed = id_array[self._present(id_array)]
        for chunk in _chunks(doomed, QUERY_IDS):
            self.client.delete(self.collection, ids=[int(i) for i in chunk])
        if len(doomed):
            self._mark_written()
        return len(doomed)

    def _mark_written(self) -> None:
        self._written_at = int(time.time() * 1000) << 18  # Milvus hybrid timestamps: physical ms, 18 logical bits

    def _consistency(self) -> dict[str, Any]:
        """The read options of searches and counts (see the module docstring)."""
        if self.settings.milvus_consistency == "Session":
            return {"consistency_level": "Customized", "guarantee_timestamp": self._written_at}
        return {"consistency_level": self.settings.milvus_consistency}

    def ping(self) -> None:
        """Raise :class:`VectorServerError` unless the server answers (``/ready``)."""
        self.client.has_collection(self.collection)

    def commit(self) -> None:
        """Nothing to write: Milvus made each insert and delete durable before acknowledging it."""

    def disk_bytes(self) -> int:
        return 0  # on the Milvus server, not in the index folder

    def catch_up(self) -> None:
        """Nothing: other processes' writes show within a time tick (Session consistency, module docstring)."""

    def drop_replaced(self) -> None:
        """Drop this prefix's generations other than this one (a finished rebuild's old one, a dead rebuild's)."""
        prefix = f"{self.settings.milvus_collection}_g"
        for name in self.client.list_collections():
            if name.startswith(prefix) and name[len(prefix) :].isdigit() and name != self.collection:
                self.client.drop_collection(name)

    def drop(self) -> None:
        if self._exists:
            self.client.drop_collection(self.collection)
            self._exists = False

    # ------------------------------------------------------------------ reading
    def search(self, vectors: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[SearchResult]:
        """Top ``k`` per query row by inner product (= cosine of unit vectors), best first; ``allowed``: among
        those ids only, by a search deepened until each query has its ``k`` (stored vectors are not read back:
        a round trip per chunk)."""
        if allowed is not None:
            return deepened_search(self, vectors, k, allowed)
        matrix = _as_matrix(vectors, self.dim)
        if k <= 0 or not self._exists:
            return [SearchResult([], []) for _ in range(len(matrix))]
        limit = min(k, MAX_TOPK)
        params: dict[str, Any] = {"metric_type": "IP", "params": {}}
        if self.settings.milvus_index == "hnsw":
            params["params"] = {"ef": max(self.settings.hnsw_ef_search, limit)}
        hits = self.client.search(
            self.collection,
            data=list(matrix),
            limit=limit,
            search_params=params,
            **self._consistency(),
        )
        return [SearchResult([int(hit["id"]) for hit in row], [float(hit["distance"]) for hit in row]) for row in hits]

    def reconstruct(self, id_: int) -> np.ndarray | None:
        if not self._exists:
            return None
        rows = self.client.query(self.collection, ids=[int(id_)], output_fields=[VECTOR])
        return np.asarray(rows[0][VECTOR], dtype=np.float32) if rows else None

    def reconstruct_many(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        id_array = _as_ids(ids)
        found: dict[int, Any] = {}
        for chunk in _chunks(id_array, QUERY_IDS):
            rows = self.client.query(self.collection, ids=[int(i) for i in chunk], output_fields=[ID, VECTOR])
            found.update((int(row[ID]), row[VECTOR]) for row in rows)
        missing = [int(i) for i in id_array if int(i) not in found]
        if missing:
            raise KeyError(f"ids not stored: {missing[:10]}")
        return np.asarray([found[int(i)] for i in id_array], dtype=np.float32).reshape(len(id_array), self.dim)


def _chunks(values: np.ndarray, size: int) -> Iterator[np.ndarray]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
