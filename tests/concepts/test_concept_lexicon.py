"""The shipped concept lexicon loads whole, answers names and the hierarchy, and any bad file is a one-line error
naming that file (never a half-loaded lexicon)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from indexer.asset_paths import SHIPPED_CONCEPTS
from indexer.concepts import ConceptLexicon, LexiconError

DOG = "02084071-n"
BEAGLE = "02088364-n"


@pytest.fixture(scope="module")
def lexicon() -> ConceptLexicon:
    return ConceptLexicon.load(SHIPPED_CONCEPTS)


def test_shipped_lexicon_counts_and_names(lexicon: ConceptLexicon) -> None:
    manifest = json.loads((SHIPPED_CONCEPTS / "manifest.json").read_text(encoding="utf-8"))
    assert len(lexicon) == manifest["concepts"]
    assert 8_000 <= len(lexicon) <= 12_000
    assert set(lexicon.languages) == set(manifest["languages"])
    assert not {"he", "el", "bn", "sw"} & set(lexicon.languages)
    assert lexicon.english(DOG) == "dog"
    assert lexicon.names(DOG, "fr")[0] == "chien"
    assert lexicon.names(DOG, "de")[0] == "Hund"
    assert lexicon.names(DOG, "ko")[0] == "개"
    assert lexicon.name(DOG, "ja") == "犬"
    assert lexicon.names(DOG, "en")[:2] == ["dog", "domestic dog"]
    assert lexicon.english("01514668-n") == "rooster"  # a class's everyday name, not WordNet's "cock"
    assert lexicon.english("02123159-n") == "tiger cat"  # not the description "a cat having a striped coat"
    assert lexicon.name("02778669-n", "fr") == "balle"  # the toy, not the dance ("bal")
    assert DOG in lexicon.find("chien", "fr")
    assert DOG in lexicon.find("Dog", "en")
    assert lexicon.find("no such name", "fr") == []


def test_tags_never_say_a_slur_a_race_or_a_proper_name(lexicon: ConceptLexicon) -> None:
    from training.concepts.build import NEVER_TAGS, OFFENSIVE_GLOSS

    listed = {line.split("\t")[0] for line in NEVER_TAGS.read_text(encoding="utf-8").splitlines()[4:]}
    assert len(listed) > 100
    for concept in lexicon.ids:
        assert not OFFENSIVE_GLOSS.search(lexicon.concept(concept).gloss), concept
        assert concept not in listed and not listed & set(lexicon.ancestors(concept)), concept
    for gone in ("08873622-n", "09333512-n", "09636339-n", "09638009-n", "09815188-n", "10702781-n"):
        assert gone not in lexicon.concepts  # London, Lake Tanganyika, Black, a slur, an insult, terrorist
    for kept in ("03329302-n", "03397947-n", "10560637-n", "10287213-n"):
        assert kept in lexicon.concepts  # Ferris wheel, Frisbee, scientist, man


def test_names_are_in_their_script(lexicon: ConceptLexicon) -> None:
    from training.concepts.names import in_script

    for lang in ("ko", "ja", "zh", "ar", "ru"):
        for concept in lexicon.ids:
            for name in lexicon.names(concept, lang):
                assert in_script(name, lang), (lang, concept, name)


def test_hierarchy(lexicon: ConceptLexicon) -> None:
    assert DOG in lexicon.ancestors(BEAGLE)
    assert lexicon.ancestors(BEAGLE, depth=1).keys() == set(lexicon.hypernyms(BEAGLE))
    assert BEAGLE in lexicon.descendants(DOG)
    assert all(DOG in lexicon.hypernyms(child) for child in lexicon.hyponyms(DOG))
    classes = lexicon.imagenet_concepts()
    assert len(classes) == 1000 and classes[162] == BEAGLE
    with pytest.raises(KeyError, match="no concept"):
        lexicon.english("99999999-n")


def test_loads_in_under_two_seconds(tmp_path: Path) -> None:
    folder = copy_of_lexicon(tmp_path)  # a folder this process has not read yet: read and checked from disk
    started = time.perf_counter()
    ConceptLexicon.load(folder)
    assert time.perf_counter() - started < 2.0


def test_a_process_shares_one_lexicon_until_a_file_changes(tmp_path: Path) -> None:
    folder = copy_of_lexicon(tmp_path)
    first = ConceptLexicon.load(folder)
    assert ConceptLexicon.load(folder) is first  # the service's fusion and tagger share one
    assert ConceptLexicon.load(folder, languages=["fr"]) is not first  # another selection is its own
    path = folder / "names" / "de.tsv"
    data = bytearray(path.read_bytes())
    data[-3] = ord("x")  # the same size, altered in place after the first load
    path.write_bytes(bytes(data))
    assert_one_line_naming(folder, "names/de.tsv")


def copy_of_lexicon(tmp_path: Path) -> Path:
    folder = tmp_path / "concepts"
    shutil.copytree(SHIPPED_CONCEPTS, folder)
    return folder


def assert_one_line_naming(folder: Path, name: str) -> None:
    with pytest.raises(LexiconError) as caught:
        ConceptLexicon.load(folder)
    message = str(caught.value)
    assert "\n" not in message
    assert str(folder / name) in message, message


@pytest.mark.parametrize("name", ["manifest.json", "concepts.tsv", "names/fr.tsv"])
def test_missing_file_names_it(tmp_path: Path, name: str) -> None:
    folder = copy_of_lexicon(tmp_path)
    (folder / name).unlink()
    assert_one_line_naming(folder, name)


@pytest.mark.parametrize("name", ["concepts.tsv", "names/ja.tsv"])
def test_truncated_file_names_it(tmp_path: Path, name: str) -> None:
    folder = copy_of_lexicon(tmp_path)
    path = folder / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert_one_line_naming(folder, name)


def test_altered_file_names_it(tmp_path: Path) -> None:
    folder = copy_of_lexicon(tmp_path)
    path = folder / "names" / "de.tsv"
    data = bytearray(path.read_bytes())
    data[-3] = ord("x")
    path.write_bytes(bytes(data))
    assert_one_line_naming(folder, "names/de.tsv")


def test_wrong_format_with_a_matching_manifest_names_the_file(tmp_path: Path) -> None:
    """A file that fits its manifest entry but not the format (a names file with a third column)."""
    import hashlib

    folder = copy_of_lexicon(tmp_path)
    path = folder / "names" / "fr.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], lines[1] + "\textra", *lines[2:]]) + "\n", encoding="utf-8")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["files"]["names/fr.tsv"] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    assert_one_line_naming(folder, "names/fr.tsv")


def test_bad_manifest_names_it(tmp_path: Path) -> None:
    folder = copy_of_lexicon(tmp_path)
    (folder / "manifest.json").write_text("{not json", encoding="utf-8")
    assert_one_line_naming(folder, "manifest.json")
    (folder / "manifest.json").write_text(json.dumps({"format": 1}), encoding="utf-8")
    assert_one_line_naming(folder, "manifest.json")


def test_unknown_language_names_the_manifest(tmp_path: Path) -> None:
    with pytest.raises(LexiconError, match="no names file for he"):
        ConceptLexicon.load(SHIPPED_CONCEPTS, languages=["fr", "he"])
