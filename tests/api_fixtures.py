"""Fixtures for the service tests: a tiny fake text encoder + random tower, a small indexed collection,
and an app wired to them (no model files, no network). Import the fixtures you use into the test module."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FakeImageEncoder, clear_polyglot_env, write_random_images
from fastapi.testclient import TestClient
from pydantic import SecretStr

from app.engine import Engine, assemble
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.captions import Caption
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.query import Models, QueryPipeline, load_models
from indexer.settings import Settings
from indexer.tower import TextEmbedder, TextTower

API_KEY = "test-admin-key"


class FakeTextEncoder(TextEncoder):
    """Bag of hashed words → 16-d vector: deterministic, instant, same words → same vector."""

    name = "fake-text"
    dim = 16
    languages = frozenset({"en", "fr", "de", "es"})

    def _load(self) -> None:
        pass

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            vector = np.zeros(self.dim, dtype=np.float32)
            for word in text.lower().split() or [""]:
                rng = np.random.default_rng(zlib.crc32(word.encode()))
                vector += rng.standard_normal(self.dim).astype(np.float32)
            rows.append(vector)
        return np.stack(rows)


@pytest.fixture
def encoded_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the fake text encoder is given, in order (what a query was read as, before its vector)."""
    seen: list[str] = []
    original = FakeTextEncoder._predict

    def recording(self: FakeTextEncoder, texts: Sequence[str]) -> np.ndarray:
        seen.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(FakeTextEncoder, "_predict", recording)
    return seen


def fake_text_embedder(encoder: TextEncoder | None = None, seed: int = 0) -> TextEmbedder:
    encoder = encoder or FakeTextEncoder()
    torch.manual_seed(seed)
    tower = TextTower(
        input_dim=encoder.dim,
        output_dim=FakeImageEncoder.dim,
        hidden_dims=(32,),
        dropouts=(0.0, 0.0),
        final_relu=False,
        text_encoder=encoder.name,
        image_encoder=FakeImageEncoder.name,
    ).eval()
    embedder = TextEmbedder(tower, encoder)
    embedder.load()
    return embedder


def fake_load_models(settings: Settings, **options: object) -> Models:
    """:func:`indexer.query.load_models` on the fake text tower and CNN (monkeypatched in by CLI tests)."""
    kept = {k: v for k, v in options.items() if k == "load_image"}
    return load_models(settings, text=fake_text_embedder(), image_encoder=FakeImageEncoder(0), **kept)  # type: ignore[arg-type]


@pytest.fixture
def evaluate_on_fake_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``polyglot evaluate`` through the CLI on the fake text tower and CNN, its cache under ``tmp_path/home``."""
    import indexer.query.models as query_models

    monkeypatch.setattr(query_models, "load_models", fake_load_models)
    monkeypatch.setattr("indexer.query.load_models", fake_load_models)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", FakeImageEncoder.name)


CAPTIONS = [
    Caption("en", "a dog runs on the beach", "1.jpg", "test"),
    Caption("en", "two children play football", "2.jpg", "test"),
    Caption("en", "a red car in the street", "3.jpg", "test"),
    Caption("fr", "un chien court sur la plage", "1.jpg", "test"),
    Caption("fr", "deux enfants jouent au football", "2.jpg", "test"),
    Caption("de", "ein Hund läuft am Strand", "1.jpg", "test"),
]


def fake_engine_factory(
    images: Sequence[Path] = (),
    captions: Sequence[Caption] = (),
    image_encoder: Callable[[], ImageEncoder] = lambda: FakeImageEncoder(delay=0),
    text: TextEmbedder | None = None,
) -> Callable[[ServiceSettings], Engine]:
    def factory(settings: ServiceSettings) -> Engine:
        index = ImageIndex.open(settings, encoder=image_encoder(), image_space=ImageSpace("l2"))
        if images:
            index.add_paths(list(images), progress=False)
        models = load_models(settings, text=text or fake_text_embedder(), image_encoder=index.encoder)
        engine = assemble(settings, QueryPipeline(models, settings), index)
        if captions:
            engine.captions.add(list(captions))
        return engine

    return factory


@pytest.fixture
def service_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServiceSettings:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    return ServiceSettings(
        home=tmp_path / "home",
        index_dir=tmp_path / "index",
        cache_dir=tmp_path / "cache",
        models_dir=tmp_path / "models",
        image_encoder=FakeImageEncoder.name,
        batch_size=8,
        api_key=SecretStr(API_KEY),
        max_upload_bytes=200_000,
        max_query_chars=200,
        thread_pool_size=2,
        allowed_roots=[tmp_path],  # the photos, and the files tests add by server path
        # The fake image encoder's features are mean colours, alike for distinct pictures: only exact copies stack
        # unless a test sets its own threshold (tests/api/test_library_api.py).
        stack_threshold=1.0,
        # The fake encoders' scores are arbitrary: tests that count results list them all; the default cut-off is
        # tested with its own settings (tests/api/test_relevance_default.py).
        search_cutoff="off",
    )


@pytest.fixture
def photo_paths(tmp_path: Path) -> list[Path]:
    return write_random_images(tmp_path / "photos", 8, seed=3, size=(48, 36))


@pytest.fixture
def client(service_settings: ServiceSettings, photo_paths: list[Path]) -> Iterator[TestClient]:
    app = create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return {"X-API-Key": API_KEY}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_server(service_settings: ServiceSettings, photo_paths: list[Path]) -> Iterator[str]:
    """A real uvicorn server on 127.0.0.1 (free port) serving the small fake collection; yields its base URL."""
    import threading
    import time

    import uvicorn

    port = free_port()
    app = create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
