"""The hybrid text encoder (``muse+e5-small``): unit-norm concatenation, languages of any part, and training
features taken from each part's own cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from api_fixtures import FakeTextEncoder

from indexer.encoders.factory import create_text_encoder
from training.data.features import text_embeddings
from training.encoders.hybrid import HybridTextEncoder


class CzechOnly(FakeTextEncoder):
    name = "fake-cs"
    dim = 8
    languages = frozenset({"cs"})


def hybrid() -> HybridTextEncoder:
    encoder = HybridTextEncoder([FakeTextEncoder(), CzechOnly()])
    encoder.load()
    return encoder


def test_concatenates_unit_vectors_into_a_unit_vector() -> None:
    encoder = hybrid()
    vectors = encoder.predict(["a dog on the beach", "pes na pláži"])
    assert encoder.name == "fake-text+fake-cs" and vectors.shape == (2, 24)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    first = FakeTextEncoder()
    first.load()
    np.testing.assert_allclose(
        vectors[:, :16] * np.sqrt(2), first.predict(["a dog on the beach", "pes na pláži"]), rtol=1e-5
    )


def test_covers_the_languages_of_every_part() -> None:
    encoder = hybrid()
    assert encoder.supports("cs") and encoder.supports("fr") and not encoder.supports("ja")


def test_needs_two_parts() -> None:
    with pytest.raises(ValueError, match="at least two"):
        HybridTextEncoder([FakeTextEncoder()])


def test_factory_builds_a_hybrid_from_its_spec_without_loading(tmp_path: Path) -> None:
    encoder = create_text_encoder("muse+e5-small", tmp_path)
    assert isinstance(encoder, HybridTextEncoder) and not encoder.loaded
    assert encoder.name == "muse+e5-small" and encoder.dim == 512 + 384
    assert encoder.supports("cs") and encoder.supports("de")  # cs from e5, de from both


def test_training_features_come_from_each_parts_cache(tmp_path: Path) -> None:
    texts = ["a dog", "un chien", "pes"]
    encoder = hybrid()
    embedded = text_embeddings(encoder, texts, tmp_path)
    np.testing.assert_allclose(embedded, encoder.predict(texts), rtol=1e-5)
    # The parts' caches now hold every text: a second pass must not call the encoders at all.
    for part in encoder.parts:
        part._predict = None  # type: ignore[method-assign]
    np.testing.assert_allclose(text_embeddings(encoder, texts, tmp_path), embedded)


def test_threads_reach_the_parts(tmp_path: Path) -> None:
    encoder = create_text_encoder("muse+e5-small", tmp_path)
    encoder.threads = 1  # type: ignore[attr-defined]  # what the service does before load()
    assert [part.threads for part in encoder.parts] == [1, 1]  # type: ignore[attr-defined]
