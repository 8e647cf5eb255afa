"""SMALR (training/smalr, training/smalr): vocabulary, numpy GRU, FastText reader, export = served scores,
``polyglot train --method la|hem|smalr`` then ``polyglot evaluate`` through the CLI, and /search on a tiny tower."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from api_fixtures import photo_paths, service_settings  # noqa: F401  (fixtures)
from conftest import FakeImageEncoder
from fastapi.testclient import TestClient
from test_train_cli import invoke, toy  # noqa: F401  (the toy data set and patched encoders)

from app.engine import assemble
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.query import QueryPipeline, load_models
from training.smalr import SmalrEmbedder, SmalrTower, SmalrVocab, tokenize
from training.smalr.batching import mask_words
from training.smalr.network import SmalrNetwork
from training.smalr.vocabulary import build_word_list, compact_assignment, to_vocab
from training.smalr.word_vectors import pca, read_vec


def tiny_vocab() -> SmalrVocab:
    words = build_word_list(["a dog runs", "a dog", "the cat", "ein hund"], ["en", "en", "en", "de"], 2)
    # en: a(2), dog(2) specific; cat, runs, the rare; de: ein, hund specific
    return to_vocab(words, np.array([0, 1, 0]), 2)


def tiny_tower(vocab: SmalrVocab, output_dim: int = FakeImageEncoder.dim, seed: int = 0) -> SmalrTower:
    torch.manual_seed(seed)
    tower = SmalrTower(vocab, output_dim, word_dim=6, hidden_dim=5, joint_dim=4, image_encoder=FakeImageEncoder.name)
    with torch.no_grad():
        for parameter in tower.parameters():
            parameter.normal_(0, 0.5)
        q, _ = torch.linalg.qr(torch.randn(output_dim, 4))
        tower.projection.copy_(q.T)  # orthonormal rows, as training leaves them
    return tower.eval()


def test_vocabulary_rows_unknown_words_and_language_guess() -> None:
    vocab = tiny_vocab()
    assert tokenize("A Dog, runs!") == ["a", "dog", "runs"]
    assert vocab.languages == ["de", "en"] and vocab.n_specific == 4 and vocab.rows == 1 + 2 + 4 + 2
    en = vocab.words["en"]
    assert en["cat"] == en["the"] == vocab.first_latent and en["runs"] == vocab.first_latent + 1  # shared tokens
    assert vocab.ids("a zebra", "en") == [en["a"], vocab.unk("en")]
    assert vocab.ids("ein hund", None) == [vocab.words["de"]["ein"], vocab.words["de"]["hund"]]  # guessed: de
    ids, lengths = vocab.batch(["a dog runs", "hund"], ["en", "de"])
    assert ids.shape == (2, 3) and lengths.tolist() == [3, 1] and ids[1, 1:].tolist() == [0, 0]
    used, remapped = compact_assignment(np.array([7, 3, 7, 9]))
    assert used.tolist() == [3, 7, 9] and remapped.tolist() == [1, 0, 1, 2]


def test_numpy_text_model_equals_torch_and_round_trips(tmp_path: Path) -> None:
    tower = tiny_tower(tiny_vocab())
    texts, langs = ["a dog runs", "hund", "the cat a dog"], ["en", "de", "en"]
    ids, lengths = tower.vocab.batch(texts, langs)
    with torch.no_grad():
        expected = torch.nn.functional.normalize(tower(torch.from_numpy(ids), torch.from_numpy(lengths)), dim=-1)
    assert np.allclose(tower.encode(texts, langs), expected.numpy(), atol=1e-5)
    queries = tower.embed(tower.encode(texts, langs))
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)  # Pᵀ keeps unit length
    tower.save_pretrained(tmp_path / "t")
    loaded = SmalrTower.from_pretrained(tmp_path / "t")
    assert np.allclose(loaded.embed(loaded.encode(texts, langs)), queries, atol=1e-6)


def test_read_vec_and_pca(tmp_path: Path) -> None:
    path = tmp_path / "cc.en.300.vec"
    path.write_text("3 4\ndog 1 0 0 0\ncat 0 1 0 0\nbroken 1 2\nzebra 0 0 1 0\n", encoding="utf-8")
    vectors = read_vec(path, ["dog", "zebra", "absent"])
    assert sorted(vectors) == ["dog", "zebra"] and vectors["zebra"].tolist() == [0, 0, 1, 0]
    assert sorted(read_vec(path)) == ["cat", "dog", "zebra"]  # the malformed line is skipped
    (tmp_path / "bad.vec").write_text("dog 1 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"not a \.vec file"):
        read_vec(tmp_path / "bad.vec")
    reduced = pca(np.random.default_rng(0).normal(size=(10, 6)).astype(np.float32), 3)
    assert reduced.shape == (10, 3) and np.allclose(reduced.mean(axis=0), 0, atol=1e-5)


def test_parameter_counts_leave_unused_mclm_heads_out() -> None:
    vocab = tiny_vocab()
    net = SmalrNetwork(vocab, torch.zeros(vocab.n_specific, 3), torch.zeros(2, 6), torch.nn.Linear(3, 6), 10, 5, 4)
    heads = (12 * 12 + 12) + (8 * 8 + 8)  # [S_i; S_j] → [S_i'; S_j'] for word dim 6 and joint dim 4
    assert net.trainable_parameters(with_mclm=True) - net.trainable_parameters(with_mclm=False) == heads
    tower = net.export("fake-grid", {"kind": "l2"}, "hem")
    projection = tower.projection.detach()
    assert torch.allclose(projection @ projection.T, torch.eye(4), atol=1e-5)  # export makes the rows orthonormal


def test_masking_keeps_a_word_and_never_masks_padding() -> None:
    torch.manual_seed(0)
    ids = torch.tensor([[5, 6, 7], [8, 0, 0]])
    masked = mask_words(ids, torch.tensor([3, 1]), rate=1.0, mask_id=99)
    assert masked.tolist() == [[5, 99, 99], [8, 0, 0]]


@pytest.mark.parametrize("method", ["la", "hem", "smalr"])
def test_train_smalr_then_evaluate_through_the_cli(
    toy: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
) -> None:
    tower = tmp_path / method
    code, output = invoke(
        "train", "--data", toy, "--out", tower, "--method", method, "--langs", "en,de,fr", "--k-specific", "4",
        "--latent-size", "6", "--word-features", "encoder:toy", "--smalr-dims", "8,16,8", "--pretrain-epochs", "2",
        "--epochs", "4", "--batch-size", "8", "--holdout", "0.2", "--json", tmp_path / "held.json",
    )  # fmt: skip
    assert code == 0, output
    config = json.loads((tower / "config.json").read_text())
    assert config["kind"] == "smalr" and config["method"] == method
    counts = config["training"]["parameters"]
    assert 0 < counts["query_time"] < counts["training"]
    assert json.loads((tmp_path / "held.json").read_text())["parameters"] == counts
    vocabulary = config["training"]["vocabulary"]
    assert vocabulary["specific_words"] == (0 if method == "la" else 12) and vocabulary["latent_tokens"] <= 6
    assert set(json.loads((tmp_path / "held.json").read_text())["heldout"]) == {"de", "en", "fr"}
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(tower))
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "toy-image")
    code, output = invoke("evaluate", "--data", toy, "--split", "dev", "--json", tmp_path / "dev.json")
    assert code == 0, output
    report = json.loads((tmp_path / "dev.json").read_text())
    assert set(report["languages"]) == {"de", "en", "fr"} and report["served"]["model"].endswith(f":{method}")
    assert all(block["route"] == report["served"]["model"] for block in report["languages"].values())


def test_train_smalr_user_errors(toy: Path, tmp_path: Path) -> None:  # noqa: F811
    base = ["train", "--data", toy, "--out", tmp_path / "x", "--method", "hem", "--epochs", "1"]
    code, output = invoke(*base, "--word-features", "glove:x")
    assert code == 2 and "unknown word features" in output
    code, output = invoke(*base, "--word-features", f"fasttext:{tmp_path}")
    assert code == 2 and "no FastText vectors" in output
    code, output = invoke(*base, "--smalr-dims", "8,8")
    assert code == 2 and "three positive widths" in output


def test_search_serves_a_smalr_tower(
    service_settings: ServiceSettings,  # noqa: F811
    photo_paths: list[Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    tower = tiny_tower(tiny_vocab())
    tower.save_pretrained(tmp_path / "smalr")
    settings = service_settings.model_copy(update={"tower_path": tmp_path / "smalr"})

    def factory(served: ServiceSettings):  # type: ignore[no-untyped-def]
        index = ImageIndex.open(served, encoder=FakeImageEncoder(0), image_space=ImageSpace("l2"))
        index.add_paths(list(photo_paths), progress=False)
        models = load_models(served, image_encoder=index.encoder)  # the real loading path of a tower folder
        assert isinstance(models.text, SmalrEmbedder)
        return assemble(served, QueryPipeline(models, served), index)

    with TestClient(create_app(settings, factory), raise_server_exceptions=False) as client:
        body = client.get("/v1/search", params={"q": "a dog runs", "lang": "en", "k": 8}).json()
        assert len(body["results"]) == 8
        scores = [r["score"] for r in body["results"]]
        # the served score is the training score ⟨ℓ2(t), P x⟩ against the frozen index vectors
        encoder = FakeImageEncoder(0)
        encoder.load()
        from indexer.images import load_image

        images = ImageSpace("l2").apply(encoder.predict([load_image(p) for p in photo_paths]))
        joint = tower.encode(["a dog runs"], ["en"])
        expected = np.sort(images @ tower.projection.detach().numpy().T @ joint[0])[::-1]
        assert np.allclose(scores, expected, atol=1e-4)
        assert client.get("/v1/search", params={"q": "ein hund", "lang": "de"}).status_code == 200
        assert client.get("/v1/search", params={"q": "un chien", "lang": "fr"}).status_code == 422
