"""The language bridge: the least-squares map, which rows it touches, storage, fitting from parallel captions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from api_fixtures import FakeTextEncoder, fake_text_embedder

from indexer.tower import TextEmbedder
from training.bridge import LanguageBridge, fit_ridge, part_columns
from training.data.dataset import Caption, CaptionDataset
from training.encoders.hybrid import HybridTextEncoder
from training.tower.bridge_fit import choose_parts, fit_bridge, parallel_pairs


class NoCzechEncoder(FakeTextEncoder):
    name = "fake-no-cs"
    dim = 6
    languages = frozenset({"en", "de"})


class AllEncoder(FakeTextEncoder):
    name = "fake-all"
    dim = 16  # more than the test's 12 words: the other part is then an exact linear function of this one
    languages = frozenset({"en", "de", "cs"})


def test_fit_ridge_recovers_an_exact_linear_map() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3)).astype(np.float32)
    w, b = rng.standard_normal((3, 2)), np.array([0.5, -1.0])
    y = x @ w + b
    fitted = fit_ridge(x, y, ridge=0.0)
    np.testing.assert_allclose(fitted[:3], w, atol=1e-4)
    np.testing.assert_allclose(fitted[3], b, atol=1e-4)
    # A ridge term shrinks the map towards zero.
    assert np.abs(fit_ridge(x, y, ridge=1e4)[:3]).sum() < np.abs(fitted[:3]).sum()


def _bridge() -> LanguageBridge:
    # Hybrid of a 2-d part (target) and a 3-d part (source): the map copies the first two source coordinates.
    weight = np.zeros((4, 2), np.float32)
    weight[0, 0] = weight[1, 1] = 1.0
    return LanguageBridge(weight, source=(2, 5), target=(0, 2), languages=frozenset({"cs"}), text_encoder="a+b")


def test_apply_rewrites_only_bridged_rows_and_keeps_the_part_norm() -> None:
    bridge = _bridge()
    s = 1 / np.sqrt(2)
    rows = np.array([[s, 0, 0.6 * s, 0.8 * s, 0], [0, s, 0.6 * s, 0.8 * s, 0]], np.float32)
    out = bridge.apply(rows, ["cs", "en"])
    np.testing.assert_allclose(out[1], rows[1])  # English: untouched
    np.testing.assert_allclose(out[0, :2], [0.6 * s, 0.8 * s], atol=1e-6)  # predicted, scaled like the source part
    np.testing.assert_allclose(out[0, 2:], rows[0, 2:])
    np.testing.assert_allclose(bridge.apply(rows, "cs")[1, :2], [0.6 * s, 0.8 * s], atol=1e-6)
    assert bridge.apply(rows, None) is rows


def test_wrong_shape_is_refused_and_storage_round_trips(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected"):
        LanguageBridge(np.zeros((3, 2), np.float32), (2, 5), (0, 2), frozenset({"cs"}), "a+b")
    bridge = _bridge()
    bridge.info = {"pairs": 7}
    bridge.save_pretrained(tmp_path)
    loaded = LanguageBridge.from_pretrained(tmp_path)
    assert loaded is not None
    np.testing.assert_array_equal(loaded.weight, bridge.weight)
    assert (loaded.source, loaded.target, loaded.languages, loaded.info) == ((2, 5), (0, 2), {"cs"}, {"pairs": 7})
    assert LanguageBridge.from_pretrained(tmp_path / "none") is None
    assert part_columns([512, 384], 1) == (512, 896)


def _parallel_dataset(tmp_path: Path) -> CaptionDataset:
    words = ["dog", "cat", "beach", "car", "girl", "boy", "ball", "tree", "river", "bank", "red", "blue"]
    rng = np.random.default_rng(1)
    captions = []
    for i in range(150):
        english = " ".join(rng.choice(words, 4))
        captions += [
            Caption("en", english, f"{i}.jpg", "task1"),
            Caption("cs", english.upper(), f"{i}.jpg", "task1"),  # the fake encoders lowercase: same vector
            Caption("en", english + " extra", f"{i}.jpg", "flickr"),  # not a 1:1 pair: ignored
        ]
    return CaptionDataset(tmp_path, [f"{i}.jpg" for i in range(150)], captions)


def test_fit_from_parallel_captions_and_use_it_at_query_time(tmp_path: Path) -> None:
    dataset = _parallel_dataset(tmp_path)
    assert len(parallel_pairs(dataset, "cs")) == 150
    hybrid = HybridTextEncoder([NoCzechEncoder(), AllEncoder()])
    assert choose_parts(hybrid, "cs") == (1, 0)
    with pytest.raises(ValueError, match="nothing to bridge"):
        choose_parts(hybrid, "de")
    bridge = fit_bridge(dataset, hybrid, ["cs"], tmp_path / "cache", ridge=1e-3)
    assert (bridge.source, bridge.target) == ((6, 22), (0, 6))
    assert bridge.info["pairs"] == 150 and bridge.info["held_out_cosine"] > 0.99
    with pytest.raises(ValueError, match="hybrid"):
        fit_bridge(dataset, AllEncoder(), ["cs"], tmp_path / "cache")

    base = fake_text_embedder(hybrid)
    bridged = TextEmbedder(base.tower, hybrid, bridge)
    text = ["dog on the beach"]
    np.testing.assert_allclose(bridged.embed(text, "en"), base.embed(text, "en"))
    assert not np.allclose(bridged.embed(text, "cs"), base.embed(text, "cs"))
    with pytest.raises(ValueError, match="bridge is for"):
        TextEmbedder(fake_text_embedder().tower, FakeTextEncoder(), bridge)


def test_the_research_tower_carries_a_czech_bridge_from_e5_to_muse() -> None:
    from indexer.tower import TextTower
    from training.asset_paths import research_tower_path

    folder = research_tower_path("tower")
    bridge = LanguageBridge.from_pretrained(folder)
    assert bridge is not None and bridge.languages == {"cs"}
    assert bridge.text_encoder == TextTower.from_pretrained(folder).text_encoder == "muse+e5-small"
    assert (bridge.target, bridge.source) == ((0, 512), (512, 896))  # mUSE half predicted from the e5 half
