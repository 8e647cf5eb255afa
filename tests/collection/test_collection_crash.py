"""Crash safety: SIGKILL a writer in the middle of `add_paths`; reopening must give a consistent index
(FAISS ids == SQL ids, sidecar count right) and a re-run must finish the job without duplicates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import FakeImageEncoder, write_random_images
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.settings import Settings

TESTS_DIR = Path(__file__).resolve().parents[1]
WRITER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    sys.path.insert(0, os.environ["TESTS_DIR"])
    from conftest import FakeImageEncoder
    import indexer.image_index as collection
    from indexer.image_space import ImageSpace
    from indexer.settings import Settings

    collection.CHECKPOINT_SECONDS = float(os.environ["CHECKPOINT_SECONDS"])
    root = Path(os.environ["ROOT"])
    settings = Settings(home=root / "home", index_dir=root / "index", cache_dir=root / "cache", batch_size=4)
    index = collection.ImageIndex.open(settings, encoder=FakeImageEncoder(), image_space=ImageSpace("l2"))
    index.add_paths(sorted((root / "photos").iterdir()), progress=False)
    print("finished", flush=True)
    """
)


def settings_for(root: Path) -> Settings:
    return Settings(home=root / "home", index_dir=root / "index", cache_dir=root / "cache", batch_size=4)


def committed_rows(root: Path) -> int:
    db = root / "index" / "metadata.sqlite"
    if not db.exists():
        return 0
    engine = create_engine(f"sqlite:///file:{db}?mode=ro&uri=true", connect_args={"timeout": 5})
    try:
        with engine.connect() as connection:
            return int(connection.execute(text("SELECT COUNT(*) FROM images")).scalar_one())
    except OperationalError:  # table not created yet
        return 0
    finally:
        engine.dispose()


def run_writer(root: Path, checkpoint_seconds: float, kill_after_rows: int | None) -> int:
    env = {
        **os.environ,
        "TESTS_DIR": str(TESTS_DIR),
        "ROOT": str(root),
        "CHECKPOINT_SECONDS": str(checkpoint_seconds),
        "FAKE_ENCODER_DELAY": "0.1",
        "PYTHONPATH": str(TESTS_DIR.parent),
    }
    process = subprocess.Popen([sys.executable, "-c", WRITER], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after_rows is None:
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr.decode()
        assert b"finished" in stdout
        return 0
    deadline = time.monotonic() + 60
    while committed_rows(root) < kill_after_rows:
        assert process.poll() is None, f"writer ended before it could be killed: {process.communicate()[1]!r}"
        assert time.monotonic() < deadline, "writer made no progress"
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return committed_rows(root)


def check_consistent(root: Path) -> int:
    encoder = FakeImageEncoder(0)
    with ImageIndex.open(settings_for(root), encoder=encoder, image_space=ImageSpace("l2")) as index:
        sql_ids = index.store.ids()
        assert index._state.vectors is not None
        assert sorted(index._state.vectors.ids().tolist()) == sql_ids
        assert index.info["count"] == len(sql_ids) == len(index)
        paths = [path for _, _, path in index.store.id_keys()]
        assert len(paths) == len(set(paths))  # no duplicates
        for record in index.list(limit=100):  # every vector is the one of its own image
            hit = index.search(index.vector(record.id), k=1)[0][0]  # type: ignore[arg-type]
            assert hit.id == record.id and hit.score > 0.999
        # Reconcile restores vectors from the features cache: nothing is re-encoded.
        assert encoder.encoded == 0
        return len(sql_ids)


def test_sigkill_mid_add_leaves_a_consistent_resumable_index(tmp_path: Path) -> None:
    write_random_images(tmp_path / "photos", 40)
    # 1: FAISS file rewritten after every batch, so the kill can land inside a FAISS/sidecar write.
    killed_at = run_writer(tmp_path, checkpoint_seconds=0, kill_after_rows=8)
    assert 8 <= killed_at < 40
    first = check_consistent(tmp_path)
    assert first >= killed_at
    # 2: no checkpoint at all: the FAISS file lags SQL, reopening re-adds the missing vectors.
    killed_at = run_writer(tmp_path, checkpoint_seconds=1e9, kill_after_rows=first + 8)
    assert killed_at < 40
    assert check_consistent(tmp_path) >= killed_at
    # 3: a full re-run finishes the job, once each.
    run_writer(tmp_path, checkpoint_seconds=30, kill_after_rows=None)
    assert check_consistent(tmp_path) == 40
    assert not list((tmp_path / "index").glob(".*.tmp"))
