"""Training on a tiny synthetic data set with toy encoders: learns, saves a loadable tower + model card."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import indexer.encoders.factory as factory_module
from indexer.settings import Settings
from indexer.tower import TextTower
from training.data.dataset import DatasetError
from training.data.prepared import prepare_split
from training.data.sampler import DistinctImageBatches
from training.data.synthetic import ToyImageEncoder, ToyTextEncoder, make_dataset
from training.evaluation.evaluate import evaluate_tower
from training.tower.train import TrainConfig, parse_langs, train


@pytest.fixture(autouse=True)
def _toy_encoders(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(1)
    monkeypatch.setattr(factory_module, "create_image_encoder", lambda spec, **_: ToyImageEncoder())
    monkeypatch.setattr(factory_module, "create_text_encoder", lambda spec, *_, **__: ToyTextEncoder())


def config(tmp_path: Path, **overrides: object) -> TrainConfig:
    data = tmp_path / "data"
    if not data.exists():
        make_dataset(data)
    base: dict[str, object] = {
        "data": data,
        "out": tmp_path / "tower",
        "cache_dir": tmp_path / "cache",
        "settings": Settings(models_dir=tmp_path / "models"),
        "langs": ["en"],
        "hidden_dims": [32],
        "dropouts": [0.0, 0.0],
        "batch_size": 8,
        "epochs": 15,
        "patience": 15,
        "command": "polyglot train --data data",
    }
    return TrainConfig(**{**base, **overrides})  # type: ignore[arg-type]


def test_batches_hold_distinct_images_and_cover_the_epoch() -> None:
    caption_image = np.array([0, 0, 0, 1, 1, 2, 3, 3, 4])
    caption_lang = np.array(["en", "en", "de", "en", "fr", "en", "en", "en", "de"])
    batches = DistinctImageBatches(caption_image, caption_lang, batch_size=2, seed=0)
    seen = []
    for rows, images, partners in batches:
        assert partners is None
        assert len(set(images.tolist())) == len(images)
        assert (caption_image[rows] == images).all()
        seen += images.tolist()
    # Five images, batches of two: the last batch of a single image is dropped, nothing is duplicated.
    assert len(seen) == len(set(seen)) == 4 and set(seen) <= {0, 1, 2, 3, 4}


def test_sampler_balances_languages() -> None:
    # Image 0 has 9 English captions and 1 German: German must come up about half the time.
    caption_image = np.array([0] * 10 + [1])
    caption_lang = np.array(["en"] * 9 + ["de", "en"])
    batches = DistinctImageBatches(caption_image, caption_lang, batch_size=2, seed=0)
    picks = [caption_lang[rows[images == 0][0]] for _ in range(400) for rows, images, _ in batches]
    assert 0.4 < picks.count("de") / len(picks) < 0.6


def test_partners_are_captions_of_the_same_image_in_another_language() -> None:
    caption_image = np.array([0, 0, 0, 1, 1, 2])
    caption_lang = np.array(["en", "en", "de", "en", "fr", "en"])
    batches = DistinctImageBatches(caption_image, caption_lang, batch_size=3, seed=0, partners=True)
    for _ in range(50):
        for rows, images, partners in batches:
            assert partners is not None
            for row, image, partner in zip(rows, images, partners, strict=True):
                if image == 2:  # a single language: no partner
                    assert partner == -1
                else:
                    assert caption_image[partner] == image and caption_lang[partner] != caption_lang[row]


@pytest.mark.parametrize(("loss", "options"), [("m3l", {"bounded": True}), ("vse", {}), ("patr", {}), ("infonce", {})])
def test_training_learns_and_transfers_zero_shot(tmp_path: Path, loss: str, options: dict[str, object]) -> None:
    result = train(config(tmp_path, loss=loss, loss_options=options))
    assert result.dev is not None
    languages = result.dev.report["languages"]
    assert set(languages) == {"en", "de", "fr"} and result.dev.report["pool_images"] == 15
    # Chance R@1 is 1/15; a trained tower finds most images, in English and zero-shot in German and French.
    for lang in ("en", "de", "fr"):
        assert languages[lang]["t2i"]["r5"] > 0.6, (loss, lang, languages[lang])
    assert languages["en"]["t2i"]["r1"] > 0.4
    assert result.history[0]["dev_rsum"] <= max(h["dev_rsum"] for h in result.history)


def test_saved_tower_reloads_with_the_same_metrics_and_a_model_card(tmp_path: Path) -> None:
    result = train(config(tmp_path, epochs=4))
    folder = tmp_path / "tower"
    saved = json.loads((folder / "config.json").read_text())
    assert saved["image_space"]["kind"] == "center-l2" and "mean_f32_base64" in saved["image_space"]
    assert saved["languages"] == ["en"] and saved["training"]["best_epoch"] == result.best_epoch
    card = (folder / "README.md").read_text()
    assert "toy-text" in card and "polyglot train --data data" in card and "| de |" in card
    tower = TextTower.from_pretrained(folder)
    dev = prepare_split(tmp_path / "data", "dev", None, ToyImageEncoder(), ToyTextEncoder(), tmp_path / "cache")
    assert result.dev is not None
    assert evaluate_tower(tower, dev).report == result.dev.report
    # The centring mean is the TRAIN split's mean feature.
    train_split = prepare_split(
        tmp_path / "data", "train", ["en"], ToyImageEncoder(), ToyTextEncoder(), tmp_path / "cache"
    )
    np.testing.assert_allclose(tower.image_space.mean, train_split.image_features.mean(axis=0), rtol=1e-5)


def test_c2c_term_trains_and_ties_the_languages(tmp_path: Path) -> None:
    plain = train(config(tmp_path, langs=["en", "de"], loss="infonce", out=tmp_path / "plain"))
    tied = train(config(tmp_path, langs=["en", "de"], loss="infonce", c2c_weight=1.0, out=tmp_path / "tied"))
    assert plain.dev is not None and tied.dev is not None
    assert tied.dev.report["languages"]["de"]["t2i"]["r5"] > 0.6
    assert tied.dev.c2c["de→en"] >= plain.dev.c2c["de→en"] - 0.1  # the c2c term does not hurt alignment
    recipe = json.loads((tmp_path / "tied" / "config.json").read_text())["training"]["recipe"]
    assert recipe["c2c_weight"] == 1.0


def test_a_tower_trained_through_a_bridge_ships_with_it(tmp_path: Path) -> None:
    from training.bridge import LanguageBridge

    dim = ToyTextEncoder().dim
    half = dim // 2
    # A bridge that rewrites the first half of German rows from the second: training must see it applied.
    weight = np.zeros((dim - half + 1, half), dtype=np.float32)
    weight[: min(half, dim - half), : min(half, dim - half)] = np.eye(min(half, dim - half))
    LanguageBridge(weight, (half, dim), (0, half), frozenset({"de"}), ToyTextEncoder().name).save_pretrained(
        tmp_path / "bridge"
    )
    result = train(config(tmp_path, langs=["en", "de"], bridge_from=tmp_path / "bridge", epochs=2))
    shipped = LanguageBridge.from_pretrained(tmp_path / "tower")
    assert shipped is not None and shipped.languages == {"de"}
    assert result.dev is not None and "de" in result.dev.report["languages"]
    # The dev numbers of the run are those of the tower used as the service uses it: with its bridge.
    dev = prepare_split(tmp_path / "data", "dev", None, ToyImageEncoder(), ToyTextEncoder(), tmp_path / "cache")
    assert evaluate_tower(result.tower, dev, bridge=shipped).report == result.dev.report
    foreign = LanguageBridge(shipped.weight, shipped.source, shipped.target, shipped.languages, "other-encoder")
    with pytest.raises(ValueError, match="bridge is for text encoder 'other-encoder'"):
        evaluate_tower(result.tower, dev, bridge=foreign)
    # Retraining into the same folder without a bridge removes the stale one.
    train(config(tmp_path, langs=["en"], epochs=1))
    assert LanguageBridge.from_pretrained(tmp_path / "tower") is None
    with pytest.raises(FileNotFoundError, match="no language bridge"):
        train(config(tmp_path, bridge_from=tmp_path / "data", epochs=1))


def test_image_space_from_reuses_the_mean(tmp_path: Path) -> None:
    train(config(tmp_path, epochs=1))
    second = train(config(tmp_path, epochs=1, out=tmp_path / "second", image_space_from=tmp_path / "tower", seed=3))
    first = TextTower.from_pretrained(tmp_path / "tower")
    assert second.tower.image_space.fingerprint == first.image_space.fingerprint
    with pytest.raises(ValueError, match="has space 'center-l2', not 'l2'"):
        train(config(tmp_path, epochs=1, out=tmp_path / "third", space="l2", image_space_from=tmp_path / "tower"))


def test_raw_space_ships_l2_with_final_relu(tmp_path: Path) -> None:
    result = train(config(tmp_path, epochs=1, space="raw"))
    assert result.tower.config["image_space"] == {"kind": "l2"} and result.tower.config["final_relu"] is True


def test_training_is_reproducible(tmp_path: Path) -> None:
    first = train(config(tmp_path, epochs=2, out=tmp_path / "a"))
    second = train(config(tmp_path, epochs=2, out=tmp_path / "b"))
    for (name, a), b in zip(first.tower.state_dict().items(), second.tower.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="language\\(s\\) cs have no captions in split 'train'"):
        train(config(tmp_path, langs=["en", "cs"]))
    with pytest.raises(DatasetError, match="no split 'test'"):
        train(config(tmp_path, split="test"))
    with pytest.raises(DatasetError, match=r"captions\.jsonl is missing"):
        train(config(tmp_path, data=tmp_path))
    with pytest.raises(ValueError, match="at least one language"):
        parse_langs(" , ")
    assert parse_langs("en, DE,en") == ["en", "de"]


def test_captions_per_lang_keeps_the_first_captions(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data")
    full = prepare_split(tmp_path / "data", "dev", ["en"], ToyImageEncoder(), ToyTextEncoder(), tmp_path / "cache")
    first = prepare_split(
        tmp_path / "data", "dev", ["en"], ToyImageEncoder(), ToyTextEncoder(), tmp_path / "cache", captions_per_lang=1
    )
    assert len(full.caption_text) == 30 and len(first.caption_text) == 15
    assert first.caption_text == [text for text in full.caption_text if text.startswith("a ")]


def test_max_images_keeps_a_fixed_subset(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data")
    args = (tmp_path / "data", "train", None, ToyImageEncoder(), ToyTextEncoder(), tmp_path / "cache")
    first = prepare_split(*args, max_images=7)
    again = prepare_split(*args, max_images=7)
    assert len(first.images) == 7 and first.images == again.images
    assert set(first.caption_image.tolist()) == set(range(7))


def test_concept_term_puts_class_names_on_their_prototypes(tmp_path: Path) -> None:
    from training.losses.concept import class_prototypes
    from training.tower.concept_set import TOWER_CONCEPT_TEMPLATES, ConceptOptions

    def accuracy(folder: Path) -> float:
        tower = TextTower.from_pretrained(folder)
        image, text = ToyImageEncoder(), ToyTextEncoder()
        image.load()
        text.load()
        vectors = tower.embed(text.predict(image.class_names))
        hits = np.argmax(vectors @ class_prototypes(image).T, axis=1) == np.arange(len(image.class_names))
        return float(hits.mean())

    train(config(tmp_path, loss="infonce", out=tmp_path / "plain"))
    concepts = ConceptOptions(weight=2.0, per_step=8)
    train(config(tmp_path, loss="infonce", out=tmp_path / "concepts", concepts=concepts))
    summary = json.loads((tmp_path / "concepts" / "config.json").read_text())["training"]["concepts"]
    assert summary["templates"] == list(TOWER_CONCEPT_TEMPLATES) and summary["weight"] == 2.0
    assert summary["texts"] == len(TOWER_CONCEPT_TEMPLATES) * len(ToyImageEncoder().class_names)
    assert accuracy(tmp_path / "concepts") == 1.0
    assert accuracy(tmp_path / "concepts") > accuracy(tmp_path / "plain")
