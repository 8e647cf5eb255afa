"""The EmbeddingGemma text encoder (indexer/encoders/embeddinggemma.py) on a tiny random model of the same
architecture (tests/gemma_fixtures.py): factory spellings, the card's prompts, Matryoshka truncation, offline
loading, and a tower over it through the service's model loading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import clear_polyglot_env
from gemma_fixtures import tiny_embeddinggemma

from indexer.asset_paths import SHIPPED_STUDENT, shipped_tower_path
from indexer.encoders import build_text_encoder
from indexer.encoders.base import TextEncoder
from indexer.encoders.embeddinggemma import DOCUMENT_PROMPT, HUB_MODEL, QUERY_PROMPT, EmbeddingGemmaEncoder
from indexer.model_files import ModelFileMissingError
from indexer.settings import Settings
from indexer.tower import TextEmbedder, TextTower

TEXTS = ["a dog runs on the beach", "un chien sur la plage", "ein hund am strand"]


def create_text_encoder(spec: str, models_dir: Path) -> TextEncoder:
    """The factory as every caller uses it: from settings (POLYGLOT_TEXT_ENCODER=spec, this models folder)."""
    return build_text_encoder(Settings(home=models_dir.parent, models_dir=models_dir), spec)


@pytest.fixture(autouse=True)
def _no_polyglot_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_polyglot_env(monkeypatch)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder holding the tiny model where `polyglot models fetch --embeddinggemma` puts the real one."""
    folder = tmp_path_factory.mktemp("models")
    tiny_embeddinggemma(folder)
    return folder


def test_factory_spellings(models_dir: Path, tmp_path: Path) -> None:
    fetched = str(models_dir / "embeddinggemma-300m")
    encoder = create_text_encoder("embeddinggemma", models_dir)
    assert isinstance(encoder, EmbeddingGemmaEncoder)
    assert (encoder.name, encoder.dim, encoder.source) == ("embeddinggemma", 768, fetched)
    small = create_text_encoder("embeddinggemma:256", models_dir)
    assert (small.name, small.dim, getattr(small, "source", None)) == ("embeddinggemma:256", 256, fetched)
    named = create_text_encoder(f"embeddinggemma:{HUB_MODEL}:128", models_dir)
    assert (named.name, named.dim, getattr(named, "source", None)) == ("embeddinggemma:128", 128, HUB_MODEL)
    folder = create_text_encoder("embeddinggemma:/srv/models/gemma", models_dir)
    assert (folder.name, getattr(folder, "source", None)) == ("embeddinggemma", "/srv/models/gemma")
    # Nothing fetched: the official model by name (a hub download at load time).
    assert getattr(create_text_encoder("embeddinggemma", tmp_path), "source", None) == HUB_MODEL
    with pytest.raises(ValueError, match="768, 512, 256, 128"):
        create_text_encoder("embeddinggemma:300", models_dir)


def test_queries_use_the_card_prompt_and_truncation_renormalises(models_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    full = create_text_encoder("embeddinggemma", models_dir)
    full.load()
    vectors = full.predict(TEXTS)
    assert vectors.shape == (3, 768) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    reference = SentenceTransformer(str(models_dir / "embeddinggemma-300m"), local_files_only=True)
    np.testing.assert_allclose(vectors, reference.encode(TEXTS, prompt=QUERY_PROMPT), atol=1e-5)
    assert not np.allclose(vectors, reference.encode(TEXTS), atol=1e-3), "the prompt changes the embedding"
    assert isinstance(full, EmbeddingGemmaEncoder)
    documents = full.predict_documents(TEXTS)
    np.testing.assert_allclose(documents, reference.encode(TEXTS, prompt=DOCUMENT_PROMPT), atol=1e-5)
    for dim in (512, 256, 128):
        short = create_text_encoder(f"embeddinggemma:{dim}", models_dir)
        short.load()
        head = vectors[:, :dim] / np.linalg.norm(vectors[:, :dim], axis=1, keepdims=True)
        np.testing.assert_allclose(short.predict(TEXTS), head, atol=1e-5)


def test_a_missing_model_names_the_fetch_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelFileMissingError, match="polyglot models fetch --embeddinggemma"):
        EmbeddingGemmaEncoder(str(tmp_path / "absent")).load()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a machine without the hub and nothing fetched
    with pytest.raises(ModelFileMissingError, match="polyglot models fetch --embeddinggemma"):
        EmbeddingGemmaEncoder(HUB_MODEL).load()


def test_a_tower_over_embeddinggemma_is_served(models_dir: Path, tmp_path: Path) -> None:
    """POLYGLOT_TEXT_ENCODER=embeddinggemma picks the tower shipped for it; a tower folder over it loads through
    the service's model loading and answers queries in the image space."""
    from indexer.query.models import load_models

    assert shipped_tower_path("embeddinggemma").name == "tower-embeddinggemma"
    assert shipped_tower_path("muse") == shipped_tower_path() == SHIPPED_STUDENT
    tower_dir = tmp_path / "tower"
    TextTower(768, 16, hidden_dims=[8], dropouts=[0.0, 0.0], text_encoder="embeddinggemma").save_pretrained(tower_dir)
    settings = Settings(
        home=tmp_path, models_dir=models_dir, tower_path=tower_dir, text_encoder="embeddinggemma", caption_alignments=[]
    )
    models = load_models(settings, alignments=False, clc=False)
    assert isinstance(models.text, TextEmbedder) and models.label == "embeddinggemma:tower"
    vectors = models.text.embed(TEXTS)
    assert vectors.shape == (3, 16)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    mismatched = tmp_path / "tower-256"
    TextTower(256, 16, hidden_dims=[8], dropouts=[0.0, 0.0], text_encoder="embeddinggemma:256").save_pretrained(
        mismatched
    )
    narrow = load_models(settings.model_copy(update={"tower_path": mismatched}), alignments=False, clc=False)
    assert narrow.text.embed(TEXTS).shape == (3, 16)
