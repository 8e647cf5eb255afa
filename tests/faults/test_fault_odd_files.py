"""Issue 34, defects 3 and 5: files that are not what a photo folder usually holds.

3. One file named ``bad-\\xff.jpg`` (not UTF-8: old cameras, other systems) stopped a whole folder: ``index add``,
   ``index watch``, ``serve --images`` and ``serve --watch`` exited 1 with a ``UnicodeEncodeError`` traceback and
   indexed nothing. Now that file is reported (its name shown with ``\\xff``) and every other photo is indexed.
5. An indexed photo replaced by a FIFO: ``GET /images/{id}`` blocked in ``os.open`` until a writer came, and six
   such requests held every thread of the pool. Now it is refused at once (404), and ``index add`` of a FIFO
   named ``.jpg`` reports it instead of waiting.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from conftest import write_random_images
from test_index_cli import cli_env  # noqa: F401  (the CLI's environment with the fake CNN)
from typer.testing import CliRunner

from app.cli import cli
from app.cli.serve_cmd import folder_collection, index_collection
from app.service_settings import ServiceSettings
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store.ingest import read_files
from indexer.watch import FolderWatcher

pytest_plugins = ("api_fixtures",)

BAD_NAME = b"bad-\xff.jpg"


def folder_with_an_odd_name(folder: Path, good: int = 3) -> list[Path]:
    """``good`` photos and one more whose name is not UTF-8."""
    photos = write_random_images(folder, good + 1, seed=7)
    os.rename(photos[0], os.path.join(os.fsencode(folder), BAD_NAME))
    return photos[1:]


@pytest.mark.usefixtures("cli_env")
def test_index_add_indexes_the_folder_and_reports_the_odd_name(tmp_path: Path) -> None:
    folder_with_an_odd_name(tmp_path / "photos")
    result = CliRunner().invoke(cli, ["index", "add", str(tmp_path / "photos"), "--quiet"])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 1 and "bad-\\xff.jpg" in skipped[0] and "not valid UTF-8" in skipped[0], result.output
    assert "added 3, unchanged 0, failed 1" in result.output


def test_the_folder_watcher_indexes_the_folder_and_reports_the_odd_name(
    tmp_settings: Settings, tmp_path: Path, fake_encoder
) -> None:  # type: ignore[no-untyped-def]
    """What ``index watch`` and the service's watcher (``serve --watch``) run: the catch-up, then changes."""
    folder = tmp_path / "photos"
    folder_with_an_odd_name(folder)
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        watcher = FolderWatcher(index, [folder])
        try:
            caught_up = watcher.sync()
            assert caught_up.added == 3 and len(index) == 3, caught_up
            assert [why for name, why in caught_up.failed if name.endswith("bad-\\xff.jpg")], caught_up.failed
            # A batch of changes with another odd name in it: the good photo of the batch is indexed.
            new = write_random_images(tmp_path / "more", 1, seed=8)[0]
            moved = folder / new.name
            new.rename(moved)
            other = os.path.join(os.fsencode(folder), b"\xe9t\xe9.png")  # Latin-1 "été.png"
            with open(other, "wb") as handle:
                handle.write(moved.read_bytes())
            changed = watcher.apply({moved, Path(os.fsdecode(other)), Path(os.fsdecode(other) + ".gone")})
            assert changed.added == 1 and len(index) == 4 and len(changed.failed) == 1, changed
            os.unlink(other)  # deleted again: nothing to remove, nothing fails
            assert watcher.apply({Path(os.fsdecode(other))}).removed == 0
        finally:
            watcher.stop()


@pytest.mark.parametrize("watch", [False, True], ids=["serve --images", "serve --watch"])
def test_serve_indexes_the_folder_and_reports_the_odd_name(
    service_settings: ServiceSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    watch: bool,
) -> None:
    folder = tmp_path / "photos-odd"
    folder_with_an_odd_name(folder)
    monkeypatch.setattr("indexer.image_index.build_image_encoder", _fake_encoder)
    settings = service_settings.model_copy(update={"tower_path": tmp_path / "no-tower"})  # plain l2 space
    collection = folder_collection(folder)
    index_collection(settings, collection, None, quiet=True, watched=folder if watch else None)
    printed = capsys.readouterr()
    said = " ".join((printed.out + printed.err).split())
    assert "added 3" in said and "failed 1" in said, said
    assert watch or ("skipped" in said and "bad-\\xff.jpg" in said), said  # --watch: the catch-up counts it
    with ImageIndex.open(settings, encoder=_fake_encoder(settings)) as index:
        assert index.store.count() == 3 and len(index) == 3


def _fake_encoder(settings: Settings):  # type: ignore[no-untyped-def]
    from conftest import FakeImageEncoder

    encoder = FakeImageEncoder(0)
    encoder.name = settings.models.image_encoder
    return encoder


@contextlib.contextmanager
def fifo_in_place_of(path: Path):  # type: ignore[no-untyped-def]
    """``path`` replaced by a FIFO; afterwards every reader still blocked on it (the old code) is let go."""
    path.unlink()
    os.mkfifo(path)
    try:
        yield path
    finally:
        for _ in range(64):  # each open for writing releases the readers blocked in open(); none left: ENXIO
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break


def test_a_photo_replaced_by_a_fifo_is_refused_at_once_and_blocks_nothing(
    live_server: str, photo_paths: list[Path]
) -> None:
    with httpx.Client(base_url=live_server, timeout=10) as client:
        images = client.get("/v1/images", params={"limit": 100}).json()
        by_name = {image["metadata"]["filename"]: image["id"] for image in images}
    victim = photo_paths[0]
    image_id = by_name[victim.name]

    def get(path: str) -> tuple[int, float]:
        with httpx.Client(base_url=live_server, timeout=6) as client:
            answer = client.get(path)
            return answer.status_code, answer.elapsed.total_seconds()

    with fifo_in_place_of(victim), ThreadPoolExecutor(8) as pool:
        fifo_gets = [pool.submit(get, f"/v1/images/{image_id}") for _ in range(6)]
        others = [pool.submit(get, "/v1/languages"), pool.submit(get, f"/v1/images/{by_name[photo_paths[1].name]}")]
        answers = [future.result() for future in fifo_gets + others]
    assert [code for code, _ in answers] == [404] * 6 + [200, 200], answers
    assert max(seconds for _, seconds in answers) < 3, answers


def test_index_add_of_a_fifo_reports_it_instead_of_waiting(tmp_path: Path) -> None:
    photo = write_random_images(tmp_path, 1)[0]
    found: list[object] = []
    with fifo_in_place_of(photo):
        reader = threading.Thread(target=lambda: found.append(read_files([photo], {}, {})), daemon=True)
        reader.start()
        reader.join(5)
        assert found, "read_files blocked on the FIFO"
    batch = found[0]
    assert not batch.items and "not a regular file" in batch.failed[0][1], batch  # type: ignore[attr-defined]
