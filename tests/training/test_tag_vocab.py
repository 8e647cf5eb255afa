"""The shipped-vocabulary builder's rules on a hand-made dictionary: scripts, English look-alikes, inflections
(citation forms first), borrowed animal names, German capitals, the English word list."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from training.tag_vocab.build import Evidence, TagEntry, read_dictionary, translate
from training.tag_vocab.checks import in_script
from training.tag_vocab.english import EnglishWord, english_words, noun_share
from training.tag_vocab.lemmas import lemma_lookup


def word(text: str, origin: str = "captions", noun: bool = True) -> EnglishWord:
    return EnglishWord(text, text.split()[-1], origin, 10, noun)


NO_EVIDENCE = Evidence(Counter(), 0, Counter(), 0)


def test_scripts() -> None:
    assert in_script("собака", "ru") and not in_script("pizza", "ru") and in_script("пицца", "ru")
    assert in_script("犬", "ja") and in_script("テンチ", "ja") and not in_script("dog", "ja")
    assert in_script("arc-en-ciel", "fr") and not in_script("f00t", "fr") and not in_script("", "fr")


def test_english_look_alikes_need_evidence() -> None:
    dictionary = {"beach": ["beach", "plage"], "pizza": ["pizza"], "girls": ["girls"], "baseball": ["baseball"]}
    english = [word("beach"), word("pizza"), word("girls"), word("baseball")]
    entries, report = translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3)
    kept = {e.key for e in entries}
    # beach: "plage" exists, so the identity pair goes; pizza: the only translation and not English to py3langid;
    # girls: the only translation, but py3langid calls it English; baseball: English-looking without evidence.
    assert "plage" in kept and "pizza" in kept and not kept & {"beach", "girls"}
    assert report.rejected["english"] >= 2
    # With evidence: French captions that use "baseball" about as often as English ones do.
    evidence = Evidence(Counter({"baseball": 30, "beach": 1}), 1000, Counter({"baseball": 30, "beach": 500}), 1000)
    entries, _ = translate("fr", english, dictionary, evidence, None, 100, 3)
    assert "baseball" in {e.key for e in entries} and "beach" not in {e.key for e in entries}


def test_inflections_and_unaccented_doubles_fold_and_sources_lead_with_the_word_itself() -> None:
    dictionary = {"shark": ["requin", "requins", "squale"], "day": ["journee", "journée", "jour"], "dog": ["chien"]}
    english = [
        word("great white shark", "imagenet"),
        word("shark"),
        word("day"),
        word("maltese dog", "imagenet"),
        word("dog"),
    ]
    entries, _ = translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3)
    by_key = {e.key: e for e in entries}
    assert (
        "requins" not in by_key and "journee" not in by_key and {"requin", "squale", "journée", "jour"} <= set(by_key)
    )
    assert by_key["requin"].sources == ["shark", "great white shark"]  # the translation of "shark" itself first
    assert by_key["chien"].sources == ["dog", "maltese dog"]


def test_a_class_name_keeps_more_translations_than_a_caption_word() -> None:
    # Five French words for the head of a class name and five for a caption word, every one passing the checks.
    dictionary = {
        "shark": ["requin", "squale", "roussette", "aiguillat", "milandre"],
        "bank": ["banque", "rive", "berge", "talus", "remblai"],
    }
    english = [word("tiger shark", "imagenet"), word("bank")]

    def kept_for(entries: list[TagEntry], source: str) -> list[str]:
        return [e.key for e in entries if source in e.sources]

    entries, _ = translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3, per_class_word=5)
    assert kept_for(entries, "tiger shark") == ["requin", "squale", "roussette", "aiguillat", "milandre"]
    assert kept_for(entries, "bank") == ["banque", "rive", "berge"]  # caption words keep per_word
    # Without per_class_word a class name keeps per_word, as before.
    entries, _ = translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3)
    assert kept_for(entries, "tiger shark") == ["requin", "squale", "roussette"]
    # max_words still bounds the whole vocabulary: the class name's translations come first.
    entries, _ = translate("fr", english, dictionary, NO_EVIDENCE, None, 6, 3, per_class_word=5)
    assert [e.key for e in entries] == ["requin", "squale", "roussette", "aiguillat", "milandre", "banque"]


def test_german_nouns_are_capitalised() -> None:
    dictionary = {"goldfish": ["goldfisch"], "run": ["laufen"], "board": ["brett"], "red": ["rot"]}
    english = [word("goldfish", "imagenet"), word("run", noun=False), word("board"), word("red", noun=False)]
    forms = {"laufen": Counter({"laufen": 5, "Laufen": 0.001})}
    entries, _ = translate("de", english, dictionary, NO_EVIDENCE, forms, 100, 3)
    assert [e.shown for e in entries] == ["Goldfisch", "laufen", "Brett", "rot"]


def test_english_words_class_names_first_plurals_folded() -> None:
    dictionaries = {
        f"l{i}": {w: ["x"] for w in ("dog", "dogs", "street", "front", "glasses", "glass")} for i in range(3)
    }
    counts = Counter({"dogs": 50, "dog": 40, "street": 30, "front": 90, "glasses": 25, "glass": 20, "qwzx": 99})
    words = english_words(counts, dictionaries, min_count=20, min_languages=2, nouns={"street": 0.9})
    captions = [w for w in words if w.origin == "captions"]
    assert [w.word for w in captions] == ["dog", "street", "glasses", "glass"]  # front: not a tag; qwzx: no dictionary
    assert words[0].origin == "imagenet" and words[0].word == "tench" and captions[1].noun and not captions[0].noun
    assert noun_share(["A dog runs.", "The dog and a cat", "dogs run"])["dog"] == 1.0


def test_class_names_translated_whole_from_the_dictionarys_own_compounds() -> None:
    dictionary = {
        "shark": ["hai", "haie"],
        "tiger": ["tiger"],
        "hammerhead": ["hammerhai"],
        "coffee": ["kaffee"],
        "mug": ["becher", "tasse"],
        "cup": ["kaffeetasse", "tasse"],  # the dictionary writes "kaffeetasse": the joined word is attested
        "sting": ["stachel"],
        "ray": ["rochen", "strahl"],
        "stingray": ["stingray"],  # an identity pair only: the split "sting" + "ray" is tried
        "fire": ["feuer"],
        "truck": ["lastwagen"],
    }
    attested = {t for ts in dictionary.values() for t in ts} | {"stachelrochen"}
    english = [
        word("tiger shark", "imagenet"),
        word("hammerhead shark", "imagenet"),
        word("coffee mug", "imagenet"),
        word("stingray", "imagenet"),
        word("fire truck", "imagenet"),
    ]
    entries, _ = translate("de", english, dictionary, NO_EVIDENCE, None, 100, 3, attested)
    by_key = {e.key: e for e in entries}
    # The whole name's translation leads the class and takes it as its first source; the head's translations stay.
    assert by_key["hammerhai"].sources == ["hammerhead shark"] and by_key["hammerhai"].direct
    assert by_key["kaffeetasse"].sources == ["coffee mug"] and by_key["stachelrochen"].sources == ["stingray"]
    assert by_key["hai"].sources == ["tiger shark", "hammerhead shark"]
    # Nothing is coined: "tigerhai" and "feuerlastwagen" are not words the dictionary writes.
    assert "tigerhai" not in by_key and "feuerlastwagen" not in by_key and "lastwagen" in by_key
    # Without the attested words (as before), only the head is translated.
    entries, _ = translate("de", english, dictionary, NO_EVIDENCE, None, 100, 3)
    assert "kaffeetasse" not in {e.key for e in entries}


def test_chinese_dictionary_is_read_in_simplified_characters(tmp_path: Path) -> None:
    path = tmp_path / "en-zh.tsv"
    path.write_text("goldfish\t金魚\ngoldfish\t金鱼\nshark\t鯊魚\n", encoding="utf-8")
    assert read_dictionary(path, "zh") == {"goldfish": ["金鱼"], "shark": ["鲨鱼"]}  # two entries become one
    assert read_dictionary(path, "ja")["goldfish"] == ["金魚", "金鱼"]  # other languages as written


def lemma_list(lemmas: dict[str, str]) -> Callable[[str], str | None]:
    """A hand-made lemma list: form -> citation form (a form it lacks is unknown)."""
    return lemmas.get


def test_a_citation_form_replaces_the_oblique_form_listed_before_it() -> None:
    # MUSE lists translations alphabetically: "krzesła" (genitive / plural) before "krzesło" (chair).
    dictionary = {"chair": ["krzesła", "krzesło", "fotel"], "mask": ["maskę", "maska"], "day": ["dnia", "doba"]}
    english = [word("chair", "imagenet"), word("mask"), word("day")]
    lemmas = lemma_list({"krzesła": "krzesło", "krzesło": "krzesło", "maskę": "maska", "maska": "maska"})
    entries, report = translate("pl", english, dictionary, NO_EVIDENCE, None, 100, 3, lemma_of=lemmas)
    keys = [e.key for e in entries]
    # In the oblique form's place (the order of senses stays), and still one tag per word.
    assert keys[:2] == ["krzesło", "fotel"] and "maska" in keys and not {"krzesła", "maskę"} & set(keys)
    assert report.rejected["inflection"] == 2
    # A form the lemma list does not know keeps MUSE's order; without a lemma list, the first form stays.
    assert "dnia" in keys
    plain, _ = translate("pl", english, dictionary, NO_EVIDENCE, None, 100, 3)
    assert [e.key for e in plain][:2] == ["krzesła", "fotel"]


def test_only_the_kept_forms_own_lemma_replaces_it_looked_up_as_shown() -> None:
    # French "surpris" (surprised) is a form of "surprendre": the noun "surprise" folds with it but is no lemma of it.
    french = {"surprised": ["surpris", "surprise"]}
    lemmas = lemma_list({"surpris": "surprendre", "surprise": "surprise"})
    entries, _ = translate("fr", [word("surprised", noun=False)], french, NO_EVIDENCE, None, 100, 3, lemma_of=lemmas)
    assert [e.key for e in entries] == ["surpris"]
    # German is looked up as shown: "Vögel" is a form of "Vogel"; lower-case "schule" would read as a form of the
    # verb "schulen", capitalised "Schule" is the noun's citation form.
    # Nor is a noun replaced by a verb (the German list's lemma of "Gabel", fork, is "gabeln", to fork), nor a
    # spelling by its old variant ("Fluß").
    german = {"bird": ["vögel", "vogel"], "school": ["schule", "schulen"], "fork": ["gabel", "gabeln"]}
    german |= {"river": ["fluss", "fluß"]}
    german_lemmas = {"Vögel": "vogel", "Vogel": "vogel", "Schule": "schule", "Schulen": "schule"}
    german_lemmas |= {"schule": "schulen", "schulen": "schulen", "Gabel": "gabeln", "gabeln": "gabeln"}
    german_lemmas |= {"Fluss": "fluß", "Fluß": "fluß"}
    english = [word("bird"), word("school"), word("fork"), word("river")]
    entries, _ = translate("de", english, german, NO_EVIDENCE, None, 100, 3, lemma_of=lemma_list(german_lemmas))
    assert [e.shown for e in entries] == ["Vogel", "Schule", "Gabel", "Fluss"]


def test_the_real_lemma_lists_name_citation_forms() -> None:
    polish, german, chinese = lemma_lookup("pl"), lemma_lookup("de"), lemma_lookup("zh")
    assert polish is not None and german is not None and chinese is None
    assert polish("krzesła") == "krzesło" and polish("krzesło") == "krzesło"
    assert german("hund") == "hund"  # German lemmas come capitalised; keys are lower case
    assert lemma_lookup("hr") is not None and lemma_lookup("no") is not None  # simplemma's "hbs" and "nb"


def test_an_animal_class_keeps_an_identity_pair_its_language_borrowed() -> None:
    def animal(text: str) -> EnglishWord:
        return EnglishWord(text, text.split()[-1], "imagenet", 0, True, animal=True)

    dictionary = {
        "koala": ["koala"],
        "hamster": ["hamster", "hamsters"],
        "japanese chin": ["chin", "menton"],
        "chin": ["chin", "menton"],
        "fox": ["fox", "renard"],
        "robin": ["robin"],
        "toaster": ["toaster"],
    }
    english = [
        animal("koala"),
        animal("hamster"),
        animal("japanese chin"),
        animal("fox"),
        animal("robin"),
        word("toaster", "imagenet"),  # an object class, not an animal
        word("chin"),  # a word of the English captions' vocabulary
    ]
    lemmas = lemma_list({w: w for w in ("koala", "hamster", "hamsters", "chin", "fox", "toaster", "menton")})
    entries, _ = translate(
        "fr", english, dictionary, NO_EVIDENCE, None, 100, 3, lemma_of=lemmas, borrowed_animal_names=True
    )
    keys = {e.key for e in entries}
    # koala: the only translation, in the lemma list; hamster: its other translation is its own plural.
    assert {"koala", "hamster"} <= keys
    # chin: an English caption word (and "menton" exists); fox: "renard" exists; robin: not in the French lemma
    # list; toaster: no animal.
    assert not {"chin", "fox", "robin", "toaster"} & keys
    # By default (not shipped: docs/tagging.md), and without a lemma list, py3langid decides as before: English.
    for plain, _ in (
        translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3, lemma_of=lemmas),
        translate("fr", english, dictionary, NO_EVIDENCE, None, 100, 3, borrowed_animal_names=True),
    ):
        assert not {"koala", "hamster"} & {e.key for e in plain}
