"""`polyglot index ...` through typer's CliRunner: add twice, manifests, list, stats, remove, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FakeImageEncoder, clear_polyglot_env, write_random_images
from typer.testing import CliRunner

from app.cli import cli

runner = CliRunner()


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("POLYGLOT_DATABASE_URL", "POLYGLOT_INDEX_DIR", "POLYGLOT_CACHE_DIR", "POLYGLOT_IMAGE_ENCODER"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "var"))
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(tmp_path / "no-tower"))  # plain l2 space
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "efficientnet-lite0")
    # The CLI builds its encoder from settings; swap in the fast fake one, keeping the name check honest.
    monkeypatch.setattr(
        "indexer.image_index.build_image_encoder", lambda settings: _named_fake(settings.models.image_encoder)
    )
    return tmp_path


def _named_fake(spec: str) -> FakeImageEncoder:
    encoder = FakeImageEncoder(0)
    encoder.name = spec
    return encoder


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(cli, ["index", *args])
    return result.exit_code, result.output


def test_add_folder_twice_then_list_stats_remove(cli_env: Path) -> None:
    write_random_images(cli_env / "photos", 5)
    code, output = invoke("add", "photos")
    assert code == 0, output
    assert "added 5, unchanged 0" in output and "indexing" in output  # the progress bar ran
    code, output = invoke("add", "photos", "--quiet")
    assert code == 0 and "added 0, unchanged 5" in output

    code, output = invoke("list", "--json", "--limit", "3")
    rows = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert code == 0 and [r["id"] for r in rows] == [1, 2, 3]
    assert rows[0]["path"].endswith("img_0_000.jpg")

    code, output = invoke("stats", "--json")
    stats = json.loads(output)
    assert code == 0 and stats["count"] == 5 and stats["index_type"] == "flat"
    assert stats["image_encoder"] == "efficientnet-lite0" and stats["faiss_file_bytes"] > 0
    assert stats["image_precision"] == "fp32"  # Lite0 has no int8 graph: int8 (the default) applies to Lite2 only

    code, output = invoke("remove", "1", "2", "--path", "photos/img_0_004.jpg")
    assert code == 0 and "removed 3 of 3" in output
    code, output = invoke("stats", "--json")
    assert json.loads(output)["count"] == 2
    code, output = invoke("list")
    # The path column folds long paths over several lines (its width depends on the temporary folder's length):
    # read the table without its borders and whitespace.
    cells = "".join(ch for ch in output if not ch.isspace() and ch not in "│┃")
    assert code == 0 and "img_0_002.jpg" in cells and "img_0_000.jpg" not in cells

    code, output = invoke("rebuild", "--quiet")
    assert code == 0 and "rebuilt 2 vectors" in output


def test_manifest_csv_and_jsonl(cli_env: Path) -> None:
    a, b, c = write_random_images(cli_env / "m" / "imgs", 3)
    (cli_env / "m" / "list.csv").write_text(
        'path,title,tags,photographer\nimgs/img_0_000.jpg,"A dog","dog, pet",Ann\nimgs/img_0_001.png,,,\n'
    )
    (cli_env / "m" / "more.jsonl").write_text(
        json.dumps({"path": str(c), "caption": "ein Hund", "tags": ["hund"]}) + "\n"
    )
    code, output = invoke("add", "m/list.csv", "m/more.jsonl")
    assert code == 0 and "added 3" in output, output
    rows = {Path(r["path"]).name: r for r in map(json.loads, invoke("list", "--json")[1].splitlines())}
    assert rows[a.name]["title"] == "A dog" and rows[a.name]["tags"] == ["dog", "pet"]
    assert rows[a.name]["extra"] == {"photographer": "Ann"}
    assert rows[b.name]["title"] is None and rows[b.name]["tags"] == []
    assert rows[c.name]["caption"] == "ein Hund"


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({}, ["add", "missing"], "missing: no such file or folder"),
        ({"x.txt": "hi"}, ["add", "x.txt"], "not a folder, an image"),
        ({"bad.csv": "file,title\na.jpg,x\n"}, ["add", "bad.csv"], "'path' column"),
        ({"bad.jsonl": "{not json\n"}, ["add", "bad.jsonl"], "bad.jsonl:1: not valid JSON"),
        ({"gone.jsonl": '{"path": "nope.jpg"}\n'}, ["add", "gone.jsonl"], "image 'nope.jpg' not found"),
        ({"empty/.keep": ""}, ["add", "empty"], "no images found"),
        ({}, ["list"], "no index in"),
        ({}, ["remove"], "give image ids or --path"),
    ],
)
def test_user_errors_exit_2_without_traceback(
    cli_env: Path, files: dict[str, str], args: list[str], message: str
) -> None:
    for name, content in files.items():
        (cli_env / name).parent.mkdir(parents=True, exist_ok=True)
        (cli_env / name).write_text(content)
    code, output = invoke(*args)
    assert code == 2, output
    assert message in " ".join(output.split()) and "Traceback" not in output


def test_other_encoder_is_a_clear_cli_error(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_random_images(cli_env / "photos", 2)
    assert invoke("add", "photos")[0] == 0
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "efficientnet-lite2")
    code, output = invoke("add", "photos")
    assert code == 2 and "built with image encoder 'efficientnet-lite0'" in " ".join(output.split())
    assert "Traceback" not in output


def test_new_image_space_asks_for_rebuild(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from indexer.image_space import ImageSpace

    write_random_images(cli_env / "photos", 3)
    assert invoke("add", "photos", "-q")[0] == 0
    tower = cli_env / "tower"
    tower.mkdir()
    space = ImageSpace("center-l2", mean=np.full(48, 0.2, dtype=np.float32))
    (tower / "config.json").write_text(json.dumps({"image_space": space.to_config()}))
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(tower))  # a newly trained tower in another image space
    code, output = invoke("list")
    assert code == 2 and "polyglot index rebuild" in " ".join(output.split())
    code, output = invoke("rebuild", "-q")
    assert code == 0 and "rebuilt 3 vectors" in output
    assert invoke("list")[0] == 0
    assert json.loads(invoke("stats", "--json")[1])["image_space"] == space.fingerprint


def test_a_setting_the_settings_refuse_is_one_error_line_naming_the_variable(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command reads its settings through read_settings: a bad POLYGLOT_ value ends it with exit 2 and the
    variable, the value and what is allowed, not a pydantic traceback."""
    monkeypatch.setenv("POLYGLOT_IMAGE_PRECISION", "int4")
    code, output = invoke("stats")
    assert code == 2
    # The variable, the value and the allowed values; the rest of the sentence is pydantic's and not pinned here.
    (line,) = output.strip().splitlines()
    assert line.startswith("error: invalid setting POLYGLOT_IMAGE_PRECISION='int4': "), line
    assert "'int8'" in line and "'fp32'" in line, line
    monkeypatch.delenv("POLYGLOT_IMAGE_PRECISION")
    monkeypatch.setenv("POLYGLOT_BATCH_SIZE", "many")
    result = runner.invoke(cli, ["search", "dog"])
    assert result.exit_code == 2 and "POLYGLOT_BATCH_SIZE='many'" in result.output
    assert "Traceback" not in result.output


def test_indexing_before_the_models_are_built_names_the_build_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POLYGLOT_ENCODER_BACKEND=onnx with an empty models folder (no `polyglot models build` yet): `index add` ends
    with one error line that names the command, exit 2, not a traceback."""
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "var"))
    monkeypatch.setenv("POLYGLOT_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.setenv("POLYGLOT_ENCODER_BACKEND", "onnx")
    write_random_images(tmp_path / "photos", 2)
    code, output = invoke("add", "photos", "-q")
    assert code == 2 and output.startswith("error: ") and "polyglot models build" in output
    assert "Traceback" not in output
