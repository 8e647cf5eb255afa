"""``polyglot search`` opens the index read-only, without SQLAlchemy, when nothing needs repairing (issue 36,
indexer/store/read_only.py): it answers exactly what the full path answers, imports neither SQLAlchemy nor torch,
and an index that is missing, locked, being written, half-written or unreadable gets an answer or one line (exit 2),
never a traceback."""

from __future__ import annotations

import fcntl
import json
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fresh_cli import clean_env, polyglot_imports
from photo_samples import jpeg, write

from indexer.asset_paths import SHIPPED_STUDENT
from indexer.built_models import is_built
from indexer.export.registry import student_export
from indexer.store.sidecar import DB_NAME, SIDECAR_NAME

MODELS = Path(__file__).resolve().parents[2] / "var" / "models"
LISBON = (38.7223, -9.1393)
QUERIES = [
    ["dog", "--k", "5"],
    ["un chien sur la plage", "--k", "8", "--sort", "date", "--no-cutoff"],
    ["犬", "--k", "3", "--cutoff"],
]
EXTRA_ROW = (
    "INSERT INTO images (path, sha256, width, height, bytes, added_at, tags, extra) "
    "VALUES ('/nowhere/gone.jpg', 'ab', 1, 1, 1, '2024-01-01 00:00:00', '[]', '{}')"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_built(student_export(SHIPPED_STUDENT), MODELS), reason="the student's ONNX export is not built"
    ),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home with an index of 8 photos, dated or not, in Lisbon or nowhere."""
    root = tmp_path_factory.mktemp("fast-path")
    for n in range(8):
        facts: dict[str, object] = {"taken": datetime(2024, 5, 1 + n, 12, 0, n)} if n % 2 else {}
        if n % 4 == 1:
            facts["gps"] = LISBON
        write(root / "photos", f"photo-{n}.jpg", jpeg(size=(160, 120), seed=n, **facts))
    status, output, _ = polyglot_imports(["index", "add", "--quiet", str(root / "photos")], env_of(root), [])
    assert status == 0, output
    yield root


def env_of(home: Path, **values: str) -> dict[str, str]:
    return {
        **clean_env(home),
        "POLYGLOT_MODELS_DIR": str(MODELS),
        **{f"POLYGLOT_{k.upper()}": v for k, v in values.items()},
    }


def search(env: dict[str, str], query: list[str]) -> tuple[int, str, set[str], dict[str, Any] | None]:
    """``polyglot search QUERY --json``: exit code, output, which of SQLAlchemy and torch it imported, the answer."""
    status, output, imported = polyglot_imports(["search", *query, "--json"], env, ["sqlalchemy", "torch"])
    # stdout (the answer) comes first, then stderr (a repair's log lines)
    answer = json.JSONDecoder().raw_decode(output[output.index("{") :])[0] if status == 0 else None
    return status, output, imported, answer


def copy_index(home: Path, name: str) -> Path:
    folder = home / name
    shutil.copytree(home / "index", folder)
    return folder


def test_the_read_only_path_answers_what_the_full_path_answers(home: Path) -> None:
    database = home / "index" / DB_NAME
    # The same database named by URL: the search takes the full path (ImageIndex.open, SQLAlchemy).
    full_env = env_of(home, database_url=f"sqlite:///{database}")
    answers = []
    for query in QUERIES:
        status, output, imported, fast = search(env_of(home), query)
        assert status == 0 and imported == set(), output
        status, output, imported, full = search(full_env, query)
        assert status == 0 and imported == {"sqlalchemy"}, output  # the comparison's other side is the full path
        assert fast == full
        answers.append(fast)
    dog, beach, _ = answers
    assert dog is not None and beach is not None
    assert len(dog["results"]) == 5 and len(beach["results"]) == 8
    taken = [row["taken_at"] for row in beach["results"]]  # dated first, newest first, then the undated
    assert taken[:4] == sorted(taken[:4], reverse=True) and None not in taken[:4] and set(taken[4:]) == {None}
    assert "Lisbon, Portugal" in {row["place"] for row in beach["results"]}


def test_an_index_that_is_missing_or_unreadable_is_one_line(home: Path) -> None:
    status, output, _, _ = search(env_of(home, index_dir=str(home / "nothing")), ["dog"])
    assert status == 2 and "no index in" in output and "Traceback" not in output, output
    torn = copy_index(home, "torn-sidecar")
    (torn / SIDECAR_NAME).write_text('{"format_version": 1, "image_')  # not a whole file
    status, output, _, _ = search(env_of(home, index_dir=str(torn)), ["dog"])
    assert status == 2 and "cannot read" in output and "Traceback" not in output, output
    garbled = copy_index(home, "garbled-database")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{garbled / DB_NAME}{suffix}").unlink(missing_ok=True)
    (garbled / DB_NAME).write_bytes(b"not a database " * 400)
    status, output, _, _ = search(env_of(home, index_dir=str(garbled)), ["dog"])
    assert status == 2 and "not a database" in output and "Traceback" not in output, output


def test_an_index_being_written_or_left_half_written_still_answers(home: Path) -> None:
    _, _, _, clean = search(env_of(home), ["dog", "--k", "5"])
    assert clean is not None
    # Another process holds the write lock: a consistent index is read as it is, without SQLAlchemy.
    locked = copy_index(home, "locked")
    with (locked / ".write.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        status, output, imported, answer = search(env_of(home, index_dir=str(locked)), ["dog", "--k", "5"])
        assert status == 0 and imported == set() and answer == clean, output
        # ... and mid-write (a row committed, its vector not saved yet): the full path serves it as it stands
        with sqlite3.connect(locked / DB_NAME) as connection:
            connection.execute(EXTRA_ROW)
        status, output, imported, answer = search(env_of(home, index_dir=str(locked)), ["dog", "--k", "5"])
        assert status == 0 and "sqlalchemy" in imported and answer == clean, output
    # A writer killed after committing rows: the full path repairs the index (the row's photo is gone: dropped)
    half = copy_index(home, "half-written")
    with sqlite3.connect(half / DB_NAME) as connection:
        connection.execute(EXTRA_ROW)
    status, output, _, answer = search(env_of(home, index_dir=str(half)), ["dog", "--k", "5"])
    assert status == 0 and answer == clean and "Traceback" not in output, output
    status, output, imported, answer = search(env_of(home, index_dir=str(half)), ["dog", "--k", "5"])
    assert status == 0 and imported == set() and answer == clean, output  # repaired: read-only again
