"""The one caption record and JSONL reader (indexer.caption_records), as the caption index, training and the
tag-vocabulary builder use it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer.caption_records import Caption, CaptionFileError, iter_captions, read_captions
from indexer.tagging.vocabulary import VocabularyError, read_texts
from training.data.dataset import DatasetError, load_dataset


def write_lines(path: Path, *lines: str | bytes) -> Path:
    path.write_bytes(b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines) + b"\n")
    return path


def test_rows_are_normalised_and_optional_fields_default_to_empty(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "c.jsonl",
        json.dumps({"image": 12, "lang": " DE ", "text": " Ein Hund. ", "source": "s"}),
        "",
        json.dumps({"lang": "pt-BR", "text": "Um cão", "image": None}),
    )
    assert read_captions(path) == [Caption("de", "Ein Hund.", "12", "s"), Caption("pt-br", "Um cão")]
    assert read_captions(path, ["PT-br"]) == [Caption("pt-br", "Um cão")]


def test_the_reader_streams_and_names_the_bad_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", '{"lang": "en", "text": "first"}', "", b'{"lang": "en", "text": "\xff"}')
    rows = iter_captions(path)
    assert next(rows) == Caption("en", "first")  # yielded before the rest of the file is read
    with pytest.raises(CaptionFileError, match=r"c\.jsonl:3: not UTF-8"):
        next(rows)
    with pytest.raises(CaptionFileError, match=r"c\.jsonl:1: each line needs an 'image'"):
        read_captions(path, need_image=True)


def test_training_reads_the_same_format_and_keeps_its_own_error_type(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "splits").mkdir(parents=True)
    (root / "splits" / "dev.txt").write_text("1.jpg\n2.jpg\n")
    rows = [
        {"image": "1.jpg", "lang": "en", "text": "a dog", "source": "task1"},
        {"image": "3.jpg", "lang": "en", "text": "not in the split"},
        {"image": "2.jpg", "lang": "fr", "text": "un chat"},
    ]
    write_lines(root / "captions.jsonl", *(json.dumps(r) for r in rows))
    dataset = load_dataset(root, "dev")
    assert dataset.captions == [Caption("en", "a dog", "1.jpg", "task1"), Caption("fr", "un chat", "2.jpg")]
    assert load_dataset(root, "dev", ["fr"]).captions == [Caption("fr", "un chat", "2.jpg")]
    write_lines(root / "captions.jsonl", json.dumps(rows[0]), '{"lang": "en", "text": "no image"}')
    with pytest.raises(DatasetError, match=r"captions\.jsonl:2: each line needs an 'image'"):
        load_dataset(root, "dev")


def test_vocabulary_texts_come_from_the_same_reader(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", '{"lang": "FR", "text": " Un chien "}', '{"lang": "fr", "text": " "}')
    assert list(read_texts(path, "fr")) == ["Un chien"]
    write_lines(path, '{"lang": "fr", "text": "ok"}', '{"lang": "french", "text": "x"}')
    with pytest.raises(VocabularyError, match=r"c\.jsonl:2: 'french' is not a language code"):
        list(read_texts(path, "fr"))
    with pytest.raises(VocabularyError, match="cannot read"):
        list(read_texts(tmp_path / "missing.txt", "fr"))
