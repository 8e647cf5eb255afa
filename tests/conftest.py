"""Shared fixtures: isolated settings under tmp_path, small random images, and a tiny fake image encoder."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from indexer.encoders.base import ImageEncoder
from indexer.settings import Settings

# Keep tests light on the shared 2-core machine.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Rich sizes CLI tables and help to COLUMNS (else the terminal): one fixed width, so what the tests read does not
# depend on the terminal that runs them. Tests of narrow terminals set their own COLUMNS over it.
os.environ["COLUMNS"] = "160"

POSTGRES_URL = os.environ.get("POLYGLOT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


class FakeImageEncoder(ImageEncoder):
    """Deterministic, fast stand-in for a CNN: features are the mean colours of a 4x4 grid (48-d).

    Different images give different features, the same pixels the same ones, so the indexer's caching,
    dedup and search logic can be tested without loading a real model. ``FAKE_ENCODER_DELAY`` (seconds per
    batch) slows it down for crash tests.
    """

    name = "fake-grid"
    dim = 48

    def __init__(self, delay: float | None = None) -> None:
        super().__init__()
        self.delay = float(os.environ.get("FAKE_ENCODER_DELAY", "0")) if delay is None else delay
        self.calls = 0
        self.encoded = 0

    def _load(self) -> None:
        pass

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(images)
        if self.delay:
            time.sleep(self.delay)
        rows = [
            np.asarray(image.resize((4, 4), Image.Resampling.BOX), dtype=np.float32).reshape(-1) for image in images
        ]
        return np.stack(rows) / 255.0 + 0.01

    def _classify(self, features: np.ndarray) -> np.ndarray:
        logits = features[:, :3]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)

    @property
    def class_names(self) -> list[str]:
        return ["red", "green", "blue"]


def write_random_images(folder: Path, count: int, seed: int = 0, size: tuple[int, int] = (40, 30)) -> list[Path]:
    """``count`` distinct random images (JPEG and PNG alternating) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for number in range(count):
        pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
        suffix = ".jpg" if number % 2 == 0 else ".png"
        path = folder / f"img_{seed}_{number:03d}{suffix}"
        Image.fromarray(pixels).save(path, quality=90) if suffix == ".jpg" else Image.fromarray(pixels).save(path)
        paths.append(path)
    return paths


def clear_polyglot_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every POLYGLOT_ variable for the test, so settings come from the test alone (restored afterwards)."""
    for key in [key for key in os.environ if key.startswith("POLYGLOT_")]:
        monkeypatch.delenv(key)


@pytest.fixture
def tmp_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings whose home, index, cache and models folders all live under tmp_path; no .env, no env vars."""
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)  # pydantic-settings reads ./.env; tmp_path has none
    return Settings(
        home=tmp_path / "home",
        index_dir=tmp_path / "index",
        cache_dir=tmp_path / "cache",
        models_dir=tmp_path / "models",
        batch_size=4,
    )


@pytest.fixture
def image_folder(tmp_path: Path) -> Path:
    """A folder with 6 small random images (3 JPEG, 3 PNG), one of them in a subfolder."""
    folder = tmp_path / "photos"
    paths = write_random_images(folder, 6)
    (folder / "sub").mkdir()
    paths[-1].rename(folder / "sub" / paths[-1].name)
    return folder


@pytest.fixture
def fake_encoder() -> FakeImageEncoder:
    return FakeImageEncoder(delay=0)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The running PostgreSQL, or skip (the test is marked ``postgres``)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(POSTGRES_URL)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:  # no server: skip, the marker tells CI to provide one
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}: {exc}")
    finally:
        engine.dispose()
    yield POSTGRES_URL


@pytest.fixture
def pg_schema(postgres_url: str) -> Iterator[str]:
    """A fresh PostgreSQL schema, dropped (with everything in it) after the test."""
    import uuid

    from sqlalchemy import create_engine, text

    schema = f"test_{uuid.uuid4().hex[:12]}"
    engine = create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield schema
    finally:
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()
