"""Distillation on text-only corpora: the corpus reader, teacher links, the loss by hand, and a training run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import indexer.encoders.factory as factory_module
from indexer.caption_records import Caption
from indexer.settings import Settings
from training.data.synthetic import WORDS, ToyImageEncoder, ToyTextEncoder, make_dataset
from training.data.text_corpus import distill_pairs, read_corpus
from training.losses.distill import DistillLoss, distill_loss
from training.tower.distill import DistillOptions, segment_mean
from training.tower.train import TrainConfig, train


def rows(*items: tuple[str, str, str, str]) -> list[Caption]:
    return [Caption(lang=lang, text=text, image=image, source=source) for image, lang, text, source in items]


def test_translations_learn_from_their_original_same_photo_captions_from_all_english() -> None:
    captions = rows(
        ("1.jpg", "en", "a dog", "multi30k-task1"),
        ("1.jpg", "de", "ein Hund", "multi30k-task1"),
        ("1.jpg", "en", "dog running", "multi30k-task2"),
        ("1.jpg", "pt", "um cachorro", "framed-multi30k"),
        ("2.jpg", "de", "eine Katze", "multi30k-task1"),  # no English caption of photo 2: no teacher
        ("3.jpg", "en", "a bird", "multi30k-task1"),
        ("3.jpg", "es", "un pájaro", "multi30k-ext-mt"),
    )
    pairs = distill_pairs(captions)
    texts = np.array(pairs.texts)
    students = texts[pairs.student_rows].tolist()
    assert students == ["ein Hund", "um cachorro", "un pájaro"]
    teachers = [
        texts[pairs.teacher_rows[a:b]].tolist()
        for a, b in zip(pairs.teacher_start[:-1], pairs.teacher_start[1:], strict=True)
    ]
    assert teachers == [["a dog"], ["a dog", "dog running"], ["a bird"]]
    photo = distill_pairs(captions, target="photo")
    assert photo.teacher_start.tolist() == [0, 2, 4, 5]  # the German translation now learns from both English
    assert distill_pairs(captions, student_langs=["pt"]).student_rows.size == 1
    with pytest.raises(ValueError, match="no non-English"):
        distill_pairs(rows(("1.jpg", "en", "a dog", "multi30k-task1")))
    with pytest.raises(ValueError, match="target"):
        distill_pairs(captions, target="image")


def test_read_corpus_filters_and_caps(tmp_path: Path) -> None:
    path = tmp_path / "captions.jsonl"
    items = [
        {"image": "1.jpg", "lang": "en", "text": "a", "source": "multi30k-task1"},
        *({"image": "1.jpg", "lang": "de", "text": f"d{k}", "source": "multi30k-task2"} for k in range(4)),
        {"image": "1.jpg", "lang": "fr", "text": "f", "source": "multi30k-task1"},
        {"image": "9.jpg", "lang": "de", "text": "x", "source": "multi30k-task2"},
    ]
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    kept = read_corpus([tmp_path], langs=["de"], per_group=2, exclude_images=["9.jpg"])
    assert [c.text for c in kept] == ["a", "d0", "d1"]  # English always kept: it teaches
    assert [c.text for c in read_corpus([path], sources=["multi30k-task1"])] == ["a", "f"]
    with pytest.raises(FileNotFoundError):
        read_corpus([tmp_path / "missing"])


def test_distill_loss_by_hand() -> None:
    student = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    teacher = torch.tensor([[0.0, 3.0], [0.0, 1.0]])
    # Unit vectors: ‖(1,0) − (0,1)‖² = 2 and ‖(0,1) − (0,1)‖² = 0 → mean 1.
    assert distill_loss(student, teacher, "mse").item() == pytest.approx(1.0)
    # InfoNCE at τ = 1: row 0 scores (0, 0) → −log ½; row 1 scores (1, 1) → −log ½.
    assert DistillLoss("infonce", temperature=1.0)(student, teacher).item() == pytest.approx(np.log(2))
    with pytest.raises(ValueError):
        DistillLoss("kl")


def test_segment_mean() -> None:
    values = torch.tensor([[1.0], [3.0], [10.0]])
    assert segment_mean(values, np.array([0, 0, 1]), 2).tolist() == [[2.0], [10.0]]


def _corpus(path: Path) -> Path:
    """Text-only 'photos' of the toy colours: an English caption and its German and French translations."""
    lines = []
    for k, (a, b) in enumerate([(0, 1), (2, 3), (4, 5), (1, 4), (0, 3)] * 4):
        for lang, template in (("en", "{} next to {}"), ("de", "ein {} und {} Bild"), ("fr", "une image {} et {}")):
            text = template.format(WORDS[lang][a], WORDS[lang][b])
            lines.append({"image": f"t{k}.jpg", "lang": lang, "text": text, "source": "multi30k-task1"})
    path.mkdir(parents=True, exist_ok=True)
    (path / "captions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("teacher", ["self", "frozen"])
def test_training_with_a_text_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, teacher: str) -> None:
    torch.set_num_threads(1)
    monkeypatch.setattr(factory_module, "create_image_encoder", lambda spec, **_: ToyImageEncoder())
    monkeypatch.setattr(factory_module, "create_text_encoder", lambda spec, *_, **__: ToyTextEncoder())
    data = make_dataset(tmp_path / "data")
    base = {
        "data": data, "cache_dir": tmp_path / "cache", "settings": Settings(models_dir=tmp_path / "m"), "langs": ["en"],
        "hidden_dims": [32], "dropouts": [0.0, 0.0], "batch_size": 8, "epochs": 4, "patience": 4,
    }  # fmt: skip
    first = train(TrainConfig(out=tmp_path / "plain", **base))  # type: ignore[arg-type]
    source = "self" if teacher == "self" else str(tmp_path / "plain")
    options = DistillOptions(corpus=[_corpus(tmp_path / "corpus")], teacher=source, batch_size=8, per_group=1)
    result = train(TrainConfig(out=tmp_path / "distilled", distill=options, **base))  # type: ignore[arg-type]
    card = json.loads((tmp_path / "distilled" / "config.json").read_text())["training"]
    assert card["distilled"]["students"] == {"de/multi30k-task1": 20, "fr/multi30k-task1": 20}
    assert card["recipe"]["distill"]["corpus"] == [str(tmp_path / "corpus")]
    assert result.dev is not None and first.dev is not None
    assert result.dev.report["languages"]["de"]["t2i"]["r10"] > 0.3  # it still learns the images


def test_a_teacher_on_another_encoder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(factory_module, "create_image_encoder", lambda spec, **_: ToyImageEncoder())
    monkeypatch.setattr(factory_module, "create_text_encoder", lambda spec, *_, **__: ToyTextEncoder())
    data = make_dataset(tmp_path / "data")
    base = {
        "data": data,
        "cache_dir": tmp_path / "c",
        "settings": Settings(models_dir=tmp_path / "m"),
        "langs": ["en"],
        "hidden_dims": [8],
        "dropouts": [0.0, 0.0],
        "epochs": 1,
        "batch_size": 8,
    }
    train(TrainConfig(out=tmp_path / "t", **base))  # type: ignore[arg-type]
    config = json.loads((tmp_path / "t" / "config.json").read_text())
    config["text_encoder"] = "other"
    (tmp_path / "t" / "config.json").write_text(json.dumps(config))
    options = DistillOptions(corpus=[_corpus(tmp_path / "corpus")], teacher=str(tmp_path / "t"))
    with pytest.raises(ValueError, match="same text encoder"):
        train(TrainConfig(out=tmp_path / "d", distill=options, **base))  # type: ignore[arg-type]
