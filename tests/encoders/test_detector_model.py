"""The language detector read from its kept decompressed copy is py3langid's own (indexer/query/detector_model.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from indexer.query.detector_model import kept_model_path, read_detector

TEXTS = ["dog", "Hund", "chat", "un chien sur la plage", "собака в снегу", "里斯本的电车", "كلب على الشاطئ", "12 🐕"]


def test_the_kept_model_gives_the_librarys_identifier(tmp_path: Path) -> None:
    library = read_detector()  # from the compressed model, as py3langid reads it
    first = read_detector(tmp_path)  # decompresses and keeps it
    kept = kept_model_path(tmp_path)
    assert kept.is_dir() and not list(kept.parent.glob(".*.tmp"))
    again = read_detector(tmp_path)  # reads the kept copy, its large arrays mapped
    assert isinstance(again.nb_ptc, np.memmap) or isinstance(again.nb_ptc.base, np.memmap)
    for identifier in (first, again):
        np.testing.assert_array_equal(identifier.nb_ptc, library.nb_ptc)
        np.testing.assert_array_equal(identifier.nb_pc, library.nb_pc)
        assert identifier.nb_classes == library.nb_classes
        assert (identifier.tk_nextmove, identifier.tk_row, identifier.tk_output) == (
            library.tk_nextmove,
            library.tk_row,
            library.tk_output,
        )
        for text in TEXTS:
            assert identifier.classify(text) == library.classify(text)
            assert identifier.rank(text) == library.rank(text)


def test_a_damaged_copy_is_read_from_the_library_and_kept_again(tmp_path: Path) -> None:
    library = read_detector()
    read_detector(tmp_path)
    kept = kept_model_path(tmp_path)
    (kept / "ptc.npy").write_bytes(b"\x93NUMPY not an array")
    assert read_detector(tmp_path).classify("un chien sur la plage") == library.classify("un chien sur la plage")
    assert not kept.exists()  # dropped: decompressed again by the next start
    assert read_detector(tmp_path).classify("Hund") == library.classify("Hund") and kept.is_dir()


def test_restricted_to_some_languages_it_classifies_as_the_library_does(tmp_path: Path) -> None:
    """A restriction copies columns of the mapped table (what a search does with the student's languages)."""
    library = read_detector()
    read_detector(tmp_path)  # keeps the copy
    kept = read_detector(tmp_path)  # reads it, mapped
    for identifier in (library, kept):
        identifier.set_languages(["de", "fr", "en", "cs", "ru", "zh"])
    for text in TEXTS:
        assert kept.classify(text) == library.classify(text) and kept.rank(text) == library.rank(text)
