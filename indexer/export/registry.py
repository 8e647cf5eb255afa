"""Every model ``polyglot models build`` exports, by key (importing this needs neither torch nor onnx)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.built_models import BuiltModel, library_versions
from indexer.export.efficientnet import FEATURES_FILE, HEAD_FILE

# File names only (importing indexer.export.e5 would import torch).
E5_FP32_FILE = "e5-small.onnx"
E5_INT8_FILE = "e5-small-int8.onnx"


def _efficientnet(name: str) -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.efficientnet import weights_path

        return weights_path(name)

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.efficientnet import export_efficientnet_lite

        return {**export_efficientnet_lite(name, folder), **library_versions()}

    return BuiltModel(f"{name}-onnx", (FEATURES_FILE, HEAD_FILE), source, build)


def _e5_small() -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.e5_weights import bundled_model_path

        return bundled_model_path()

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.e5 import export_e5

        return {**export_e5(folder), **library_versions()}

    return BuiltModel("e5-small-onnx", (E5_FP32_FILE, E5_INT8_FILE), source, build)


EFFICIENTNET_LITE0_ONNX = _efficientnet("efficientnet-lite0")
EFFICIENTNET_LITE2_ONNX = _efficientnet("efficientnet-lite2")
E5_SMALL_ONNX = _e5_small()

BUILT_MODELS: dict[str, BuiltModel] = {
    model.key: model for model in (EFFICIENTNET_LITE0_ONNX, EFFICIENTNET_LITE2_ONNX, E5_SMALL_ONNX)
}
IMAGE_EXPORTS = {"efficientnet-lite0": EFFICIENTNET_LITE0_ONNX, "efficientnet-lite2": EFFICIENTNET_LITE2_ONNX}
