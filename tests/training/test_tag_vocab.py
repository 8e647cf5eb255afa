"""The shipped-vocabulary builder's rules on a hand-made dictionary: scripts, English look-alikes, inflections,
German capitals, the English word list."""

from __future__ import annotations

from collections import Counter

from training.tag_vocab.build import Evidence, translate
from training.tag_vocab.checks import in_script
from training.tag_vocab.english import EnglishWord, english_words, noun_share


def word(text: str, origin: str = "captions", noun: bool = True) -> EnglishWord:
    return EnglishWord(text, text.split()[-1], origin, 10, noun)


NO_EVIDENCE = Evidence(Counter(), 0, Counter(), 0)


def test_scripts() -> None:
    assert in_script("собака", "ru") and not in_script("pizza", "ru") and in_script("пицца", "ru")
    assert in_script("犬", "ja") and in_script("テンチ", "ja") and not in_script("dog", "ja")
    assert in_script("arc-en-ciel", "fr") and not in_script("f00t", "fr") and not in_script("", "fr")


def test_english_look_alikes_need_evidence() -> None:
    dictionary = {"beach": ["beach", "plage"], "pizza": ["pizza"], "girls": ["girls"], "baseball": ["baseball"]}
    english = [word("beach"), word("pizza"), word("girls"), word("baseball")]
    entries, report = translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3)
    kept = {e.key for e in entries}
    # beach: "plage" exists, so the identity pair goes; pizza: the only translation and not English to py3langid;
    # girls: the only translation, but py3langid calls it English; baseball: English-looking without evidence.
    assert "plage" in kept and "pizza" in kept and not kept & {"beach", "girls"}
    assert report.rejected["english"] >= 2
    # With evidence: French captions that use "baseball" about as often as English ones do.
    evidence = Evidence(Counter({"baseball": 30, "beach": 1}), 1000, Counter({"baseball": 30, "beach": 500}), 1000)
    entries, _ = translate("fr", english, dictionary, evidence, None, 100, 3)
    assert "baseball" in {e.key for e in entries} and "beach" not in {e.key for e in entries}


def test_inflections_and_unaccented_doubles_fold_and_sources_lead_with_the_word_itself() -> None:
    dictionary = {"shark": ["requin", "requins", "squale"], "day": ["journee", "journée", "jour"], "dog": ["chien"]}
    english = [
        word("great white shark", "imagenet"),
        word("shark"),
        word("day"),
        word("maltese dog", "imagenet"),
        word("dog"),
    ]
    entries, _ = translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3)
    by_key = {e.key: e for e in entries}
    assert (
        "requins" not in by_key and "journee" not in by_key and {"requin", "squale", "journée", "jour"} <= set(by_key)
    )
    assert by_key["requin"].sources == ["shark", "great white shark"]  # the translation of "shark" itself first
    assert by_key["chien"].sources == ["dog", "maltese dog"]


def test_german_nouns_are_capitalised() -> None:
    dictionary = {"goldfish": ["goldfisch"], "run": ["laufen"], "board": ["brett"], "red": ["rot"]}
    english = [word("goldfish", "imagenet"), word("run", noun=False), word("board"), word("red", noun=False)]
    forms = {"laufen": Counter({"laufen": 5, "Laufen": 0.001})}
    entries, _ = translate("de", english, dictionary, NO_EVIDENCE, forms, 100, 3)  # type: ignore[arg-type]
    assert [e.shown for e in entries] == ["Goldfisch", "laufen", "Brett", "rot"]


def test_english_words_class_names_first_plurals_folded() -> None:
    dictionaries = {
        f"l{i}": {w: ["x"] for w in ("dog", "dogs", "street", "front", "glasses", "glass")} for i in range(3)
    }
    counts = Counter({"dogs": 50, "dog": 40, "street": 30, "front": 90, "glasses": 25, "glass": 20, "qwzx": 99})
    words = english_words(counts, dictionaries, min_count=20, min_languages=2, nouns={"street": 0.9})
    captions = [w for w in words if w.origin == "captions"]
    assert [w.word for w in captions] == ["dog", "street", "glasses", "glass"]  # front: not a tag; qwzx: no dictionary
    assert words[0].origin == "imagenet" and words[0].word == "tench" and captions[1].noun and not captions[0].noun
    assert noun_share(["A dog runs.", "The dog and a cat", "dogs run"])["dog"] == 1.0
