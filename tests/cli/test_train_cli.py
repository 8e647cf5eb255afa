"""``polyglot train`` / ``polyglot evaluate`` through typer's CliRunner: happy path and clear user errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import indexer.encoders.factory as factory_module
from app.cli import cli
from indexer.model_files import MUSE_ONNX
from training.data.synthetic import ToyImageEncoder, ToyTextEncoder, make_dataset

runner = CliRunner()


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    torch.set_num_threads(1)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    # Every encoder is built by the one factory (training, the commands, the query pipeline's model loading):
    # its low-level constructors are the one place to patch.
    monkeypatch.setattr(factory_module, "create_image_encoder", lambda spec, **_: ToyImageEncoder())
    monkeypatch.setattr(factory_module, "create_text_encoder", lambda spec, *_, **__: ToyTextEncoder())
    return make_dataset(tmp_path / "data")


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(cli, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def train_toy(data: Path, tower: Path, langs: str, epochs: int) -> Path:
    """A tiny VSE tower on the toy data set, through the CLI."""
    code, output = invoke(
        "train", "--data", data, "--out", tower, "--langs", langs, "--loss", "vse", "--epochs", str(epochs),
        "--batch-size", "8", "--hidden-dims", "32", "--dropouts", "0,0",
    )  # fmt: skip
    assert code == 0, output
    return tower


def test_train_then_evaluate(toy: Path, tmp_path: Path) -> None:
    tower = train_toy(toy, tmp_path / "tower", "en", epochs=3)
    assert (tower / "model.safetensors").exists() and "polyglot train --data" in (tower / "README.md").read_text()
    code, output = invoke(
        "evaluate", "--data", toy, "--split", "dev", "--tower", tower, "--json", tmp_path / "r.json",
        "--by-source", tmp_path / "s.json",
    )  # fmt: skip
    assert code == 0, output
    assert "pool 15 images" in output and "by caption source" in output
    by_source = json.loads((tmp_path / "s.json").read_text())
    assert set(by_source) == {"de", "en", "fr"} and set(by_source["en"]) == {"synthetic"}
    report = json.loads((tmp_path / "r.json").read_text())
    assert by_source["en"]["synthetic"]["t2i"] == report["languages"]["en"]["t2i"]  # one source: the same recalls
    assert report["pool_images"] == 15 and set(report["languages"]) == {"de", "en", "fr"}
    saved = json.loads((tower / "config.json").read_text())["training"]["dev"]
    for lang, block in report["languages"].items():  # the served pipeline of one tower = training's measure
        assert block.pop("route") == "toy-text:tower"  # the one model: its encoder and folder
        assert block == saved["languages"][lang]
    assert report["served"]["model"] == "toy-text:tower" and report["served"]["tower_path"] == str(tower)
    assert report["served"]["index_kind"] == "flat" and report["served"]["precision"] is None
    code, output = invoke("evaluate", "--data", toy, "--baseline", "label-bridge", "--json", tmp_path / "b.json")
    assert code == 0, output
    assert json.loads((tmp_path / "b.json").read_text())["pool_images"] == 15


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--data", "{missing}", "--out", "{out}"], "does not exist"),
        (["train", "--data", "{data}", "--out", "{out}", "--split", "test"], "no split 'test'"),
        (["train", "--data", "{data}", "--out", "{out}", "--langs", "en,xx"], "xx have no captions"),
        (["train", "--data", "{data}", "--out", "{out}", "--loss", "triplet"], "unknown loss"),
        (["train", "--data", "{data}", "--out", "{out}", "--loss", "vse", "--rho", "2"], "--rho do not apply"),
        (["train", "--data", "{data}", "--out", "{out}", "--space", "cosine"], "unknown training space"),
        (["evaluate", "--data", "{data}", "--tower", "{out}"], "config.json is missing"),
        (["evaluate", "--data", "{data}", "--baseline", "oracle"], "unknown baseline"),
    ],
)
def test_user_errors_are_clear(toy: Path, tmp_path: Path, args: list[str], message: str) -> None:
    values = {"missing": tmp_path / "nope", "out": tmp_path / "out", "data": toy}
    code, output = invoke(*(a.format(**values) for a in args))
    assert code == 2 and "error:" in output and message in " ".join(output.split()), output


def test_encoder_mismatch_is_refused(toy: Path, tmp_path: Path) -> None:
    code, _ = invoke("train", "--data", toy, "--out", tmp_path / "t", "--epochs", "1", "--batch-size", "8")
    assert code == 0
    code, output = invoke("evaluate", "--data", toy, "--tower", tmp_path / "t", "--text-encoder", "muse")
    assert code == 2 and "trained with text encoder 'toy-text', not 'muse'" in output


@pytest.mark.slow
def test_end_to_end_with_the_bundled_encoders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real EfficientNet-Lite0 + mUSE on the tiny data set: train, then evaluate the saved tower."""
    models_dir = Path("var/models").resolve()
    if not MUSE_ONNX.path(models_dir).exists():
        pytest.skip("bundled mUSE not fetched (polyglot models fetch)")
    torch.set_num_threads(1)
    monkeypatch.setenv("POLYGLOT_MODELS_DIR", str(models_dir))
    monkeypatch.setenv("POLYGLOT_CACHE_DIR", str(tmp_path / "cache"))
    data = make_dataset(tmp_path / "data")
    tower = tmp_path / "tower"
    code, output = invoke(
        "train", "--data", data, "--out", tower, "--langs", "en", "--loss", "m3l", "--bounded",
        "--text-encoder", "muse", "--image-encoder", "efficientnet-lite0", "--epochs", "2", "--batch-size", "8",
    )  # fmt: skip
    assert code == 0, output
    code, output = invoke("evaluate", "--data", data, "--tower", tower, "--json", tmp_path / "r.json")
    assert code == 0, output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["pool_images"] == 15 and all(0 <= b["mR"] <= 1 for b in report["languages"].values())


def test_train_method_through_the_cli(toy: Path, tmp_path: Path) -> None:
    for method in ("cca", "pcca", "dpcca-b"):
        out = tmp_path / method
        code, output = invoke(
            "train", "--data", toy, "--out", out, "--method", method, "--langs", "en,de", "--cca-dim", "4",
            "--holdout", "0.2", "--epochs", "3", "--batch-size", "8", "--json", tmp_path / f"{method}.json",
        )  # fmt: skip
        assert code == 0, output
        report = json.loads((tmp_path / f"{method}.json").read_text())
        assert set(report["dev"]) == {"en→de", "de→en"} and report["dev"]["en→de"]["queries"] == 15
        from training.align.alignment import SavedAlignment

        saved = SavedAlignment(out)
        assert saved.project("de", np.zeros((2, saved_dim(saved)), dtype=np.float32)).shape == (2, 4)
    code, output = invoke("train", "--data", toy, "--out", tmp_path / "x", "--method", "cca", "--langs", "en")
    assert code == 2 and "two languages" in output


def saved_dim(saved: object) -> int:
    from training.align.alignment import SavedAlignment

    assert isinstance(saved, SavedAlignment)
    if saved.linear is not None:
        return saved.linear.v.shape[0]
    return saved.branches["g"].net[0].in_features


def test_translator_fit_and_curves_through_the_cli(toy: Path, tmp_path: Path) -> None:
    from training.data.synthetic import WORDS

    tower = train_toy(toy, tmp_path / "pivot", "en", epochs=3)
    lexicon = tmp_path / "en-de.tsv"
    lexicon.write_text("".join(f"{en}\t{de}\n" for en, de in zip(WORDS["en"], WORDS["de"], strict=True)) + "x\tx\n")
    code, output = invoke(
        "translator", "fit", "--lexicon", lexicon, "--lang", "de", "--out", tmp_path / "tr", "--tower", tower,
        "--rcsls-steps", "5", "--k", "2",
    )  # fmt: skip
    assert code == 0, output
    meta = json.loads((tmp_path / "tr" / "translator.json").read_text())
    assert meta["report"]["train_pairs"] + meta["report"]["test_words"] == 6  # the identity pair is dropped
    assert "p1_identity" in meta["report"]
    code, output = invoke(
        "translator", "curves", "--data", toy, "--lang", "de", "--translator", tmp_path / "tr", "--tower", tower,
        "--sizes", "5,0", "--max-steps", "4", "--json", tmp_path / "c.json", "--plot", tmp_path / "c.png",
    )  # fmt: skip
    assert code == 0, output
    curves = json.loads((tmp_path / "c.json").read_text())
    assert set(curves["curves"]) == {"FS", "T1", "T2"} and curves["sizes"][0] == 5
    assert {"zero_shot", "T2_no_captions"} <= set(curves)
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    code, output = invoke("translator", "curves", "--data", toy, "--lang", "de", "--protocols", "T3")
    assert code == 2 and "--protocols" in output


def test_train_with_a_text_corpus_through_the_cli(toy: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"image": "t1.jpg", "lang": "en", "text": "red next to blue", "source": "multi30k-task1"},
        {"image": "t1.jpg", "lang": "de", "text": "ein rot und blau Bild", "source": "multi30k-task1"},
        {"image": "t2.jpg", "lang": "en", "text": "green next to black", "source": "multi30k-task1"},
        {"image": "t2.jpg", "lang": "fr", "text": "une image vert et noir", "source": "multi30k-task1"},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "tower"
    code, output = invoke(
        "train", "--data", toy, "--out", out, "--langs", "en", "--loss", "vse", "--epochs", "2", "--batch-size", "8",
        "--hidden-dims", "16", "--dropouts", "0,0", "--text-corpus", corpus, "--text-corpus", corpus,
        "--distill-loss", "infonce", "--distill-batch", "2",
    )  # fmt: skip
    assert code == 0, output
    card = json.loads((out / "config.json").read_text())["training"]
    assert card["distilled"]["students"] == {"de/multi30k-task1": 2, "fr/multi30k-task1": 2}  # the file twice
    assert f"--text-corpus {corpus} --text-corpus {corpus}" in card["command"]
    code, output = invoke("train", "--data", toy, "--out", out, "--text-corpus", tmp_path / "missing")
    assert code == 2 and "error: text corpus" in output


def test_train_lists_its_families_and_keeps_the_old_spellings_hidden() -> None:
    code, output = invoke("train", "--help")
    assert code == 0 and all(f"│ {family} " in output for family in ("student", "tower", "align", "smalr")), output
    code, output = invoke("--help")
    assert code == 0 and "train-student" not in output
    for words in (["train-student", "--help"], ["train", "student", "--help"]):
        code, output = invoke(*words)
        assert code == 0 and "--trunk-lr" in output and "--steps" in output and "--warmup" in output


def test_the_old_spelling_runs_the_family_it_names(toy: Path, tmp_path: Path) -> None:
    """`polyglot train --data … [--method tower]` (what model cards recorded) = `polyglot train tower --data …`:
    the same weights, the same output, each model card recording the spelling it was given."""
    tiny = ["--data", toy, "--langs", "en,de", "--loss", "vse", "--epochs", "2", "--batch-size", "8",
            "--hidden-dims", "32", "--dropouts", "0,0"]  # fmt: skip
    runs = {
        "new": ["train", "tower", *tiny],
        "old": ["train", *tiny],
        "method": ["train", "--method", "tower", *tiny],
    }
    outputs, weights = {}, {}
    for name, args in runs.items():
        code, output = invoke(*args, "--out", tmp_path / name)
        assert code == 0, output
        lines = [line for line in re.split(r"[\r\n]", output) if line.strip() and "%|" not in line]  # no progress
        outputs[name] = re.sub(r", \d+ s\)", ")", "\n".join(lines).replace(str(tmp_path / name), "OUT"))
        weights[name] = (tmp_path / name / "model.safetensors").read_bytes()
    assert weights["new"] == weights["old"] == weights["method"]
    assert outputs["new"] == outputs["old"] == outputs["method"]
    assert "polyglot train tower --data" in (tmp_path / "new" / "README.md").read_text()
    assert "polyglot train --data" in (tmp_path / "old" / "README.md").read_text()
    code, output = invoke("train", "--data", toy, "--out", tmp_path / "x", "--method", "nope", "--langs", "en,de")
    assert code == 2 and "unknown method 'nope'" in output


def test_an_alignment_in_the_new_spelling_records_it(toy: Path, tmp_path: Path) -> None:
    code, output = invoke("train", "align", "--method", "pcca", "--data", toy, "--out", tmp_path / "a",
                          "--langs", "en,de", "--cca-dim", "4", "--holdout", "0.2")  # fmt: skip
    assert code == 0, output
    saved = json.loads((tmp_path / "a" / "alignment.json").read_text())
    assert saved["command"].startswith("polyglot train align --method pcca --data")
    code, output = invoke("train", "align", "--method", "pcca", "--data", toy, "--data", toy, "--out",
                          tmp_path / "b", "--langs", "en,de")  # fmt: skip
    assert code == 2 and "need --disjoint" in output


def recorded_commands() -> list[str]:
    """Every `polyglot train …` a shipped model card or the README records."""
    commands = []
    for card in sorted([*Path("indexer/assets").glob("**/*.json"), *Path("training/assets").glob("**/*.json")]):
        saved = json.loads(card.read_text())
        command = saved.get("command") or saved.get("training", {}).get("command")
        if isinstance(command, str) and command.startswith("polyglot train"):
            commands.append(command)
    for line in Path("README.md").read_text().splitlines():
        if ".venv/bin/polyglot train" in line:
            commands.append(line.split(".venv/bin/", 1)[1].split("  #")[0].rstrip(" \\"))
    return commands


def test_every_recorded_command_still_parses() -> None:
    """Saved model cards (the old spelling) and the README (the new one) name options their family still has."""
    import shlex

    from typer.main import get_command

    commands = recorded_commands()
    assert sum(c.startswith("polyglot train --") for c in commands) >= 4  # the shipped towers and alignments
    assert sum(c.startswith("polyglot train tower") for c in commands) >= 2
    for recorded in commands:
        args, command, ctx, name = shlex.split(recorded)[1:], get_command(cli), None, "polyglot"
        while True:  # the root, then `train`, then the family the words name
            ctx = command.make_context(name, list(args), parent=ctx)
            if not hasattr(command, "resolve_command"):
                break
            name, command, args = command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        assert ctx.params.get("out") is not None, recorded
