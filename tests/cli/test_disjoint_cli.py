"""Disjoint collections through the CLI: ``collections split``, ``train --disjoint``, ``pseudopairs make``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_train_cli import invoke
from test_train_cli import toy as toy_data  # noqa: F401  (the fixture with the toy encoders)

from training.tower.pseudopairs import hubness, keep_mask, match

TINY = ["--batch-size", "8", "--hidden-dims", "32", "--dropouts", "0,0", "--lr", "0.01"]


@pytest.fixture
def toy(toy_data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """The toy data set, with the toy encoders also where the disjoint and pseudo-pair code looks them up."""
    return toy_data  # the toy encoders are patched into the one encoder factory by test_train_cli's fixture


def split(data: Path, out: Path, *parts: str) -> None:
    code, output = invoke("collections", "split", "--data", data, "--out", out, "--heldout", "0.25",
                          *[arg for p in parts for arg in ("--part", p)])  # fmt: skip
    assert code == 0, output


def said(output: str, message: str) -> bool:
    return message in " ".join(output.split())  # rich wraps long messages


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "captions.jsonl").read_text(encoding="utf-8").splitlines()]


def photos(folder: Path) -> set[str]:
    return {line for name in ("train", "heldout") for line in (folder / "splits" / f"{name}.txt").read_text().split()}


def test_split_writes_collections_that_share_no_photos(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "c"
    split(toy, out, "en=en", "de=de:synthetic", "fr@en=fr")
    en, de, fr = (out / name for name in ("en", "de", "fr"))
    assert photos(en) and photos(de) and not photos(en) & photos(de)  # disjoint halves
    assert photos(fr) == photos(en)  # @en: the same photos
    assert {r["lang"] for r in rows(en)} == {"en"} and {r["lang"] for r in rows(de)} == {"de"}
    assert {r["image"] for r in rows(en)} <= photos(en)
    image = next(iter(photos(en)))
    assert (en / "images" / image).is_symlink() and (en / "images" / image).resolve() == (toy / "images" / image)
    held = (en / "splits" / "heldout.txt").read_text().split()
    assert len(held) == round(0.25 * len(photos(en)))
    # the same seed gives the same groups
    split(toy, tmp_path / "again", "x=en", "y=de")
    assert photos(tmp_path / "again" / "x") == photos(en)


@pytest.mark.parametrize(
    ("part", "message"),
    [("nolang", "NAME=LANG"), ("a@zz=en", "not a part"), ("a=xx", "selects captions for 0")],
)
def test_split_errors_are_clear(toy: Path, tmp_path: Path, part: str, message: str) -> None:
    code, output = invoke("collections", "split", "--data", toy, "--out", tmp_path / "c", "--part", part)
    assert code == 2 and said(output, message), output


def test_disjoint_training_pseudopairs_and_fine_tuning(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "c"
    split(toy, out, "en=en", "de=de")
    code, output = invoke("train", "--data", toy, "--data", out / "de", "--out", tmp_path / "t", *TINY)
    assert code == 2 and said(output, "need --disjoint")
    tower = tmp_path / "tower"
    code, output = invoke("train", "--disjoint", "--data", out / "en", "--data", out / "de", "--out", tower,
                          "--epochs", "6", "--patience", "6", *TINY)  # fmt: skip
    assert code == 0, output
    config = json.loads((tower / "config.json").read_text())
    assert config["languages"] == ["de", "en"] and config["training"]["recipe"]["loss"] == "vse"
    assert config["training"]["disjoint"]["collections"] == [str(out / "en"), str(out / "de")]
    history = config["training"]["history"]
    assert all(epoch["c2c"] == 0 for epoch in history)  # no photo has two languages: image–caption only
    # A tower trained on disjoint halves still ranks: German dev queries find their photos.
    code, output = invoke("evaluate", "--data", toy, "--split", "dev", "--tower", tower, "--json", tmp_path / "r.json")
    assert code == 0, output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["languages"]["de"]["t2i"]["r10"] > 0.5  # chance is 10/15

    pseudo = tmp_path / "pseudo"
    code, output = invoke("pseudopairs", "make", "--model", tower, "--from", out / "en", "--to", out / "de",
                          "--out", pseudo, "--filter", "top25", "--with-originals")  # fmt: skip
    assert code == 0, output
    made = rows(pseudo)
    transferred = [r for r in made if r["source"] == "pseudopair"]
    assert transferred and {r["lang"] for r in transferred} == {"en"}
    assert {r["image"] for r in made} <= photos(out / "de")  # the target's photos, captioned from the source
    assert {r["lang"] for r in made} == {"de", "en"} and photos(pseudo) == photos(out / "de")  # --with-originals
    english = {r["text"] for r in rows(out / "en")}
    assert all(r["text"] in english for r in transferred)
    report = json.loads((pseudo / "pseudopairs.json").read_text())
    assert report["filter"] == "top25" and 0 < report["hubness_kept"]["share_used"] <= 1

    # Fine-tune on the three collections: the pseudo-pair one has photos in two languages → c2c steps happen.
    tuned = tmp_path / "tuned"
    code, output = invoke("train", "--disjoint", "--data", out / "en", "--data", out / "de", "--data", pseudo,
                          "--init-from", tower, "--out", tuned, "--epochs", "2", "--c2c-prob", "1", *TINY)  # fmt: skip
    assert code == 0, output
    history = json.loads((tuned / "config.json").read_text())["training"]["history"]
    assert sum(epoch["c2c"] for epoch in history) > 0


def test_pseudopair_errors_are_clear(toy: Path, tmp_path: Path) -> None:
    code, output = invoke("pseudopairs", "make", "--model", tmp_path / "none", "--from", toy, "--to", toy,
                          "--out", tmp_path / "p")  # fmt: skip
    assert code == 2 and said(output, "does not exist")
    code, output = invoke("pseudopairs", "make", "--model", toy, "--from", toy, "--to", toy, "--out", tmp_path / "p",
                          "--filter", "half")  # fmt: skip
    assert code == 2 and said(output, "unknown --filter")


def test_matching_filters_and_hubness() -> None:
    queries = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    candidates = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    best, score = match(queries, candidates, chunk=2)
    assert best.tolist() == [1, 0, 0] and np.allclose(score, [1.0, 1.0, 0.8])
    scores = np.arange(8, dtype=np.float32)
    assert keep_mask(scores, "top25").sum() == 2 and keep_mask(scores, "drop-bottom25").sum() == 6
    report = hubness([0, 0, 0, 1], n_source=4)
    assert report["share_used"] == 0.5 and report["top150_share_of_pairs"] == 1.0 and report["most_used"] == 3
