"""Issue 27: photos as people have them — 12-Mpx JPEGs decoded at the size the encoder needs, HEIC/AVIF/RAW,
EXIF dates, places and cameras stored with the row (migrated in place on SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from api_fixtures import CAPTIONS, fake_engine_factory, service_settings  # noqa: F401
from conftest import FakeImageEncoder, write_random_images
from fastapi.testclient import TestClient
from photo_samples import avif, dng, heic, jpeg, picture, png_alpha, write
from PIL import Image
from sqlalchemy import create_engine, text

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.distributed.ray_embed import Embedder
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.images import ImageDecodeError, decode_image
from indexer.photo_metadata import photo_facts
from indexer.raw_preview import raw_preview
from indexer.settings import Settings
from indexer.store.metadata import MetadataStore, NewImage, sqlite_url
from indexer.thumbnails import thumbnail_path

LISBON = (38.7223, -9.1393)


class SizedFakeEncoder(FakeImageEncoder):
    """The fake CNN with an input size, so the indexer decodes for it at a reduced size."""

    input_size = 32

    def __init__(self) -> None:
        super().__init__(delay=0)
        self.sizes: list[tuple[int, int]] = []

    def prepare(self, image: Image.Image) -> Image.Image:
        self.sizes.append(image.size)
        return image


def _jpeg_bytes(image: Image.Image, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90, **options)  # type: ignore[arg-type]
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------ reduced decoding
def test_jpeg_is_decoded_at_the_smallest_dct_scale_that_keeps_the_short_side() -> None:
    data = _jpeg_bytes(picture((4000, 3000)))
    assert decode_image(data).size == (4000, 3000)
    assert decode_image(data, min_side=260).size == (500, 375)  # 1/8: 375 >= 260
    assert decode_image(data, min_side=400).size == (1000, 750)  # 1/4
    assert decode_image(data, min_side=5000).size == (4000, 3000)  # never upscaled


def test_other_formats_are_reduced_by_an_integer_factor_and_orientation_applies_after() -> None:
    buffer = io.BytesIO()
    picture((1200, 900)).save(buffer, "PNG")
    assert decode_image(buffer.getvalue(), min_side=100).size == (134, 100)  # factor 9 (reduce rounds up)
    # EXIF orientation 6 (rotate 90°): the reduced decode is upright, short side still >= min_side
    rotated = jpeg((1600, 1200), orientation=6)
    assert decode_image(rotated).size == (1200, 1600)
    small = decode_image(rotated, min_side=150)
    assert small.size == (150, 200)  # 1/8 of 1200×1600, turned
    full = np.asarray(decode_image(rotated).resize(small.size, Image.Resampling.BOX), dtype=np.float32)
    assert np.abs(full - np.asarray(small, dtype=np.float32)).mean() < 6  # same picture, same way up


def test_limits_still_apply_to_the_full_size_from_the_header() -> None:
    data = _jpeg_bytes(picture((2000, 1500)))
    with pytest.raises(ImageDecodeError, match="too large"):
        decode_image(data, max_pixels=1_000_000, min_side=100)


def test_indexing_decodes_reduced_stores_the_real_size_and_writes_the_thumbnail(
    tmp_settings: Settings, tmp_path: Path
) -> None:
    photo = write(tmp_path / "photos", "big.jpg", jpeg((2048, 1536), orientation=6))
    encoder = SizedFakeEncoder()
    with ImageIndex.open(tmp_settings, encoder=encoder, image_space=ImageSpace("l2")) as index:
        assert index.add_paths([photo], progress=False).added == 1
        record = index.list()[0]
    # 1/4 scale, upright: the short side kept >= the thumbnail's 256 (the encoder alone needs 32)
    assert encoder.sizes == [(384, 512)]
    assert (record.width, record.height) == (1536, 2048)  # the photo's own size, not the decode's
    thumb = thumbnail_path(tmp_settings.resolved_cache_dir, record.sha256, tmp_settings.index.thumbnail_size)
    assert Image.open(thumb).size == (192, 256)  # from the same (reduced) decode, no second full decode


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    assert a is not None and b is not None
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_reencoding_and_uploads_decode_reduced_like_indexing(tmp_settings: Settings, tmp_path: Path) -> None:
    """A rebuild whose features cache is gone re-encodes each photo from the same reduced decode as ``index add``
    (so the same vector, and a 12-Mpx JPEG costs a 1/8-scale decode), and so do an upload of the same bytes and a
    Ray worker."""
    data = _jpeg_bytes(picture((4000, 3000)))
    photo = write(tmp_path / "photos", "big.jpg", data)
    encoder = SizedFakeEncoder()
    with ImageIndex.open(tmp_settings, encoder=encoder, image_space=ImageSpace("l2")) as index:
        assert index.add_paths([photo], progress=False).added == 1
        record = index.list()[0]
        added = index.vector(record.id)
    assert encoder.sizes == [(500, 375)]  # 1/8 scale: the short side kept >= the thumbnail's 256
    fresh = tmp_settings.model_copy(update={"cache_dir": tmp_path / "empty-cache"})  # every feature re-encoded
    encoder = SizedFakeEncoder()
    with ImageIndex.open(fresh, encoder=encoder, image_space=ImageSpace("l2")) as index:
        assert index.rebuild(progress=False).added == 1
        assert encoder.sizes == [(500, 375)]  # not 4000×3000
        assert _cosine(index.vector(record.id), added) >= 0.9999
    uploads = fresh.model_copy(update={"index_dir": tmp_path / "uploaded", "cache_dir": tmp_path / "upload-cache"})
    encoder = SizedFakeEncoder()
    with ImageIndex.open(uploads, encoder=encoder, image_space=ImageSpace("l2")) as index:
        uploaded = index.add_image_bytes(data, "big.jpg")
        assert encoder.sizes == [(500, 375)]
        assert (uploaded.width, uploaded.height) == (4000, 3000)  # the photo's size, read from its header
        assert _cosine(index.vector(uploaded.id), added) >= 0.9999
    encoder = SizedFakeEncoder()  # a Ray worker of `index add --engine ray`
    side = tmp_settings.index.decode_side(encoder.decode_side)
    embedded = Embedder(encoder, tmp_settings.index.max_image_pixels, side)(
        {"path": np.array([str(photo)]), "shard": [0]}
    )
    assert encoder.sizes == [(500, 375)]
    assert _cosine(embedded["features"][0], added) >= 0.9999  # the l2 image space keeps cosines


class PredictRecordingEncoder(SizedFakeEncoder):
    """Records the size of each image the service hands the encoder (uploads go to ``predict``)."""

    def __init__(self) -> None:
        super().__init__()
        self.predicted: list[tuple[int, int]] = []

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        self.predicted += [image.size for image in images]
        return super()._predict(images)


def test_search_by_a_12_mpx_photo_decodes_as_indexing_and_finds_it_at_score_1(
    service_settings: ServiceSettings,  # noqa: F811
    tmp_path: Path,
) -> None:
    """POST /search/image decodes an upload as ``index add`` decodes a file (reduced to the same side), so the
    photo itself comes back first with score 1, not with the cosine of a full against a reduced decode."""
    data = _jpeg_bytes(picture((4000, 3000), seed=5))
    photos = [write(tmp_path / "photos", "big.jpg", data), *write_random_images(tmp_path / "photos", 4, size=(64, 48))]
    encoders: list[PredictRecordingEncoder] = []

    def encoder() -> PredictRecordingEncoder:
        encoders.append(PredictRecordingEncoder())
        return encoders[-1]

    settings = service_settings.model_copy(update={"max_upload_bytes": 20_000_000})
    app = create_app(settings, fake_engine_factory(photos, CAPTIONS, image_encoder=encoder))
    with TestClient(app, raise_server_exceptions=False) as client:
        encoders[0].predicted.clear()  # what indexing encoded
        answer = client.post("/v1/search/image", files={"file": ("q.jpg", data)}, params={"k": 2})
        assert answer.status_code == 200, answer.text
        top = answer.json()["results"][0]
        assert top["metadata"]["filename"] == "big.jpg" and top["score"] > 0.99999
        assert encoders[0].predicted == [(500, 375)]  # 1/8 scale, as indexed; not 4000×3000


@pytest.mark.slow
def test_reencoding_gives_the_vector_of_indexing_with_the_real_encoder(tmp_settings: Settings, tmp_path: Path) -> None:
    """The same with the shipped CNN, where a full decode's features differ from a reduced one's (cosine ~0.999,
    the test above): a rebuild that re-encodes a 12-Mpx JPEG stores what ``index add`` stored."""
    from indexer.encoders import build_image_encoder

    settings = tmp_settings.model_copy(update={"models_dir": Settings().resolved_models_dir})
    photo = write(tmp_path / "photos", "big.jpg", _jpeg_bytes(picture((4000, 3000), seed=3)))
    with ImageIndex.open(settings, encoder=build_image_encoder(settings), image_space=ImageSpace("l2")) as index:
        index.add_paths([photo], progress=False)
        record = index.list()[0]
        added = index.vector(record.id)
    fresh = settings.model_copy(update={"cache_dir": tmp_path / "empty-cache"})
    encoder = build_image_encoder(fresh)
    sizes: list[tuple[int, int]] = []
    prepare = encoder.prepare

    def recorded(image: Image.Image) -> Any:
        sizes.append(image.size)
        return prepare(image)

    encoder.prepare = recorded  # type: ignore[method-assign]
    with ImageIndex.open(fresh, encoder=encoder, image_space=ImageSpace("l2")) as index:
        assert index.rebuild(progress=False).added == 1
        assert len(sizes) == 1 and min(sizes[0]) < 1000
        assert _cosine(index.vector(record.id), added) >= 0.9999


class OneThreadPerCallEncoder(FakeImageEncoder):
    """The fake CNN as the ONNX encoder declares itself: a call can be run on one thread of its own."""

    per_call_threads = True

    def __init__(self) -> None:
        super().__init__(delay=0.01)
        self.lock = threading.Lock()
        self.calls_by: list[tuple[str, int | None]] = []

    def _predict_prepared_on(self, prepared: Sequence[Any], threads: int) -> np.ndarray:
        with self.lock:
            self.calls_by.append((threading.current_thread().name, threads))
        return self._predict_prepared(prepared)


def test_indexing_runs_one_single_threaded_worker_per_core_each_decoding_and_encoding_its_batch(
    tmp_settings: Settings, tmp_path: Path
) -> None:
    """Issue 27's throughput: with an encoder that runs a call on one thread, several workers each read, decode
    and encode a batch of their own (threads=1); rows, vectors and the report are those of one worker."""
    photos = write_random_images(tmp_path / "photos", 14, size=(64, 48))
    parallel = OneThreadPerCallEncoder()
    settings = tmp_settings.model_copy(update={"indexing_workers": 3, "batch_size": 2})
    with ImageIndex.open(settings, encoder=parallel, image_space=ImageSpace("l2")) as index:
        assert index._ingest.workers() == 3
        report = index.add_paths([*photos, tmp_path / "photos" / "missing.jpg"], progress=False)
        got = {Path(r.path).name: index.vector(r.id) for r in index.list(limit=100)}
        ids = [r.id for r in index.list(limit=100)]
    assert (report.added, len(report.failed)) == (14, 1)
    assert ids == sorted(ids) and [name for name in got] == sorted(p.name for p in photos)  # rows in path order
    assert len(parallel.calls_by) == 7 and {threads for _, threads in parallel.calls_by} == {1}
    assert all(name.startswith("index-decode") for name, _ in parallel.calls_by)  # encoded where decoded
    assert len({name for name, _ in parallel.calls_by}) > 1  # by several workers side by side

    one = tmp_settings.model_copy(
        update={"indexing_workers": 1, "index_dir": tmp_path / "one", "cache_dir": tmp_path / "c1"}
    )
    serial = FakeImageEncoder(delay=0)
    with ImageIndex.open(one, encoder=serial, image_space=ImageSpace("l2")) as index:
        assert index._ingest.workers() == 1
        index.add_paths(photos, progress=False)
        expected = {Path(r.path).name: index.vector(r.id) for r in index.list(limit=100)}
    for name, vector in expected.items():
        np.testing.assert_array_equal(got[name], vector)


@pytest.mark.slow
def test_reduced_decoding_keeps_the_vectors_of_full_decoding(tmp_settings: Settings) -> None:
    """The bound behind the indexing speed-up: raw CNN features of 12-Mpx JPEGs decoded at 1/8 scale against
    a full decode (measured on 20 dev photos upscaled to 4000×3000: min 0.9988, mean 0.9993)."""
    from skimage import data as samples

    from indexer.encoders import build_image_encoder

    encoder = build_image_encoder(Settings(models_dir=Settings().resolved_models_dir))
    encoder.load()
    side = encoder.decode_side
    assert side is not None
    for name in ("astronaut", "coffee", "chelsea"):
        photo = Image.fromarray(getattr(samples, name)()).convert("RGB").resize((4000, 3000), Image.Resampling.BICUBIC)
        data = _jpeg_bytes(photo)
        reduced = decode_image(data, min_side=side)
        assert min(reduced.size) < 1000  # really reduced
        full, small = encoder.predict([decode_image(data), reduced])
        cosine = float(full @ small / np.linalg.norm(full) / np.linalg.norm(small))
        assert cosine > 0.997, (name, cosine)


# ------------------------------------------------------------------------------------------ formats
def test_heic_avif_png_alpha_and_dng_preview_decode() -> None:
    assert decode_image(heic((96, 64))).size == (96, 64)
    assert decode_image(avif((96, 64))).size == (96, 64)
    assert decode_image(png_alpha()).getpixel((0, 0)) == (255, 255, 255)  # transparent → white
    raw = dng(jpeg((300, 200)), orientation=6)
    preview = raw_preview(raw)
    assert preview is not None and preview[1] == 6
    assert decode_image(raw).size == (200, 300)  # the RAW's orientation tag applies to its preview


def test_raw_preview_skips_lossless_sensor_data_and_survives_hostile_structures() -> None:
    assert raw_preview(jpeg()) is None  # not TIFF
    plain = io.BytesIO()
    picture((40, 30)).save(plain, "TIFF")
    assert raw_preview(plain.getvalue()) is None  # a TIFF, not a RAW: Pillow reads it itself
    looped = dng(jpeg((300, 200)), loop=True)  # IFD chains pointing back at IFD0
    assert decode_image(looped).size == (300, 200)
    broken = dng(jpeg((300, 200)), preview_offset_delta=10**6)
    assert raw_preview(broken) is None
    with pytest.raises(ImageDecodeError):
        decode_image(broken)
    assert raw_preview(looped[:40]) is None  # truncated inside IFD0


# ------------------------------------------------------------------------------------------ facts
def test_exif_facts_time_zone_gps_camera_orientation() -> None:
    facts = photo_facts(
        jpeg(taken=datetime(2024, 7, 14, 18, 30, 5), offset="+01:00", gps=LISBON, make="Apple", model="iPhone 15")
    )
    assert facts.taken_at == datetime(2024, 7, 14, 18, 30, 5)
    assert facts.taken_offset_minutes == 60
    assert facts.taken_at_utc is not None and facts.taken_at_utc.hour == 17
    assert facts.latitude == pytest.approx(LISBON[0], abs=1e-5)
    assert facts.longitude == pytest.approx(LISBON[1], abs=1e-5)
    assert (facts.camera_make, facts.camera_model) == ("Apple", "iPhone 15")
    heic_facts = photo_facts(heic(taken=datetime(2023, 1, 2, 3, 4, 5), gps=(-33.86, 151.2)))
    assert heic_facts.taken_at == datetime(2023, 1, 2, 3, 4, 5) and heic_facts.latitude == pytest.approx(-33.86)
    raw_facts = photo_facts(dng(jpeg(), taken=datetime(2022, 5, 6, 7, 8, 9), orientation=8))
    assert raw_facts.taken_at == datetime(2022, 5, 6, 7, 8, 9) and raw_facts.orientation == 8
    assert raw_facts.camera_make == "Testcam"
    assert photo_facts(png_alpha()).taken_at is None
    assert photo_facts(b"garbage").taken_at is None


def test_a_folder_of_mixed_formats_indexes_with_its_facts(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    folder = tmp_path / "library"
    write(folder / "Lisbon", "beach.jpg", jpeg(seed=1, taken=datetime(2024, 7, 14, 18, 30), gps=LISBON))
    write(folder, "phone.heic", heic(seed=2, taken=datetime(2023, 12, 24, 20, 0)))
    write(folder, "web.avif", avif(seed=3))
    write(folder, "logo.png", png_alpha(seed=4))
    write(folder, "camera.dng", dng(jpeg((300, 200), seed=5), taken=datetime(2022, 5, 6, 7, 8, 9)))
    from indexer.image_sources import expand_sources

    paths = expand_sources([folder]).paths
    assert len(paths) == 5
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        report = index.add_paths(paths, progress=False)
        assert report.added == 5, report.failed
        records = {Path(r.path).name: r for r in index.list()}
    beach = records["beach.jpg"]
    assert beach.folder == str((folder / "Lisbon").resolve())
    assert beach.taken_at == datetime(2024, 7, 14, 18, 30)
    assert beach.latitude == pytest.approx(LISBON[0], abs=1e-5)
    assert records["phone.heic"].taken_at == datetime(2023, 12, 24, 20, 0)
    assert (records["camera.dng"].width, records["camera.dng"].height) == (300, 200)
    assert records["camera.dng"].camera_model == "DNG-1"
    assert records["web.avif"].taken_at is None and records["web.avif"].folder == str(folder.resolve())


def test_adding_again_fills_the_facts_of_rows_from_before_them(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    """docs/photo-library.md: ``polyglot index add`` (or the watcher) fills the facts in for unchanged files it meets."""
    photo = write(tmp_path / "Lisbon", "beach.jpg", jpeg(seed=1, taken=datetime(2024, 7, 14, 18, 30), gps=LISBON))
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        assert index.add_paths([photo], progress=False).added == 1
        with index.store.transaction() as session:  # as a row made before the facts existed
            session.execute(text("UPDATE images SET folder = NULL, taken_at = NULL, latitude = NULL, longitude = NULL"))
        assert index.store.missing_facts([1]) == {1}
        again = index.add_paths([photo], progress=False)
        assert (again.added, again.skipped) == (0, 1) and fake_encoder.encoded == 1
        record = index.get(1)
    assert record is not None and record.folder == str(photo.parent.resolve())
    assert record.taken_at == datetime(2024, 7, 14, 18, 30)
    assert record.latitude == pytest.approx(LISBON[0], abs=1e-5)


# ------------------------------------------------------------------------------------------ migration
_OLD_SCHEMA = """CREATE TABLE {t} (
    id INTEGER PRIMARY KEY {auto}, path VARCHAR(4096) UNIQUE NOT NULL, sha256 VARCHAR(64) NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, bytes BIGINT NOT NULL, added_at TIMESTAMP NOT NULL,
    title TEXT, caption TEXT, tags JSON, extra JSON)"""


def _old_table(url: str, schema: str | None) -> None:
    engine = create_engine(url)
    table = f'"{schema}".images' if schema else "images"
    auto = "AUTOINCREMENT" if url.startswith("sqlite") else ""
    sql = _OLD_SCHEMA.format(t=table, auto=auto)
    if not url.startswith("sqlite"):
        sql = sql.replace("INTEGER PRIMARY KEY ", "BIGSERIAL PRIMARY KEY")
    with engine.begin() as connection:
        connection.execute(text(sql))
        connection.execute(
            text(
                f"INSERT INTO {table} (path, sha256, width, height, bytes, added_at, tags, extra) "
                "VALUES ('/old/a.jpg', :sha, 4, 3, 10, '2025-01-01 00:00:00', '[]', '{}')"
            ),
            {"sha": "a" * 64},
        )
    engine.dispose()


def _check_migrated(url: str, schema: str | None) -> None:
    store = MetadataStore(url, schema=schema)
    try:
        assert "taken_at" in store.migrated and "latitude" in store.migrated
        old = store.get(1)
        assert old is not None and old.taken_at is None and old.folder is None
        assert store.missing_facts([1]) == {1}
        store.set_facts([(1, {"folder": "/old", "taken_at": datetime(2020, 2, 2, 2, 2, 2)})])
        assert store.missing_facts([1]) == set()
        new = store.insert([NewImage("/new/b.jpg", "b" * 64, 4, 3, 10, latitude=1.5, taken_at=datetime(2021, 1, 1))])
        assert new[0].latitude == 1.5
        got = store.get(1)
        assert got is not None and got.taken_at == datetime(2020, 2, 2, 2, 2, 2)
    finally:
        store.close()
    again = MetadataStore(url, schema=schema)  # a second open finds nothing to migrate
    assert again.migrated == []
    again.close()


def test_an_index_from_before_the_photo_facts_is_migrated_in_place_sqlite(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "metadata.sqlite")
    _old_table(url, None)
    _check_migrated(url, None)


@pytest.mark.postgres
def test_an_index_from_before_the_photo_facts_is_migrated_in_place_postgres(postgres_url: str, pg_schema: str) -> None:
    _old_table(postgres_url, pg_schema)
    _check_migrated(postgres_url, pg_schema)


def test_files_are_read_whole_and_a_file_over_the_limit_is_refused_even_when_it_grew(tmp_path: Path) -> None:
    """read_bounded asks for the size on record plus one byte (not a buffer of the whole limit per file); a file
    that grows past the limit while it is read is still refused, and one that grows within it is read whole."""
    from indexer.store.ingest import FileTooLargeError, read_bounded

    path = tmp_path / "photo.jpg"
    path.write_bytes(b"x" * 1000)
    assert read_bounded(path, 10_000) == b"x" * 1000
    assert read_bounded(path, None) == b"x" * 1000
    with pytest.raises(FileTooLargeError, match="1,000 bytes, the limit is 999"):
        read_bounded(path, 999)

    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:  # the file grows between the fstat and the read
        result = real_fstat(fd)
        return os.stat_result((*result[:6], 500, *result[7:]))

    with patch("indexer.store.ingest.os.fstat", stale_fstat):
        assert read_bounded(path, 10_000) == b"x" * 1000  # read on past the size on record
        with pytest.raises(FileTooLargeError, match="over 800 bytes"):
            read_bounded(path, 800)
