"""Issue 27: a folder that stays in sync — create, edit, rename (file and folder) and delete reach the index
within seconds, through the watcher (inotify via watchdog), `polyglot index watch`'s catch-up and the service's
``serve --watch`` lifespan."""

from __future__ import annotations

import os
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
from indexer.image_sources import expand_sources
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


def test_a_second_start_reads_only_new_and_changed_files(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up reconciles by (path, size, mtime): unchanged files are not read or hashed again."""
    from indexer.store import ingest

    hashed: list[int] = []
    real_hash = ingest.content_hash
    monkeypatch.setattr(ingest, "content_hash", lambda data: hashed.append(len(data)) or real_hash(data))
    folder = tmp_path / "watched"
    photos = [write(folder / ("sub" if n % 2 else ""), f"p{n}.jpg", jpeg(seed=n)) for n in range(6)]

    def start() -> tuple[int, int, int]:
        hashed.clear()
        with FolderWatcher(index, [folder], settle=0.2) as watcher:
            report = watcher.sync()  # (start() caught up already: this second pass finds nothing either)
            assert not report
        return len(hashed), len(index), len(_names(index))

    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        assert start() == (6, 6, 6)  # the first start reads every file
        assert start() == (0, 6, 6)  # nothing changed: nothing read
        write(folder, "p0.jpg", jpeg(seed=40))  # edited (same path, new content)
        write(folder, "new.jpg", jpeg(seed=41))  # added
        photos[2].touch()  # modification time changed, same bytes: read, found unchanged
        os.truncate(photos[4], photos[4].stat().st_size)  # rewritten with the same size … (mtime moves)
        encoded = fake_encoder.encoded
        assert start() == (4, 7, 7)
        assert fake_encoder.encoded - encoded == 2  # only the edited and the new file are encoded
        assert start() == (0, 7, 7)
        index.remove([r.id for r in index.list(limit=100) if r.path.endswith("p1.jpg")])  # a row removed by hand
        assert start() == (1, 7, 7)  # its stamp no longer has a row: read and indexed again
        report = FolderWatcher(index, [folder]).sync()
        assert (report.found, report.read) == (7, 0)
        (folder / "sub" / "p3.jpg").unlink()
        assert start() == (0, 6, 6)  # a file gone: removed, nothing read


def _ids(index: ImageIndex) -> dict[str, int]:
    return {Path(r.path).name: r.id for r in index.list(limit=1000)}


def test_a_renamed_or_moved_photo_keeps_its_id_through_the_watcher(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    """Issue 36: links (``?photo=<id>``) survive a rename — the row follows its file (same content hash) instead
    of a new photo being made (renaming made 46 → 47 before), file by file and a whole folder at a time."""
    folder = tmp_path / "watched"
    write(folder, "a.jpg", jpeg(seed=1))
    write(folder / "trip", "b.jpg", jpeg(seed=2))
    with (
        ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index,
        FolderWatcher(index, [folder], settle=0.2),
    ):
        first = _ids(index)
        index.store.update(first["a.jpg"], title="keep me")
        (folder / "a.jpg").rename(folder / "renamed.jpg")
        eventually(lambda: set(_ids(index)) == {"renamed.jpg", "b.jpg"})
        assert _ids(index)["renamed.jpg"] == first["a.jpg"]
        assert index.store.get(first["a.jpg"]).title == "keep me"  # type: ignore[union-attr]
        (folder / "trip").rename(folder / "Été à Lisboa")  # a folder renamed: its photos keep their ids
        eventually(lambda: any("Été à Lisboa" in r.path for r in index.list()))
        moved = index.store.get(first["b.jpg"])
        assert moved is not None and moved.path.endswith("Été à Lisboa/b.jpg") and moved.folder.endswith("Lisboa")
        assert sorted(_ids(index).values()) == sorted(first.values()) and len(index) == 2


def test_index_add_keeps_the_id_of_a_moved_or_restored_photo(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    """Without a watcher: `index add` after a rename, a move, or a delete and a restore elsewhere finds the photo's
    row by its content (its old file gone) and re-points it; a copy (old file still there) is a photo of its own."""
    folder = tmp_path / "photos"
    a, b, c = (write(folder, f"{name}.jpg", jpeg(seed=n)) for n, name in enumerate("abc"))
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        index.add_paths(expand_sources([folder]).paths, progress=False)
        first = _ids(index)
        encoded = fake_encoder.encoded
        a.rename(folder / "a-renamed.jpg")
        (folder / "2024").mkdir()
        b.rename(folder / "2024" / "b.jpg")
        restored = c.read_bytes()
        c.unlink()  # deleted …
        write(tmp_path / "restored", "c.jpg", restored)  # … and restored somewhere else
        shutil.copy(folder / "a-renamed.jpg", folder / "a-copy.jpg")  # a copy: the original is still there
        report = index.add_paths(expand_sources([folder, tmp_path / "restored"]).paths, progress=False)
        assert (report.moved, report.added) == (3, 1) and sorted(report.moved_ids) == sorted(first.values())
        now = _ids(index)
        assert now["b.jpg"] == first["b.jpg"] and now["c.jpg"] == first["c.jpg"]
        # Two files with a.jpg's bytes: one of them carries its id on, the other is a new photo.
        assert first["a.jpg"] in (now["a-renamed.jpg"], now["a-copy.jpg"]) and len(set(now.values())) == 4
        assert fake_encoder.encoded == encoded  # the copy's features come from the cache
        assert index.store.get(first["b.jpg"]).folder == str((folder / "2024").resolve())  # type: ignore[union-attr]
        assert index.add_paths(expand_sources([folder]).paths, progress=False).moved == 0  # a second pass


def test_the_first_watch_after_index_add_reads_nothing_again(
    tmp_settings: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    """`index add` records each file's size and modification time with its content hash, as the watcher does:
    the first `serve --watch` / `index watch` after it reads only what changed since (issue 36)."""
    folder = tmp_path / "photos"
    photos = [write(folder / ("sub" if n % 2 else ""), f"p{n}.jpg", jpeg(seed=n)) for n in range(5)]
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        index.add_paths(expand_sources([folder]).paths, progress=False)
        report = FolderWatcher(index, [folder]).sync()
        assert (report.found, report.read, report.added) == (5, 0, 0)
        photos[1].rename(folder / "sub" / "p1-renamed.jpg")
        write(folder, "new.jpg", jpeg(seed=9))
        report = FolderWatcher(index, [folder]).sync()
        assert (report.found, report.read, report.added, report.moved, report.removed) == (6, 2, 1, 1, 0)


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


def test_serve_watch_starts_through_the_catch_up_reading_only_what_changed(
    service_settings: ServiceSettings,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``serve --images DIR --watch`` indexes the folder on start through the watcher's catch-up: a restart reads
    only new and changed photos (before, every photo was read and hashed again by ``index add``)."""
    from app.cli import serve_cmd
    from indexer.store import ingest

    hashed: list[int] = []
    real_hash = ingest.content_hash
    monkeypatch.setattr(ingest, "content_hash", lambda data: hashed.append(len(data)) or real_hash(data))
    real_open = ImageIndex.open.__func__  # type: ignore[attr-defined]
    encoder = FakeImageEncoder(delay=0)
    monkeypatch.setattr(
        ImageIndex,
        "open",
        classmethod(
            lambda cls, settings, **_: real_open(
                cls, settings, encoder=encoder, image_space=ImageSpace("l2"), create=True
            )
        ),
    )
    folder = tmp_path / "served"
    for n in range(3):
        write(folder, f"p{n}.jpg", jpeg(seed=n))

    def start() -> int:
        hashed.clear()
        serve_cmd.index_collection(service_settings, serve_cmd.folder_collection(folder), None, True, watched=folder)
        return len(hashed)

    assert start() == 3
    assert start() == 0
    write(folder, "p3.jpg", jpeg(seed=3))
    (folder / "p0.jpg").unlink()
    assert start() == 1
    with ImageIndex.open(service_settings) as index:
        assert set(_names(index)) == {"p1.jpg", "p2.jpg", "p3.jpg"}


def test_index_watch_refuses_a_missing_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from app.cli import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["index", "watch", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "not a folder" in " ".join(result.output.split())
