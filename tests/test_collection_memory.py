"""Indexing keeps a bounded number of decoded pixels waiting for the encoder (indexer/store/core.PENDING_PIXELS),
whatever POLYGLOT_BATCH_SIZE is: a batch of 32 large photos would otherwise sit decoded in memory at once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeImageEncoder, write_random_images
from PIL import Image

from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.indexer_settings import IndexerSettings


class CountingEncoder(FakeImageEncoder):
    def __init__(self) -> None:
        super().__init__(delay=0)
        self.batches: list[int] = []

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        self.batches.append(len(images))
        return super()._predict(images)


def test_decoded_images_wait_for_the_encoder_in_pixel_bounded_batches(
    tmp_settings: IndexerSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("indexer.store.core.PENDING_PIXELS", 3 * 40 * 30)  # three of the 40x30 photos
    paths = write_random_images(tmp_path / "photos", 8)  # batch_size is 4 in tmp_settings
    encoder = CountingEncoder()
    with ImageIndex.open(tmp_settings, encoder=encoder, image_space=ImageSpace("l2")) as index:
        report = index.add_paths(paths, progress=False)
        assert report.added == 8 and not report.failed
        assert encoder.batches == [3, 1, 3, 1]  # without the bound: [4, 4]
        assert {(r.width, r.height) for r in index.list(limit=10)} == {(40, 30)}  # sizes known without decoding
        expected = {r.id: index.vector(r.id) for r in index.list(limit=10)}
    # Re-encoding (a rebuild with an empty features cache) is bounded the same way.
    fresh = tmp_settings.model_copy(update={"cache_dir": tmp_path / "empty-cache"})
    encoder = CountingEncoder()
    with ImageIndex.open(fresh, encoder=encoder, image_space=ImageSpace("l2")) as index:
        assert index.rebuild(progress=False).added == 8
        assert encoder.batches == [3, 3, 2]
        for image_id, vector in expected.items():
            np.testing.assert_allclose(index.vector(image_id), vector, atol=1e-6)  # type: ignore[arg-type]
