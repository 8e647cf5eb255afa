"""mUSE as a second word teacher (training/student/muse_teacher.py): hand-computed soft concepts and blends."""

from __future__ import annotations

import math

import numpy as np
import pytest
from api_fixtures import FakeTextEncoder

from indexer.encoders.imagenet import imagenet_class_names
from training.student.muse_teacher import blend_targets, class_name_words, muse_rows, soft_concepts
from training.student.run import muse_word_targets
from training.student.train import StudentRecipe
from training.student.words import WordPairs


def test_soft_concepts_weights_prototypes_by_the_softmax_of_name_similarity() -> None:
    queries = np.array([[2.0, 0.0]])  # not unit: the cosine is taken
    names = np.array([[1.0, 0.0], [0.0, 3.0]])  # cosines 1 and 0
    prototypes = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    soft = soft_concepts(queries, names, prototypes, temperature=1.0)
    first, second = math.e / (math.e + 1), 1 / (math.e + 1)  # softmax of (1, 0)
    norm = math.hypot(first, second)
    assert soft == pytest.approx(np.array([[first / norm, second / norm, 0.0]]), abs=1e-6)


def test_soft_concepts_at_a_small_temperature_is_the_nearest_names_prototype_without_overflow() -> None:
    soft = soft_concepts(np.array([[1.0, 0.1]]), np.eye(2), np.array([[0.0, 1.0], [1.0, 0.0]]), 1e-4)
    assert np.isfinite(soft).all()
    assert soft == pytest.approx(np.array([[0.0, 1.0]]), abs=1e-6)


def pairs() -> WordPairs:
    # English words shark (0) and running (1); German, Czech and Russian translations.
    return WordPairs(
        english=["shark", "running"],
        text=["shark", "Hai", "žralok", "акула", "laufen"],
        lang=["en", "de", "cs", "ru", "de"],
        source=np.array([0, 0, 0, 0, 1]),
    )


def test_muse_rows_are_class_word_translations_in_muses_languages() -> None:
    # English keeps its own target, Czech is not a mUSE language, "running" names no class.
    assert muse_rows(pairs(), class_name_words(["great white shark"])).tolist() == [1, 3]


def test_class_name_words_split_hyphens_and_lower_case() -> None:
    assert class_name_words(["Great White Shark", "jack-o'-lantern"]) == {
        "great",
        "white",
        "shark",
        "jack",
        "o'",
        "lantern",
    }


def test_blend_targets_gives_each_taught_row_its_own_target() -> None:
    targets = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)  # shark, running
    soft = np.array([[0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)  # for rows 1 (Hai) and 3 (акула)
    blended, matrix = blend_targets(pairs(), targets, np.array([1, 3]), soft, share=0.5)
    assert blended.source.tolist() == [0, 2, 0, 3, 1]
    assert matrix[:2] == pytest.approx(targets)
    assert matrix[2] == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)], abs=1e-6)  # unit(0.5·[1,0] + 0.5·[0,1])
    # 0.5·[1,0] + 0.5·[-1,0] is zero: unit_rows leaves it zero rather than dividing by it
    assert np.isfinite(matrix[3]).all()
    assert pairs().source.tolist() == [0, 0, 0, 0, 1]  # the input pairs are not changed


def test_blend_targets_at_share_zero_keeps_the_word_teachers_targets() -> None:
    targets = np.array([[0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    blended, matrix = blend_targets(pairs(), targets, np.array([1]), np.array([[1.0, 0.0]]), share=0.0)
    assert matrix[blended.source[1]] == pytest.approx(targets[0])


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_blend_targets_refuses_a_share_outside_0_1(share: float) -> None:
    with pytest.raises(ValueError, match="share"):
        blend_targets(pairs(), np.eye(2), np.array([1]), np.eye(2)[:1], share)


def test_blend_targets_refuses_misaligned_soft_vectors() -> None:
    with pytest.raises(ValueError, match="rows"):
        blend_targets(pairs(), np.eye(2), np.array([1, 3]), np.eye(2)[:1], 0.5)


def test_muse_word_targets_teach_a_translation_that_mUSE_reads_as_a_class_its_prototype(tmp_path) -> None:
    # The fake encoder gives the same words the same vector: a "German" word spelt like the class name "goldfish"
    # (class 1) is read as that class, so with share 1 its target is class 1's prototype.
    names = imagenet_class_names()
    assert names[1] == "goldfish"
    words = WordPairs(["goldfish"], ["goldfish", "goldfish"], ["en", "de"], np.array([0, 0]))
    prototypes = np.random.default_rng(0).standard_normal((1000, 8)).astype(np.float32)
    prototypes /= np.linalg.norm(prototypes, axis=1, keepdims=True)
    muse = FakeTextEncoder()
    muse.load()
    targets = np.array([[1.0] + [0.0] * 7], dtype=np.float32)
    recipe = StudentRecipe(muse_word_share=1.0, muse_temperature=0.02)
    taught, matrix, rows = muse_word_targets(words, targets, muse, prototypes, recipe, tmp_path)
    assert rows.tolist() == [1]
    assert taught.source.tolist() == [0, 1]  # English keeps the word teacher's target
    assert matrix[1] == pytest.approx(prototypes[1], abs=1e-3)


def sampler_words() -> WordPairs:
    return WordPairs(
        english=["dog", "goldfish"],
        text=["dog", "Hund", "chien", "goldfish", "Goldfisch", "金鱼"],
        lang=["en", "de", "fr", "en", "de", "zh"],
        source=np.array([0, 0, 0, 1, 1, 1]),
    )


def test_the_sampler_adds_muse_taught_rows_in_their_languages_groups() -> None:
    from test_student import tiny_recipe, toy_corpus

    from training.student.train import Sampler

    photos, translations, _teacher, concepts = toy_corpus()
    recipe = tiny_recipe()
    recipe.words_per_step, recipe.muse_words_per_step = 4, 6
    words = sampler_words()
    sampler = Sampler(photos, translations, concepts, recipe, words, muse_rows=np.array([4, 5]))
    batch = sampler.draw(0)
    extra = batch.texts[-6:]
    assert set(extra) <= {"Goldfisch", "金鱼", "goldfisch", "GOLDFISCH"}  # case forms of the taught rows only
    codes = sorted({"de", "en", "fr", "zh"})
    langs = [codes[code] for code in batch.word_langs[-6:]]
    assert langs == ["zh" if text == "金鱼" else "de" for text in extra]
    assert batch.word_sources[-6:].tolist() == [1] * 6


def test_without_muse_rows_the_sampler_draws_what_it_drew_before() -> None:
    from test_student import tiny_recipe, toy_corpus

    from training.student.train import Sampler

    photos, translations, _teacher, concepts = toy_corpus()
    recipe = tiny_recipe()
    recipe.words_per_step = 4
    plain = Sampler(photos, translations, concepts, recipe, sampler_words()).draw(3)
    recipe.muse_words_per_step = 5  # no taught rows: nothing more is drawn
    again = Sampler(photos, translations, concepts, recipe, sampler_words()).draw(3)
    assert again.texts == plain.texts
    assert again.word_langs.tolist() == plain.word_langs.tolist()


def test_at_share_zero_the_taught_rows_keep_their_targets_and_mUSE_is_not_read(tmp_path) -> None:
    words = WordPairs(["goldfish"], ["goldfish", "Goldfisch"], ["en", "de"], np.array([0, 0]))
    targets = np.array([[1.0, 0.0]], dtype=np.float32)
    recipe = StudentRecipe(muse_word_share=0.0, muse_words_per_step=8)
    taught, matrix, rows = muse_word_targets(words, targets, None, np.eye(1000, 2), recipe, tmp_path)
    assert rows.tolist() == [1]
    assert taught is words and matrix is targets
    with pytest.raises(ValueError, match="mUSE encoder"):
        muse_word_targets(words, targets, None, np.eye(1000, 2), StudentRecipe(muse_word_share=0.5), tmp_path)


def test_the_model_card_names_the_runs_it_continued_and_the_muse_teacher(tmp_path) -> None:
    import json

    from training.student.train import model_card

    first = tmp_path / "first"
    first.mkdir()
    recipe = {"layers": 12, "frozen_layers": 10, "steps": 1200, "init": None}
    (first / "config.json").write_text(json.dumps({"student": {"layers": 12, "recipe": recipe}}))
    card = model_card(StudentRecipe(layers=12, frozen_layers=8, init=str(first), muse_word_share=0.5), [])
    assert f"continued from `{first}` (12 layers, the top 2 trained, 1200 steps)" in card
    assert "mUSE as a second word teacher" in card and "mUSE v3 (Apache 2.0)" in card
    plain = model_card(StudentRecipe(), [])
    assert "continued from" not in plain and "second word teacher" not in plain


def test_the_model_card_names_the_distill_and_word_teachers(tmp_path) -> None:
    import json

    from training.student.train import model_card

    plain = model_card(StudentRecipe(), [])
    assert "distill term; teacher: the research tower `training/assets/tower`" in plain
    assert "word teacher: the shipped student" in plain
    teacher = tmp_path / "w12a13"
    teacher.mkdir()
    recipe = {"layers": 12, "frozen_layers": 6, "steps": 1300, "init": "var/students/w12r12"}
    config = {"kind": "e5-student", "student": {"layers": 12, "recipe": recipe}}  # a student folder's config
    (teacher / "config.json").write_text(json.dumps(config))
    word_teacher = tmp_path / "d4"
    word_teacher.mkdir()
    card = model_card(StudentRecipe(teacher=str(teacher), word_teacher=str(word_teacher)), [])
    assert (
        f"distill term; teacher: the English route of the student `{teacher}` (12 layers, the top 6 trained, "
        "1300 steps; it continued from `var/students/w12r12`) (its own model card names its data and teachers)"
    ) in card
    assert f"word teacher: the student `{word_teacher}`" in card
    assert "research tower" not in card
