"""Every file a `polyglot` command reads because a user named it (the photo to tag, a manifest, a caption or word
list, a list of ids) is refused at once, in one line with exit 2, when it is a FIFO, not waited on: `polyglot tag`
on a FIFO once blocked until it was killed, while `search --image` refused the same FIFO at once."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_fixtures import fake_load_models
from conftest import FakeImageEncoder, clear_polyglot_env, write_random_images
from typer.testing import CliRunner

import indexer.query as query
from app.cli import cli

WAIT_SECONDS = 10.0
ROWS = [
    {"image": "1.jpg", "lang": "en", "text": "A dog runs on the beach", "source": "t"},
    {"image": "2.jpg", "lang": "en", "text": "A red car in the street", "source": "t"},
]


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", FakeImageEncoder.name)
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(tmp_path / "no-tower"))
    monkeypatch.setattr(query, "load_models", fake_load_models)
    monkeypatch.setattr(query.models, "load_models", fake_load_models)
    monkeypatch.setattr("indexer.image_index.build_image_encoder", lambda settings: FakeImageEncoder(0))
    monkeypatch.setattr("app.cli.captions_cmd.load_embedder", lambda settings: fake_load_models(settings).text)
    write_random_images(tmp_path / "photos", 2)
    (tmp_path / "captions.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    return tmp_path


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    """A FIFO at ``path``; afterwards every reader still blocked on it is let go (so a failing run ends)."""
    os.mkfifo(path)
    try:
        yield path
    finally:
        release(path)


def release(path: Path) -> None:
    for _ in range(64):  # each open for writing releases the readers blocked in open(); none left: ENXIO
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break


def invoke_beside(path: Path, *args: str) -> tuple[int, str, float]:
    """The command in a thread; if it still waits on the FIFO ``path`` after WAIT_SECONDS, it is let go and the
    test fails on the time."""
    done: dict[str, object] = {}
    start = time.monotonic()
    worker = threading.Thread(target=lambda: done.update(result=CliRunner().invoke(cli, list(args))), daemon=True)
    worker.start()
    worker.join(WAIT_SECONDS)
    seconds = time.monotonic() - start
    if worker.is_alive():
        release(path)
        worker.join(WAIT_SECONDS)
    result = done["result"]
    return result.exit_code, result.output, seconds  # type: ignore[attr-defined]


COMMANDS = {
    "tag a FIFO": ("photo.jpg", ["tag", "{fifo}", "--lang", "fr"]),
    "tag with a FIFO caption file": (
        "captions-fifo.jsonl",
        ["tag", "photos/{photo}", "--lang", "fr", "--captions", "{fifo}"],
    ),
    "index add a FIFO manifest": ("manifest.jsonl", ["index", "add", "{fifo}", "--quiet"]),
    "captions add a FIFO": ("fifo.jsonl", ["index", "captions", "add", "{fifo}", "--quiet"]),
    "captions add with a FIFO id list": (
        "ids.txt",
        ["index", "captions", "add", "captions.jsonl", "--images", "{fifo}"],
    ),
    "search --image a FIFO": ("query.jpg", ["search", "--image", "{fifo}"]),
}


@pytest.mark.parametrize("case", list(COMMANDS))
def test_a_fifo_named_on_the_command_line_is_refused_at_once(cli_env: Path, case: str) -> None:
    name, template = COMMANDS[case]
    photo = sorted(path.name for path in (cli_env / "photos").iterdir())[0]
    with fifo(cli_env / name) as path:
        args = [part.format(fifo=path.name, photo=photo) for part in template]
        code, output, seconds = invoke_beside(path, *args)
    assert seconds < WAIT_SECONDS, f"{case}: waited on the FIFO for {seconds:.0f} s (exit {code}): {output}"
    assert code == 2, output
    (line,) = [line for line in output.splitlines() if line.strip()]
    assert line.startswith("error: ") and name in line, line
    assert "regular file" in line or "not a file" in line, line
