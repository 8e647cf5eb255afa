"""Eq. 5 scores and the one-target-per-source assignment, on cases small enough to compute by hand."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.tagging.ranking import assign_tags, contextual_tags, score_matrix


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


# Targets: three axis-aligned tags; the image sits between target 0 and target 1.
TARGETS = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)])
IMAGE = unit(1, 1, 0)  # cos to targets: 0.7071, 0.7071, 0


def test_score_matrix_matches_hand_computation() -> None:
    sources = np.stack([unit(0, 0, 1), unit(0, 1, 0)])
    scores = score_matrix(IMAGE, sources, TARGETS, w1=0.65, w2=0.35)
    c = 0.65 * np.sqrt(0.5)
    expected = np.array([[c, c, 0.35], [c, c + 0.35, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(scores, expected, atol=1e-6)


def test_image_context_beats_the_closest_word() -> None:
    # The source tag is closest to target 2, but the image points at targets 0/1: with the paper's weights
    # the image wins (0.4596 > 0.35), with text only (W1 = 0) the word translation wins.
    source = unit(0.3, 0, 1)[None, :]
    contextual = contextual_tags(IMAGE, source, TARGETS, 0.65, 0.35)
    text_only = contextual_tags(IMAGE, source, TARGETS, 0.0, 1.0)
    assert contextual[0].target == 0  # cos(S, T0) = 0.287 > cos(S, T1) = 0 breaks the image tie
    assert text_only[0].target == 2
    assert contextual[0].score == pytest.approx(0.65 * np.sqrt(0.5) + 0.35 * 0.3 / np.sqrt(1.09), abs=1e-6)


def test_taken_targets_pass_to_the_next_best() -> None:
    scores = np.array([[0.9, 0.8, 0.1], [0.95, 0.5, 0.6], [0.9, 0.85, 0.1]], dtype=np.float32)
    ranked = assign_tags(scores)
    assert [(r.source, r.target) for r in ranked] == [(0, 0), (1, 2), (2, 1)]
    assert [r.score for r in ranked] == pytest.approx([0.9, 0.6, 0.85])


def test_more_sources_than_targets_stops_when_the_vocabulary_is_used_up() -> None:
    ranked = assign_tags(np.array([[0.2, 0.1], [0.3, 0.4], [0.9, 0.9]], dtype=np.float32))
    assert [(r.source, r.target) for r in ranked] == [(0, 0), (1, 1)]


def test_ties_resolve_to_the_lower_index() -> None:
    ranked = assign_tags(np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], dtype=np.float32))
    assert [r.target for r in ranked] == [0, 1]


def test_empty_inputs_give_no_tags() -> None:
    assert contextual_tags(IMAGE, np.zeros((0, 3), np.float32), TARGETS) == []
    assert contextual_tags(IMAGE, TARGETS, np.zeros((0, 3), np.float32)) == []


def test_large_random_case_agrees_with_a_brute_force_loop() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(20, 50)).astype(np.float32)
    taken: set[int] = set()
    expected = []
    for row in scores:
        choice = next(int(t) for t in np.argsort(-row) if int(t) not in taken)
        taken.add(choice)
        expected.append(choice)
    assert [r.target for r in assign_tags(scores)] == expected


def test_near_synonyms_are_left_out_of_one_answer() -> None:
    # Targets 0 and 1 are near-synonyms (cos 0.995); both sources prefer them, the second source would take
    # target 1 once target 0 is taken, unless the vector rule (or the same English sense) says they are one.
    targets = np.stack([unit(1, 0, 0), unit(1, 0.1, 0), unit(0, 1, 0), unit(0, 0, 1)])
    scores = np.array([[0.9, 0.85, 0.2, 0.1], [0.8, 0.82, 0.5, 0.1]], dtype=np.float32)
    assert [r.target for r in assign_tags(scores)] == [0, 1]
    assert [r.target for r in assign_tags(scores, targets, max_similarity=0.9)] == [0, 2]
    assert [r.target for r in assign_tags(scores, senses=["dog", "dog", "cat", "sea"])] == [0, 2]
    assert [r.target for r in assign_tags(scores, senses=["dog", "hound", "cat", "sea"])] == [0, 1]


def test_answers_stop_when_every_target_is_taken_or_too_close() -> None:
    targets = np.stack([unit(1, 0, 0), unit(1, 0.05, 0)])
    scores = np.array([[0.9, 0.8], [0.9, 0.8], [0.9, 0.8]], dtype=np.float32)
    assert [r.target for r in assign_tags(scores, targets, max_similarity=0.9)] == [0]


def test_by_score_lists_the_best_first() -> None:
    from indexer.tagging.ranking import RankedTag, by_score

    ranked = [RankedTag(0, 5, 0.3), RankedTag(1, 2, 0.7), RankedTag(2, 1, 0.3)]
    assert [(r.source, r.score) for r in by_score(ranked)] == [(1, 0.7), (0, 0.3), (2, 0.3)]
