"""The int8 image CNN (POLYGLOT_IMAGE_PRECISION=int8): built offline from the shipped activation ranges, its
features close to fp32's, cached apart, and chosen only where it can run.

Bounds: measured on 64 Flickr dev photos, cosine to the fp32 features min 0.946, mean 0.987 (docs/image-int8.md);
the served recall that this costs is measured there, not here.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import write_random_images
from test_onnx_image import sample_images
from typer.testing import CliRunner

from app.cli import cli
from indexer.asset_paths import IMAGE_INT8_RANGES
from indexer.built_models import build
from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder
from indexer.encoders.factory import create_image_encoder, image_precision
from indexer.export.efficientnet import FEATURES_FILE
from indexer.export.registry import IMAGE_EXPORTS, IMAGE_INT8_EXPORTS
from indexer.model_files import ModelFileMissingError

pytestmark = pytest.mark.slow
NAME = "efficientnet-lite2"


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    build(IMAGE_EXPORTS[NAME], folder)
    build(IMAGE_INT8_EXPORTS[NAME], folder)
    return folder


def test_the_int8_graph_is_built_from_the_shipped_ranges_with_stem_and_head_in_fp32(models_dir: Path) -> None:
    import onnx

    assert IMAGE_INT8_RANGES[NAME].is_file()
    graph = onnx.load(str(IMAGE_INT8_EXPORTS[NAME].folder(models_dir) / FEATURES_FILE)).graph
    ops = Counter(node.op_type for node in graph.node)
    assert ops["QLinearConv"] >= 60
    fp32 = sorted(node.name for node in graph.node if node.op_type == "Conv")
    assert len(fp32) == 2 and "_conv_stem" in fp32[1] and "_conv_head" in fp32[0]
    assert ops["Pad"] == 0  # folded into the convolutions before quantising (the Pads cost ~0.9 ms a photo)


def test_int8_features_stay_close_to_fp32_and_are_cached_apart(models_dir: Path) -> None:
    fp32 = create_image_encoder(NAME, models_dir=models_dir, threads=1, precision="fp32")
    int8 = create_image_encoder(NAME, models_dir=models_dir, threads=1, precision="int8")
    assert isinstance(int8, EfficientNetLiteOnnxEncoder) and int8.precision == "int8"
    assert int8.name == fp32.name == NAME  # the index's encoder check: one index may hold both
    assert (fp32.cache_name, int8.cache_name) == (NAME, f"{NAME}-int8")  # an evaluation reads its own vectors
    fp32.load()
    int8.load()
    images = sample_images()
    expected, got = fp32.predict(images), int8.predict(images)
    cosine = (expected * got).sum(axis=1) / np.linalg.norm(expected, axis=1) / np.linalg.norm(got, axis=1)
    assert cosine.min() >= 0.93 and cosine.mean() >= 0.97, cosine
    prepared = [int8.prepare(image) for image in images]
    # The indexing workers' one-thread session runs the same graph.
    np.testing.assert_allclose(int8.predict_prepared(prepared, threads=1), got, atol=1e-4 * np.abs(got).max())
    np.testing.assert_allclose(int8.classify(got).sum(axis=1), 1.0, atol=1e-5)  # the fp32 build's head


def test_int8_runs_only_where_it_can(models_dir: Path, tmp_path: Path) -> None:
    assert image_precision(NAME, "int8", models_dir, "cpu", "auto") == "int8"
    assert image_precision(NAME, "int8", models_dir, "cuda", "auto") == "fp32"  # no int8 convolutions on CUDA
    assert image_precision("efficientnet-lite0", "int8", models_dir, "cpu", "auto") == "fp32"  # no int8 build
    assert image_precision(NAME, "int8", tmp_path, "cpu", "auto") == "fp32"  # not built yet: fp32 meanwhile
    assert image_precision(NAME, "int8", tmp_path, "cpu", "onnx") == "int8"  # ...unless ONNX is demanded:
    build(IMAGE_EXPORTS[NAME], tmp_path)
    demanded = create_image_encoder(NAME, models_dir=tmp_path, backend="onnx", precision="int8")
    with pytest.raises(ModelFileMissingError, match="polyglot models build"):
        demanded.load()  # the error names the command
    with pytest.raises(ValueError, match="int8 or fp32"):
        image_precision(NAME, "int4", models_dir, "cpu", "auto")


def test_polyglot_models_calibrate_measures_ranges_on_a_training_split(tmp_path: Path) -> None:
    """The CLI a maintainer runs to remeasure the ranges: photos of a split in, ORT's calibration cache out (the
    shipped asset by default; here --out), and clear errors for a folder that is not a data set."""
    data = tmp_path / "data"
    photos = write_random_images(data / "images", 8, size=(64, 48))
    (data / "splits").mkdir()
    (data / "splits" / "train.txt").write_text("\n".join(p.name for p in photos) + "\n", encoding="utf-8")
    out = tmp_path / "ranges.json"
    runner = CliRunner()
    result = runner.invoke(cli, ["models", "calibrate", "--data", str(data), "--images", "8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    ranges = json.loads(out.read_text(encoding="utf-8"))["data"]
    assert len(ranges) > 100  # every activation of the graph
    assert not any(name.startswith("/_blocks") and "static_padding" in name for name in ranges)  # Pads folded
    refused = runner.invoke(cli, ["models", "calibrate", "--data", str(data), "--split", "dev", "--out", str(out)])
    assert refused.exit_code == 2 and "splits/dev.txt is missing" in refused.output
    too_few = runner.invoke(cli, ["models", "calibrate", "--data", str(data), "--images", "9", "--out", str(out)])
    assert too_few.exit_code == 2 and "fewer than --images 9" in too_few.output
