"""``polyglot index add|remove|list|stats|rebuild``: fill and maintain the image index from the shell.

User mistakes (missing paths, bad manifests, an index built with another encoder, a busy index) print one
clear line and exit with code 2; Ctrl-C keeps everything committed so far and exits with 130.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from app.cli.common import console, fail, out
from app.cli.settings_cli import read_settings
from indexer.encoders.factory import UnknownEncoderError
from indexer.image_index import AddReport, ImageIndex, IndexBusyError, IndexMismatchError, IndexNotFoundError
from indexer.image_sources import SourceError, Sources, expand_sources
from indexer.model_files import ChecksumError, ModelFileMissingError
from indexer.store.failures import BackendUnavailableError, DiskFullError
from indexer.store.milvus_vectors import VectorBackendError
from indexer.store.sidecar import SidecarError

app = typer.Typer(help="Build and maintain the image index.", no_args_is_help=True)

USER_ERRORS = (
    ModelFileMissingError,  # an export not built yet (e.g. POLYGLOT_ENCODER_BACKEND=onnx): the message names the command
    ChecksumError,
    SourceError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexBusyError,
    UnknownEncoderError,
    SidecarError,
    VectorBackendError,
    BackendUnavailableError,
    DiskFullError,
)


@contextmanager
def opened(
    create: bool = False, rebuild_if_stale: bool = False, progress: bool = False, repair_vectors: bool = False
) -> Iterator[ImageIndex]:
    """Open the configured index, turning user-level problems into a one-line error and exit code 2."""
    try:
        index = ImageIndex.open(
            read_settings(),
            create=create,
            rebuild_if_stale=rebuild_if_stale,
            progress=progress,
            repair_vectors=repair_vectors,
        )
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    if index.read_only_reason:
        console.print(
            f"[yellow]warning:[/] read-only at its last good state: {index.read_only_reason}", highlight=False
        )
    try:
        yield index
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        console.print("[yellow]interrupted:[/] everything indexed so far is saved; run the command again to go on")
        raise typer.Exit(code=130) from None
    finally:
        index.close()


class Engine(StrEnum):
    local = "local"
    ray = "ray"


@app.command("add")
def add(
    paths: list[Path] = typer.Argument(..., help="Folders (recursive), image files, or CSV/JSONL manifests."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    engine: Engine = typer.Option(Engine.local, help="Embed here (local) or on a Ray cluster (ray)."),
    address: str | None = typer.Option(None, help="ray: cluster address (auto, ray://host:10001); default local."),
    workers: int = typer.Option(1, min=1, max=4096, help="ray: encoder actors (each loads the encoder once)."),
    gpus_per_worker: float = typer.Option(0.0, min=0.0, max=8.0, help="ray: GPUs per actor (0: CPU actors)."),
    shards: Path | None = typer.Option(None, help="ray: shard folder (resumable); default INDEX_DIR/ray-shards/…"),
    shard_size: int = typer.Option(1024, min=1, max=1_000_000, help="ray: photos per shard (a killed run redoes one)."),
) -> None:
    """Embed and index new or changed images; unchanged ones (same path and content) are skipped."""
    try:
        sources = expand_sources(paths)
    except SourceError as exc:
        raise fail(str(exc)) from None
    if not sources.paths:
        raise fail("no images found in " + ", ".join(str(p) for p in paths))
    with opened(create=True) as index:
        if engine is Engine.ray:
            ray_options = {"workers": workers, "address": address, "gpus_per_worker": gpus_per_worker}
            report = add_on_ray(index, sources, ray_options | {"shards_dir": shards, "shard_size": shard_size}, quiet)
        else:
            report = index.add_paths(sources.paths, sources.metadata, progress=not quiet)
        report.failed[:0] = sources.refused  # names that are not UTF-8: each reported, the others indexed
        for path, reason in report.failed[:20]:
            console.print(f"[yellow]skipped[/] {path}: {reason}", highlight=False)
        if len(report.failed) > 20:
            console.print(f"[yellow]… and {len(report.failed) - 20} more unreadable files[/]")
        console.print(
            f"added {report.added}, unchanged {report.skipped}, failed {len(report.failed)}"
            + (f", moved {report.moved} (same ids)" if report.moved else "")
            + f"; the index holds {len(index)} images"
        )


def add_on_ray(index: ImageIndex, sources: Sources, options: dict[str, Any], quiet: bool) -> AddReport:
    """Embed on Ray (indexer/distributed/), then index as usual; Ray's own failures are one line, exit 2."""
    try:
        # Ray itself is imported only when the cluster runs (indexer/distributed/ray_embed.py): without the
        # ``cluster`` extra that was a ModuleNotFoundError traceback after the index had opened. Ask for it here.
        import ray.data  # noqa: F401

        from indexer.distributed.ray_index import add_with_ray
        from indexer.distributed.shards import ShardRunMismatchError
    except ImportError as exc:
        raise fail(f"--engine ray needs Ray: pip install '.[cluster]' ({exc})") from None
    try:
        report, run = add_with_ray(index, sources, progress=not quiet, **options)
    except ShardRunMismatchError as exc:
        raise fail(str(exc)) from None
    except ConnectionError as exc:
        raise fail(f"cannot reach the Ray cluster at {options['address']}: {exc}") from None
    console.print(f"ray: embedded {run.photos} photos in {run.embedded_shards} shards, {run.resumed_shards} resumed")
    return report


@app.command("remove")
def remove(
    ids: list[int] = typer.Argument(None, help="Image ids (see `polyglot index list`)."),
    path: list[Path] = typer.Option(None, "--path", help="Remove by file path (repeatable)."),
) -> None:
    """Remove images from the index (the files themselves are not touched)."""
    wanted = list(ids or [])
    if not wanted and not path:
        raise fail("give image ids or --path PATH")
    with opened() as index:
        if path:
            resolved = [str(Path(p).expanduser().resolve()) for p in path]
            found = index.store.by_paths(resolved)
            for missing in sorted(set(resolved) - set(found)):
                console.print(f"[yellow]not indexed:[/] {missing}", highlight=False)
            wanted += [image_id for image_id, _ in found.values()]
        removed = index.remove(wanted)
        console.print(f"removed {removed} of {len(set(wanted))} requested; the index holds {len(index)} images")


@app.command("list")
def list_images(
    limit: int = typer.Option(20, min=1, max=100_000, help="How many images."),
    offset: int = typer.Option(0, min=0, help="Skip this many (by id)."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a table."),
) -> None:
    """Show indexed images by id."""
    with opened() as index:
        records = index.list(offset=offset, limit=limit)
    if as_json:
        for record in records:
            out.print_json(json.dumps(record.to_json(), ensure_ascii=False), indent=None)
        return
    table = Table("id", "size", "title", "tags")
    table.add_column("path", overflow="fold")  # full paths: users copy them into `remove --path`
    for record in records:
        table.add_row(
            str(record.id), f"{record.width}x{record.height}", record.title or "", ", ".join(record.tags), record.path
        )
    out.print(table)


@app.command("timeline")
def timeline(
    k: int = typer.Option(30, "--k", min=1, max=10_000, help="Photos to show."),
    month: str | None = typer.Option(None, "--month", help="Start at this month's newest photo (YYYY-MM)."),
    cursor: str | None = typer.Option(None, "--cursor", help="Go on from a previous page (the cursor it printed)."),
    taken_after: str | None = typer.Option(None, "--taken-after", help="Taken on/after this ISO 8601 date(-time)."),
    taken_before: str | None = typer.Option(None, "--taken-before", help="Taken on/before this date or date-time."),
    folder: str | None = typer.Option(None, "--folder", help="An absolute folder (and below), or a folder name."),
    near: str | None = typer.Option(None, "--near", help="'lat,lon,km': taken within km of this place."),
    as_json: bool = typer.Option(False, "--json", help="JSON: the photos and the next cursor."),
) -> None:
    """The library by date, newest first (what the page opens on, GET /library): photos without a capture date
    after the others, by their file's time, marked "file"."""
    import re

    from indexer.search_filters import FilterError, PhotoFilter
    from indexer.store.timeline import CursorError, TimelineKey, timeline_page

    if month is not None and cursor is not None:
        raise fail("give --month or --cursor, not both")
    try:
        after = TimelineKey.decode(cursor) if cursor is not None else None
        where = PhotoFilter.parse(taken_after, taken_before, folder, near)
    except (CursorError, FilterError) as exc:
        raise fail(str(exc)) from None
    if month is not None:
        found = re.fullmatch(r"([0-9]{4})-([0-9]{2})", month.strip())
        if found is None or not 1 <= int(found[2]) <= 12 or int(found[1]) < 1:
            raise fail(f"--month must be YYYY-MM, e.g. 2024-06, not {month!r}")
        after = TimelineKey.month_end(int(found[1]), int(found[2]))
    with opened() as index:
        allowed = index.store.filtered_ids(where) if where.active else None
        entries, following = timeline_page(index.store, k, after, allowed)
        paths = {i: p for i, _, p in index.store.id_keys([e.id for e in entries])}
    rows = [
        {"id": e.id, "date": e.moment.isoformat() if e.moment else None, "date_source": e.segment, "path": paths[e.id]}
        for e in entries
        if e.id in paths
    ]
    next_cursor = following.encode() if following is not None else None
    if as_json:
        out.print_json(json.dumps({"photos": rows, "next_cursor": next_cursor}, ensure_ascii=False))
        return
    table = Table("date", "from", "id")
    table.add_column("path", overflow="fold")
    for row in rows:
        table.add_row(
            str(row["date"] or "").replace("T", " "), str(row["date_source"]), str(row["id"]), str(row["path"])
        )
    out.print(table)
    if next_cursor is not None:
        console.print(f"more: polyglot index timeline --cursor '{next_cursor}'", highlight=False)


@app.command("stats")
def stats(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Counts, index kind, sizes on disk and in memory, encoder and image space."""
    with opened() as index:
        numbers: dict[str, Any] = index.stats()
    if as_json:
        out.print_json(json.dumps(numbers))
        return
    table = Table("", "", show_header=False)
    for key, value in numbers.items():
        table.add_row(key, "" if value is None else str(value))
    out.print(table)


@app.command("rebuild")
def rebuild(quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar.")) -> None:
    """Re-derive all vectors (features cache, re-encoding misses) in the current image space and index kind."""
    with opened(rebuild_if_stale=True, progress=not quiet, repair_vectors=True) as index:
        # An index in an outdated image space was already rebuilt while opening: do not do it twice.
        report = index.rebuilt_on_open or index.rebuild(progress=not quiet)
        for path, reason in report.failed[:20]:
            console.print(f"[yellow]dropped[/] {path}: {reason}", highlight=False)
        console.print(
            f"rebuilt {report.added} vectors ({index.stats()['index_type']}); dropped {len(report.failed)} "
            "unreadable images"
        )


@app.command("watch")
def watch(
    folders: list[Path] = typer.Argument(..., help="Folders to keep in sync with the index (recursive)."),
    settle: float = typer.Option(1.0, min=0.05, max=600, help="Seconds of quiet before changes are applied."),
) -> None:
    """Index the folders, then keep the index in sync as photos are added, changed, moved or deleted (until
    Ctrl-C or SIGTERM). Each batch of changes is committed like `index add`: stopping it at any point loses
    nothing."""
    import signal
    import threading

    from indexer.watch import FolderWatcher, SyncReport

    for folder in folders:
        if not folder.is_dir():
            raise fail(f"{folder}: not a folder")

    def show(report: SyncReport, _removed: list[int]) -> None:
        failed = f", failed {len(report.failed)}" if report.failed else ""
        moved = f", moved {report.moved} (same ids)" if report.moved else ""
        console.print(f"added {report.added}, removed {report.removed}{moved}{failed}", highlight=False)
        for path, reason in report.failed[:5]:
            console.print(f"  [yellow]skipped[/] {path}: {reason}", highlight=False)

    with opened(create=True) as index:
        watcher = FolderWatcher(index, folders, settle=settle, on_change=show)
        console.print(f"catching up with {', '.join(map(str, watcher.folders))} …", highlight=False)
        watcher.start()
        if watcher.caught_up is not None:
            caught_up = watcher.caught_up
            console.print(
                f"{caught_up.found} photos, {caught_up.read} read (new or changed since the last watch), "
                f"the others unchanged",
                highlight=False,
            )
        console.print("watching for changes (Ctrl-C to stop)")
        # SIGTERM (docker stop, systemd) stops it like Ctrl-C: the batch being applied is finished first.
        stopping = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        try:
            while not stopping.wait(3600):
                pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            watcher.stop()
            console.print("stopped")


@app.command("duplicates")
def duplicates(
    threshold: float = typer.Option(
        0.85, min=0.5, max=1.0, help="Cosine at or above which two photos are near duplicates (see README)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the groups as JSON."),
    keep: int | None = typer.Option(
        None,
        "--keep",
        min=0,
        help="Mark this photo (id) as the copy to keep among its duplicates (the page's stacks show it; nothing is "
        "deleted); any other mark in its group is taken off.",
    ),
    unmark: int | None = typer.Option(None, "--unmark", min=0, help="Take the keep mark off this photo (id)."),
) -> None:
    """Groups of exact (same bytes) and near-duplicate (re-encoded, resized, cropped) photos; the copy marked to
    keep is listed first, with "keep"."""
    from indexer.duplicate_stacks import merged_groups
    from indexer.duplicates import find_duplicates
    from indexer.store.kept_copies import KeptCopies

    if keep is not None and unmark is not None:
        raise fail("give --keep or --unmark, not both")
    with opened() as index:
        groups = find_duplicates(index, threshold)
        marks = KeptCopies(index.store)
        for image_id in (keep, unmark):
            if image_id is not None and index.get(image_id) is None:
                raise fail(f"no photo with id {image_id} in the index")
        if keep is not None:
            stack = next((ids for ids in merged_groups(groups) if keep in ids), [])
            marks.keep(keep, stack)
        if unmark is not None:
            marks.unmark(unmark)
        kept = marks.ids()
        paths = {i: p for i, _, p in index.store.id_keys([i for g in groups for i in g.ids])}
    if keep is not None:
        console.print(f"photo {keep} marked as the copy to keep")
    if unmark is not None:
        console.print(f"photo {unmark}: keep mark taken off")
    rows: list[dict[str, Any]] = [
        {
            "kind": g.kind,
            "images": [
                {"id": i, "path": paths.get(i), "score": g.scores.get(i), "kept": i in kept}
                for i in sorted(g.ids, key=lambda i: i not in kept)  # the kept copy first
                if i in paths
            ],
        }
        for g in groups
    ]
    if json_out:
        out.print_json(json.dumps({"threshold": threshold, "groups": rows}, ensure_ascii=False))
        return
    if not rows:
        console.print(f"no duplicates (threshold {threshold})")
        return
    for number, group in enumerate(rows, start=1):
        out.print(f"[bold]{number}. {group['kind']}[/] ({len(group['images'])} photos)", highlight=False)
        for image in group["images"]:
            score = f"{image['score']:.3f}" if image["score"] is not None else "same bytes"
            mark = "keep" if image["kept"] else ""
            out.print(f"   {image['id']:>8}  {score:>10}  {mark:<4}  {image['path']}", highlight=False)
