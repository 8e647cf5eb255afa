"""Cleaning a concept's names: script, spelling, order; and the builder on a small data folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer.concepts import ConceptLexicon
from training.concepts.build import Concept, never_tagged, proper_name
from training.concepts.build import main as build_main
from training.concepts.names import Candidate, clean_names, in_script, name_order, normalise_name


def test_script_per_language() -> None:
    assert in_script("개", "ko") and not in_script("犬", "ko")  # Hanja is no Korean name here
    assert in_script("犬", "ja") and in_script("ボール", "ja") and in_script("まり", "ja")
    assert not in_script("ball", "ja")
    assert in_script("собака", "ru") and not in_script("Java", "ru")
    assert in_script("كلب", "ar") and not in_script("xewa", "ar") and not in_script("ванна", "ar")
    assert in_script("arc-en-ciel", "fr") and in_script("chat tigré", "fr")


def test_normalised_spelling() -> None:
    assert normalise_name("كلْب", "ar") == "كلب"
    assert normalise_name("golf_cart (vehicle)", "en") == "golf cart"
    assert normalise_name("鯊魚", "zh", lambda text: text.replace("鯊", "鲨").replace("魚", "鱼")) == "鲨鱼"


def test_clean_drops_other_scripts_and_copied_english() -> None:
    rows = [("개", "Wiktionary", 0), ("犬", "Wiktionary", 1), ("dog", "Wiktionary", 2)]
    kept, rejected = clean_names(rows, "ko", ["dog"])
    assert [name for name, _, _ in kept] == ["개"]
    assert rejected["script"] == 2


def test_order_prefers_dictionary_then_sources_then_unambiguous() -> None:
    candidates = [Candidate("bal", 1, 0), Candidate("couille", 1, 1), Candidate("balle", 1, 2)]
    ordered = name_order(candidates, {"bal": 9, "couille": 8, "balle": 19}, ["ball"], {"balle": frozenset({"ball"})})
    assert ordered[0] == "balle"
    two_sources = [Candidate("canis familiaris", 1, 0), Candidate("toutou", 1, 1), Candidate("chien", 2, 2)]
    assert name_order(two_sources, {}, ["dog", "domestic dog", "Canis familiaris"]) == [
        "chien",
        "toutou",
        "canis familiaris",
    ]
    shared = [Candidate("구", 1, 0), Candidate("개", 1, 1)]
    assert name_order(shared, {"구": 12, "개": 1}, ["dog"])[0] == "개"


def test_builder_writes_a_lexicon_the_loader_reads(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    header = "synset\tlexname\tfreq\thypernyms\tlemmas\tgloss\n"
    rows = [
        "00001740-n\tnoun.Tops\t11\t\tentity\tthat which exists",
        "02083346-n\tnoun.animal\t3\t00001740-n\tcanine|canid\ta carnivore",
        "02084071-n\tnoun.animal\t42\t02083346-n\tdog|domestic dog|Canis familiaris\ta member of the genus Canis",
        "09154178-n\tnoun.location\t2\t00001740-n\tSeattle\ta city",
        "00002000-n\tnoun.act\t5\t00001740-n\tjump\tan act",
        "00007846-n\tnoun.Tops\t9\t00001740-n\tperson|individual\ta human being",
        "10560637-n\tnoun.person\t4\t00007846-n\tscientist\ta person with advanced knowledge",
        "09636339-n\tnoun.person\t3\t00007846-n\tBlack|Black person\ta person with dark skin",
        "09638009-n\tnoun.person\t1\t09636339-n\tcoon\tlisted only through its parent",
        "09642917-n\tnoun.person\t1\t00007846-n\tcoolie\t(ethnic slur) an offensive name for a laborer",
        "09333512-n\tnoun.object\t1\t00001740-n\tLake Tanganyika|Tanganyika\ta lake",
        "03329302-n\tnoun.artifact\t1\t00001740-n\tFerris wheel\ta vertical rotating wheel",
        "03311111-n\tnoun.artifact\t1\t00001740-n\tEiffel Tower\ta tower in Paris",
    ]
    (data / "en.tsv").write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    (data / "fr.tsv").write_text(
        "synset\tlemma\tsource\n02084071-n\tcanis familiaris\tWOLF\n02084071-n\tchien\tWOLF\n"
        "02084071-n\tchien\tWiktionary\n02083346-n\tcanidé\tWOLF\n",
        encoding="utf-8",
    )
    (data / "he.tsv").write_text("synset\tlemma\tsource\n02084071-n\tכלב\tWiktionary\n", encoding="utf-8")
    (data / "README.md").write_text(
        "| lang | concepts | rows | sources (licence) |\n| --- | ---: | ---: | --- |\n"
        "| fr | 2 | 4 | WOLF (CeCILL-C); Wiktionary (CC BY-SA) |\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert build_main(["--data", str(data), "--out", str(out), "--min-concepts", "1", "--min-languages", "1"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert list(manifest["languages"]) == ["fr"]  # Hebrew never ships
    lexicon = ConceptLexicon.load(out)
    # No ImageNet class is in this tiny WordNet, so no ancestor is kept for one (entity, person), nor a proper name
    # (Seattle, Lake Tanganyika, Eiffel Tower), nor an act, nor what tags never say: a person's race and all below
    # it (Black, coon), a slur by its gloss (coolie).
    assert set(lexicon.ids) == {"02083346-n", "02084071-n", "10560637-n", "03329302-n"}
    assert lexicon.names("02084071-n", "fr") == ["chien", "canis familiaris"]
    assert lexicon.hypernyms("02084071-n") == ["02083346-n"]
    assert lexicon.hypernyms("02083346-n") == []
    notice = (out / "NOTICE").read_text(encoding="utf-8")
    assert "WOLF (CeCILL-C): fr" in notice and "Wiktionary (CC BY-SA): fr" in notice and "Princeton" in notice


def test_proper_names_are_titles_of_one_place_or_person() -> None:
    def concept(lexname: str, *lemmas: str) -> Concept:
        return Concept("00000000-n", lexname, 0, [], list(lemmas), "")

    assert proper_name(concept("noun.location", "Seattle"))
    assert proper_name(concept("noun.object", "Statue of Liberty"))
    assert proper_name(concept("noun.artifact", "Eiffel Tower"))
    assert not proper_name(concept("noun.artifact", "Ferris wheel"))
    assert not proper_name(concept("noun.artifact", "Frisbee"))  # one capitalised word: a kind of thing
    assert not proper_name(concept("noun.location", "capital of Laos"))
    assert not proper_name(concept("noun.person", "scientist"))


def test_a_listed_synset_with_another_lemma_stops_the_build(tmp_path: Path) -> None:
    listed = tmp_path / "never_tags.tsv"
    listed.write_text("synset\tlemma\twhy\n02084071-n\tcoolie\ta slur\n", encoding="utf-8")
    concepts = {"02084071-n": Concept("02084071-n", "noun.animal", 1, [], ["dog"], "a canine")}
    with pytest.raises(ValueError, match="02084071-n is 'dog' in WordNet, not 'coolie'"):
        never_tagged(concepts, listed)
