"""What an open image index is made of, shared by its roles: the folder and its sidecar, the SQL rows, the vector
backend behind the read/write lock, the image encoder and the features cache.

:class:`indexer.image_index.ImageIndex` (the facade) builds one when it opens a folder and hands it to its two
parts, :class:`indexer.store.photo_ingest.PhotoIngest` (photos in) and
:class:`indexer.store.maintenance.Maintenance` (keeping files, rows and vectors in agreement). Nothing here decides
*when* to write; it only guards the vectors (searches share the lock, changes take it alone) and creates the
encoder and the cache once, on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.encoders.base import ImageEncoder
from indexer.feature_cache import FeatureCache
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store import vector_files as vf
from indexer.store.backend import VectorBackend
from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.locks import ReadWriteLock
from indexer.store.metadata import MetadataStore
from indexer.store.sidecar import Sidecar


class IndexState:
    """The parts of one open index folder. ``vectors`` is None until the first photo is added."""

    def __init__(
        self,
        folder: Path,
        settings: Settings,
        encoder: ImageEncoder,
        space: ImageSpace,
        sidecar: Sidecar,
        store: MetadataStore,
        vectors: VectorBackend | None,
    ) -> None:
        self.folder = folder
        self.settings = settings
        self.encoder = encoder
        self.space = space
        self.sidecar = sidecar  # as this process last loaded or saved it: its revision is that of ``vectors``
        self.store = store
        self.vectors = vectors
        self.rw = ReadWriteLock()  # searches share it; adding, removing and swapping vectors take it alone
        self._encoder_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: FeatureCache | None = None
        # Set when the last write could not be saved (no space): the index serves its last good state (plus, in
        # memory, what SQL has and the features cache restores) and the next write retries the pending save.
        self.read_only_reason: str | None = None

    @property
    def index_settings(self) -> VectorIndexSettings:
        return self.settings.vector_index

    def count(self) -> int:
        with self.rw.read():
            return len(self.vectors) if self.vectors is not None else 0

    # ------------------------------------------------------------------ vectors (under the lock)
    def add_vectors(self, ids: Sequence[int], matrix: np.ndarray, replaced: Sequence[int] = ()) -> None:
        """Add vectors (creating the backend for the first ones), after removing the ``replaced`` ids."""
        with self.rw.write():
            if self.vectors is None:
                self.vectors = vf.new_vectors(self.folder, matrix.shape[1], self.index_settings)
                self.sidecar.dim = matrix.shape[1]
            if replaced:
                self.vectors.remove(replaced)
            self.vectors.add(ids, matrix)

    def remove_vectors(self, ids: Sequence[int] | np.ndarray) -> None:
        with self.rw.write():
            if self.vectors is not None:
                self.vectors.remove(ids)

    def swap_vectors(self, fresh: VectorBackend | None) -> None:
        """Serve ``fresh`` from now on (a rebuild's new set, or the set another process switched to)."""
        with self.rw.write():
            self.vectors = fresh

    # ------------------------------------------------------------------ encoder and features cache
    def loaded_encoder(self) -> ImageEncoder:
        with self._encoder_lock:
            if not self.encoder.loaded:
                if self.settings.models.torch_threads:
                    import torch

                    torch.set_num_threads(self.settings.models.torch_threads)
                self.encoder.load()
        return self.encoder

    def feature_cache(self) -> FeatureCache:
        if self._cache is None:
            # A ResNet checkpoint's width is only known once loaded; the bundled CNNs declare theirs.
            dim = self.sidecar.dim or self.encoder.dim or self.loaded_encoder().dim
            with self._cache_lock:
                if self._cache is None:
                    self._cache = FeatureCache(self.settings.resolved_cache_dir, self.encoder.cache_name, dim)
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        self.store.close()
