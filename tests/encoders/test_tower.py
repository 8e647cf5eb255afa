"""The text tower: architecture from the M3L paper, config.json + safetensors round trip, image spaces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from indexer.image_space import ImageSpace
from indexer.tower import L2Norm, TextTower


def test_blocks_follow_the_paper() -> None:
    tower = TextTower(input_dim=8, output_dim=6, hidden_dims=[16, 32], dropouts=[0.2, 0.1, 0.0])
    kinds = [type(layer) for layer in tower.mlp]
    # FC → dropout → ReLU → l2-norm, twice; the last block has no l2-norm.
    assert kinds == [nn.Linear, nn.Dropout, nn.ReLU, L2Norm] * 2 + [nn.Linear, nn.Dropout, nn.ReLU]
    assert [layer.out_features for layer in tower.mlp if isinstance(layer, nn.Linear)] == [16, 32, 6]
    no_relu = TextTower(input_dim=8, output_dim=6, hidden_dims=[16], dropouts=[0.1, 0.0], final_relu=False)
    assert not isinstance(no_relu.mlp[-1], nn.ReLU)


@pytest.mark.parametrize("final_relu", [True, False])
def test_numpy_inference_matches_the_torch_forward(final_relu: bool) -> None:
    torch.manual_seed(1)
    tower = TextTower(input_dim=8, output_dim=6, hidden_dims=[16, 32], dropouts=[0.5, 0.5, 0.0], final_relu=final_relu)
    x = np.random.default_rng(2).normal(size=(5, 8)).astype(np.float32)
    with torch.no_grad():
        reference = nn.functional.normalize(tower.eval()(torch.from_numpy(x)), dim=-1).numpy()
    tower.train()  # embed is inference whatever the module's mode: no dropout
    embedded = tower.embed(x)
    assert embedded.dtype == np.float32 and embedded.shape == (5, 6)
    np.testing.assert_allclose(embedded, reference, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(embedded, axis=1), 1.0, atol=1e-6)


def test_dropouts_must_match_blocks() -> None:
    with pytest.raises(ValueError, match="one dropout per block"):
        TextTower(input_dim=4, output_dim=4, hidden_dims=[8], dropouts=[0.1])


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    torch.manual_seed(0)
    mean = np.linspace(0, 1, 6).astype(np.float32)
    space = ImageSpace("center-l2", mean)
    tower = TextTower(
        input_dim=8,
        output_dim=6,
        hidden_dims=[16],
        dropouts=[0.2, 0.0],
        image_space=space.to_config(),
        text_encoder="e5-small",
        languages=["fr", "en"],
    )
    tower.save_pretrained(tmp_path / "t", extra={"metrics": {"en": 0.5}})
    config = json.loads((tmp_path / "t" / "config.json").read_text())
    assert config["metrics"] == {"en": 0.5} and config["languages"] == ["en", "fr"]
    loaded = TextTower.from_pretrained(tmp_path / "t")
    x = np.random.default_rng(1).normal(size=(3, 8)).astype(np.float32)
    np.testing.assert_allclose(loaded.embed(x), tower.embed(x), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(loaded.embed(x), axis=1), 1.0, rtol=1e-5)
    assert loaded.text_encoder == "e5-small"
    assert loaded.image_space.fingerprint == space.fingerprint


def test_missing_tower_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        TextTower.from_pretrained(tmp_path)


def test_image_spaces() -> None:
    x = np.array([[3.0, 4.0], [1.0, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(ImageSpace("l2").apply(x), [[0.6, 0.8], [2**-0.5, 2**-0.5]], rtol=1e-6)
    centred = ImageSpace("center-l2", np.array([1.0, 1.0], dtype=np.float32))
    # [3, 4] - [1, 1] = [2, 3], norm sqrt(13); [1, 1] - [1, 1] = 0 stays 0 instead of dividing by zero.
    np.testing.assert_allclose(centred.apply(x), [[2 / 13**0.5, 3 / 13**0.5], [0.0, 0.0]], rtol=1e-6)
    assert ImageSpace.from_config(centred.to_config()).fingerprint == centred.fingerprint
    assert ImageSpace("l2").fingerprint != centred.fingerprint
    with pytest.raises(ValueError):
        ImageSpace("center-l2")
    with pytest.raises(ValueError):
        ImageSpace("pca")


@pytest.mark.parametrize("folder", ["tower", "tower-muse"])
def test_shipped_towers_load_and_share_one_image_space(folder: str) -> None:
    """Switching between the shipped towers (POLYGLOT_TOWER_PATH) must never force re-indexing the photos."""
    from training.asset_paths import research_tower_path

    tower = TextTower.from_pretrained(research_tower_path(folder))
    default = TextTower.from_pretrained(research_tower_path("tower"))
    assert tower.image_encoder == default.image_encoder == "efficientnet-lite2"
    assert tower.image_space.fingerprint == default.image_space.fingerprint
    assert set(tower.config["languages"]) == {"en", "de", "fr", "cs", "pt"}
    inputs = np.random.default_rng(0).standard_normal((3, tower.config["input_dim"])).astype(np.float32)
    out = tower.embed(inputs)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


def small_tower(text_encoder: str = "muse", input_dim: int = 4) -> TextTower:
    """A tower with fixed weights (no random initialisation: its fingerprint is pinned below)."""
    tower = TextTower(
        input_dim=input_dim, output_dim=3, hidden_dims=[5], dropouts=[0.0, 0.0], text_encoder=text_encoder
    )
    with torch.no_grad():
        for parameter in tower.parameters():
            parameter.copy_(torch.linspace(-1.0, 1.0, parameter.numel()).reshape(parameter.shape))
    return tower.eval()


def test_one_tower_fingerprint_for_weights_encoder_and_bridge() -> None:
    from indexer.tower import tower_fingerprint
    from training.bridge import LanguageBridge

    def tower(text_encoder: str = "muse") -> TextTower:
        return small_tower(text_encoder)

    base = tower_fingerprint(tower())
    # The formula of a research tower (its encoder has no weights of its own) is the one its indexes were made with.
    assert base == "61fa4bae6f10ea62"
    assert base == tower_fingerprint(tower()) and len(base) == 16
    assert tower_fingerprint(tower("e5-small")) != base  # same weights, another sentence space
    retrained = tower()
    with torch.no_grad():
        retrained.mlp[0].bias.add_(1e-3)
    assert tower_fingerprint(retrained) != base
    bridge = LanguageBridge(np.zeros((3, 2), dtype=np.float32), (0, 2), (2, 4), frozenset({"cs"}), "muse")
    assert tower_fingerprint(tower(), bridge) != base


def student_folder(folder: Path, delta: dict[str, torch.Tensor]) -> Path:
    """A student folder (:mod:`indexer.student`): the same head in each, the given trunk delta."""
    from safetensors.torch import save_file

    from indexer.student.model import TRUNK_DELTA, student_config

    small_tower("e5-student", input_dim=384).save_pretrained(folder, extra=student_config(1, {}))
    save_file(delta, str(folder / TRUNK_DELTA))
    return folder


def test_a_student_fingerprint_names_its_trunk_delta(tmp_path: Path) -> None:
    """A student's trunk is trained too: the same head over another delta maps sentences elsewhere, so caption
    indexes and tag vocabularies of one must not pass for the other's."""
    from indexer.student.encoder import StudentEmbedder
    from indexer.tower import tower_fingerprint

    def fingerprint(name: str, step: float) -> str:
        delta = {"layers.0.query.weight": torch.full((384, 384), step, dtype=torch.float16)}
        return StudentEmbedder.from_folder(student_folder(tmp_path / name, delta), tmp_path / "models").fingerprint

    first = fingerprint("first", 1e-3)
    assert fingerprint("again", 1e-3) == first  # the delta's bytes, not the folder, are its identity
    assert fingerprint("retrained", 2e-3) != first
    assert first != tower_fingerprint(small_tower("e5-student", input_dim=384))  # the head alone


def test_a_research_tower_fingerprint_is_its_tower_and_bridge() -> None:
    from api_fixtures import FakeTextEncoder

    from indexer.tower import TextEmbedder, tower_fingerprint

    encoder = FakeTextEncoder()
    tower = small_tower(encoder.name, input_dim=encoder.dim)
    assert encoder.weights_digest is None
    assert TextEmbedder(tower, encoder).fingerprint == tower_fingerprint(tower)
