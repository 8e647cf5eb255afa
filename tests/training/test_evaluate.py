"""Recall metrics on hand-made score matrices, caption→caption R@1, the label-bridge baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from training.data.prepared import PreparedSplit, prepare_split
from training.data.synthetic import ToyImageEncoder, ToyTextEncoder, make_dataset
from training.evaluation.evaluate import evaluate_label_bridge, evaluate_vectors, first_caption_rows
from training.evaluation.retrieval_metrics import c2c_recall_at_1, i2t_ranks, language_recalls, t2i_ranks

EYE3 = np.eye(3, dtype=np.float32)


def test_t2i_ranks_count_better_images() -> None:
    queries = np.array([[1, 0, 0], [0.1, 0.9, 0.5], [0, 1, 0]], dtype=np.float32)
    # query 0 → image 0 (best); query 1 → image 2 (.5 < .9): rank 1; query 2 → image 0 (0): image 1 beats it, image 2 ties.

    assert t2i_ranks(queries, np.array([0, 2, 0]), EYE3).tolist() == [0, 1, 2]


def test_i2t_hit_is_any_caption_of_the_image() -> None:
    texts = np.array([[0.2, 1, 0], [1, 0, 0], [0, 0.3, 1], [0, 1, 0]], dtype=np.float32)
    text_image = np.array([0, 0, 2, 2])  # image 1 has no caption in this language
    captioned, ranks = i2t_ranks(EYE3, texts, text_image)
    # image 0: its caption 1 scores 1.0, the best of all → rank 0; image 2: caption 2 scores 1.0 → rank 0.
    assert captioned.tolist() == [0, 2] and ranks.tolist() == [0, 0]
    block = language_recalls(EYE3, texts, text_image)
    assert block["queries"] == 4
    # t2i: caption 0 (image 0) scores image 1 best → rank 1; caption 3 (image 2) scores image 1 → rank 1.
    assert block["t2i"] == {"r1": 0.5, "r5": 1.0, "r10": 1.0}
    assert block["i2t"] == {"r1": 1.0, "r5": 1.0, "r10": 1.0}
    assert block["mR"] == pytest.approx((0.5 + 1 + 1 + 3) / 6)


def test_ties_count_against_the_query() -> None:
    same = np.ones((4, 3), dtype=np.float32)  # a collapsed model: every score equal
    assert t2i_ranks(same, np.array([0, 1, 2, 0]), EYE3).tolist() == [2, 2, 2, 2]
    assert i2t_ranks(EYE3, same, np.array([0, 1, 2, 0]))[1].tolist() == [2, 3, 3]


def test_c2c_recall_at_1() -> None:
    source = np.array([[1, 0], [0, 1], [1, 0]], dtype=np.float32)
    target = np.array([[1, 0], [0, 1], [0.9, 0.1]], dtype=np.float32)
    assert c2c_recall_at_1(source, target) == pytest.approx(2 / 3)


def split_of(images: int, langs: list[str], caption_image: list[int]) -> PreparedSplit:
    return PreparedSplit(
        images=[f"{i}.jpg" for i in range(images)],
        image_features=np.zeros((images, 3), dtype=np.float32),
        caption_image=np.array(caption_image),
        caption_lang=np.array(langs),
        caption_text=[f"t{i}" for i in range(len(langs))],
        text_embeddings=np.zeros((len(langs), 3), dtype=np.float32),
    )


def test_report_schema_and_average() -> None:
    split = split_of(3, ["en", "en", "de", "de", "en"], [0, 1, 0, 2, 2])
    texts = EYE3[[0, 1, 0, 1, 2]]  # de caption of image 2 points at image 1: a t2i miss at R@1
    evaluation = evaluate_vectors(EYE3, texts, split)
    report = evaluation.report
    assert set(report) == {"pool_images", "languages", "A"} and report["pool_images"] == 3
    assert set(report["languages"]) == {"de", "en"}
    assert set(report["languages"]["en"]) == {"t2i", "i2t", "mR", "queries"}
    assert report["languages"]["en"]["mR"] == 1.0 and report["languages"]["de"]["t2i"]["r1"] == 0.5
    assert report["A"] == pytest.approx((1.0 + report["languages"]["de"]["mR"]) / 2)
    # caption→caption over images 0 and 2: en of image 2 scores 0 with both de captions (a tie: a miss);
    # de of image 2 scores 0 with both en captions (a miss); image 0 is found both ways.
    assert evaluation.c2c == {"de→en": pytest.approx(0.5), "en→de": pytest.approx(0.5)}
    assert first_caption_rows(split, ["en"]).tolist() == [0, 1, 4]
    assert evaluation.by_source == {}  # no sources known


def test_recalls_by_source_split_each_language() -> None:
    split = split_of(3, ["en", "en", "de", "de", "en"], [0, 1, 0, 2, 2])
    split.caption_source = np.array(["task1", "task2", "task1", "task2", "task2"])
    texts = EYE3[[0, 1, 0, 1, 2]]  # the de task-2 caption of image 2 points at image 1
    by_source = evaluate_vectors(EYE3, texts, split).by_source
    assert by_source["de"]["task1"] == {"t2i": {"r1": 1.0, "r5": 1.0, "r10": 1.0}, "queries": 1}
    assert by_source["de"]["task2"]["t2i"]["r1"] == 0.0 and by_source["en"]["task2"]["queries"] == 2


def test_label_bridge_beats_chance_on_toy_data(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data")
    image, text = ToyImageEncoder(), ToyTextEncoder()
    split = prepare_split(tmp_path / "data", "dev", None, image, text, tmp_path / "cache")
    evaluation = evaluate_label_bridge(image, text, split, tmp_path / "cache")
    # 15 images; chance R@5 = 1/3. The toy head names both colours, so the bridge is nearly perfect.
    for block in evaluation.report["languages"].values():
        assert block["t2i"]["r5"] > 0.6
