"""Built model files (ONNX exports): manifest, checksums, atomic rebuilds, and the factory's backend choice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexer.built_models import BuiltModel, build, is_built, read_manifest, verify
from indexer.encoders.efficientnet import EfficientNetLiteEncoder
from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder
from indexer.encoders.factory import UnknownEncoderError, create_image_encoder
from indexer.export.registry import EFFICIENTNET_LITE0_ONNX
from indexer.model_files import ChecksumError, ModelFileMissingError


def toy_model(tmp_path: Path, calls: list[int]) -> BuiltModel:
    source = tmp_path / "weights.bin"
    source.write_bytes(b"weights v1")

    def make(folder: Path) -> dict[str, Any]:
        calls.append(1)
        (folder / "a.onnx").write_bytes(b"graph" * 100)
        (folder / "b.npz").write_bytes(b"head")
        return {"note": "toy"}

    return BuiltModel("toy-onnx", ("a.onnx", "b.npz"), lambda: source, make)


def test_build_writes_a_manifest_and_verifies(tmp_path: Path) -> None:
    calls: list[int] = []
    model = toy_model(tmp_path, calls)
    models = tmp_path / "models"
    assert not is_built(model, models)
    with pytest.raises(ModelFileMissingError, match="polyglot models build"):
        verify(model, models)
    build(model, models)
    files = verify(model, models)
    assert sorted(files) == ["a.onnx", "b.npz"] and is_built(model, models)
    manifest = read_manifest(model.folder(models))
    assert manifest is not None and manifest["note"] == "toy" and manifest["files"]["a.onnx"]["size"] == 500
    build(model, models)  # intact and from the same weights: nothing to do
    assert len(calls) == 1
    (tmp_path / "weights.bin").write_bytes(b"weights v2")  # new source weights: exported again
    build(model, models)
    assert len(calls) == 2


def test_tampered_or_missing_files_are_errors(tmp_path: Path) -> None:
    model = toy_model(tmp_path, [])
    models = tmp_path / "models"
    build(model, models)
    path = model.folder(models) / "a.onnx"
    path.write_bytes(b"GRAPH" * 100)  # same size, other bytes: only the checksum sees it
    assert is_built(model, models)  # the cheap check (sizes) used to pick a backend
    with pytest.raises(ChecksumError, match="checksum"):
        verify(model, models)
    path.unlink()
    with pytest.raises(ModelFileMissingError):
        verify(model, models)
    build(model, models)  # repairs it
    verify(model, models)


def test_factory_picks_the_backend(tmp_path: Path) -> None:
    models = tmp_path / "models"
    assert isinstance(create_image_encoder("efficientnet-lite0", models_dir=models), EfficientNetLiteEncoder)
    forced = create_image_encoder("efficientnet-lite0", models_dir=models, backend="onnx")
    assert isinstance(forced, EfficientNetLiteOnnxEncoder)
    with pytest.raises(ModelFileMissingError, match="polyglot models build"):
        forced.load()  # forced but never built: the error names the command
    folder = EFFICIENTNET_LITE0_ONNX.folder(models)
    folder.mkdir(parents=True)
    (folder / "features.onnx").write_bytes(b"x")
    (folder / "head.npz").write_bytes(b"y")
    (folder / "manifest.json").write_text(
        '{"format": 1, "files": {"features.onnx": {"size": 1, "sha256": "-"}, "head.npz": {"size": 1, "sha256": "-"}}}'
    )
    auto = create_image_encoder("efficientnet-lite0", models_dir=models)
    assert isinstance(auto, EfficientNetLiteOnnxEncoder) and auto.name == "efficientnet-lite0"
    torch_one = create_image_encoder("efficientnet-lite0", models_dir=models, backend="torch")
    assert isinstance(torch_one, EfficientNetLiteEncoder)
    assert isinstance(create_image_encoder("efficientnet-lite0"), EfficientNetLiteEncoder)  # no models folder
    with pytest.raises(UnknownEncoderError, match="backend"):
        create_image_encoder("efficientnet-lite0", models_dir=models, backend="tensorrt")


def test_cuda_device_without_the_onnx_cuda_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU, `auto` takes ONNX Runtime only when it has the CUDA provider, else eager PyTorch on the GPU;
    a forced ONNX backend says what to install. (CI has no GPU: the provider list is what is tested.)"""
    import onnxruntime

    from indexer.encoders.factory import use_onnx
    from indexer.encoders.onnx_session import providers

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with pytest.raises(RuntimeError, match="onnxruntime-gpu"):
        providers("cuda:0")
    assert providers("cpu") == ["CPUExecutionProvider"]
    built = tmp_path / "models"
    folder = EFFICIENTNET_LITE0_ONNX.folder(built)
    folder.mkdir(parents=True)
    for name in ("features.onnx", "head.npz"):
        (folder / name).write_bytes(b"x")
    (folder / "manifest.json").write_text(
        '{"format": 1, "files": {"features.onnx": {"size": 1, "sha256": "-"}, "head.npz": {"size": 1, "sha256": "-"}}}'
    )
    assert use_onnx(EFFICIENTNET_LITE0_ONNX, built, "cpu", "auto")
    assert not use_onnx(EFFICIENTNET_LITE0_ONNX, built, "cuda", "auto")
    monkeypatch.setattr(
        onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    assert use_onnx(EFFICIENTNET_LITE0_ONNX, built, "cuda", "auto")
    assert providers("cuda") == ["CUDAExecutionProvider", "CPUExecutionProvider"]
