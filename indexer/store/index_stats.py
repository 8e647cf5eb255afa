"""What ``polyglot index stats`` prints about an image index: counts, kind (and what the size rule would pick
now), sizes on disk and in memory per image, database, dates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from indexer.store.core import DB_NAME
from indexer.store.index_kinds import MMAP_KIND, bytes_per_vector, choose_kind
from indexer.store.sql import redact_url

if TYPE_CHECKING:
    from indexer.image_index import ImageIndex


def index_stats(index: ImageIndex, count: int, vector_file_bytes: int) -> dict[str, Any]:
    db_path = index.folder / DB_NAME
    db_bytes = db_path.stat().st_size if index.settings.database_url is None and db_path.exists() else None
    kind = index.index_kind
    return {
        "count": count,
        "rows": index.store.count(),
        "image_encoder": index.encoder.name,
        "dim": index.dim,
        "index_type": kind,
        "index_type_rule": choose_kind(count, index.index_settings),
        "image_space": index.image_space.fingerprint,
        "index_dir": str(index.folder),
        "database": redact_url(index.store.url),
        "vectors_on_disk_only": kind == MMAP_KIND,  # full vectors memory-mapped, compressed codes in RAM
        "faiss_file_bytes": vector_file_bytes,
        "metadata_file_bytes": db_bytes,
        "disk_bytes_per_image": round(vector_file_bytes / count, 1) if count else None,
        "memory_bytes_per_image": bytes_per_vector(kind, index.dim, index.index_settings) if index.dim else None,
        "images_total_bytes": index.store.total_bytes(),
        "created_at": index.sidecar.created_at,
        "updated_at": index.sidecar.updated_at,
    }
