"""Two long-running processes holding the same caption index open (``polyglot serve`` and ``polyglot index captions
add`` in a terminal, or two CLI runs) take turns adding captions: neither may save its languages' vectors over what
the other saved (each keeps them in memory), and each one's searches find the other's captions without reopening the
index (indexer/captions/index.py, by the sidecar's revision as in indexer/store/revisions.py)."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from api_fixtures import fake_text_embedder
from process_holder import ProcessHolder

from indexer.caption_records import Caption
from indexer.captions import CaptionIndex
from indexer.captions.files import FLAT
from indexer.store.opening import IndexMismatchError
from indexer.store.vectors import VectorIndex

# One process holding the caption index open: ``add LANG TEXT`` adds a caption; ``find`` answers, per language, the
# ids its in-memory vectors hold and, for every caption in SQL, the best hit of a search for its own text.
HOLDER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, os.environ["TESTS_DIR"])
    from api_fixtures import fake_text_embedder
    from indexer.caption_records import Caption
    from indexer.captions import CaptionIndex

    folder, cache = Path(os.environ["CAPTIONS_DIR"]), Path(os.environ["CACHE_DIR"])
    index = CaptionIndex.open(folder, fake_text_embedder(), cache)
    print("open", flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "add":
            lang, _, text = argument.partition(" ")
            answer = {"added": index.add([Caption(lang, text, source="test")])}
        elif command == "find":
            langs = index.languages()  # like a search, takes in another process's save
            held = {}
            for lang in langs:
                vectors = index.vectors(lang)
                held[lang] = sorted(vectors.ids().tolist()) if vectors is not None else []
            rows = index.list(limit=1000)
            best = {}
            for row in rows:
                query = index.embedder.embed([row.text], row.lang)[0]
                best[row.id] = [hit.id for hit in index.search(query, [row.lang], 1)[row.lang]]
            answer = {"rows": {r.lang: sorted(x.id for x in rows if x.lang == r.lang) for r in rows}, "held": held,
                      "best": best}
        else:
            break
        print(json.dumps(answer), flush=True)
    index.close()
    """
)


def caption_holder(folder: Path, cache: Path) -> ProcessHolder:
    """A child process with the caption index open, driven line by line."""
    return ProcessHolder(HOLDER, {"CAPTIONS_DIR": str(folder), "CACHE_DIR": str(cache)}, "caption index")


def saved_ids(folder: Path) -> dict[str, list[int]]:
    """Per language, the ids the FAISS files in the folder hold (what a process saved, before any reopening)."""
    found = {}
    for path in sorted(folder.glob("*.faiss")):
        ids = VectorIndex.load(path, "flat", FLAT).ids()
        found[path.stem] = sorted(int(i) for i in ids)
    return found


def sql_ids(index: CaptionIndex) -> dict[str, list[int]]:
    return {lang: sorted(ids) for lang, ids in index.store.ids_by_lang().items()}


# Turns: the same language twice in a row by different processes (the FAISS file saved whole over the other's), then
# a new language, then back to one the other process holds in memory.
TURNS = [
    Caption("en", "two children play football", source="test"),
    Caption("en", "a red car in the street", source="test"),
    Caption("fr", "un chien court sur la plage", source="test"),
    Caption("en", "a cat sleeps on a sofa", source="test"),
    Caption("fr", "deux enfants jouent au football", source="test"),
    Caption("de", "ein Hund läuft am Strand", source="test"),
]


def test_two_processes_adding_captions_in_turn_keep_each_others_captions(tmp_path: Path) -> None:
    folder, cache = tmp_path / "captions", tmp_path / "cache"
    first = CaptionIndex.open(folder, fake_text_embedder(), cache)  # the index exists before both open it
    try:
        assert first.add([Caption("en", "a dog runs on the beach", source="test")]) == 1
    finally:
        first.close()
    terminal, server = caption_holder(folder, cache), caption_holder(folder, cache)
    try:
        for number, caption in enumerate(TURNS, start=2):  # turns, each never reopening
            writer = terminal if number % 2 == 0 else server
            assert writer.ask(f"add {caption.lang} {caption.text}") == {"added": 1}
            # What a process saved is on disk whole after its turn (the other's captions included).
            saved = saved_ids(folder)
            assert sum(len(ids) for ids in saved.values()) == number, saved
            found = writer.ask("find")
            assert found["held"] == found["rows"] == saved
            assert all(best == [int(id_)] for id_, best in found["best"].items())
            assert len(found["best"]) == number
        time.sleep(1.2)  # a process that did not write sees the other's save within a second
        for holder in (terminal, server):
            found = holder.ask("find")
            assert found["held"] == found["rows"] == saved_ids(folder)
            assert len(found["best"]) == len(TURNS) + 1
            assert all(best == [int(id_)] for id_, best in found["best"].items())
    finally:
        terminal.close()
        server.close()
    saved = saved_ids(folder)  # before a reopening repairs anything
    assert sum(len(ids) for ids in saved.values()) == len(TURNS) + 1
    counts = json.loads((folder / "captions.json").read_text(encoding="utf-8"))["counts"]
    assert counts == {"de": 1, "en": 4, "fr": 2}
    reopened = CaptionIndex.open(folder, fake_text_embedder(), cache)
    try:
        assert saved == sql_ids(reopened)
        assert {lang: sorted(reopened.vectors(lang).ids().tolist()) for lang in reopened.languages()} == saved  # type: ignore[union-attr]
        for row in reopened.list(limit=100):
            query = reopened.embedder.embed([row.text], row.lang)[0]
            assert [hit.id for hit in reopened.search(query, [row.lang], 1)[row.lang]] == [row.id]
    finally:
        reopened.close()


def test_a_writer_refuses_captions_another_process_saved_with_another_tower(tmp_path: Path) -> None:
    """Writing after a save in another text tower would leave the folder's languages in two towers under one
    fingerprint: refused (a reader keeps serving its own vectors)."""
    folder, cache = tmp_path / "captions", tmp_path / "cache"
    old = CaptionIndex.open(folder, fake_text_embedder(), cache)
    try:
        old.add([Caption("en", "a dog runs on the beach", source="test")])
        new = CaptionIndex.open(folder, fake_text_embedder(seed=1), cache)  # re-embeds every language, then saves
        try:
            new.add([Caption("fr", "un chien court sur la plage", source="test")])
        finally:
            new.close()
        with pytest.raises(IndexMismatchError, match="another text tower"):
            old.add([Caption("de", "ein Hund läuft am Strand", source="test")])
        old._revisions.next_check = 0.0  # the reader's check is due now
        assert old.languages() == ["en"]  # its own vectors, not the other tower's
    finally:
        old.close()
    reopened = CaptionIndex.open(folder, fake_text_embedder(seed=1), cache)
    try:
        assert reopened.languages() == ["en", "fr"] and len(reopened) == 2
    finally:
        reopened.close()
