"""Every model ``polyglot models build`` exports, by key (importing this needs neither torch nor onnx)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.built_models import BuiltModel, library_versions
from indexer.export.efficientnet import FEATURES_FILE, HEAD_FILE


def _efficientnet(name: str) -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.efficientnet import weights_path

        return weights_path(name)

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.efficientnet import export_efficientnet_lite

        return {**export_efficientnet_lite(name, folder), **library_versions()}

    return BuiltModel(f"{name}-onnx", (FEATURES_FILE, HEAD_FILE), source, build)


EFFICIENTNET_LITE0_ONNX = _efficientnet("efficientnet-lite0")
EFFICIENTNET_LITE2_ONNX = _efficientnet("efficientnet-lite2")

BUILT_MODELS: dict[str, BuiltModel] = {model.key: model for model in (EFFICIENTNET_LITE0_ONNX, EFFICIENTNET_LITE2_ONNX)}
IMAGE_EXPORTS = {"efficientnet-lite0": EFFICIENTNET_LITE0_ONNX, "efficientnet-lite2": EFFICIENTNET_LITE2_ONNX}
