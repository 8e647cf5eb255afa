"""Issue 36: the library's order and cursor (indexer/store/timeline.py) and the copy-to-keep marks
(indexer/store/kept_copies.py) on the SQL store itself, SQLite and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from indexer.search_filters import PhotoFilter
from indexer.store.kept_copies import KeptCopies
from indexer.store.metadata import MetadataStore, NewImage, sqlite_url
from indexer.store.timeline import CursorError, TimelineKey, month_counts, timeline_order, timeline_page

ROWS = [  # name, folder, taken_at, file_modified_at
    ("a", "/p/2024", datetime(2024, 7, 14, 10), datetime(2025, 1, 1)),
    ("b", "/p/2024", datetime(2024, 7, 14, 10), datetime(2025, 1, 1)),  # the same moment: the larger id first
    ("c", "/p/2024", datetime(2024, 1, 5, 9), None),
    ("d", "/p/2023", datetime(2023, 12, 24, 20), None),
    ("e", "/p/scans", None, datetime(2020, 9, 13, 12)),
    ("f", "/p/scans", None, datetime(2021, 2, 1, 8)),
    ("g", "/p/old", None, None),  # indexed before file times were recorded
    ("h", "/p/old", None, None),
]


def _store(url: str, schema: str | None = None) -> MetadataStore:
    store = MetadataStore(url, schema=schema)
    rows = [
        NewImage(f"{folder}/{name}.jpg", name * 64, 4, 3, 10, folder=folder, taken_at=taken, file_modified_at=mtime)
        for name, folder, taken, mtime in ROWS
    ]
    store.insert(rows)
    return store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetadataStore]:
    if request.param == "sqlite":
        opened = _store(sqlite_url(tmp_path / "meta.sqlite"))
    else:
        opened = _store(request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema"))
    yield opened
    opened.close()


def _names(store: MetadataStore, ids: list[int]) -> list[str]:
    paths = {i: p for i, _, p in store.id_keys(ids)}
    return [Path(paths[i]).stem for i in ids]


def test_the_order_pages_and_cursors(store: MetadataStore) -> None:
    seen: list[str] = []
    sources = []
    after = None
    for _ in range(10):
        entries, after = timeline_page(store, 3, after)
        seen += _names(store, [e.id for e in entries])
        sources += [e.segment for e in entries]
        if after is None:
            break
        after = TimelineKey.decode(after.encode())  # through the answer's text form
    assert seen == ["b", "a", "c", "d", "f", "e", "h", "g"]
    assert sources == ["taken"] * 4 + ["file"] * 2 + ["indexed"] * 2
    ids = [store.by_paths([f"{folder}/{name}.jpg"])[f"{folder}/{name}.jpg"][0] for name, folder, *_ in ROWS]
    assert _names(store, timeline_order(store, ids)) == seen  # the stacks' order is the same


def test_filters_hidden_ids_months_and_jumps(store: MetadataStore) -> None:
    allowed = store.filtered_ids(PhotoFilter.parse(folder="scans"))
    entries, after = timeline_page(store, 5, None, allowed)
    assert _names(store, [e.id for e in entries]) == ["f", "e"] and after is None
    first = timeline_page(store, 1)[0][0]
    entries, _ = timeline_page(store, 2, hidden={first.id})
    assert _names(store, [e.id for e in entries]) == ["a", "c"]
    months, undated = month_counts(store)
    assert [(m.year, m.month, m.count) for m in months] == [(2024, 7, 2), (2024, 1, 1), (2023, 12, 1)]
    assert undated == 4
    months, undated = month_counts(store, allowed, hidden={first.id})
    assert months == [] and undated == 2
    entries, _ = timeline_page(store, 1, TimelineKey.month_end(2024, 6))  # June 2024 is empty: the next older
    assert _names(store, [e.id for e in entries]) == ["c"]
    assert timeline_page(store, 2, TimelineKey.month_end(9999, 12))[0][0].id == first.id
    assert np.array_equal(
        store.filtered_ids(PhotoFilter.parse(folder="/p/old")), sorted(e.id for e in timeline_page(store, 9)[0][-2:])
    )


@pytest.mark.parametrize("text", ["", "taken~~1", "indexed~2024-01-01T00:00:00~1", "file~yesterday~3", "x~~1"])
def test_cursors_that_were_never_handed_out(text: str) -> None:
    with pytest.raises(CursorError):
        TimelineKey.decode(text)


def test_kept_copies_persist_and_ignore_removed_photos(store: MetadataStore) -> None:
    ids = sorted(store.ids())
    marks = KeptCopies(store)
    marks.keep(ids[0], ids[:3])
    marks.keep(ids[5])
    assert marks.ids() == {ids[0], ids[5]}
    marks.keep(ids[1], ids[:3])  # another copy of the same stack: one mark per stack
    assert KeptCopies(store).ids() == {ids[1], ids[5]}  # read back by a new reader
    store.delete([ids[5]])
    assert marks.ids() == {ids[1]}
    assert marks.unmark(ids[1]) and not marks.unmark(ids[1])
    assert marks.ids() == set()


def test_kept_copies_on_a_database_it_cannot_write(tmp_path: Path) -> None:
    """A read-only database (a full disk, a read-only copy): no marks, no failure at opening; the table comes with
    the first mark once it can be written."""
    import sqlite3

    store = _store(sqlite_url(tmp_path / "meta.sqlite"))
    store.close()
    read_only = MetadataStore(f"sqlite:///file:{tmp_path / 'meta.sqlite'}?mode=ro&uri=true")
    marks = KeptCopies(read_only)
    assert marks.ids() == set() and not marks.unmark(1)
    read_only.close()
    writable = MetadataStore(sqlite_url(tmp_path / "meta.sqlite"))
    marks = KeptCopies(writable)
    marks.keep(writable.ids()[0])
    assert marks.ids() == {writable.ids()[0]}
    writable.close()
    assert sqlite3.connect(tmp_path / "meta.sqlite").execute("SELECT count(*) FROM kept_copies").fetchone() == (1,)


def test_a_filter_read_by_id_and_scanned_for_give_the_same_pages(
    store: MetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small filters are ordered (and their months counted) from their own rows, large ones found by scanning the
    order: the same pages and counts."""
    from indexer.store import timeline

    allowed = store.filtered_ids(PhotoFilter.parse(folder="/p"))

    def walk() -> list[tuple[int, str]]:
        seen, after = [], None
        for _ in range(10):
            entries, after = timeline_page(store, 2, after, allowed)
            seen += [(e.id, e.segment) for e in entries]
            if after is None:
                return seen
        raise AssertionError("no end")

    first = timeline_page(store, 1)[0][0].id
    direct, direct_months = walk(), month_counts(store, allowed, {first})
    monkeypatch.setattr(timeline, "DIRECT_MAX", 0)
    assert walk() == direct and len(direct) == len(ROWS)
    assert month_counts(store, allowed, {first}) == direct_months
    months, undated = month_counts(store, None, {first})  # the whole library: SQL's counts less the hidden
    assert (months, undated) == direct_months and months[0].count == 1
    assert [i for i, _ in direct] == [e.id for e in timeline_page(store, 20)[0]]
