"""``polyglot serve``: index what is new in a folder (and a caption file), then serve the API and web page.

Default collection when ``--images`` is not given (and ``POLYGLOT_IMAGES_DIR`` is unset): the dev split of
``../shared/data/m30k-f8k`` when present (its 1,000 images, with their captions for ``/captions``),
otherwise the sample photos that ship inside scikit-image (``skimage/data``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.markup import escape

from app.cli.common import console
from app.cli.settings_cli import read_settings
from app.service_settings import ServiceSettings

if TYPE_CHECKING:
    from indexer.captions import Caption

SHARED = Path("../shared/data/m30k-f8k")


@dataclass
class Collection:
    name: str
    paths: list[Path]
    captions: Path | None = None
    caption_images: set[str] | None = field(default=None)
    caption_source: str | None = None
    refused: int = 0  # files left out for their names (not UTF-8), each reported when the folder was read


def shared_data_root() -> Path | None:
    """``../shared/data/m30k-f8k`` from the working directory or from the repository root."""
    repo = Path(__file__).resolve().parents[2]
    for root in (Path.cwd() / SHARED, repo / SHARED):
        if (root / "images").is_dir() and (root / "splits" / "dev.txt").is_file():
            return root.resolve()
    return None


def skimage_photos() -> list[Path]:
    try:
        import skimage.data
    except ImportError:
        return []
    folder = Path(skimage.data.__file__).parent
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in {".png", ".jpg", ".jpeg"})


def default_collection() -> Collection:
    root = shared_data_root()
    if root is not None:
        ids = [line.strip() for line in (root / "splits" / "dev.txt").read_text().splitlines() if line.strip()]
        paths = [root / "images" / image for image in ids if (root / "images" / image).is_file()]
        captions = root / "captions.jsonl"
        # One caption per photo and language (the Multi30K task-1 set, ~5,000): the first start embeds them in about a
        # minute; all ~22,700 dev captions would take the hybrid tower's e5 half over 5 minutes on 2 cores.
        return Collection(
            f"{root} (dev split)", paths, captions if captions.is_file() else None, set(ids), "multi30k-task1"
        )
    return Collection("scikit-image sample photos", skimage_photos())


def folder_collection(folder: Path) -> Collection:
    from indexer.image_sources import SourceError, expand_sources

    try:
        sources = expand_sources([folder])
    except SourceError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    for path, reason in sources.refused:  # names that are not UTF-8: each reported, the others served
        console.print(f"[yellow]skipped[/] {path}: {reason}", highlight=False)
    return Collection(str(folder), sources.paths, refused=len(sources.refused))


def caption_rows(collection: Collection, captions: Path) -> list[Caption]:
    """The captions of ``captions`` to index with ``collection``: the collection's own file is narrowed to its
    images (and source); a file the user passed is taken whole."""
    from indexer.captions import read_captions

    rows = read_captions(captions)
    if captions != collection.captions:
        return rows
    if collection.caption_images is not None:
        rows = [row for row in rows if row.image in collection.caption_images]
    if collection.caption_source is not None:
        rows = [row for row in rows if row.source == collection.caption_source]
    return rows


def index_collection(
    settings: ServiceSettings, collection: Collection, captions: Path | None, quiet: bool, watched: Path | None = None
) -> None:
    """Index the collection's photos (then its captions). ``watched`` (``serve --watch``): the folder's catch-up
    instead, which reads only the photos that are new or changed since the watcher last saw them (and drops the
    rows of vanished ones), as the service's watcher would on start."""
    from tqdm.auto import tqdm

    from app.cli.captions_cmd import load_embedder
    from indexer.captions import CaptionFileError, CaptionIndex
    from indexer.image_index import ImageIndex, IndexBusyError, IndexMismatchError
    from indexer.store.failures import BackendUnavailableError, DiskFullError

    try:
        # A new tower may expect another image space: re-derive the vectors (cached features) instead of refusing.
        with ImageIndex.open(settings, create=True, rebuild_if_stale=True) as index:
            if watched is not None:
                from indexer.watch import FolderWatcher

                watcher = FolderWatcher(index, [watched])
                try:
                    caught_up = watcher.sync()
                finally:
                    watcher.stop()
                console.print(
                    f"{collection.name}: {caught_up.found} photos, {caught_up.read} read (new or changed), added "
                    f"{caught_up.added}, removed {caught_up.removed}, failed {len(caught_up.failed)}; the index "
                    f"holds {len(index)} images"
                )
            elif collection.paths:
                report = index.add_paths(collection.paths, progress=not quiet)
                console.print(
                    f"{collection.name}: added {report.added}, unchanged {report.skipped}, "
                    f"failed {len(report.failed) + collection.refused}; the index holds {len(index)} images"
                )
    except (IndexMismatchError, IndexBusyError, BackendUnavailableError, DiskFullError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(code=2) from None
    if captions is None:
        return
    try:
        rows = caption_rows(collection, captions)
    except CaptionFileError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    caption_index = CaptionIndex.from_settings(settings, load_embedder(settings))
    try:
        with tqdm(total=len(rows), desc="captions", unit="text", disable=quiet) as bar:
            added = caption_index.add(rows, progress=bar.update)
        console.print(f"captions: added {added}; the collection holds {len(caption_index)} captions")
    except IndexBusyError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    finally:
        caption_index.close()


def check_database(settings: ServiceSettings) -> None:
    """A database server that is down at start-up is one line and exit 2, as for ``index add``: ``serve`` printed
    a 167-line traceback (exit 1), and with ``--no-index`` uvicorn's start-up failure (220 lines, exit 3)."""
    if settings.database_url is None:  # the index's own SQLite file: nothing to reach
        return
    from indexer.store.failures import BackendUnavailableError
    from indexer.store.sql import SqlStore

    try:
        SqlStore.reachable(settings.database_url, settings.database_timeout_seconds)
    except BackendUnavailableError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(code=2) from None


def check_port(host: str, port: int) -> None:
    """The address must be free to listen on before anything is indexed or "serving on" printed: uvicorn found it
    taken only after both, printed its own error and exited 3. A socket is bound the way uvicorn binds its own
    (``SO_REUSEADDR``: a port whose last connections are still closing is free) and closed at once."""
    import errno
    import socket

    def refuse(message: str) -> NoReturn:
        console.print(f"[red]error:[/] {escape(message)}", highlight=False)
        raise typer.Exit(code=2)

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        refuse(f"--host {host!r} is not an address or a name this machine can resolve ({exc})")
    probe = socket.socket(family, kind, proto)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            refuse(f"port {port} on {host} is already in use (another server listens there): choose another --port")
        if exc.errno == errno.EACCES:
            refuse(
                f"port {port} on {host} needs privileges this user lacks (ports under 1024): choose --port 1024 or more"
            )
        if exc.errno == errno.EADDRNOTAVAIL:
            refuse(f"--host {host} is not an address of this machine: use 127.0.0.1, 0.0.0.0 or one of its addresses")
        refuse(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    finally:
        probe.close()


def check_lexicon(settings: ServiceSettings) -> None:
    """A missing, truncated or damaged concept lexicon file is one line naming it and exit 2, before any model
    loads (the tagger loads the same checked files at start-up)."""
    from indexer.asset_paths import SHIPPED_CONCEPTS
    from indexer.concepts import ConceptLexicon, LexiconError

    try:
        ConceptLexicon.load(settings.tagging.lexicon_dir or SHIPPED_CONCEPTS)
    except LexiconError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(code=2) from None


def check_index_fits(settings: ServiceSettings, tower: Path, *, no_index: bool) -> None:
    """The configured models and the index must fit together before uvicorn starts: refused in the service's
    start-up (uvicorn's lifespan), each was a traceback and exit 3. One line and exit 2 instead, naming the setting
    to change. First an index folder whose metadata is gone (``metadata.sqlite``, or the photo rows at
    ``POLYGLOT_DATABASE_URL``), as for ``index add``, with the folder and the database left untouched
    (:func:`indexer.store.opening.check_metadata`); then the text model trained for another image encoder than
    POLYGLOT_IMAGE_ENCODER, an index built with another image encoder, and, with ``--no-index``, an index in another
    image space (indexing first rebuilds it: ``index_collection``). A metadata database or, with ``--no-index``, a
    vector file that cannot be read (garbage, cut off) is refused too, naming what to run. Nothing else is loaded:
    the image encoder is built, not loaded; config files, the sidecar and (``--no-index``) the vectors are read
    once."""
    import json

    from indexer.encoders.factory import UnknownEncoderError, build_image_encoder
    from indexer.store import opening
    from indexer.store.failures import BackendUnavailableError
    from indexer.store.sidecar import DB_NAME, Sidecar, SidecarError

    def refuse(message: str) -> NoReturn:
        console.print(f"[red]error:[/] {escape(message)}", highlight=False)
        raise typer.Exit(code=2)

    folder = settings.resolved_index_dir
    try:
        sidecar = Sidecar.load(folder)
        if settings.database_url is None:
            opening.check_sqlite_file(folder, folder / DB_NAME)
        opening.check_metadata(folder, sidecar, settings.database_url, settings.database_timeout_seconds)
    except (opening.MetadataMissingError, opening.IndexFileCorruptError, SidecarError, BackendUnavailableError) as exc:
        refuse(str(exc))
    configured = settings.models.image_encoder
    trained_for = json.loads((tower / "config.json").read_text(encoding="utf-8")).get("image_encoder")
    if trained_for is not None and trained_for != configured:  # load_models' ModelsError, before the start
        refuse(
            f"the text model in {tower} was trained for image encoder {trained_for!r}, but POLYGLOT_IMAGE_ENCODER "
            f"is {configured!r}: set it to {trained_for} (an index built with another image encoder needs a text "
            "model trained for that encoder: POLYGLOT_TOWER_PATH)"
        )
    try:
        opening.check_encoder(folder, sidecar, build_image_encoder(settings))
    except (UnknownEncoderError, opening.IndexMismatchError) as exc:
        refuse(str(exc))
    try:
        opening.is_stale(folder, sidecar, opening.default_image_space(settings), rebuild_if_stale=not no_index)
    except opening.IndexMismatchError as exc:
        refuse(f"{exc} (or `polyglot serve` without --no-index, which rebuilds it first)")
    if no_index and sidecar is not None and settings.vector_index.backend != "milvus":
        # The vectors the service would load in its start-up, read once here: a damaged file is one line naming
        # `polyglot index rebuild`, not uvicorn's start-up traceback (without --no-index, indexing opens them).
        from indexer.store.vector_files import load_vectors

        try:
            load_vectors(folder, sidecar, settings.vector_index)
        except opening.IndexFileCorruptError as exc:
            refuse(str(exc))


def register(cli: typer.Typer) -> None:
    @cli.command("serve")
    def serve(
        images: Path | None = typer.Option(
            None, "--images", help="Folder to index (what is new) and serve. Default: see `polyglot serve --help`."
        ),
        captions: Path | None = typer.Option(None, "--captions", help="JSONL captions (image/lang/text/source)."),
        host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
        port: int = typer.Option(8000, "--port", min=1, max=65535),
        no_index: bool = typer.Option(False, "--no-index", help="Serve the index as it is; index nothing."),
        watch: bool = typer.Option(
            False,
            "--watch",
            help="Keep the --images folder in sync while serving: new, changed, moved and deleted "
            "photos reach the index within seconds.",
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    ) -> None:
        """Index what is new, then serve the search API and web page on http://HOST:PORT.

        Without --images: POLYGLOT_IMAGES_DIR, else the m30k-f8k dev split in ../shared/data (1,000 images and
        their captions), else the sample photos bundled with scikit-image.
        """
        import uvicorn

        from app.http_limits import served_protocol
        from app.main import create_app
        from indexer.asset_paths import shipped_tower_path

        settings = read_settings(ServiceSettings)
        tower = settings.models.tower_path or shipped_tower_path(settings.models.text_encoder)
        if not (tower / "config.json").is_file():
            console.print(
                f"[red]error:[/] no text model at {tower}: train a student with `polyglot train-student` (or a "
                "tower with `polyglot train`) and point POLYGLOT_TOWER_PATH at its folder",
                highlight=False,
            )
            raise typer.Exit(code=2)
        check_port(host, port)
        check_database(settings)
        check_lexicon(settings)
        check_index_fits(settings, tower, no_index=no_index)
        folder = images or settings.service.images_dir
        if watch:
            if folder is None or not folder.is_dir():
                console.print("[red]error:[/] --watch needs a folder: --images DIR (or POLYGLOT_IMAGES_DIR)")
                raise typer.Exit(code=2)
            settings = settings.model_copy(update={"watch_dirs": [folder.resolve()]})
        if not no_index:
            if folder is not None:
                if not folder.is_dir():
                    console.print(f"[red]error:[/] {folder}: not a folder", highlight=False)
                    raise typer.Exit(code=2)
                collection = folder_collection(folder)
                if not collection.paths and not watch:
                    console.print(
                        f"[yellow]warning:[/] {folder} holds no photos this service reads (nothing to index; "
                        "`polyglot index add DIR` adds some later)",
                        highlight=False,
                    )
            else:
                collection = default_collection()
                if not collection.paths:
                    # A clone without ../shared/data and without scikit-image's samples served an empty index in
                    # silence; it still serves (an index built before, or photos added later), but says how.
                    console.print(
                        "[yellow]warning:[/] no sample photos to index (no ../shared/data/m30k-f8k beside the "
                        "clone, no scikit-image samples): pass a photo folder with --images DIR (or "
                        "POLYGLOT_IMAGES_DIR), or add one with `polyglot index add DIR`",
                        highlight=False,
                    )
            if captions is not None and not captions.is_file():
                console.print(f"[red]error:[/] {captions}: no such file", highlight=False)
                raise typer.Exit(code=2)
            index_collection(
                settings,
                collection,
                captions or settings.service.captions_file or collection.captions,
                quiet,
                watched=folder.resolve() if watch and folder is not None else None,
            )
            if settings.service.images_dir is None and collection.paths:
                # The served photo folder is the default of POLYGLOT_ALLOWED_ROOTS (admin server paths, serving).
                common = Path(os.path.commonpath([str(p.resolve()) for p in collection.paths]))
                settings = settings.model_copy(update={"images_dir": common if common.is_dir() else common.parent})
        if watch:
            console.print(f"watching {folder} for changes")
        console.print(f"serving on http://{host}:{port}  (API docs: http://{host}:{port}/docs)")
        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", http=served_protocol(settings))
