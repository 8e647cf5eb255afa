"""The caption index's store contract on SQLite and PostgreSQL: rows, per-language FAISS files, sidecar, repair
after a crash, tower changes, concurrent readers, and caption folders made by the raw-sqlite3 version."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from api_fixtures import CAPTIONS, fake_text_embedder
from sqlalchemy import create_engine, inspect, text
from typer.testing import CliRunner

from indexer.captions import Caption, CaptionIndex
from indexer.store.locks import IndexBusyError, process_lock
from indexer.store.metadata import MetadataStore
from indexer.tower import TextEmbedder

Opener = Callable[..., CaptionIndex]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """None: the default SQLite file in the captions folder; else a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return None
    url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
    return f"{url}?options=-csearch_path%3D{schema}"


@pytest.fixture
def open_index(tmp_path: Path, database_url: str | None) -> Iterator[Opener]:
    """Opens the test's caption folder (same database) with a given embedder; closes everything at the end."""
    opened: list[CaptionIndex] = []

    def opener(embedder: TextEmbedder | None = None) -> CaptionIndex:
        index = CaptionIndex.open(
            tmp_path / "captions", embedder or fake_text_embedder(), tmp_path / "cache", database_url=database_url
        )
        opened.append(index)
        return index

    yield opener
    for index in opened:
        index.close()


def top(index: CaptionIndex, query: str, lang: str, k: int = 3) -> list[tuple[str, float]]:
    vector = index.embedder.embed([query])[0]
    return [(h.text, round(h.score, 4)) for h in index.search(vector, [lang], k)[lang]]


def assert_files_match_sql(index: CaptionIndex) -> None:
    on_sql = index.store.ids_by_lang()
    on_disk = {lang: sorted(index.files.load(lang).ids().tolist()) for lang in index.files.languages()}  # type: ignore[union-attr]
    assert on_disk == on_sql
    assert json.loads((index.folder / "captions.json").read_text())["counts"] == {k: len(v) for k, v in on_sql.items()}


def test_add_search_per_language(open_index: Opener) -> None:
    index = open_index()
    assert index.add(CAPTIONS) == 6
    assert index.stats()["languages"] == {"de": 1, "en": 3, "fr": 2} and index.languages() == ["de", "en", "fr"]
    found = index.search(index.embedder.embed(["un chien court sur la plage"])[0], ["fr", "en", "pt"], k=5)
    assert found["pt"] == [] and len(found["en"]) == 3 and len(found["fr"]) == 2
    best = found["fr"][0]
    assert (best.text, best.image, best.source, best.lang) == ("un chien court sur la plage", "1.jpg", "test", "fr")
    assert best.score == pytest.approx(1.0, abs=1e-5)
    assert_files_match_sql(index)


def test_duplicates_skipped_remove_filters_and_ids_never_reused(open_index: Opener) -> None:
    index = open_index()
    index.add(CAPTIONS)
    twice = [Caption("en", "a new caption"), Caption("en", "a new caption", "9.jpg", "other")]  # the last one wins
    assert index.add([*CAPTIONS, *twice]) == 1
    newest = max(h.id for h in index.list(limit=100))
    assert index.remove(source="other") == 1
    assert index.add([Caption("en", "a newer caption")]) == 1
    assert max(h.id for h in index.list(limit=100)) > newest  # the removed id is not handed out again
    assert index.remove(lang="fr", image="2.jpg") == 1
    assert [t for t, _ in top(index, "deux enfants jouent au football", "fr", 5)] == ["un chien court sur la plage"]
    assert index.remove(lang="de") == 1
    assert "de" not in index.languages() and not (index.folder / "de.faiss").exists()
    assert [h.text for h in index.list("en", offset=1, limit=2)] == [
        "two children play football",
        "a red car in the street",
    ]
    with pytest.raises(ValueError, match="at least one"):
        index.remove()
    assert_files_match_sql(index)


def test_reopen_keeps_rows_vectors_and_sidecar(open_index: Opener, database_url: str | None) -> None:
    first = open_index()
    first.add([*CAPTIONS, Caption("en", "no image, no source")])
    expected = top(first, "a dog runs on the beach", "en")
    first.close()
    second = open_index()
    assert top(second, "a dog runs on the beach", "en") == expected
    assert [(h.image, h.source) for h in second.list("en") if h.text == "no image, no source"] == [(None, None)]
    sidecar = json.loads((second.folder / "captions.json").read_text())
    assert (sidecar["format"], sidecar["dim"], sidecar["fingerprint"]) == (1, second.dim, second.fingerprint)
    assert sidecar["database"].startswith("postgresql" if database_url else "sqlite")


def _stale_copy(index: CaptionIndex, lang: str, tmp_path: Path) -> Callable[[], None]:
    """Keep the current file; 'crash' = put it back after more rows were committed (the FAISS write was lost)."""
    saved = tmp_path / "saved.faiss"
    shutil.copy(index.files.path(lang), saved)
    index.add([Caption(lang, "a cat sleeps on a sofa", "7.jpg")])
    return lambda: shutil.copy(saved, index.files.path(lang))


@pytest.mark.parametrize("damage", ["deleted", "truncated", "garbage", "behind-sql", "ahead-of-sql", "orphan-file"])
def test_open_repairs_files_that_disagree_with_sql(open_index: Opener, tmp_path: Path, damage: str) -> None:
    index = open_index()
    index.add(CAPTIONS)
    path = index.files.path("en")
    if damage == "deleted":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "garbage":
        path.write_bytes(b"not a faiss index")
    elif damage == "behind-sql":
        _stale_copy(index, "en", tmp_path)()
    elif damage == "ahead-of-sql":  # rows deleted, crash before the file was rewritten
        saved = tmp_path / "saved.faiss"
        shutil.copy(path, saved)
        index.remove(image="3.jpg")
        shutil.copy(saved, path)
    else:  # every French caption removed, crash before the file was deleted
        saved = tmp_path / "saved.faiss"
        shutil.copy(index.files.path("fr"), saved)
        index.remove(lang="fr")
        shutil.copy(saved, index.files.path("fr"))
    (index.folder / ".en.faiss.123.tmp").write_bytes(b"half")  # a writer killed inside an atomic write
    index.close()
    reopened = open_index()
    assert_files_match_sql(reopened)
    assert not list(reopened.folder.glob(".*.tmp"))
    best = top(reopened, "a dog runs on the beach", "en", 1)
    assert best == [("a dog runs on the beach", pytest.approx(1.0, abs=1e-4))]


def test_tower_change_re_embeds_from_the_sentence_cache(open_index: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    open_index().add(CAPTIONS)
    other = fake_text_embedder()
    with torch.no_grad():
        for parameter in other.tower.parameters():
            parameter.add_(0.5)  # a retrained tower: every caption must be re-embedded
    calls: list[int] = []
    original = other.encoder._predict
    monkeypatch.setattr(other.encoder, "_predict", lambda texts: calls.append(len(texts)) or original(texts))
    reopened = open_index(other)
    assert calls == []  # sentences came from the features cache; only the tower ran again
    assert top(reopened, "a dog runs on the beach", "en", 1) == [
        ("a dog runs on the beach", pytest.approx(1.0, abs=1e-4))
    ]
    assert json.loads((reopened.folder / "captions.json").read_text())["fingerprint"] == reopened.fingerprint
    assert_files_match_sql(reopened)


def test_concurrent_searches_during_writes_never_fail(open_index: Opener) -> None:
    index = open_index()
    index.add(CAPTIONS)
    vector = index.embedder.embed(["a dog runs on the beach"])[0]
    errors: list[BaseException] = []
    done = threading.Event()

    def search() -> None:
        while not done.is_set():
            try:
                found = index.search(vector, ["en", "fr"], 3)
                assert found["en"] and all(h.lang == "en" and -1.01 <= h.score <= 1.01 for h in found["en"])
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
                return

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for batch in range(8):
            index.add([Caption("en", f"caption number {batch} {n}", f"{n}.jpg", "bulk") for n in range(20)])
            index.remove(source="bulk", image="3.jpg")
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert errors == []
    assert index.count("en") == 3 + 8 * 19
    assert_files_match_sql(index)


def test_another_writer_process_is_refused_and_open_reconciles_in_memory(open_index: Opener) -> None:
    index = open_index()
    index.add(CAPTIONS)
    index.files.path("fr").unlink()
    with process_lock(index.folder / ".write.lock"):  # what another process's add holds
        with pytest.raises(IndexBusyError):
            index.add([Caption("en", "blocked")])
        meanwhile = open_index()
        assert top(meanwhile, "un chien court sur la plage", "fr", 1)[0][0] == "un chien court sur la plage"
        assert not index.files.path("fr").exists()  # the writer owns the files; this reader only built memory
    assert_files_match_sql(open_index())


@pytest.mark.postgres
def test_postgres_captions_table_sits_beside_the_images_table(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    images = MetadataStore(postgres_url, schema=pg_schema)
    url = f"{postgres_url}?options=-csearch_path%3D{pg_schema}"
    captions = CaptionIndex.open(tmp_path / "captions", fake_text_embedder(), tmp_path / "cache", database_url=url)
    try:
        captions.add(CAPTIONS)
        engine = create_engine(postgres_url)
        try:
            assert {"captions", "images"} <= set(inspect(engine).get_table_names(schema=pg_schema))
            with engine.connect() as connection:
                rows = connection.execute(text(f'SELECT COUNT(*) FROM "{pg_schema}".captions')).scalar()
            assert rows == 6 and images.count() == 0
        finally:
            engine.dispose()
        assert not (tmp_path / "captions" / "captions.sqlite").exists()
    finally:
        captions.close()
        images.close()


# The DDL of the raw-sqlite3 CaptionIndex (before the SQLAlchemy store), verbatim.
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS captions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    lang TEXT NOT NULL,
    text TEXT NOT NULL,
    image TEXT,
    source TEXT,
    UNIQUE (lang, text)
)
"""


def test_folder_of_the_raw_sqlite_version_opens_with_its_rows(tmp_path: Path) -> None:
    folder = tmp_path / "captions"
    folder.mkdir()
    engine = create_engine(f"sqlite:///{folder / 'captions.sqlite'}")
    with engine.begin() as connection:
        connection.exec_driver_sql(OLD_SCHEMA)
        connection.exec_driver_sql(
            "INSERT INTO captions (id, lang, text, image, source) VALUES "
            "(3, 'en', 'a dog runs on the beach', '1.jpg', 'old'), (5, 'fr', 'un chien court sur la plage', NULL, ''),"
            "(9, 'en', 'a red car in the street', '3.jpg', NULL)"
        )
        connection.exec_driver_sql("DELETE FROM captions WHERE id = 9")  # AUTOINCREMENT remembers 9
    engine.dispose()
    (folder / "captions.json").write_text(
        json.dumps({"format": 1, "dim": 48, "fingerprint": "old-formula", "counts": {}})
    )
    index = CaptionIndex.open(folder, fake_text_embedder(), tmp_path / "cache")
    try:
        assert [(h.id, h.lang, h.text, h.image, h.source) for h in index.list()] == [
            (3, "en", "a dog runs on the beach", "1.jpg", "old"),
            (5, "fr", "un chien court sur la plage", None, ""),
        ]
        assert top(index, "a dog runs on the beach", "en", 1) == [
            ("a dog runs on the beach", pytest.approx(1.0, abs=1e-4))
        ]
        assert index.add([Caption("en", "a red car in the street", "3.jpg")]) == 1
        assert max(h.id for h in index.list()) == 10
        assert index.add([Caption("fr", "un chien court sur la plage")]) == 0  # the old unique (lang, text) holds
        assert_files_match_sql(index)
        assert json.loads((folder / "captions.json").read_text())["fingerprint"] == index.fingerprint
    finally:
        index.close()


def test_cli_reports_a_busy_caption_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.cli.captions_cmd as captions_cmd
    from app.cli import cli

    for key in ("POLYGLOT_INDEX_DIR", "POLYGLOT_CACHE_DIR", "POLYGLOT_CAPTIONS_DIR", "POLYGLOT_DATABASE_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(captions_cmd, "load_embedder", lambda settings: fake_text_embedder())
    source = tmp_path / "captions.jsonl"
    source.write_text(json.dumps({"lang": "en", "text": "a dog"}) + "\n", encoding="utf-8")
    with process_lock(tmp_path / "home" / "index" / "captions" / ".write.lock"):
        busy = CliRunner().invoke(cli, ["index", "captions", "add", str(source), "-q"])
    assert busy.exit_code == 2 and "another process is writing" in " ".join(busy.output.split())
    assert "added 1" in CliRunner().invoke(cli, ["index", "captions", "add", str(source), "-q"]).output
