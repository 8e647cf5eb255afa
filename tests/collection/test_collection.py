"""ImageIndex: adding, skipping, dedup by content, metadata, uploads, removal, rebuild, mismatch errors."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeImageEncoder, write_random_images
from PIL import Image

from indexer.image_index import ImageIndex, IndexMismatchError, IndexNotFoundError
from indexer.image_space import ImageSpace
from indexer.images import ImageDecodeError
from indexer.settings import Settings
from indexer.store.vectors import PQ_MIN_VECTORS, VectorIndexSettings

L2 = ImageSpace("l2")


def open_index(settings: Settings, encoder: FakeImageEncoder, **kwargs: object) -> ImageIndex:
    return ImageIndex.open(settings, encoder=encoder, image_space=kwargs.pop("image_space", L2), **kwargs)  # type: ignore[arg-type]


def assert_consistent(index: ImageIndex) -> None:
    faiss_ids = sorted(index._state.vectors.ids().tolist()) if index._state.vectors is not None else []
    assert faiss_ids == index.store.ids()
    assert index.info["count"] == len(faiss_ids)


def assert_finds_then_forgets(index: ImageIndex, image_id: int) -> np.ndarray:
    """An image's own vector finds it first with score 1 (exact re-ranking); once removed it is never found.
    Returns that vector (a caller checks the removal again after reopening)."""
    query = index.vector(image_id)
    assert query is not None
    best = index.search(query, k=3)[0]
    assert best[0].id == image_id and best[0].score == pytest.approx(1.0, abs=1e-5)  # re-ranked exactly
    assert index.remove([image_id]) == 1
    assert all(hit.id != image_id for hit in index.search(query, k=5)[0])
    return query


def test_add_skips_unchanged_and_search_finds_each_image(
    tmp_settings: Settings, image_folder: Path, fake_encoder: FakeImageEncoder
) -> None:
    paths = sorted(image_folder.rglob("*.*"))
    with open_index(tmp_settings, fake_encoder) as index:
        report = index.add_paths(paths, progress=False)
        assert (report.added, report.skipped, report.failed) == (6, 0, [])
        assert len(index) == 6 and fake_encoder.encoded == 6
        again = index.add_paths(paths, progress=False)
        assert (again.added, again.skipped) == (0, 6) and fake_encoder.encoded == 6
        for record in index.list(limit=10):
            vector = index.vector(record.id)
            assert vector is not None and abs(float(np.linalg.norm(vector)) - 1) < 1e-5
            assert index.search(vector, k=1)[0][0].id == record.id
            raw = fake_encoder.predict([Image.open(record.path)])[0]  # the photo through the encoder and space
            unit = index.image_space.apply(raw)[0]
            np.testing.assert_allclose(unit, vector, atol=1e-5)
            np.testing.assert_allclose(raw, index.raw_features(record.id), atol=1e-6)
        hits = index.search(np.stack([index.vector(1), index.vector(2)]), k=3, offset=1)  # type: ignore[list-item]
        full = index.search(np.stack([index.vector(1), index.vector(2)]), k=4)  # type: ignore[list-item]
        assert [[h.id for h in row] for row in hits] == [[h.id for h in row[1:]] for row in full]
        assert_consistent(index)
        stats = index.stats()
        assert stats["count"] == 6 and stats["index_type"] == "flat" and stats["dim"] == 48
    # A new process (new object) sees the same index.
    with open_index(tmp_settings, FakeImageEncoder(0)) as reopened:
        assert len(reopened) == 6 and reopened.info["image_encoder"] == "fake-grid"


def test_same_content_new_path_reuses_features_and_changed_file_is_replaced(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    a, b = write_random_images(tmp_path / "in", 2)
    copy = tmp_path / "in" / "copy.jpg"
    copy.write_bytes(a.read_bytes())
    with open_index(tmp_settings, fake_encoder) as index:
        index.add_paths([a, b, copy], progress=False)
        assert len(index) == 3 and fake_encoder.encoded == 2  # the copy reused a's features
        old = index.store.by_paths([str(b.resolve())])[str(b.resolve())][0]
        Image.new("RGB", (20, 20), (250, 0, 0)).save(b, format="PNG")
        report = index.add_paths([a, b, copy], progress=False)
        assert (report.added, report.skipped) == (1, 2)
        new_id = index.store.by_paths([str(b.resolve())])[str(b.resolve())][0]
        assert new_id != old and index.get(old) is None and index.vector(old) is None
        assert index.get(new_id).width == 20  # type: ignore[union-attr]
        assert_consistent(index)


def test_bad_files_are_reported_not_fatal(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    (good,) = write_random_images(tmp_path / "in", 1)
    bad = tmp_path / "in" / "bad.jpg"
    bad.write_bytes(b"this is text, not a JPEG")
    truncated = tmp_path / "in" / "cut.png"
    truncated.write_bytes(write_random_images(tmp_path / "x", 2)[1].read_bytes()[:60])
    with open_index(tmp_settings, fake_encoder) as index:
        report = index.add_paths([good, bad, truncated, tmp_path / "gone.jpg"], progress=False)
        assert report.added == 1
        reasons = dict(report.failed)
        assert "not an image" in reasons[str(bad.resolve())]
        assert "truncated" in reasons[str(truncated.resolve())] or "corrupt" in reasons[str(truncated.resolve())]
        assert "cannot read" in reasons[str((tmp_path / "gone.jpg").resolve())]
        assert_consistent(index)


def test_metadata_is_stored_and_updated(tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder) -> None:
    (a,) = write_random_images(tmp_path / "in", 1)
    with open_index(tmp_settings, fake_encoder) as index:
        index.add_paths(
            [a], {a: {"title": "Dog", "tags": ["dog"], "extra": {"src": "x"}, "year": 2020}}, progress=False
        )
        record = index.list()[0]
        assert (record.title, record.tags, record.extra) == ("Dog", ["dog"], {"src": "x", "year": 2020})
        index.add_paths([a], {a: {"title": "Hund", "caption": "ein Hund"}}, progress=False)
        record = index.get(record.id)  # type: ignore[assignment]
        assert (record.title, record.caption, len(index)) == ("Hund", "ein Hund", 1)


def test_upload_bytes(tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (30, 20), (10, 200, 30)).save(buffer, format="PNG")
    data = buffer.getvalue()
    with open_index(tmp_settings, fake_encoder) as index:
        record = index.add_image_bytes(data, "holiday.jpeg", {"title": "green"})
        stored = Path(record.path)
        assert stored.parent == tmp_settings.resolved_index_dir.resolve() / "uploads"
        assert stored.suffix == ".png" and stored.read_bytes() == data  # named by real format
        assert (record.title, record.extra["filename"], record.width, record.height) == (
            "green",
            "holiday.jpeg",
            30,
            20,
        )
        assert index.add_image_bytes(data, "again.png").id == record.id  # same content: same record
        with pytest.raises(ImageDecodeError):
            index.add_image_bytes(b"GIF89a not really", "x.gif")
        assert len(index) == 1
        assert index.remove([record.id]) == 1 and not stored.exists()  # the upload goes with its record


def test_remove_and_rebuild(tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder) -> None:
    paths = write_random_images(tmp_path / "in", 8)
    with open_index(tmp_settings, fake_encoder) as index:
        index.add_paths(paths, progress=False)
        assert index.remove([1, 2, 999]) == 2 and len(index) == 6
        assert all(h.id not in (1, 2) for h in index.search(index.vector(3), k=8)[0])  # type: ignore[arg-type]
        before = {i: index.vector(i) for i in index.store.ids()}
        paths[5].unlink()  # its features are cached: rebuild still works without the file
        index._state.feature_cache().put_many({})  # no-op, cache stays
        report = index.rebuild(progress=False)
        assert report.added == 6 and report.failed == []
        for i, vector in before.items():
            np.testing.assert_allclose(index.vector(i), vector, atol=1e-6)
        assert_consistent(index)


def test_kind_follows_size_rule(tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder) -> None:
    paths = write_random_images(tmp_path / "in", 10)
    settings = tmp_settings.model_copy(update={"vector_index": VectorIndexSettings(exact_max=5, hnsw_max=1000)})
    with open_index(settings, fake_encoder) as index:
        index.add_paths(paths[:4], progress=False)
        assert index.stats()["index_type"] == "flat"
        index.add_paths(paths, progress=False)
        assert index.stats()["index_type"] == "hnsw" and index.info["index_type"] == "hnsw"
        assert index.search(index.vector(7), k=1)[0][0].id == 7  # type: ignore[arg-type]
        assert index.remove([7]) == 1 and len(index) == 9
    with open_index(settings, FakeImageEncoder(0)) as reopened:
        assert reopened.stats()["index_type"] == "hnsw" and len(reopened) == 9


def test_growth_into_pq_refine_keeps_exact_scores_and_removal(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    paths = write_random_images(tmp_path / "in", PQ_MIN_VECTORS + 20, size=(8, 8))
    # The fake features of random pixels are near-uniform noise, on which 4-bit codes rank poorly: a shortlist as
    # long as the collection makes the re-ranking exhaustive here (test_vectors.py checks the short one).
    rule = VectorIndexSettings(flat_max=10, refine_factor=1000)
    settings = tmp_settings.model_copy(update={"vector_index": rule})
    with open_index(settings, fake_encoder) as index:
        index.add_paths(paths[:10], progress=False)
        assert index.stats()["index_type"] == "flat"
        index.add_paths(paths, progress=False)
        assert index.stats()["index_type"] == "pq-refine" and len(index) == len(paths)
        assert_finds_then_forgets(index, 42)
        assert_consistent(index)
    with open_index(settings, FakeImageEncoder(0)) as reopened:
        assert reopened.stats()["index_type"] == "pq-refine" and len(reopened) == len(paths) - 1


def test_other_encoder_or_space_is_a_clear_error(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    with pytest.raises(IndexNotFoundError, match="index add"):
        open_index(tmp_settings, fake_encoder, create=False)
    with open_index(tmp_settings, fake_encoder) as index:
        index.add_paths(write_random_images(tmp_path / "in", 3), progress=False)

    class OtherEncoder(FakeImageEncoder):
        name = "other-cnn"

    with pytest.raises(IndexMismatchError, match=r"'fake-grid'.*'other-cnn'.*POLYGLOT_IMAGE_ENCODER=fake-grid"):
        open_index(tmp_settings, OtherEncoder(0))
    centred = ImageSpace("center-l2", mean=np.full(48, 0.3, dtype=np.float32))
    with pytest.raises(IndexMismatchError, match="index rebuild"):
        open_index(tmp_settings, fake_encoder, image_space=centred)
    with open_index(tmp_settings, fake_encoder, image_space=centred, rebuild_if_stale=True) as index:
        assert index.info["image_space"]["fingerprint"] == centred.fingerprint and len(index) == 3
        record = index.list()[0]
        raw = index.raw_features(record.id)
        np.testing.assert_allclose(index.vector(record.id), centred.apply(raw)[0], atol=1e-5)  # type: ignore[arg-type]


def test_default_space_comes_from_tower_config(tmp_settings: Settings, tmp_path: Path) -> None:

    from indexer.store.opening import default_image_space

    tower = tmp_path / "tower"
    tower.mkdir()
    mean = ImageSpace("center-l2", mean=np.arange(4, dtype=np.float32))
    (tower / "config.json").write_text(json.dumps({"image_space": mean.to_config()}))
    settings = tmp_settings.model_copy(update={"tower_path": tower})
    assert default_image_space(settings).fingerprint == mean.fingerprint
    empty = tmp_settings.model_copy(update={"tower_path": tmp_path / "none"})
    assert default_image_space(empty).kind == "l2"


def test_searches_run_while_a_writer_adds(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    paths = write_random_images(tmp_path / "in", 40)
    with open_index(tmp_settings, fake_encoder) as index:
        index.add_paths(paths[:4], progress=False)
        query = index.vector(1)
        errors: list[BaseException] = []
        stop = threading.Event()

        def reader() -> None:
            try:
                while not stop.is_set():
                    hits = index.search(query, k=50)[0]  # type: ignore[arg-type]
                    assert len({h.id for h in hits}) == len(hits) and all(h.id > 0 for h in hits)
                    for hit in hits:
                        # Rows are committed before vectors appear, so a hit always has its row, unless
                        # it was removed (by the remove below) between this search and this get.
                        assert index.get(hit.id) is not None or 5 <= hit.id < 20
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for thread in threads:
            thread.start()
        index.add_paths(paths, progress=False)
        index.remove(list(range(5, 20)))
        stop.set()
        for thread in threads:
            thread.join()
        assert errors == [] and len(index) == 25
        assert_consistent(index)


@pytest.mark.postgres
def test_index_with_postgres_metadata(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder, postgres_url: str, pg_schema: str
) -> None:
    # libpq options put the tables into the test's own schema.
    url = f"{postgres_url}?options=-csearch_path%3D{pg_schema}"
    settings = tmp_settings.model_copy(update={"database_url": url})
    paths = write_random_images(tmp_path / "in", 5)
    with open_index(settings, fake_encoder) as index:
        assert index.add_paths(paths, progress=False).added == 5
        assert index.add_paths(paths, progress=False).skipped == 5
        assert index.remove([2]) == 1
        assert index.stats()["database"].startswith("postgresql+psycopg://")
        assert_consistent(index)
    assert not (settings.resolved_index_dir / "metadata.sqlite").exists()
    with open_index(settings, FakeImageEncoder(0)) as reopened:
        assert [r.id for r in reopened.list()] == [1, 3, 4, 5]


def test_ctrl_c_keeps_finished_batches(tmp_settings: Settings, tmp_path: Path) -> None:
    class InterruptedEncoder(FakeImageEncoder):
        def _predict(self, images):  # type: ignore[no-untyped-def]
            if self.calls == 2:  # the third batch: the user presses Ctrl-C
                raise KeyboardInterrupt
            return super()._predict(images)

    paths = write_random_images(tmp_path / "in", 12)  # batches of 4
    with open_index(tmp_settings, InterruptedEncoder(0)) as index, pytest.raises(KeyboardInterrupt):
        index.add_paths(paths, progress=False)
    sidecar = json.loads((tmp_settings.resolved_index_dir / "index.json").read_text())
    assert sidecar["count"] == 8  # the FAISS file and sidecar were saved on the way out
    with open_index(tmp_settings, FakeImageEncoder(0)) as index:
        assert len(index) == 8
        assert_consistent(index)
        assert index.add_paths(paths, progress=False).added == 4


def test_upload_path_is_absolute_with_a_relative_index_dir(
    tmp_settings: Settings, fake_encoder: FakeImageEncoder
) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (12, 12), (1, 2, 3)).save(buffer, format="JPEG")
    settings = tmp_settings.model_copy(update={"index_dir": Path("relative-index")})  # tmp_settings chdir'd
    with open_index(settings, fake_encoder) as index:
        record = index.add_image_bytes(buffer.getvalue(), "a.jpg")
        assert Path(record.path).is_absolute() and Path(record.path).is_file()
