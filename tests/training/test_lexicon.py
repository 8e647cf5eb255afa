"""Word-by-word English glosses from MUSE-layout dictionaries (what CLC's gloss translator reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.glosses import LexiconError, LexiconTranslator


def write_lexicons(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # "dog" has translations in two dictionaries, "hound" in one: "dog" is the more general gloss of "pes".
    (folder / "en-cs.tsv").write_text(
        "beach\tpláž\nblack\tčerný\ndog\tpes\nhound\tpes\nwater\tvoda\nx\tx\n", encoding="utf-8"
    )
    (folder / "en-de.tsv").write_text("dog\thund\nmilk\tmilch\nmilk\tmilk\n", encoding="utf-8")
    return folder


@pytest.fixture
def translator(tmp_path: Path) -> LexiconTranslator:
    return LexiconTranslator.from_folder(write_lexicons(tmp_path / "lexicons"))


def test_words_are_glossed_by_the_most_general_translation(translator: LexiconTranslator) -> None:
    assert translator.languages == {"cs", "de"}
    assert translator.translate("Černý pes", "cs") == "black dog"
    assert translator.translate("Hund", "DE") == "dog"


def test_a_real_translation_wins_a_tie_with_the_identity_pair(translator: LexiconTranslator) -> None:
    assert translator.translate("milk", "de") == "milk"  # "milk" is itself German here: glossed to itself
    assert translator.translate("milch", "de") == "milk"


def test_inflected_words_are_glossed_by_their_stem_and_unknown_words_kept(translator: LexiconTranslator) -> None:
    assert translator.translate("černého psa", "cs") == "black psa"  # čern(ého) ~ čern(ý); "ps" too short a stem
    assert translator.translate("plážích Praha", "cs") == "beach praha"
    assert translator.translate("ve vodě", "cs") == "ve vodě"  # "vod" is shorter than the shortest stem


def test_languages_without_a_dictionary_get_no_gloss(translator: LexiconTranslator) -> None:
    assert translator.translate("a dog", "en") is None
    assert translator.translate("un chien", "fr") is None
    assert translator.translate("pes", None) is None


def test_only_the_asked_languages_are_loaded(tmp_path: Path) -> None:
    folder = write_lexicons(tmp_path / "lexicons")
    assert LexiconTranslator.from_folder(folder, {"cs", "fr"}).languages == {"cs"}


def test_bad_folders_and_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(LexiconError, match="no bilingual dictionaries"):
        LexiconTranslator.from_folder(tmp_path)
    (tmp_path / "en-cs.tsv").write_text("dog pes\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"en-cs.tsv:1: expected"):
        LexiconTranslator.from_folder(tmp_path)
