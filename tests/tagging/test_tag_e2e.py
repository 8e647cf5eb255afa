"""End to end on the shipped models: `polyglot tags vocab build`, `polyglot tag`, and eq. 5 recomputed by hand."""

from __future__ import annotations

import json
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from conftest import clear_polyglot_env
from PIL import Image, ImageDraw
from typer.testing import CliRunner

from app.cli import cli
from indexer.asset_paths import shipped_tower_path
from indexer.encoders.factory import build_image_encoder
from indexer.images import load_image
from indexer.query import load_text_tower
from indexer.settings import Settings

pytestmark = pytest.mark.slow
REPO_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"
WORDS = ["plage", "mer", "ciel", "sable", "ordinateur", "cuisine", "chien", "voiture", "montagne", "neige", "vélo"]


def beach_photo(path: Path) -> Path:
    """Sky over sea over sand."""
    image = Image.new("RGB", (320, 240), (120, 180, 235))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 110, 320, 160), fill=(20, 90, 160))
    draw.rectangle((0, 160, 320, 240), fill=(225, 200, 150))
    image.save(path)
    return path


@pytest.mark.skipif(not (shipped_tower_path() / "config.json").exists(), reason="no shipped student yet")
def test_vocabulary_then_tags_with_the_shipped_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_MODELS_DIR", str(REPO_MODELS))
    words = sorted(WORDS)
    (tmp_path / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    runner = CliRunner()
    built = runner.invoke(cli, ["tags", "vocab", "build", "--lang", "fr", "--word-list", "words.txt", "-q"])
    assert built.exit_code == 0, built.output
    photo = str(beach_photo(tmp_path / "beach.png"))
    # The built word list serves the paper's source tags (by concept, the lexicon names the tags).
    result = runner.invoke(cli, ["tag", photo, "--lang", "fr", "--k", "3", "--json", "--source", "imagenet"])
    assert result.exit_code == 0, result.output
    tags = json.loads(result.output)["fr"]
    assert len(tags) == 3 and len({t["tag"] for t in tags}) == 3
    assert all(t["tag"] in words for t in tags)
    # Recompute eq. 5 with the same shipped models (the student), independently of the Tagger's code path.
    settings = Settings(models_dir=REPO_MODELS)  # the CLI's settings: the same image precision (int8 by default)
    text = load_text_tower(settings, alignments=False, clc=False)
    encoder = build_image_encoder(settings, text.tower.image_encoder)
    encoder.load()
    image = text.tower.image_space.apply(encoder.predict([load_image(tmp_path / "beach.png")]))[0]
    # Text vectors are batch-dependent at the 1e-3 level (padding to the batch's longest text): the vocabulary is
    # embedded in the CLI's batch, the source tags (ImageNet class names) were embedded at load in batches of 256,
    # here alone.
    targets = text.embed(words)
    sources = text.embed([t["source"] for t in tags])
    max_similarity = settings.tagging.max_similarity

    def assign(row_order: tuple[int, ...]) -> dict[int, tuple[str, float]]:
        """Each source row in turn takes its best word not taken yet and not a near-synonym of one taken."""
        taken: list[int] = []
        chosen: dict[int, tuple[str, float]] = {}
        for row in row_order:
            scores = 0.65 * targets @ image + 0.35 * targets @ sources[row]
            best = next(
                int(i)
                for i in np.argsort(-scores)
                if i not in taken and (not taken or float(np.max(targets[taken] @ targets[i])) < max_similarity)
            )
            taken.append(best)
            chosen[row] = (words[best], float(scores[best]))
        return chosen

    # The answer lists the tags by score, not in the order their source rows were assigned (the image's source tags,
    # best class first), so the rows are replayed in every order: one of them must give exactly these tags.
    replays = [assign(order) for order in permutations(range(len(tags)))]
    matching = [r for r in replays if all(r[j][0] == tag["tag"] for j, tag in enumerate(tags))]
    assert matching, [t["tag"] for t in tags]
    for j, tag in enumerate(tags):
        assert tag["score"] == pytest.approx(matching[0][j][1], abs=5e-3)
    assert [t["score"] for t in tags] == sorted((t["score"] for t in tags), reverse=True)
