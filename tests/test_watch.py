"""Issue 27: a folder that stays in sync — create, edit, rename (file and folder) and delete reach the index
within seconds, through the watcher (inotify via watchdog), `polyglot index watch`'s catch-up and the service's
``serve --watch`` lifespan."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from api_fixtures import CAPTIONS, fake_engine_factory, service_settings  # noqa: F401
from conftest import FakeImageEncoder
from fastapi.testclient import TestClient
from photo_samples import jpeg, write

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.watch import FolderWatcher

WITHIN = 15.0  # seconds: the bound the test holds the watcher to (it applies after 0.2 s of quiet)


def eventually(check: Callable[[], bool], within: float = WITHIN) -> float:
    began = time.monotonic()
    while time.monotonic() - began < within:
        if check():
            return time.monotonic() - began
        time.sleep(0.05)
    raise AssertionError(f"not reflected within {within} s")


def _names(index: ImageIndex) -> dict[str, str]:
    return {Path(r.path).name: r.sha256 for r in index.list(limit=1000)}


def test_create_edit_rename_move_and_delete_reach_the_index(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    folder = tmp_path / "watched"
    write(folder, "a.jpg", jpeg(seed=1))
    with (
        ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index,
        FolderWatcher(index, [folder], settle=0.2) as watcher,
    ):
        assert set(_names(index)) == {"a.jpg"}  # caught up on start
        write(folder, "b.jpg", jpeg(seed=2, taken=datetime(2024, 5, 1)))  # create
        eventually(lambda: "b.jpg" in _names(index))
        assert index.list(limit=10)[-1].taken_at == datetime(2024, 5, 1)
        before = _names(index)["a.jpg"]
        write(folder, "a.jpg", jpeg(seed=3))  # edit in place: a new content hash replaces the row
        eventually(lambda: _names(index).get("a.jpg") not in (None, before))
        (folder / "b.jpg").rename(folder / "c.jpg")  # rename
        eventually(lambda: set(_names(index)) == {"a.jpg", "c.jpg"})
        encoded = fake_encoder.encoded
        (folder / "sub").mkdir()
        (folder / "c.jpg").rename(folder / "sub" / "c.jpg")  # move into a new folder
        eventually(lambda: any(r.path.endswith("sub/c.jpg") for r in index.list()))
        assert fake_encoder.encoded == encoded  # moves reuse the cached features: nothing re-encoded
        (folder / "sub").rename(folder / "renamed")  # a folder renamed: its photos follow
        eventually(lambda: any(r.path.endswith("renamed/c.jpg") for r in index.list()))
        shutil.rmtree(folder / "renamed")  # a folder deleted
        (folder / "a.jpg").unlink()  # a file deleted
        eventually(lambda: _names(index) == {} and len(index) == 0)
        (folder / "notes.txt").write_text("not a photo")
        write(folder, "broken.jpg", b"\xff\xd8 not really")
        time.sleep(0.6)
        assert watcher.poll().added == 0 and len(index) == 0


def test_catch_up_removes_what_vanished_while_nobody_watched(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    folder = tmp_path / "watched"
    keep, gone = write(folder, "keep.jpg", jpeg(seed=1)), write(folder, "gone.jpg", jpeg(seed=2))
    elsewhere = write(tmp_path / "other", "other.jpg", jpeg(seed=3))
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        index.add_paths([keep, gone, elsewhere], progress=False)
        gone.unlink()
        write(folder, "new.jpg", jpeg(seed=4))
        report = FolderWatcher(index, [folder]).sync()
        assert (report.added, report.removed) == (1, 1)
        assert set(_names(index)) == {"keep.jpg", "new.jpg", "other.jpg"}  # outside the folder: left alone


def test_serve_watch_keeps_the_service_in_sync(
    service_settings: ServiceSettings,  # noqa: F811
    tmp_path: Path,
) -> None:
    folder = tmp_path / "served"
    first = write(folder, "first.jpg", jpeg(seed=1))
    settings = service_settings.model_copy(update={"watch_dirs": [folder], "watch_settle_seconds": 0.2})
    with TestClient(create_app(settings, fake_engine_factory([first], CAPTIONS))) as client:

        def names() -> set[str]:
            return {i["metadata"]["filename"] for i in client.get("/v1/images", params={"limit": 100}).json()}

        write(folder, "second.jpg", jpeg(seed=2))
        seconds = eventually(lambda: names() == {"first.jpg", "second.jpg"})
        hits = client.get("/v1/search", params={"q": "a photo", "lang": "en", "k": 5}).json()["results"]
        assert {h["metadata"]["filename"] for h in hits} == {"first.jpg", "second.jpg"}
        first.unlink()
        eventually(lambda: names() == {"second.jpg"})
        assert seconds < 5


def test_index_watch_refuses_a_missing_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from app.cli import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["index", "watch", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "not a folder" in " ".join(result.output.split())
