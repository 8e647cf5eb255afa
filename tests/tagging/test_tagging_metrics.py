"""The evaluation's matching rule and metrics on hand-made captions."""

from __future__ import annotations

import pytest

from training.evaluation.tag_metrics import Reference, content_recall, precision_at, related


def test_light_normalisation_merges_plural_and_gender_forms() -> None:
    for a, b in [("chiens", "chien"), ("hunde", "hund"), ("frauen", "frau"), ("cachorros", "cachorro")]:
        assert related(a, b) and related(b, a)
    assert not related("chien", "chier")  # two different endings on a common stem do not match
    assert not related("bus", "bu")  # too short to cut


def test_precision_counts_hits_among_the_first_n_and_divides_by_n() -> None:
    reference = Reference.from_captions(["Deux chiens courent sur la plage.", "Un chien noir"], "fr")
    assert precision_at(["chien", "plage", "voiture", "Noirs", "rue", "chiens"], reference, 5) == pytest.approx(3 / 5)
    assert precision_at(["chien"], reference, 5) == pytest.approx(1 / 5)
    assert precision_at([], reference, 5) == 0.0


def test_multi_word_tags_hit_only_when_every_word_occurs() -> None:
    reference = Reference.from_captions(["Ein großer Hund am Strand"], "de")
    assert reference.hit("großer hund")
    assert not reference.hit("großer bus")


def test_content_recall_ignores_stop_words() -> None:
    reference = Reference.from_captions(["Un homme et une femme dans la rue"], "fr")
    assert reference.content == {"homme", "femme", "rue"}
    assert content_recall(["hommes", "rue", "voiture"], reference) == pytest.approx(2 / 3)
    assert content_recall(["voiture"], Reference.from_captions([], "fr")) == 0.0
