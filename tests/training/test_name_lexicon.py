"""Wide-dev recalls split by whether each class name is a name of its own concept in the concept lexicon."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from concept_fixtures import write_lexicon
from typer.testing import CliRunner

from app.cli import cli
from training.data.prepared import PreparedSplit
from training.evaluation.name_lexicon import name_lexicon_report


def test_names_split_by_lexicon_with_their_own_recalls(tmp_path: Path) -> None:
    lexicon = write_lexicon(tmp_path / "lexicon")
    samples = tmp_path / "samples"
    samples.mkdir()
    photos = [("n02084071_dog.JPEG", "n02084071", 0), ("n02121808_cat.JPEG", "n02121808", 1)]
    (samples / "images.jsonl").write_text(
        "".join(json.dumps({"image": i, "wnid": w, "class_index": c}) + "\n" for i, w, c in photos)
    )
    texts = ["Dog", "house cat", "Chien", "chat", "Chat  Domestique"]
    split = PreparedSplit(
        images=[p[0] for p in photos],
        image_features=np.zeros((2, 4), dtype=np.float32),
        caption_image=np.array([0, 1, 0, 1, 1]),
        caption_lang=np.array(["en", "en", "fr", "fr", "fr"]),
        caption_text=texts,
        text_embeddings=np.zeros((5, 4), dtype=np.float32),
    )
    ranks = np.array([0, 3, 12, 0, 4])  # own image's rank per caption
    report = name_lexicon_report(split, ranks, samples, lexicon)
    en, fr = report["languages"]["en"], report["languages"]["fr"]
    # "Dog" and "house cat" are English lemmas of their concepts (case aside)
    assert en["in_lexicon"] == {"r1": 0.5, "r5": 1.0, "r10": 1.0, "queries": 2}
    assert en["not_in_lexicon"] == {"r1": None, "r5": None, "r10": None, "queries": 0}
    # "Chien" and "Chat  Domestique" are French names of their own concept; "chat" is not one in this lexicon
    assert fr["in_lexicon"]["queries"] == 2 and fr["in_lexicon"]["r10"] == 0.5 and fr["in_lexicon"]["r5"] == 0.5
    assert fr["not_in_lexicon"] == {"r1": 1.0, "r5": 1.0, "r10": 1.0, "queries": 1}
    assert fr["share_in_lexicon"] == round(2 / 3, 4)
    assert report["lexicon_digest"] == hashlib.sha256((lexicon / "manifest.json").read_bytes()).hexdigest()[:16]


def test_name_lexicon_needs_the_wide_dev_set(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["evaluate", "--data", str(tmp_path), "--name-lexicon"])
    assert result.exit_code != 0
    assert "--imagenet-labels" in result.output
