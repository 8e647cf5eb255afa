"""`polyglot tags vocab build|list` and `polyglot tag` through typer's CliRunner, on the service's fake models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from api_fixtures import fake_load_models, fake_text_embedder
from conftest import FakeImageEncoder, clear_polyglot_env, write_random_images
from typer.testing import CliRunner

import indexer.query as query
from app.cli import cli
from indexer.asset_paths import SHIPPED_CONCEPTS

runner = CliRunner()
ROWS = [
    {"image": "1.jpg", "lang": "fr", "text": "Un chien court sur la plage", "source": "t"},
    {"image": "2.jpg", "lang": "fr", "text": "Deux chiens jouent sur la plage", "source": "t"},
    {"image": "3.jpg", "lang": "fr", "text": "Une voiture rouge dans la rue", "source": "t"},
    {"image": "3.jpg", "lang": "fr", "text": "La voiture rouge", "source": "t"},
    {"image": "1.jpg", "lang": "en", "text": "A dog runs on the beach", "source": "t"},
]


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", FakeImageEncoder.name)
    monkeypatch.setattr(query, "load_models", fake_load_models)
    monkeypatch.setattr(query.models, "load_models", fake_load_models)  # what load_text_tower calls
    (tmp_path / "captions.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(cli, list(args))
    return result.exit_code, result.output


def test_build_list_and_rebuild_a_vocabulary(cli_env: Path) -> None:
    code, output = invoke("tags", "vocab", "build", "--lang", "fr", "captions.jsonl", "--min-count", "2", "-q")
    assert code == 0, output
    assert "fr v1: 3 tags" in output  # seen twice: plage, rouge, voiture ("chien"/"chiens" once each)
    vocab = json.loads((cli_env / "home/index/tags/fr/v1/vocab.json").read_text(encoding="utf-8"))
    assert vocab["words"] == ["plage", "rouge", "voiture"] and vocab["counts"] == [2, 2, 2]
    code, output = invoke("tags", "vocab", "build", "--lang", "fr", "captions.jsonl", "-q")
    assert code == 0 and "fr v2" in output
    code, output = invoke("tags", "vocab", "list", "--json")
    assert code == 0, output
    listing = json.loads(output)
    assert listing[0]["lang"] == "fr" and listing[0]["version"] == 2 and listing[0]["versions"] == [1, 2]


def test_word_list_vocabulary(cli_env: Path) -> None:
    (cli_env / "words.txt").write_text("rive\nbanque\nchien de berger\n", encoding="utf-8")
    code, output = invoke("tags", "vocab", "build", "--lang", "fr", "--word-list", "words.txt", "-q")
    assert code == 0, output
    assert "fr v1: 3 tags" in output


def test_tag_an_image_as_json(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYGLOT_TAG_MAX_SIMILARITY", "1")  # the fake tower's vectors are close: keep near-synonyms
    assert invoke("tags", "vocab", "build", "--lang", "fr", "captions.jsonl", "--min-count", "1", "-q")[0] == 0
    image = write_random_images(cli_env / "photos", 1)[0]
    code, output = invoke("tag", str(image), "--lang", "fr", "--k", "3", "--json", "--source", "imagenet")
    assert code == 0, output
    tags = json.loads(output)["fr"]
    assert len(tags) == 3
    assert {t["source"] for t in tags} == {"red", "green", "blue"}  # the fake CNN's three classes
    assert {t["english"] for t in tags} == {"red", "green", "blue"}
    assert len({t["tag"] for t in tags}) == 3


def test_user_mistakes_are_one_line_errors(cli_env: Path) -> None:
    code, output = invoke("tags", "vocab", "build", "--lang", "ja", "captions.jsonl")
    assert code == 2 and "does not cover 'ja'" in output
    code, output = invoke("tags", "vocab", "build", "--lang", "fr", "missing.jsonl")
    assert code == 2 and "missing.jsonl is not a file" in " ".join(output.split())
    code, output = invoke("tags", "vocab", "build", "--lang", "fr", "captions.jsonl", "--min-count", "50")
    assert code == 2 and "lower --min-count" in output
    assert invoke("tags", "vocab", "build", "--lang", "fr", "captions.jsonl", "-q")[0] == 0
    code, output = invoke("tag", "captions.jsonl", "--lang", "fr")
    assert code == 2 and "not an image" in output
    image = write_random_images(cli_env / "photos", 1)[0]
    code, output = invoke("tag", str(image), "--lang", "he")  # Hebrew: no lexicon names, no vocabulary
    assert code == 2 and "no tag vocabulary for he" in output and "available languages: af, ar" in output
    code, output = invoke("tag", str(image), "--lang", "fr", "--source", "wiki")
    assert code == 2 and "unknown --source" in output
    assert "Traceback" not in output


def test_tag_uses_the_indexed_english_captions_when_present(cli_env: Path) -> None:
    from indexer.captions import Caption, CaptionIndex

    assert invoke("tags", "vocab", "build", "--lang", "fr", "captions.jsonl", "--min-count", "1", "-q")[0] == 0
    index = CaptionIndex.open(cli_env / "home/index/captions", fake_text_embedder(), None)
    index.add([Caption("en", "a dog runs on the beach"), Caption("en", "a red car in the street")])
    index.close()
    image = write_random_images(cli_env / "photos", 1)[0]
    code, output = invoke("tag", str(image), "--lang", "fr", "--k", "2", "--json", "--source", "auto")
    assert code == 0, output
    sources = {t["source"] for t in json.loads(output)["fr"]}
    assert sources <= {"dog", "runs", "beach", "red", "car", "street"}
    code, output = invoke("tag", str(image), "--lang", "fr", "--k", "2", "--json", "--source", "imagenet")
    assert code == 0 and {t["source"] for t in json.loads(output)["fr"]} <= {"red", "green", "blue"}


TEN = ["en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk"]


def test_shipped_vocabularies_tag_on_a_fresh_index(cli_env: Path) -> None:
    """No `tags vocab build`: ten languages from the shipped words; the tables list the best score first."""
    from indexer.asset_paths import SHIPPED_TAGS
    from indexer.tagging.shipped import ShippedWords

    image = write_random_images(cli_env / "photos", 1)[0]
    code, output = invoke("tag", str(image), "--lang", ",".join(TEN), "--k", "3", "--json", "--source", "imagenet")
    assert code == 0, output
    answer = json.loads(output)
    assert list(answer) == TEN
    for lang, tags in answer.items():
        assert tags and {t["tag"] for t in tags} <= set(ShippedWords(lang, SHIPPED_TAGS / f"{lang}.tsv").shown)
    code, output = invoke("tag", str(image), "--lang", "fr,de", "--k", "3", "--source", "imagenet")
    assert code == 0, output
    for lang in ("fr", "de"):
        table = output.split(f"— {lang}")[1].split("—")[0]
        scores = [float(s) for s in re.findall(r"(?<![\d.])-?\d\.\d{3}(?![\d.])", table)]
        assert len(scores) == len(answer[lang]) and scores == sorted(scores, reverse=True)
    code, output = invoke("tags", "vocab", "list", "--json")
    listing = {row["lang"]: row for row in json.loads(output)}
    assert listing["fr"]["kind"] == "shipped" and set(TEN) <= set(listing)


def test_embed_the_shipped_vocabularies_at_set_up(cli_env: Path) -> None:
    code, output = invoke("tags", "vocab", "embed", "--lang", "fr,de", "-q")
    assert code == 0, output
    assert "fr: " in output and "tags embedded for text side" in output
    code, output = invoke("tags", "vocab", "embed", "--lang", "fr", "-q")
    assert code == 0 and "tags cached for text side" in output  # once per text side
    assert len(list((cli_env / "home/cache/tag-vectors").iterdir())) == 1
    code, output = invoke("tags", "vocab", "embed", "--lang", "eo")
    assert code == 2 and "no shipped tag vocabulary for eo" in output


def test_ship_keeps_more_translations_per_class_name_when_asked(cli_env: Path) -> None:
    """`tags vocab ship` on a one-word dictionary: the ImageNet class names ending in "shark" keep their head's
    translations, three by default, as many as --per-class-word asks; the manifest's command says so."""
    (cli_env / "lexicons").mkdir()
    sharks = ["requin", "squale", "roussette", "aiguillat", "milandre"]
    (cli_env / "lexicons/en-fr.tsv").write_text("".join(f"shark\t{w}\n" for w in sharks), encoding="utf-8")
    caption = json.dumps({"image": "a.jpg", "lang": "en", "text": "A shark in the sea", "source": "t"}) + "\n"
    for path in (
        "m30k-f8k/captions.jsonl",
        "m30k-text/captions.jsonl",
        "more-langs/f8k-captions.jsonl",
        "more-langs/text-captions.jsonl",
    ):
        (cli_env / "data" / path).parent.mkdir(parents=True, exist_ok=True)
        (cli_env / "data" / path).write_text(caption, encoding="utf-8")
    (cli_env / "data/m30k-f8k/splits").mkdir()
    (cli_env / "data/m30k-f8k/splits/train.txt").write_text("a.jpg\n", encoding="utf-8")
    (cli_env / "data/m30k-f8k/splits/dev.txt").write_text("", encoding="utf-8")

    def ship(*extra: str) -> tuple[list[str], dict[str, object]]:
        code, output = invoke(
            "tags", "vocab", "ship", "--lexicons", "lexicons", "--data", "data", "--out", "out", "--lang", "fr", *extra
        )
        assert code == 0, output
        words = [line.split("\t")[0] for line in (cli_env / "out/fr.tsv").read_text(encoding="utf-8").splitlines()]
        return words, json.loads((cli_env / "out/manifest.json").read_text(encoding="utf-8"))

    words, manifest = ship()
    assert words == sharks[:3] and str(manifest["command"]).endswith("--data ../shared/data")
    words, manifest = ship("--per-class-word", "5")
    assert words == sharks and str(manifest["command"]).endswith("--per-class-word 5")
    assert manifest["settings"] == {
        "max_words": 4000,
        "per_word": 3,
        "per_class_word": 5,
        "min_count": 20,
        "min_languages": 20,
        "citation_forms": True,
        "borrowed_animal_names": False,
    }


def test_tags_by_concept_carry_the_concept_in_every_language(cli_env: Path) -> None:
    """The default: one ranking of the lexicon's concepts, named in each language; captions indexed or not."""
    from indexer.captions import Caption, CaptionIndex
    from indexer.concepts import ConceptLexicon

    lexicon = ConceptLexicon.load(SHIPPED_CONCEPTS)
    image = write_random_images(cli_env / "photos", 1)[0]
    code, output = invoke("tag", str(image), "--lang", "en,fr,eu", "--k", "5", "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert list(answer) == ["en", "fr", "eu"]  # Basque: names from the lexicon only, no vocabulary ships
    for lang, tags in answer.items():
        assert len(tags) == 5
        for t in tags:
            assert t["concept"] in lexicon and t["english"] == lexicon.english(t["concept"])
            assert t["source"] in ("lexicon", "vocabulary")
            if t["source"] == "lexicon":
                assert t["tag"] in lexicon.names(t["concept"], lang)
    assert [t["tag"] for t in answer["en"]] == [t["english"] for t in answer["en"]]
    index = CaptionIndex.open(cli_env / "home/index/captions", fake_text_embedder(), None)
    index.add([Caption("en", "a dog runs on the beach"), Caption("en", "a red car in the street")])
    index.close()
    code, again = invoke("tag", str(image), "--lang", "en,fr,eu", "--k", "5", "--json")
    assert code == 0 and json.loads(again) == answer  # the caption collection changes nothing
    code, table = invoke("tag", str(image), "--lang", "fr", "--k", "2")
    assert code == 0 and answer["fr"][0]["concept"] in table


def test_a_damaged_lexicon_is_one_line_naming_the_file(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    broken = cli_env / "concepts"
    shutil.copytree(SHIPPED_CONCEPTS, broken)
    names = broken / "names" / "fr.tsv"
    names.write_bytes(names.read_bytes()[:1000])
    monkeypatch.setenv("POLYGLOT_TAG_LEXICON_DIR", str(broken))
    image = write_random_images(cli_env / "photos", 1)[0]
    code, output = invoke("tag", str(image), "--lang", "fr")
    assert code == 2 and "Traceback" not in output
    assert str(names) in "".join(output.split("\n")) and "truncated" in output
