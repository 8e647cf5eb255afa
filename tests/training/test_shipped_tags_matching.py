"""The shipped-tags measure's word matching: the issue's rate (a word of the class name among the tags) and the
second rate that also counts compound parts (hyphenated words, a compound's head)."""

from __future__ import annotations

from training.evaluation.shipped_tags import label_hit


def test_strict_rate_matches_whole_words_and_one_ending() -> None:
    assert label_hit("Goldfisch", ["Goldfisch", "Wasser"], "de")
    assert label_hit("chiens de traîneau", ["chien"], "fr")  # one inflection ending
    assert not label_hit("Lederschildkröte", ["Schildkröte"], "de")  # a compound's head is not the word
    assert not label_hit("requin-tigre", ["requin"], "fr")
    assert label_hit("大白鲨", ["白鲨"], "zh")  # Chinese: a tag of two characters inside the name


def test_compound_rate_counts_hyphen_parts_and_compound_heads() -> None:
    assert label_hit("Lederschildkröte", ["Schildkröte"], "de", compounds=True)
    assert label_hit("requin-tigre", ["requin"], "fr", compounds=True)
    assert label_hit("пауки-волки", ["пауки"], "ru", compounds=True)
    assert label_hit("뱀상어", ["상어"], "ko", compounds=True)
    # Not a head: too short to be told from a word's ending ("Hai"), or a word's beginning, or unrelated.
    assert not label_hit("Tigerhai", ["Hai"], "de", compounds=True)
    assert not label_hit("Lederschildkröte", ["Leder"], "de", compounds=True)
    assert not label_hit("Wolfshund", ["Katze"], "de", compounds=True)
