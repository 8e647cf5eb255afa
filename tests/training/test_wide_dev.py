"""The wide dev set as ``polyglot evaluate`` builds it, and ``--query-case``: every name typed in one case form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from training.data.synthetic import make_dataset
from training.data.text_case import in_case
from training.data.wide_dev import build_wide_dev

pytest_plugins = ("api_fixtures",)


def wide_samples(tmp_path: Path) -> tuple[Path, Path]:
    """A samples folder (images + images.jsonl, one class a photo) and a class-name file in two languages."""
    samples = make_dataset(tmp_path / "samples")
    photos = (samples / "splits" / "dev.txt").read_text().split()
    rows = [{"image": name, "class_index": index} for index, name in enumerate(photos)]
    (samples / "images.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    classes = list(range(len(photos)))
    labels = tmp_path / "labels.json"
    names = {
        "EN": [classes, [f"great white shark {index}" for index in classes]],
        "DE": [classes[:2], ["Weißer Hai", "Kinderwagen"]],
    }
    labels.write_text(json.dumps(names, ensure_ascii=False))
    return samples, labels


def test_in_case() -> None:
    assert in_case("great white shark", "capitalised") == "Great white shark"
    assert in_case("Kinderwagen", "upper") == "KINDERWAGEN" and in_case("Kinderwagen", "lower") == "kinderwagen"
    assert in_case("金鱼", "upper") == "金鱼"
    # Turkish typed as a Turkish keyboard types it: the dotted i stays dotted in capitals, and back.
    assert in_case("kedi ırmak", "upper", "tr") == "KEDİ IRMAK" and in_case("kedi", "upper") == "KEDI"
    assert in_case("istanbul", "capitalised", "tr") == "İstanbul"
    assert in_case("KEDİ IRMAK", "lower", "tr") == "kedi ırmak"
    with pytest.raises(ValueError, match="unknown case form 'title'"):
        in_case("panda", "title")


@pytest.mark.parametrize(
    ("case", "english", "german"),
    [
        (None, "great white shark 1", ["Weißer Hai", "Kinderwagen"]),
        ("upper", "GREAT WHITE SHARK 1", ["WEISSER HAI", "KINDERWAGEN"]),
        ("lower", "great white shark 1", ["weißer hai", "kinderwagen"]),
        ("capitalised", "Great white shark 1", ["Weißer Hai", "Kinderwagen"]),
    ],
)
def test_each_name_is_one_query_in_the_asked_case(
    tmp_path: Path, case: str | None, english: str, german: list[str]
) -> None:
    samples, labels = wide_samples(tmp_path)
    out = build_wide_dev(samples, labels, tmp_path / "wide", case)
    rows = [json.loads(line) for line in (out / "captions.jsonl").read_text(encoding="utf-8").splitlines()]
    photos = (samples / "splits" / "dev.txt").read_text().split()
    assert (out / "splits" / "dev.txt").read_text().split() == photos
    assert [row["text"] for row in rows if row["lang"] == "de"] == german  # only the classes named in German
    assert next(row for row in rows if row["image"] == photos[1] and row["lang"] == "en")["text"] == english
    assert (out / "images" / photos[0]).is_file()


@pytest.mark.usefixtures("evaluate_on_fake_models")
def test_evaluate_cli_measures_names_in_one_case(tmp_path: Path) -> None:
    from app.cli import cli

    samples, labels = wide_samples(tmp_path)
    wide = ["evaluate", "--data", str(samples), "--imagenet-labels", str(labels)]
    out = tmp_path / "upper.json"
    result = CliRunner().invoke(cli, [*wide, "--query-case", "upper", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert set(json.loads(out.read_text())["languages"]) == {"en", "de"}
    (built,) = (tmp_path / "home").rglob("wide-dev-upper/captions.jsonl")
    assert "KINDERWAGEN" in built.read_text(encoding="utf-8")
    for wrong in (["--query-case", "title"], ["--data", str(samples), "--query-case", "upper"]):
        args = [*wide, *wrong] if wrong[0] == "--query-case" else ["evaluate", *wrong]
        refused = CliRunner().invoke(cli, args)
        message = " ".join(refused.output.split())  # rich wraps at the terminal's width
        assert refused.exit_code == 2 and "--query-case takes lower, capitalised, upper" in message, wrong
