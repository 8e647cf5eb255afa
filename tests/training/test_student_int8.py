"""The student's int8 graph (indexer/export/e5_int8.py): SmoothQuant's scale by hand, a smoothed Linear is the same
function in fp32, the calibration measures each Linear's largest input and rides in the delta file without touching
the weights, and the served int8 student stays nearer the fp32 one than the plain int8 graph does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from typer.testing import CliRunner

from indexer.encoders.e5 import E5Weights
from indexer.export.e5_int8 import SmoothedLinear, input_absmax, linear_names, smoothing_scale
from indexer.student.encoder import StudentOnnxEncoder
from indexer.student.model import (
    INT8_RANGES,
    TRUNK_DELTA,
    load_int8_fp32,
    load_int8_ranges,
    load_trunk,
    new_trunk,
    student_config,
    write_int8_ranges,
)
from indexer.tower import TextTower
from training.student.int8_calibration import calibrate_student, calibration_texts, text_inputs
from training.student.words import read_lexicons

CALIBRATION = [
    "a dog runs on the beach",
    "Ein Mann fährt Fahrrad auf einer Straße.",
    "Une femme lit un livre dans un parc.",
    "Dva muži hrají fotbal na trávě.",
    "一个孩子在雪地里玩耍",
    "男の子がボールを蹴っている",
    "собака",
    "Schmetterling",
    "金鱼",
    "goldfish",
    "PANDA",
    "tiger shark",
]
CHECKED = [
    "two children play in the water",
    "Eine Katze schläft auf dem Sofa.",
    "Un chien noir court dans la neige.",
    "женщина на велосипеде",
    "海滩上的狗",
    "Elefant",
    "zebra",
    "red umbrella",
]


def test_smoothing_scale_by_hand() -> None:
    # s_j = max|x_j|^α / max_i |W_ij|^(1-α); W is (out, in): the input channels' weight maxima are 1 and 2.
    absmax = torch.tensor([16.0, 1.0])
    weight = torch.tensor([[1.0, 1.0], [0.5, 2.0]])
    np.testing.assert_allclose(smoothing_scale(absmax, weight, alpha=0.5).numpy(), [4.0, 2**-0.5], rtol=1e-6)
    np.testing.assert_allclose(smoothing_scale(absmax, weight, alpha=1.0).numpy(), [16.0, 1.0], rtol=1e-6)


def test_a_smoothed_linear_is_the_same_function() -> None:
    torch.manual_seed(0)
    linear = nn.Linear(3, 2)
    inputs = torch.randn(5, 3) * torch.tensor([40.0, 1.0, 0.1])  # one outlier channel
    smoothed = SmoothedLinear(linear, torch.tensor([8.0, 0.5, 0.1]))
    torch.testing.assert_close(smoothed(inputs), linear(inputs), atol=1e-5, rtol=1e-5)


def test_the_calibration_measures_each_linears_largest_input() -> None:
    weights = E5Weights()
    trunk = new_trunk(1, weights)
    inputs = list(text_inputs(["a dog", "Ein Hund am Strand"], weights))
    found = input_absmax(trunk, inputs)
    assert (
        sorted(found)
        == sorted(linear_names(trunk))
        == [f"layers.0.{name}" for name in sorted(["query", "key", "value", "attention_out", "ffn_in", "ffn_out"])]
    )
    # By hand: the query's input is the embedding LayerNorm's output; its largest |value| per channel over both texts.
    with torch.no_grad():
        normed = [trunk.lower(embeddings, mask, 0)[0] for embeddings, mask in inputs]
    expected = torch.cat(normed).abs().amax(dim=0)
    torch.testing.assert_close(found["layers.0.query"], expected)
    assert found["layers.0.ffn_out"].shape == (1536,)


def student(folder: Path, layers: int = 2) -> Path:
    """A student folder with e5's first ``layers`` layers, its first query weight changed a little."""
    TextTower(
        input_dim=384, output_dim=8, hidden_dims=[16], dropouts=[0.0, 0.0], text_encoder="e5-student"
    ).save_pretrained(folder, extra=student_config(layers, {}))
    save_file({"layers.0.query.weight": torch.full((384, 384), 1e-3, dtype=torch.float16)}, str(folder / TRUNK_DELTA))
    return folder


def test_the_calibration_rides_in_the_delta_file_and_leaves_the_weights_alone(tmp_path: Path) -> None:
    folder = student(tmp_path / "student", layers=1)
    before = load_trunk(folder).state_dict()
    assert load_int8_ranges(folder) is None
    write_int8_ranges(folder, {"layers.0.query": torch.ones(384), "layers.0.ffn_out": torch.ones(1536)})
    write_int8_ranges(folder, {"layers.0.query": torch.full((384,), 2.0)})  # a new calibration replaces the old
    ranges = load_int8_ranges(folder)
    assert ranges is not None and sorted(ranges) == ["layers.0.query"]
    assert float(ranges["layers.0.query"][0]) == 2.0
    after = load_trunk(folder).state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))


def test_the_served_int8_student_stays_nearer_fp32_than_plain_int8(tmp_path: Path) -> None:
    plain = student(tmp_path / "plain")
    calibrated = shutil.copytree(plain, tmp_path / "calibrated")
    # The smoothing alone: GPTQ fitted to these few calibration texts would measure its over-fitting on CHECKED
    # (tests/training/test_student_int8_rounding.py tests it; the real calibration has ~1,500 texts).
    calibrate_student(calibrated, CALIBRATION, rounding="nearest")
    assert load_int8_ranges(calibrated) is not None

    def pooled(folder: Path, precision: str) -> np.ndarray:
        encoder = StudentOnnxEncoder(folder, tmp_path / "models", variant=precision)  # type: ignore[arg-type]
        encoder.load()
        return encoder.predict(CHECKED)

    reference = pooled(plain, "fp32")
    np.testing.assert_allclose(pooled(calibrated, "fp32"), reference, atol=1e-6)  # the fp32 graph is unchanged
    plain_error = 1.0 - cosines(pooled(plain, "int8"), reference)
    smoothed_error = 1.0 - cosines(pooled(calibrated, "int8"), reference)
    # Measured here (AVX-512 VNNI): mean 1 - cosine 5.3e-4 smoothed against 1.9e-3 plain, largest 7.3e-4 against
    # 2.5e-3, on these texts through e5's first two layers.
    assert smoothed_error.mean() < 0.5 * plain_error.mean()
    assert smoothed_error.max() < 2e-3


def test_calibrate_student_command(tmp_path: Path) -> None:
    from app.cli import cli

    folder = student(tmp_path / "student", layers=1)
    captions = tmp_path / "captions.jsonl"
    captions.write_text(
        "".join(f'{{"lang": "{lang}", "text": "{text}"}}\n' for lang, text in [("en", "a dog"), ("de", "ein Hund")]),
        encoding="utf-8",
    )
    lexicons = tmp_path / "lexicons"
    lexicons.mkdir()
    (lexicons / "en-fr.tsv").write_text("dog\tchien\ncat\tchat\ntaxi\ttaxi\n#aaa\t#ein\n", encoding="utf-8")
    texts = calibration_texts([captions], read_lexicons(lexicons), class_names=2)
    assert len(texts) == 2 + 2 + 2
    # The dictionary's words as the words term keeps them: no identity pair ("taxi"), no noise ("#ein").
    assert set(texts[2:4]) == {"chien", "chat"}
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    result = runner.invoke(
        cli,
        [
            "models",
            "calibrate-student",
            "--student",
            str(folder),
            "--captions",
            str(captions),
            "--lexicons",
            str(lexicons),
            "--scale",
            "2",
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    # 1 caption of each language and 2 words (all there are), 2 × 48 class names.
    assert "int8 calibration of 100 training texts" in " ".join(result.output.split())
    ranges = load_int8_ranges(folder)
    assert ranges is not None and sorted(ranges) == sorted(linear_names(load_trunk(folder)))
    assert any(name.startswith(INT8_RANGES) for name in load_file(str(folder / TRUNK_DELTA)))
    # A share of the multiplies in fp32: 20 % of one layer's is room for two 384 × 384 Linears, not a 384 × 1536 one.
    calibrate = ["models", "calibrate-student", "--student", str(folder), "--captions", str(captions)]
    result = runner.invoke(cli, [*calibrate, "--lexicons", "", "--fp32-share", "0.2"], env=env)
    assert result.exit_code == 0, result.output
    kept = load_int8_fp32(folder)
    assert len(kept) == 2 and not any(name.startswith("layers.0.ffn") for name in kept)
    assert f"2 Linears stay fp32: {', '.join(kept)}; 4 rounded by GPTQ" in " ".join(result.output.split())
    result = runner.invoke(cli, [*calibrate, "--lexicons", "", "--rounding", "nearest"], env=env)
    assert result.exit_code == 0 and "; 0 rounded by GPTQ" in " ".join(result.output.split())
    result = runner.invoke(cli, [*calibrate, "--rounding", "up"], env=env)
    assert result.exit_code != 0 and "--rounding must be one of nearest, gptq" in " ".join(result.output.split())
    result = runner.invoke(cli, [*calibrate, "--fp32-share", "0.9"], env=env)
    assert result.exit_code != 0 and "--fp32-share" in result.output
    result = runner.invoke(cli, ["models", "calibrate-student", "--student", str(tmp_path)], env=env)
    assert result.exit_code != 0 and "is not a student folder" in result.output
    result = runner.invoke(
        cli,
        ["models", "calibrate-student", "--student", str(folder), "--captions", str(tmp_path / "none.jsonl")],
        env=env,
    )
    assert result.exit_code != 0 and "none.jsonl is missing" in result.output


def test_the_calibration_sample_grows_with_its_scale(tmp_path: Path) -> None:
    captions = tmp_path / "captions.jsonl"
    rows = [(lang, f"{lang} caption {number}") for lang in ("en", "de") for number in range(10)]
    captions.write_text("".join(json.dumps({"lang": lang, "text": text}) + "\n" for lang, text in rows), "utf-8")
    tables = {"fr": {f"word{number}": [f"mot{number}"] for number in range(10)}}
    sizes = {"captions_per_language": 2, "words_per_language": 3, "class_names": 1}
    one = calibration_texts([captions], tables, **sizes)
    three = calibration_texts([captions], tables, **sizes, scale=3)
    assert len(one) == 2 * 2 + 3 + 1 and len(three) == 3 * len(one) and len(set(three)) == len(three)
    assert sum(text.startswith("de ") for text in three) == 6 and sum(text.startswith("mot") for text in three) == 9
    assert calibration_texts([captions], tables, **sizes, scale=3) == three  # seeded
    with pytest.raises(ValueError, match="at least 1"):
        calibration_texts([captions], tables, scale=0)


def test_auto_precision_serves_int8_for_a_calibrated_student_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import clear_polyglot_env

    from indexer.encoders.factory import build_text_side
    from indexer.export.registry import student_precision
    from indexer.settings import Settings

    clear_polyglot_env(monkeypatch)
    folder = student(tmp_path / "student", layers=1)

    def served(precision: str) -> str:
        settings = Settings(home=tmp_path, tower_path=folder, e5_precision=precision)
        return str(build_text_side(settings).encoder.variant)  # type: ignore[attr-defined]

    assert Settings(home=tmp_path).models.e5_precision == "auto"
    assert student_precision(folder, "auto") == "fp32" and served("auto") == "fp32"
    write_int8_ranges(folder, {"layers.0.query": torch.ones(384)})
    assert student_precision(folder, "auto") == "int8" and served("auto") == "int8"
    assert served("fp32") == "fp32" and served("int8") == "int8"
