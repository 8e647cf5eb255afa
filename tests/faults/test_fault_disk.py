"""Issue 24, findings 1 and 2 (disk side): a full disk never makes an index unopenable, never leaves a row without
its vector, and says so in one line with the folder and the space needed.

The index folder lives on a real 16 MB tmpfs where the machine allows mounting one (root); elsewhere the disk is
"filled" by making every atomic file write fail with ENOSPC (``SimulatedDisk``), which exercises the same paths
except SQLite's own writes.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_fixtures import CAPTIONS, fake_load_models, fake_text_embedder
from conftest import write_random_images
from test_index_cli import cli_env  # noqa: F401  (the CLI's environment with the fake CNN)
from typer.testing import CliRunner

from app.cli import cli
from indexer import query
from indexer.captions import Caption, CaptionIndex
from indexer.store.failures import DiskFullError

runner = CliRunner()


class TmpfsDisk:
    """A small tmpfs; ``fill()`` takes every free byte with a filler file, ``free()`` gives them back."""

    real = True

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.filler = folder / "filler.bin"

    def fill(self) -> None:
        # Unbuffered: a write the disk refuses leaves nothing in a buffer for close() to fail on again.
        with open(self.filler, "ab", buffering=0) as handle:
            block = b"\0" * (64 * 1024)
            try:
                while True:
                    handle.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        for small in (4096, 512, 1):  # the last partial blocks too
            try:
                with open(self.filler, "ab", buffering=0) as handle:
                    while True:
                        handle.write(b"\0" * small)
            except OSError:
                pass

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


class SimulatedDisk:
    """Where no tmpfs can be mounted: every atomic write fails with ENOSPC while 'full'."""

    real = False

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.full = False
        original = os.fsync

        def fsync(fd: int) -> None:
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            original(fd)

        monkeypatch.setattr("indexer.atomic.os.fsync", fsync)

    def fill(self) -> None:
        self.full = True

    def free(self) -> None:
        self.full = False


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TmpfsDisk | SimulatedDisk]:
    folder = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    mounted = (
        os.geteuid() == 0
        and shutil.which("mount") is not None
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield TmpfsDisk(folder) if mounted else SimulatedDisk(folder, monkeypatch)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        return result.exit_code, result.output + "".join(traceback.format_exception(result.exception))
    return result.exit_code, result.output


def one_line(output: str) -> str:
    return " ".join(output.split())


def stats_json(output: str) -> dict:
    """The stats object of ``index stats --json`` (log lines and warnings may come first: stderr is mixed in)."""
    lines = output.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    return dict(json.loads("\n".join(lines[start:])))


def stats() -> dict:
    code, output = invoke("index", "stats", "--json")
    assert code == 0, output
    return stats_json(output)


@pytest.mark.usefixtures("cli_env")
def test_disk_full_add_says_so_in_one_line_and_keeps_the_last_good_index(
    tmp_path: Path, small_disk: TmpfsDisk | SimulatedDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    index_dir = small_disk.folder / "index"
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(index_dir))
    write_random_images(tmp_path / "first", 12, seed=1)
    write_random_images(tmp_path / "more", 10, seed=2)
    assert invoke("index", "add", "first", "--quiet")[0] == 0
    good = (index_dir / "vectors.faiss").read_bytes()

    small_disk.fill()
    code, output = invoke("index", "add", "more", "--quiet")
    error_lines = [line for line in output.splitlines() if "error" in line]
    assert code == 2 and "Traceback" not in output, output
    assert len(error_lines) == 1 and "no space left" in error_lines[0] and str(small_disk.folder) in error_lines[0]
    assert "needs" in error_lines[0] and "free" in error_lines[0], output
    # Nothing half-done: the vectors file is the last good one, and SQL holds exactly the photos it has.
    assert (index_dir / "vectors.faiss").read_bytes() == good
    numbers = stats()  # opens (and searches) while the disk is still full
    assert numbers["count"] == 12 and numbers["rows"] == 12, numbers

    small_disk.free()
    code, output = invoke("index", "add", "more", "--quiet")
    assert code == 0 and "added 10" in one_line(output), output
    assert stats()["count"] == 22


@pytest.mark.usefixtures("cli_env")
def test_an_index_whose_save_failed_opens_read_only_and_saves_when_space_returns(
    tmp_path: Path, small_disk: TmpfsDisk | SimulatedDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 1 as reported: SQL committed photos the vectors file lacks (the save failed for lack of space), and
    opening tried to write them again: stats, search and serve all failed with the ENOSPC traceback."""
    index_dir = small_disk.folder / "index"
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(index_dir))
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "fake-grid")  # what `polyglot search`'s fake models load
    monkeypatch.setattr(query, "load_models", fake_load_models)
    write_random_images(tmp_path / "first", 12, seed=1)
    write_random_images(tmp_path / "more", 6, seed=2)
    assert invoke("index", "add", "first", "--quiet")[0] == 0
    last_good = (index_dir / "vectors.faiss").read_bytes()
    sidecar = (index_dir / "index.json").read_bytes()
    assert invoke("index", "add", "more", "--quiet")[0] == 0
    # The state a failed save leaves: 18 rows, the 12-vector file and its sidecar.
    (index_dir / "vectors.faiss").write_bytes(last_good)
    (index_dir / "index.json").write_bytes(sidecar)

    small_disk.fill()
    code, output = invoke("index", "stats", "--json")
    assert code == 0 and "read-only" in output and "no space left" in output, output
    numbers = stats_json(output)
    assert numbers["count"] == 18 and numbers["read_only"], numbers  # searchable: restored in memory
    code, output = invoke("search", "--image", str(tmp_path / "more" / "img_2_000.jpg"), "--k", "1", "--json")
    assert code == 0 and "img_2_000.jpg" in output, output
    code, output = invoke("index", "remove", "1")  # a write: refused in one line while there is no space
    assert code == 2 and "no space left" in one_line(output) and "Traceback" not in output, output
    assert (index_dir / "vectors.faiss").read_bytes() == last_good

    small_disk.free()
    code, output = invoke("index", "stats", "--json")  # opening saves the pending work now that it can
    numbers = stats_json(output)
    assert code == 0 and numbers["read_only"] is None and numbers["count"] == 18
    assert (index_dir / "vectors.faiss").read_bytes() != last_good


def test_caption_index_on_a_full_disk_opens_read_only_and_never_keeps_rows_without_vectors(
    tmp_path: Path, small_disk: TmpfsDisk | SimulatedDisk
) -> None:
    folder = small_disk.folder / "captions"
    embedder = fake_text_embedder()
    index = CaptionIndex.open(folder, embedder, tmp_path / "cache")
    index.add(CAPTIONS)
    index.close()
    (folder / "fr.faiss").unlink()  # a repair is pending: fr must be rebuilt and saved on open

    small_disk.fill()
    index = CaptionIndex.open(folder, embedder, tmp_path / "cache")
    try:
        assert index.read_only_reason and "no space left" in index.read_only_reason
        assert sorted(index.languages()) == ["de", "en", "fr"]  # searchable, fr repaired in memory
        before = len(index)
        with pytest.raises(DiskFullError) as refused:
            index.add([Caption("en", "a brand new caption about a boat", "9.jpg", "test")])
        assert str(small_disk.folder) in str(refused.value) and "\n" not in str(refused.value)
        assert len(index) == before  # no row without its vector
    finally:
        index.close()

    small_disk.free()
    index = CaptionIndex.open(folder, embedder, tmp_path / "cache")
    try:
        assert index.read_only_reason is None and (folder / "fr.faiss").exists()
        assert index.add([Caption("en", "a brand new caption about a boat", "9.jpg", "test")]) == 1
    finally:
        index.close()
