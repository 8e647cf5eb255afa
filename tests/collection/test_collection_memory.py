"""Indexing and re-encoding never keep decoded photos waiting for the encoder: each photo is decoded, turned into
the model's input by ``encoder.prepare`` (a few hundred KB) and dropped, so the memory of a batch is bounded by
the model's input size whatever the photos' sizes or POLYGLOT_BATCH_SIZE."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FakeImageEncoder, write_random_images
from PIL import Image

import indexer.store.photo_ingest as photo_ingest
import indexer.store.reencode as reencode
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.settings import Settings


class Pending:
    """Photos decoded and not yet prepared (the decoder and the encoder's prepare step count in and out)."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def change(self, step: int) -> None:
        with self.lock:
            self.now += step
            self.most = max(self.most, self.now)


class PreparingEncoder(FakeImageEncoder):
    """The fake CNN with a prepare step (a 4x4 thumbnail); records how many decoded photos were waiting."""

    def __init__(self, pending: Pending) -> None:
        super().__init__(delay=0)
        self.pending = pending
        self.batches: list[int] = []
        self.waiting_at_predict: list[int] = []

    def prepare(self, image: Image.Image) -> Any:
        self.pending.change(-1)
        return image.resize((4, 4), Image.Resampling.BOX)

    def _predict_prepared(self, prepared: Sequence[Any]) -> np.ndarray:
        self.waiting_at_predict.append(self.pending.now)
        self.batches.append(len(prepared))
        assert all(image.size == (4, 4) for image in prepared)
        return self._predict(prepared)


@pytest.fixture
def pending(monkeypatch: pytest.MonkeyPatch) -> Pending:
    counter = Pending()
    original = photo_ingest.decode_image

    def counted(data: bytes, max_pixels: int = 0, min_side: int | None = None) -> Image.Image:
        image = original(data, max_pixels=max_pixels, min_side=min_side)
        counter.change(+1)
        return image

    monkeypatch.setattr(photo_ingest, "decode_image", counted)  # indexing
    monkeypatch.setattr(reencode, "decode_image", counted)  # re-encoding (rebuilds, reconciliation)
    return counter


def test_decoded_photos_never_wait_for_the_encoder(tmp_settings: Settings, tmp_path: Path, pending: Pending) -> None:
    paths = write_random_images(tmp_path / "photos", 8, size=(400, 300))  # batch_size is 4 in tmp_settings
    encoder = PreparingEncoder(pending)
    with ImageIndex.open(tmp_settings, encoder=encoder, image_space=ImageSpace("l2")) as index:
        report = index.add_paths(paths, progress=False)
        assert report.added == 8 and not report.failed
        assert encoder.batches == [4, 4] and set(encoder.waiting_at_predict) == {0}
        assert pending.most == 1  # one photo decoded at a time, prepared before the next
        assert {(r.width, r.height) for r in index.list(limit=10)} == {(400, 300)}
        expected = {r.id: index.vector(r.id) for r in index.list(limit=10)}
    # Re-encoding (a rebuild with an empty features cache) holds prepared inputs the same way.
    fresh = tmp_settings.model_copy(update={"cache_dir": tmp_path / "empty-cache"})
    encoder = PreparingEncoder(pending)
    with ImageIndex.open(fresh, encoder=encoder, image_space=ImageSpace("l2")) as index:
        assert index.rebuild(progress=False).added == 8
        assert encoder.batches == [4, 4] and set(encoder.waiting_at_predict) == {0}
        assert pending.most == 1  # one photo decoded at a time, prepared before the next
        for image_id, vector in expected.items():
            np.testing.assert_allclose(index.vector(image_id), vector, atol=1e-6)  # type: ignore[arg-type]
