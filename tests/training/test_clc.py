"""Cross-lingual consistency at tensor level: CLC-A/CLC-C combination, the triplet loss, the translators."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from training.clc.consistency import ClcClassifier, ClcError, Versions, rerank
from training.clc.fit import ClcMLP, fit_classifier, mean_recall
from training.glosses import LexiconTranslator
from training.losses.clc_triplet import clc_triplet_loss
from training.translation import GlossTranslator, ParallelTranslator, RetrievalTranslator, find_mt_translator
from training.translation.base import QueryTranslator, TranslationError
from training.translation.retrieval import SIDECAR, index_folder


def unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(np.float32)


def test_average_ranks_by_the_mean_score_of_the_present_versions() -> None:
    rng = np.random.default_rng(0)
    vectors = unit(rng.standard_normal((3, 4, 8)))
    present = np.array([[True, True, False, True], [True, False, False, False], [True, True, True, True]])
    vectors[~present] = 0
    images = unit(rng.standard_normal((20, 8)))
    versions = Versions(vectors, present)
    mean_scores = np.einsum("nvd,md->nm", vectors, images) / present.sum(axis=1, keepdims=True)
    ranked = np.argsort(-(versions.average() @ images.T), axis=1)
    assert (ranked == np.argsort(-mean_scores, axis=1)).all()
    assert np.allclose(versions.average()[1], vectors[1, 0], atol=1e-6)  # no translation: the query alone


def test_scores_fill_empty_slots_with_the_query_score() -> None:
    vectors = np.zeros((1, 3, 2), dtype=np.float32)
    vectors[0, 0], vectors[0, 2] = [1, 0], [0, 1]
    present = np.array([[True, False, True]])
    candidates = np.array([[[0.6, 0.8], [1.0, 0.0]]], dtype=np.float32)
    scores = Versions(vectors, present).scores(candidates)
    assert np.allclose(scores[0], [[0.6, 0.6, 0.8], [1.0, 1.0, 0.0]])


def classifier_from(model: ClcMLP, languages: list[str]) -> ClcClassifier:
    arrays = [
        p.detach().numpy().copy() for p in (model.hidden.weight, model.hidden.bias, model.out.weight, model.out.bias)
    ]
    return ClcClassifier(languages, *arrays, meta={"translator": "test"})


def test_classifier_matches_the_torch_mlp_and_round_trips(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = ClcMLP(4)
    torch.nn.init.normal_(model.hidden.bias)
    classifier = classifier_from(model, ["en", "de", "fr"])
    x = np.random.default_rng(1).uniform(-1, 1, (5, 7, 4)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    assert np.allclose(classifier(x), expected, atol=1e-5)
    classifier.save(tmp_path / "clc")
    loaded = ClcClassifier.load(tmp_path / "clc")
    assert loaded.languages == ["en", "de", "fr"] and loaded.meta["translator"] == "test"
    assert np.allclose(loaded(x), expected, atol=1e-5)
    config = json.loads((tmp_path / "clc" / "config.json").read_text())
    assert config["hidden"] == 32
    with pytest.raises(ClcError, match="polyglot clc fit"):
        ClcClassifier.load(tmp_path / "missing")


def test_rerank_orders_by_the_classifier_and_shows_the_clc_a_score() -> None:
    # A classifier that only trusts slot 2 (the German translation).
    w1 = np.zeros((32, 3), dtype=np.float32)
    w1[0, 2] = 1.0
    classifier = ClcClassifier(
        ["en", "de"], w1, np.zeros(32, np.float32) + 1, np.eye(1, 32, dtype=np.float32), np.zeros(1, np.float32), {}
    )
    vectors = np.zeros((1, 3, 2), dtype=np.float32)
    vectors[0, 0], vectors[0, 2] = [1, 0], [0, 1]
    present = np.array([[True, False, True]])
    candidates = np.array([[[1, 0], [0, 1]]], dtype=np.float32)
    ids, scores = rerank(Versions(vectors, present), classifier, [[7, 9]], candidates)
    assert ids == [[9, 7]]  # the German version's favourite first, though the query prefers 7
    assert scores == [[pytest.approx(0.5**0.5), pytest.approx(0.5**0.5)]]  # cosine with the unit mean, as CLC-A


def test_triplet_loss_is_zero_when_every_positive_wins_by_the_margin() -> None:
    truth = torch.tensor([0, 1, 1, 2])
    scores = torch.full((4, 3), 0.1)
    scores[torch.arange(4), truth] = 0.9
    assert clc_triplet_loss(scores, truth).item() == 0.0
    scores[0, 2] = 0.88  # text 0 prefers another image within the margin: both directions now violate
    loss = clc_triplet_loss(scores, truth, top_n=1)
    # sentence anchor (weight 1.5): 0.05 - 0.9 + 0.88 for text 0; image anchor: image 2's text (3) vs text 0
    expected_text = 1.5 * (0.05 - 0.9 + 0.88) / 4
    expected_image = (0.05 - 0.9 + 0.88) / 4
    assert loss.item() == pytest.approx(expected_text + expected_image, abs=1e-6)


def test_triplet_loss_gradient_raises_the_positive() -> None:
    truth = torch.tensor([0, 1])
    scores = torch.tensor([[0.2, 0.5], [0.4, 0.3]], requires_grad=True)
    clc_triplet_loss(scores, truth).backward()
    assert scores.grad is not None
    assert scores.grad[0, 0] < 0 and scores.grad[0, 1] > 0  # push the positive up, the negative down


def test_fit_learns_to_trust_the_informative_slot() -> None:
    """Slot 1 ranks the right image first, slot 0 is noise: CLC-C must beat both the query and CLC-A."""
    rng = np.random.default_rng(0)
    n_images, n_texts = 30, 90
    truth = np.arange(n_texts) % n_images
    scores = rng.uniform(0, 0.5, (n_texts, n_images, 3)).astype(np.float32)
    scores[np.arange(n_texts), truth, 1] += 0.3
    scores[:, :, 0] = rng.uniform(0, 1.0, (n_texts, n_images))
    from training.clc.fit import ClcData

    data = ClcData(scores, np.ones((n_texts, 3), dtype=bool), truth)
    classifier, report = fit_classifier(data, data, ["en", "de"], iterations=60, lr=0.05)
    assert report["val_mean_recall_classifier"] > report["val_mean_recall_average"] + 0.1
    assert mean_recall(classifier(scores), truth) == pytest.approx(report["val_mean_recall_classifier"])


def test_gloss_translator_only_reaches_english(tmp_path: Path) -> None:
    (tmp_path / "en-de.tsv").write_text("dog\thund\nred\trot\n", encoding="utf-8")
    translator = GlossTranslator(LexiconTranslator.from_folder(tmp_path))
    assert isinstance(translator, QueryTranslator)
    assert translator.translate(["roter Hund", "rot"], ["de", "en"], "en") == ["roter dog", None]
    assert translator.translate(["roter Hund"], ["de"], "fr") == [None]


def test_parallel_translator_uses_the_same_photos_parallel_caption() -> None:
    rows = [
        ("1.jpg", "en", "a dog", "multi30k-task1"),
        ("1.jpg", "de", "ein Hund", "multi30k-task1"),
        ("1.jpg", "de", "Hund im Gras", "multi30k-task2"),
        ("2.jpg", "en", "a cat", "multi30k-task1"),
    ]
    translator = ParallelTranslator(rows)
    assert translator.translate(["a dog", "Hund im Gras", "a cat"], ["en", "de", "en"], "de") == [
        "ein Hund",
        None,
        None,
    ]
    assert translator.translate(["ein Hund"], ["de"], "en") == ["a dog"]


def fake_embed(texts: list[str]) -> np.ndarray:
    """Words → fixed vectors, colour words shared across languages (a cross-lingual toy encoder)."""
    same = {"rot": "red", "rouge": "red", "hund": "dog", "chien": "dog"}
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            word = same.get(word, word)
            out[row] += np.random.default_rng(sum(map(ord, word))).standard_normal(16)
    return out


def test_retrieval_translator_builds_once_and_finds_the_nearest_caption(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [("en", "red dog"), ("en", "blue car"), ("de", "blaues Auto"), ("de", "rot Hund"), ("fr", "chien rouge")]
    corpus.write_text("".join(json.dumps({"lang": code, "text": t}) + "\n" for code, t in rows), encoding="utf-8")
    calls: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return fake_embed(texts)

    translator = RetrievalTranslator.open_or_build(corpus, ["en", "de"], embed, "toy", tmp_path / "cache")
    assert calls == [4] and translator.languages == {"en", "de"}
    assert translator.translate(["chien rouge", "blue car"], ["fr", "en"], "de") == ["rot Hund", "blaues Auto"]
    assert translator.translate(["chien rouge"], ["fr"], "cs") == [None]
    again = RetrievalTranslator.open_or_build(corpus, ["en", "de"], embed, "toy", tmp_path / "cache")
    assert calls == [4, 2] and again.texts == translator.texts  # the index was read back: only the queries
    (index_folder(tmp_path / "cache", corpus, "toy", ["en", "de"]) / SIDECAR).unlink()  # a build cut short
    RetrievalTranslator.open_or_build(corpus, ["en", "de"], embed, "toy", tmp_path / "cache")
    assert calls[-1] == 4
    limited = again.with_queries(embed, frozenset({"en", "de", "fr"}), min_similarity=0.99)
    assert limited.translate(["chien rouge", "červený pes"], ["fr", "cs"], "de") == ["rot Hund", None]  # cs unknown
    assert limited.translate(["chien rouge noir"], ["fr"], "de") == [None]  # nearest caption too far
    assert again.with_queries(embed, frozenset({"en", "fr"})).translate(["chien rouge"], ["fr"], "de") == [None]
    with pytest.raises(TranslationError, match=r"not a captions\.jsonl"):
        RetrievalTranslator.open_or_build(tmp_path / "nowhere", ["en"], embed, "toy", tmp_path / "cache")


def test_mt_backend_is_used_only_when_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "argostranslate", None)  # not installed
    monkeypatch.setitem(sys.modules, "argostranslate.translate", None)
    assert find_mt_translator() is None
    fake = types.ModuleType("argostranslate.translate")

    def translate(text: str, source: str, target: str) -> str:
        if source == "cs":
            raise LookupError("no package for cs")
        return f"[{source}->{target}] {text}"

    fake.translate = translate  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "argostranslate", types.ModuleType("argostranslate"))
    monkeypatch.setitem(sys.modules, "argostranslate.translate", fake)
    translator = find_mt_translator()
    assert translator is not None and translator.name == "mt:argos"
    assert translator.translate(["ein Hund", "pes", "x"], ["de", "cs", None], "en") == ["[de->en] ein Hund", None, None]
