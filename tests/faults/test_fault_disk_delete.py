"""Issue 60, findings 2 and 3, on a real 16 MB tmpfs (``tests/faults/test_fault_disk_uploads.py``'s fixtures).

2. The cache folder (``POLYGLOT_CACHE_DIR``) full: with 0-12 KB free an upload answered a plain-text 500
   (``sqlite3.OperationalError: disk I/O error`` in ``FeatureCache.__init__``); with 16-28 KB free the 507 named
   the index folder and contradicted itself ("needs 435 KB, 63.4 GB free").
3. ``DELETE /images/{id}`` on a full disk half-happened: at 0 bytes free the vector went and the row stayed (93
   rows, 92 vectors); at 64 KB free the row went and the upload file stayed until a restart.
"""

from __future__ import annotations

import re
from pathlib import Path

from api_fixtures import CAPTIONS, fake_engine_factory
from fastapi.testclient import TestClient
from test_fault_disk_uploads import ADMIN, jpeg, leave_free, on_disk

from app.main import create_app
from app.service_settings import ServiceSettings

pytest_plugins = ("api_fixtures", "test_fault_disk_uploads")  # the latter: its tmpfs fixture
_SIZE = re.compile(r"([0-9.]+) (bytes|KB|MB|GB)")
_UNIT = {"bytes": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def assert_507_naming(answer, place: str, server_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert answer.status_code == 507, (answer.status_code, answer.headers.get("content-type"), answer.text[:300])
    assert answer.headers["content-type"].startswith("application/json") and int(answer.headers["retry-after"]) >= 1
    detail = answer.json()["detail"]
    assert f"no space left in {place}" in detail, detail
    assert str(server_path) not in detail and "/tmp" not in detail, detail  # the path is in the log only
    sizes = [float(n) * _UNIT[unit] for n, unit in _SIZE.findall(detail)]
    if "needs more than" not in detail and len(sizes) == 2:
        assert sizes[0] > sizes[1], detail  # "needs X, Y free" only when X is more than Y


def test_a_full_cache_folder_is_507_naming_it_at_every_free_space(
    service_settings: ServiceSettings, tmpfs: Path
) -> None:
    """A fresh service on an empty index whose cache folder fills up: 0 to 28 KB free, 4 KB apart (the features
    cache is first opened by the upload). Each answer is 201 or a 507 naming the cache folder, never a 500."""
    settings = service_settings.model_copy(update={"cache_dir": tmpfs / "cache"})
    answers: dict[int, int] = {}
    for seed, leave in enumerate(range(0, 32, 4)):
        app = create_app(settings, fake_engine_factory())
        with TestClient(app, raise_server_exceptions=False) as client:
            index = client.app.state.engine.images  # type: ignore[attr-defined]
            filler = leave_free(tmpfs, leave)
            try:
                answer = client.post("/v1/images", files={"file": ("a.jpg", jpeg(64, seed=seed))}, headers=ADMIN)
                answers[leave] = answer.status_code
                if answer.status_code != 201:
                    assert_507_naming(answer, "the cache folder (POLYGLOT_CACHE_DIR)", tmpfs)
                    assert index.store.count() == len(index) == 0
            finally:
                filler.unlink()
            again = client.post("/v1/images", files={"file": ("a.jpg", jpeg(64, seed=seed))}, headers=ADMIN)
            assert again.status_code in (200, 201), again.text[:300]
            assert client.delete(f"/v1/images/{again.json()['id']}", headers=ADMIN).status_code == 200
    assert answers[0] == 507, answers


def test_a_delete_on_a_full_disk_removes_all_of_the_photo_or_nothing(
    service_settings: ServiceSettings, photo_paths: list[Path], tmpfs: Path
) -> None:
    """The index, cache and home folders on the tmpfs, an uploaded photo deleted with 0 to 128 KB free (8 KB
    apart): each DELETE answers 200 or 507; after a 507 the row, the vector and the file are all there (served,
    searchable), after a 200 none is; rows = vectors throughout, and after a restart."""
    settings = on_disk(service_settings, tmpfs)
    app = create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))
    outcomes: dict[int, int] = {}
    with TestClient(app, raise_server_exceptions=False) as client:
        index = client.app.state.engine.images  # type: ignore[attr-defined]
        for seed, leave in enumerate(range(0, 136, 8)):
            added = client.post("/v1/images", files={"file": ("a.jpg", jpeg(120, seed=seed))}, headers=ADMIN)
            assert added.status_code == 201, added.text[:300]
            image_id = added.json()["id"]
            stored = Path(index.get(image_id).path)
            filler = leave_free(tmpfs, leave)
            try:
                answer = client.delete(f"/v1/images/{image_id}", headers=ADMIN)
                outcomes[leave] = answer.status_code
                if answer.status_code == 507:
                    assert_507_naming(answer, "the index folder (POLYGLOT_INDEX_DIR)", tmpfs)
                    assert index.store.count() == len(index) == 9, (leave, index.store.count(), len(index))
                    assert stored.is_file(), leave
                    assert client.get(f"/v1/images/{image_id}").status_code == 200, leave
                    found = client.post("/v1/search/image", data={"image_id": str(image_id), "k": "1"})
                    assert found.status_code == 200, (leave, found.text[:300])
                else:
                    assert answer.status_code == 200, (leave, answer.status_code, answer.text[:300])
            finally:
                filler.unlink()
            if answer.status_code == 507:
                assert client.delete(f"/v1/images/{image_id}", headers=ADMIN).status_code == 200, leave
            assert index.store.count() == len(index) == 8, (leave, index.store.count(), len(index))
            assert not stored.exists(), leave
            assert client.get(f"/v1/images/{image_id}").status_code == 404
    assert 507 in outcomes.values(), outcomes  # the sweep met a full disk
    with TestClient(create_app(settings, fake_engine_factory()), raise_server_exceptions=False) as client:
        index = client.app.state.engine.images  # type: ignore[attr-defined]
        assert index.store.count() == len(index) == 8
