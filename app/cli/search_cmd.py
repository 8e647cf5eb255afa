"""``polyglot search``: query the index from the shell, without a running server (as rclip does).

Same query pipeline as ``/search`` (:class:`indexer.query.QueryPipeline`): the text side (the shipped student
unless POLYGLOT_TOWER_PATH says otherwise) and the index kind are those the service would use with the same
settings.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer
from rich import box
from rich.cells import cell_len
from rich.table import Table

from app.cli.common import console, fail, out
from app.cli.settings_cli import read_settings
from indexer.query.pipeline import CUTOFF_POOL, DEFAULT_Z, cutoff_count
from indexer.search_filters import FilterError, PhotoFilter

if TYPE_CHECKING:
    from indexer.image_index import ImageIndex
    from indexer.query.onnx_text_side import OnnxTextSide
    from indexer.query.pipeline import ConceptFusion
    from indexer.settings import Settings
    from indexer.store.read_only import ReadOnlyIndex


TABLE_WIDTH = 80  # the results table fits a classic terminal, whatever the terminal's width
PLACE_WIDTH = 18
MIN_PATH_WIDTH = 16


def middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal cells, cut in the middle ("/home/ana/Ph…/2024/IMG_0042.jpg"): the
    start says where, the end which file. Wide characters (CJK) count two cells."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail_cells = (width - 1) * 2 // 3  # the file name matters most
    head, tail = "", ""
    for char in reversed(text):
        if cell_len(char + tail) > tail_cells:
            break
        tail = char + tail
    for char in text:
        if cell_len(head + char) + cell_len(tail) + 1 > width:
            break
        head += char
    return f"{head}…{tail}"


def results_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """The results as a table of at most ``TABLE_WIDTH`` columns: one line a result, the place and path cut in
    the middle where they do not fit (``--json`` has them whole)."""
    cells = [
        [
            str(row["rank"]),
            f"{row['score']:.3f}",
            str(row["id"]),
            str(row["taken_at"] or "")[:10],
            str(row["place"] or ""),
            str(row["path"]),
        ]
        for row in rows
    ]
    headers = ["rank", "score", "id", "taken", "place", "path"]
    widths = [max([cell_len(header), *(cell_len(line[i]) for line in cells)]) for i, header in enumerate(headers)]
    widths[4] = min(widths[4], PLACE_WIDTH)  # a longer place ends in "…"
    # No vertical rules: two spaces between columns (a divider and a cell's right padding), a rule under the header.
    widths[5] = max(MIN_PATH_WIDTH, TABLE_WIDTH - 2 * (len(headers) - 1) - sum(widths[:5]))
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    for header, width in zip(headers, widths, strict=True):
        justify: Literal["left", "right"] = "right" if header in ("rank", "score", "id") else "left"
        table.add_column(header, width=width, no_wrap=True, overflow="ellipsis", justify=justify)
    for line in cells:
        table.add_row(*line[:5], middle(line[5], widths[5]))
    return table


def loading_notes(cache_dir: Path) -> Callable[[str], None]:
    """What a search prints as it loads: on a new cache (the text model not yet prepared for this machine, the
    slow first search: seconds), in a terminal, one line on stderr for each thing it loads; else nothing."""
    if not console.is_terminal:
        return lambda what: None
    from indexer.query.onnx_text_side import OPTIMIZED_DIR

    kept = cache_dir / OPTIMIZED_DIR
    if kept.is_dir() and any(kept.iterdir()):
        return lambda what: None
    return lambda what: console.print(f"{what}…", style="dim", highlight=False)


def light_fusion(settings: Settings, light: OnnxTextSide) -> ConceptFusion:
    """The concept fusion /search applies, for the one-shot text side (its concept vectors as the full path cached
    them: the same fingerprint); a damaged lexicon is one line and exit 2, as at start-up."""
    from indexer.concepts import LexiconError
    from indexer.query.pipeline import load_concept_fusion

    try:
        return load_concept_fusion(settings, light, light.fingerprint)
    except LexiconError as exc:
        raise fail(str(exc)) from None


def register(cli: typer.Typer) -> None:
    @cli.command("search")
    def search(
        query: str | None = typer.Argument(None, help="What to look for, in any supported language."),
        lang: str | None = typer.Option(None, "--lang", help="Language of QUERY (ISO 639-1); default: detected."),
        image: Path | None = typer.Option(None, "--image", help="Search by this image instead of a text."),
        k: int = typer.Option(10, "--k", min=1, max=1000, help="Results to show."),
        json_out: bool = typer.Option(False, "--json", help="Print the results as JSON."),
        taken_after: str | None = typer.Option(None, "--taken-after", help="Taken on/after this ISO 8601 date(-time)."),
        taken_before: str | None = typer.Option(
            None, "--taken-before", help="Taken on/before this ISO 8601 date (whole day) or date-time."
        ),
        folder: str | None = typer.Option(
            None,
            "--folder",
            help="An absolute folder (and below), or the start of any folder name in the path, in any case and "
            "with or without accents (Lisboa finds 'Été à Lisboa').",
        ),
        near: str | None = typer.Option(
            None, "--near", help="'lat,lon,km' or 'place,km' (Lisbon,25): taken within km of this position or place."
        ),
        place: str | None = typer.Option(
            None,
            "--place",
            help="Taken in this city, region or country (named offline at index time): Lisboa, lisbon, Portugal, "
            "'Lisbon, Portugal'.",
        ),
        sort: str = typer.Option(
            "score", "--sort", help="score (best first) or date (the matches that pass --cutoff, newest first)."
        ),
        cutoff: bool | None = typer.Option(
            None,
            "--cutoff/--no-cutoff",
            help="Stop where results stop standing out from the query's score distribution. Default: on with "
            "--sort date (a date order of every photo would bury the matches), off with --sort score.",
        ),
        cutoff_z: float = typer.Option(DEFAULT_Z, "--cutoff-z", min=0.0, max=10.0, help="--cutoff: z-score to reach."),
    ) -> None:
        """Images of the index that best match QUERY (or --image), best first: rank, score, id and path.
        Filters (dates, folder, place) restrict the search itself: K results come back when K pass them."""
        # One query, then the process ends: the cyclic collector would only walk the hundreds of thousands of
        # objects the models' tables and the imports create (a measurable part of a one-shot start-up).
        gc.disable()
        from indexer.query.pipeline import clean_query, confident_language, unshouted, warm_up_language_detection

        if (query is None) == (image is None):
            raise fail("give a text QUERY or --image PATH (one of them)")
        text = clean_query(query or "")
        if image is None and not text:
            raise fail("empty query: give some text to look for")
        if image is not None and not image.is_file():
            what = "not a regular file (a folder, FIFO, device or socket)" if image.exists() else "no such image file"
            raise fail(f"{what}: {image}")
        if sort not in ("score", "date"):
            raise fail(f"--sort must be 'score' or 'date', not {sort!r}")
        if cutoff is None:
            cutoff = sort == "date"
        try:
            where = PhotoFilter.parse(taken_after, taken_before, folder, near, place)
        except FilterError as exc:
            raise fail(str(exc)) from None
        settings = read_settings()
        # A text query without CLC needs only the text side and the index: the student's ONNX trunk and numpy head,
        # without torch (~3 s of a one-shot command; indexer/query/onnx_text_side.py). Anything else, or a text side
        # that only the full path can load, takes the query pipeline.
        # Its ONNX session is built in native code that lets other threads run: in a thread, while this one imports
        # the index's modules (FAISS: Python that holds the interpreter).
        note = loading_notes(settings.resolved_cache_dir)
        light_side = None
        # The languages a label is chosen among (confident_language): the student's, unless the full path loads
        # another text side (its detector is then restricted to that one's at the label, as before).
        label_languages: frozenset[str] | None = None
        if image is None and settings.query.clc == "off":
            from indexer.query.onnx_text_side import StudentTrunk, load_onnx_text_side

            note("loading text model (the first search prepares it for this machine, once)")
            light_side = ThreadPoolExecutor(1).submit(load_onnx_text_side, settings)
            label_languages = StudentTrunk.languages
        # The language detector's model takes ~0.1 s to load from its decompressed copy in CACHE_DIR/langid/ (~0.65
        # s the first time, mostly decompression that lets other threads run), and its restriction to the text
        # side's languages copies a slice of its tables (~0.05 s): both beside the text side, not after it.
        detector = (
            ThreadPoolExecutor(1).submit(warm_up_language_detection, label_languages, settings.resolved_cache_dir)
            if image is None and not lang
            else None
        )
        from indexer.filtered_view import FilteredImages, by_date
        from indexer.store.failures import BackendUnavailableError
        from indexer.store.opening import IndexMismatchError, IndexNotFoundError
        from indexer.store.sidecar import SidecarError

        # What opening an index can refuse, each in one line: none, another encoder or image space, an unreadable
        # sidecar, a database that is locked past its time-out or is not one.
        refusals = (IndexNotFoundError, IndexMismatchError, FileNotFoundError, SidecarError, BackendUnavailableError)
        light = light_side.result() if light_side is not None else None
        encoder_languages: frozenset[str] | None = None
        index: ImageIndex | ReadOnlyIndex | None = None
        full: ImageIndex | None = None  # the full index, which filters and the query pipeline search
        try:
            if light is not None:
                note("loading index")
                supports, languages, label = light.supports, light.languages, light.label
                encoder_languages = light.trunk.languages
                if not where.active:
                    # Read-only, without SQLAlchemy (its ORM is most of what is left of the start-up) and without
                    # the write path's repairs and migrations, unless the index needs them (indexer/store/read_only.py).
                    from indexer.store.read_only import ReadOnlyIndex

                    index = ReadOnlyIndex.open(settings, light.image_space)
                if index is None:
                    from indexer.image_index import ImageIndex

                    index = full = ImageIndex.open(settings, image_space=light.image_space, create=False)
            else:
                from indexer.image_index import ImageIndex
                from indexer.query import ModelsError, QueryPipeline, load_models

                note("loading models")
                try:
                    models = load_models(settings)
                except ModelsError as exc:
                    raise fail(str(exc)) from None
                pipeline = QueryPipeline(models, settings)
                supports, languages, label = pipeline.supports, pipeline.languages, models.label
                encoder_languages = models.text.languages
                note("loading index")
                index = full = ImageIndex.open(
                    settings, image_space=models.image_space, create=False, encoder=models.image_encoder
                )
        except refusals as exc:
            raise fail(str(exc)) from None
        assert index is not None and (full is not None or not where.active)  # a filter opens the full index
        try:
            if len(index) == 0:
                raise fail(f"the index in {settings.resolved_index_dir} is empty: run `polyglot index add PATH...`")
            answer: dict[str, Any]
            try:
                searched: Any = FilteredImages.of(full, where) if full is not None and where.active else index
            except FilterError as exc:  # a folder or place that matches none: the close ones are named
                raise fail(str(exc)) from None
            depth = k if sort == "score" else max(k, settings.query.date_sort_pool)
            depth = max(depth, CUTOFF_POOL) if cutoff else depth
            if image is not None:
                from indexer.images import ImageDecodeError, load_image

                try:
                    picture = load_image(image, max_pixels=settings.index.max_image_pixels)
                except ImageDecodeError as exc:
                    raise fail(f"{image}: {exc}") from None
                hits = searched.search(pipeline.embed_images([picture]), depth)[0]
                answer = {"image": str(image)}
            else:
                probability = None
                if lang:
                    code: str | None = lang.strip().lower()
                else:  # a label only when the detector is sure, among the encoder's languages (issue 36)
                    if detector is not None:
                        detector.result()
                    code, probability = confident_language(text, encoder_languages)
                if lang and not supports(code or ""):
                    raise fail(f"unsupported --lang {lang!r}: the text encoder supports {', '.join(languages or [])}")
                if light is not None:  # as the pipeline embeds a query: capitals read, a concept's name fused
                    typed = unshouted(text, code)
                    vectors = light.embed([typed])
                    if settings.query.concept_fusion_weight > 0:
                        fusion = light_fusion(settings, light)
                        vectors = fusion.fuse(vectors, fusion.rows([typed], [code]))
                    hits = searched.search(vectors, depth)[0]
                else:
                    hits = pipeline.search_texts(searched, [(text, code, depth)])[0]
                answer = {"query": text, "lang": code, "model": label}
                if not lang:
                    answer["lang_probability"] = probability  # the detector's, of its best guess (shown or not)
            if cutoff:
                hits = hits[: cutoff_count([h.score for h in hits], cutoff_z)]
            hits = by_date(index, list(hits))[:k] if sort == "date" else list(hits)[:k]
            if where.active:
                answer["matching_images"] = len(searched.allowed)
            taken = index.store.taken([hit.id for hit in hits])
            places = index.store.places([hit.id for hit in hits])
            paths = {i: path for i, _, path in index.store.id_keys([hit.id for hit in hits])}  # one query
        except BackendUnavailableError as exc:  # the database locked past its time-out while reading the rows
            raise fail(str(exc)) from None
        finally:
            index.close()
        rows = [
            {
                "rank": rank,
                "score": round(float(hit.score), 4),
                "id": hit.id,
                "path": paths[hit.id],
                "taken_at": taken[hit.id].isoformat() if taken.get(hit.id) else None,  # type: ignore[union-attr]
                "place": places[hit.id].label if hit.id in places else None,
            }
            for rank, hit in enumerate((h for h in hits if h.id in paths), start=1)
        ]
        if json_out:
            out.print_json(json.dumps({**answer, "results": rows}, ensure_ascii=False))
            return
        title = f"{answer.get('query') or answer.get('image')}" + (f" ({answer['lang']})" if answer.get("lang") else "")
        out.print(results_table(title, rows), width=TABLE_WIDTH)
