"""The fourth round's name texts (training/student/name_texts.py): every English name of a class, translated in
the word orders and compounds a language uses, held-out classes for the curve, and the English synonyms in the
concept term."""

from __future__ import annotations

import numpy as np

from training.student.name_texts import (
    class_lemmas,
    held_out_class_languages,
    held_out_classes,
    name_texts,
    translated_forms,
)
from training.student.words import PseudoNames

TABLES = {
    "de": {"gold": ["gold"], "fish": ["fisch"], "pram": ["kinderwagen"], "baby": ["baby"], "carriage": ["wagen"]},
    "es": {"white": ["blanco"], "shark": ["tiburón"], "pram": ["cochecito"]},
    "zh": {"gold": ["金"], "fish": ["鱼"]},
}


def test_every_english_name_of_a_class_is_translated_in_the_language_s_forms() -> None:
    lemmas = [["gold fish"], ["baby carriage", "pram"], ["white shark"]]
    names = name_texts(TABLES, lemmas, variants=2)
    found = set(zip(names.lang, names.text, names.label.tolist(), strict=True))
    assert found == {
        ("de", "gold fisch", 0),
        ("de", "goldfisch", 0),  # German joins nouns
        ("de", "baby wagen", 1),
        ("de", "babywagen", 1),
        ("de", "kinderwagen", 1),  # the synonym "pram" is one word where "baby carriage" is not
        ("es", "cochecito", 1),
        ("es", "blanco tiburón", 2),
        ("es", "tiburón blanco", 2),  # the adjective after its noun
        ("zh", "金鱼", 0),  # no spaces; Chinese neither reorders nor has a joined form of its own
    }


def test_a_phrase_is_not_reordered_and_a_text_of_two_classes_is_dropped() -> None:
    rng = __import__("random").Random(0)
    table = {"king": ["rey"], "of": ["de"], "beasts": ["bestias"]}
    assert translated_forms(["king", "of", "beasts"], table, "es", rng) == ["rey de bestias"]
    table = {"gold": ["gold"], "fish": ["fisch"], "goldfish": ["goldfisch"]}
    names = name_texts({"de": table}, [["gold fish"], ["goldfish"]], variants=1)
    # "goldfisch" would name both classes (the compound of one, the word of the other): kept for neither.
    assert set(names.text) == {"gold fisch"}


def test_class_lemmas_are_wordnet_s_english_names() -> None:
    lemmas = class_lemmas()
    assert len(lemmas) == 1000 and all(lemmas)
    assert lemmas[388] == ["giant panda", "panda", "panda bear", "coon bear", "Ailuropoda melanoleuca"]
    assert lemmas[235][0] == "German shepherd"  # a capitalised name is a name, not Latin


def test_held_out_classes_take_every_text_of_theirs() -> None:
    names = PseudoNames([f"t{i}" for i in range(40)], ["de", "fr"] * 20, np.repeat(np.arange(20), 2))
    train, held = held_out_classes(names, 0.1, seed=0)
    assert len(set(held.label.tolist())) == 2 and len(train.text) + len(held.text) == 40
    assert not set(held.label.tolist()) & set(train.label.tolist())


def test_held_out_class_languages_keep_the_class_in_other_languages() -> None:
    # 20 classes, each named in de, fr and ja: in each language 10 % (2 classes) are held out, each language its own
    names = PseudoNames([f"t{i}" for i in range(60)], ["de", "fr", "ja"] * 20, np.repeat(np.arange(20), 3))
    train, held = held_out_class_languages(names, 0.1, seed=0)
    assert len(train.text) + len(held.text) == 60
    for lang in ("de", "fr", "ja"):
        held_here = {int(label) for label, code in zip(held.label, held.lang, strict=True) if code == lang}
        trained_here = {int(label) for label, code in zip(train.label, train.lang, strict=True) if code == lang}
        assert len(held_here) == 2 and not held_here & trained_here
        # a class held out in one language is still trained in another
        assert held_here <= set(train.label.tolist())
    assert held_out_class_languages(names, 0.1, seed=0)[1].text == held.text  # seeded
