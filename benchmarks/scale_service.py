"""Prepare an index folder of a million photos for the service (the end-to-end run of ``docs/deployment.md``).

Writes, in ``--folder``: an ``ivf-pq-mmap`` index of ``--n`` vectors (the real dev vectors + synthetic ones,
``benchmarks/scale_data.py``) under ids 1..n, the sidecar (encoder and image space copied from the real index,
so the service accepts it) and ``--n`` synthetic metadata rows, bulk-inserted with SQLAlchemy core in batches,
into ``metadata.sqlite`` or, with ``--database-url``, into PostgreSQL (give the URL a dedicated schema, e.g.
``...?options=-csearch_path%3Dscale17``; ``--drop-schema NAME`` removes it afterwards)::

    .venv/bin/python benchmarks/scale_service.py --n 1000000 --folder /tmp/scale17/index
    .venv/bin/python benchmarks/scale_service.py --n 1000000 --folder /tmp/scale17/index --rows-only \\
        --database-url 'postgresql+psycopg://postgres@127.0.0.1:5432/test?options=-csearch_path%3Dscale17'

Then serve it (``POLYGLOT_INDEX_DIR=/tmp/scale17/index``) and load it with ``benchmarks/load_search.py``.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see index_scale.py

import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import scale_data
from sqlalchemy import create_engine, insert, text

from indexer.settings import Settings
from indexer.store.index_kinds import MMAP_KIND
from indexer.store.metadata import ImageRow, MetadataStore, sqlite_url
from indexer.store.sidecar import DB_NAME, Sidecar
from indexer.store.vector_files import MmapBuilder, vector_files

BATCH = 50_000


def insert_rows(url: str, n: int) -> float:
    """``n`` rows with ids 1..n (the vectors' ids): fake paths and hashes, one timestamp."""
    MetadataStore(url).close()  # creates the table (and the schema's tables) the way the service does
    engine = create_engine(url)
    began = time.perf_counter()
    now = datetime.now(UTC)
    with engine.begin() as connection:
        if connection.dialect.name == "sqlite":
            connection.execute(text("PRAGMA synchronous=OFF"))  # a bulk load: one commit at the end
        for start in range(1, n + 1, BATCH):
            rows = [
                {
                    "id": i,
                    "path": f"/photos/scale/{i:08d}.jpg",
                    "sha256": f"{i:064x}",
                    "width": 224,
                    "height": 224,
                    "bytes": 24_000,
                    "added_at": now,
                    "title": None,
                    "caption": None,
                    "tags": [],
                    "extra": {},
                }
                for i in range(start, min(n, start + BATCH - 1) + 1)
            ]
            connection.execute(insert(ImageRow.__table__), rows)
        if connection.dialect.name == "postgresql":  # ids were given explicitly: move the sequence past them
            connection.execute(text("SELECT setval(pg_get_serial_sequence('images', 'id'), :n)"), {"n": n})
    engine.dispose()
    return time.perf_counter() - began


def build_index(folder: Path, real_dir: Path, n: int) -> float:
    real = scale_data.real_vectors(real_dir)
    model = scale_data.MixtureModel(real)
    began = time.perf_counter()
    builder = MmapBuilder(folder, real.shape[1], Settings().vector_index)
    first = 1
    for chunk in scale_data.collection_chunks(real, model, n):
        builder.append(np.arange(first, first + len(chunk)), chunk)
        first += len(chunk)
    index = builder.finish()
    sidecar = Sidecar.load(real_dir)
    assert sidecar is not None
    sidecar.index_type, sidecar.count = MMAP_KIND, n
    sidecar.files = {"vectors": vector_files(index), "metadata": DB_NAME}
    sidecar.save(folder)
    return time.perf_counter() - began


def check_writes(folder: Path, image: Path, database_url: str | None) -> dict[str, float]:
    """Open the prepared index as the service does, then add one photo and delete it, timed (encoder warm)."""
    from indexer.image_index import ImageIndex

    settings = Settings(index_dir=folder, database_url=database_url)
    began = time.perf_counter()
    with ImageIndex.open(settings, create=False) as index:
        times = {"open_s": time.perf_counter() - began}
        index._state.loaded_encoder()  # model loading is start-up work, not the cost of one photo
        index.remove([i for i, _ in index.store.by_paths([str(image.resolve())]).values()])  # from an earlier run
        times["images"] = len(index)
        began = time.perf_counter()
        report = index.add_paths([image], progress=False)
        times["add_one_s"] = time.perf_counter() - began
        (added,) = index.store.by_paths([str(image.resolve())]).values()
        # The real dev photos are in the collection: the same photo may tie with its twin at score 1.
        assert report.added == 1 and added[0] in [hit.id for hit in index.search(index.vector(added[0]), 5)[0]]  # type: ignore[arg-type]
        began = time.perf_counter()
        index.remove([added[0]])
        times["delete_one_s"] = time.perf_counter() - began
        assert len(index) == int(times["images"])
    return {key: round(value, 3) for key, value in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/scale17/index"))
    parser.add_argument("--real", type=Path, default=None, help="Index of the real vectors (POLYGLOT_INDEX_DIR).")
    parser.add_argument("--database-url", help="Metadata rows there instead of FOLDER/metadata.sqlite.")
    parser.add_argument("--rows-only", action="store_true", help="Only the metadata rows (the index exists).")
    parser.add_argument("--drop-schema", help="Drop this PostgreSQL schema (of --database-url) and exit.")
    parser.add_argument("--check-writes", type=Path, metavar="IMAGE", help="Time opening, adding IMAGE, deleting it.")
    args = parser.parse_args()
    if args.check_writes:
        print(json.dumps(check_writes(args.folder, args.check_writes, args.database_url)))
        return
    if args.drop_schema:
        engine = create_engine(args.database_url)
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{args.drop_schema}" CASCADE'))
        return
    if args.database_url and "postgresql" in args.database_url:
        schema = args.database_url.split("search_path%3D")[-1].split("&")[0]
        with create_engine(args.database_url.split("?")[0]).begin() as connection:
            connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    args.folder.mkdir(parents=True, exist_ok=True)
    if not args.rows_only:
        real_dir = args.real or Settings().resolved_index_dir
        print(f"index of {args.n:,} built in {build_index(args.folder, real_dir, args.n):.1f} s", flush=True)
    url = args.database_url or sqlite_url(args.folder / DB_NAME)
    print(f"{args.n:,} rows inserted in {insert_rows(url, args.n):.1f} s", flush=True)


if __name__ == "__main__":
    main()
