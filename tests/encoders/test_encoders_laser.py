"""LASER2 loader with a tiny random BiLSTM checkpoint and a tiny SentencePiece model built in the test."""

from __future__ import annotations

import builtins
from pathlib import Path

import numpy as np
import pytest

from indexer.encoders.factory import create_text_encoder
from training.encoders.laser import EOS, SPM_FILE, UNK, WEIGHTS_FILE, LaserUnavailableError, build_lstm

pytest.importorskip("sentencepiece", reason="optional LASER extra not installed")
pytest.importorskip("sacremoses", reason="optional LASER extra not installed")

CORPUS = [
    "a dog runs on the beach",
    "un chien court sur la plage",
    "ein hund läuft am strand",
    "the red car is parked",
    "la voiture rouge est garée",
    "das rote auto parkt",
] * 20


@pytest.fixture(scope="module")
def tiny_laser(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sentencepiece as spm
    import torch

    folder = tmp_path_factory.mktemp("laser")
    (folder / "corpus.txt").write_text("\n".join(CORPUS) + "\n")
    spm.SentencePieceTrainer.train(
        input=str(folder / "corpus.txt"), model_prefix=str(folder / "laser2"), vocab_size=40, minloglevel=2
    )
    (folder / "laser2.model").rename(folder / SPM_FILE)  # the release names the SentencePiece model .spm
    processor = spm.SentencePieceProcessor(model_file=str(folder / SPM_FILE))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    dictionary = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in pieces:
        dictionary.setdefault(piece, len(dictionary))
    params = {
        "num_embeddings": len(dictionary),
        "padding_idx": 1,
        "embed_dim": 8,
        "hidden_size": 6,
        "num_layers": 2,
        "bidirectional": True,
        "left_pad": False,
        "padding_value": 0.0,
    }
    torch.manual_seed(0)
    model = build_lstm(params)
    torch.save({"params": params, "model": model.state_dict(), "dictionary": dictionary}, folder / WEIGHTS_FILE)
    return folder


def test_tiny_laser_from_local_folder(tiny_laser: Path, tmp_path: Path) -> None:
    encoder = create_text_encoder(f"laser:{tiny_laser}", tmp_path)
    assert encoder.name == f"laser:{tiny_laser}"
    assert encoder.supports("fr") and encoder.supports("sw") and not encoder.supports("xx")
    encoder.load()
    assert encoder.dim == 12  # 2 x hidden_size (bidirectional)
    texts = ["a dog", "Un CHIEN court sur la plage\u200b!", "zzz qqq"]
    vectors = encoder.predict(texts)
    assert vectors.shape == (3, 12)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    # Padding must not leak into the max-pool: alone or batched with longer texts, same vector.
    np.testing.assert_allclose(encoder.predict(["a dog"])[0], vectors[0], rtol=1e-5, atol=1e-6)
    ids = encoder.token_ids("Un CHIEN")  # type: ignore[attr-defined]
    assert ids[-1] == EOS and UNK not in ids  # lower-cased, so every piece is known
    assert encoder.tokenize("un\x07chien") == encoder.tokenize("un chien")  # type: ignore[attr-defined]


def test_missing_model_files_are_a_clear_error(tmp_path: Path) -> None:
    encoder = create_text_encoder("laser", tmp_path / "models")
    assert encoder.name == "laser"
    with pytest.raises(LaserUnavailableError, match=r"laser2\.pt, laser2\.spm.*download_models --laser laser2"):
        encoder.load()


def test_missing_extra_is_a_clear_error(tiny_laser: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_sentencepiece(name: str, *args: object, **kwargs: object) -> object:
        if name == "sentencepiece":
            raise ImportError("No module named 'sentencepiece'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_sentencepiece)
    with pytest.raises(LaserUnavailableError, match="pip install sentencepiece sacremoses"):
        create_text_encoder(f"laser:{tiny_laser}", tmp_path).load()
