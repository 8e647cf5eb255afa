"""The student's words in ~40 languages: the word-translation loss by hand, the dictionaries' filters, translated
class names, case forms, and the frozen layers' stored output standing in for running them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from training.losses.word_translation import word_translation_loss
from training.student.words import (
    case_form,
    english_vocabulary,
    plausible_translation,
    pseudo_class_names,
    read_lexicon,
    read_lexicons,
    word_pairs,
)


def test_word_translation_loss_by_hand() -> None:
    teacher = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # Row 0 (lang 7) on target: 0. Row 1 (lang 7) at 90°: ‖u − v‖² = 2. Row 2 (lang 3) opposite: 4.
    student = torch.tensor([[2.0, 0.0], [0.0, 3.0], [0.0, -1.0]])
    language = torch.tensor([7, 7, 3])
    # Per language first: lang 7 → (0 + 2) / 2 = 1, lang 3 → 4; then over languages: (1 + 4) / 2 = 2.5.
    assert word_translation_loss(student, teacher, language).item() == pytest.approx(2.5)
    # A plain mean over rows would be 2.0: a language with more rows must not weigh more.
    assert word_translation_loss(student, teacher, torch.tensor([1, 1, 1])).item() == pytest.approx(2.0)


def test_word_translation_loss_pulls_a_word_to_its_target_and_not_the_teacher() -> None:
    teacher = torch.tensor([[1.0, 0.0]], requires_grad=True)
    student = torch.tensor([[0.0, 1.0]], requires_grad=True)
    loss = word_translation_loss(student, teacher, torch.tensor([0]))
    loss.backward()
    assert teacher.grad is None
    assert student.grad is not None
    stepped = student - 0.1 * student.grad
    assert word_translation_loss(stepped, teacher, torch.tensor([0])) < loss


def test_plausible_translations_drop_identity_pairs_noise_and_foreign_script() -> None:
    assert plausible_translation("dog", "hund", "de")
    assert not plausible_translation("pizza", "pizza", "de")  # identity pair
    assert not plausible_translation("#aaa", "#ein", "de")
    assert not plausible_translation("seven", "7", "fr")
    assert not plausible_translation("dog", "dog2", "fr")
    assert not plausible_translation("nissan", "nissan", "zh")
    assert not plausible_translation("tron", "tronic", "ru")  # Latin letters where Russian has its own script
    assert plausible_translation("dog", "собака", "ru")


def write_lexicon(folder: Path, lang: str, lines: list[str]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"en-{lang}.tsv").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_chinese_words_are_also_given_in_simplified_characters(tmp_path: Path) -> None:
    write_lexicon(tmp_path, "zh", ["goldfish\t金魚", "basket\t籃子", "dog\t狗"])
    table = read_lexicon(tmp_path / "en-zh.tsv", "zh")
    assert table["goldfish"] == ["金鱼", "金魚"]
    assert table["dog"] == ["狗"]  # the same in both scripts: once


def test_word_pairs_hold_out_english_words_with_all_their_translations(tmp_path: Path) -> None:
    letters = "abcdefghijklmnopqrst"
    write_lexicon(tmp_path, "de", [f"w{c}\tx{c}de" for c in letters] + ["pizza\tpizza"])
    write_lexicon(tmp_path, "fr", [f"w{c}\tx{c}fr" for c in letters])
    vocabulary = {f"w{c}" for c in letters} | {"pizza", "unknown"}
    train, held = word_pairs(read_lexicons(tmp_path), vocabulary, holdout=0.25, seed=0)
    assert len(held.english) == 5 and len(train.english) == 15  # "pizza" has no real translation, "unknown" none
    assert not set(train.english) & set(held.english)
    for pairs in (train, held):
        for text, lang, source in zip(pairs.text, pairs.lang, pairs.source.tolist(), strict=True):
            english = pairs.english[source]
            assert text == (english if lang == "en" else f"x{english[1:]}{lang}")
    assert sorted(train.languages()) == ["de", "en", "fr"]


def test_english_vocabulary_counts_caption_words_and_adds_class_names(tmp_path: Path) -> None:
    captions = tmp_path / "captions.jsonl"
    rows = ['{"lang": "en", "text": "A dog runs."}'] * 3 + ['{"lang": "en", "text": "A rare cat."}']
    rows.append('{"lang": "de", "text": "Ein Hund rennt. Ein Hund. Ein Hund."}')
    captions.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert english_vocabulary([captions], ["goldfish", "great white shark"], min_count=3) == {
        "dog",
        "runs",
        "goldfish",
        "great",
        "white",
        "shark",
    }


def test_class_names_are_translated_word_by_word_only_when_every_word_translates(tmp_path: Path) -> None:
    write_lexicon(tmp_path, "de", ["goldfish\tgoldfisch", "shark\thai", "white\tweiß"])
    write_lexicon(tmp_path, "ja", ["white\t白", "shark\tサメ"])
    names = pseudo_class_names(read_lexicons(tmp_path), ["goldfish", "great white shark", "white shark"], variants=2)
    found = set(zip(names.lang, names.text, names.label.tolist(), strict=True))
    # "great" has no translation: that name is left out; Japanese joins words without spaces.
    assert found == {("de", "goldfisch", 0), ("de", "weiß hai", 2), ("ja", "白サメ", 2)}


def test_case_forms_are_what_people_type() -> None:
    rng = np.random.default_rng(0)
    forms = {case_form("kinderwagen", rng) for _ in range(200)}
    assert forms == {"kinderwagen", "Kinderwagen", "KINDERWAGEN"}
    assert case_form("金鱼", np.random.default_rng(1)) == "金鱼"
    # A Turkish keyboard keeps the dot of i in capitals, as serving reads it (indexer.query.pipeline.unshouted).
    turkish = {case_form("kedi", rng, "tr") for _ in range(200)}
    assert turkish == {"kedi", "Kedi", "KEDİ"}


def test_stored_frozen_states_give_the_student_s_own_outputs() -> None:
    from indexer.encoders.e5 import E5Weights
    from indexer.export.e5 import E5Encoder
    from training.student.frozen_states import FrozenStates
    from training.student.train import Batcher

    weights = E5Weights()
    trunk = E5Encoder(weights, layers=3).eval()
    batcher = Batcher(weights, 40, "cpu")
    states = FrozenStates(trunk, batcher, layers=2, chunk=2)
    texts = ["goldfish", "Ein Hund rennt am Strand entlang.", "金鱼", "goldfish"]
    with torch.no_grad():
        expected = trunk(*batcher(texts))
        hidden, mask = states(texts)
        got = trunk.upper(hidden, mask, 2)
    assert states.computed == 3 and len(states) == 3  # "goldfish" ran once
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=-1)
    assert float(cosine.min()) > 1 - 1e-5  # float16 storage
    assert torch.allclose(got, expected, atol=5e-3)
    states(["goldfish"])
    assert states.computed == 3  # from the store
    assert math.isclose(float(mask.sum()), float(batcher(texts)[1].sum()))
