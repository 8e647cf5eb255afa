"""``polyglot captions search``: the captions of one language that say what a text in another says — the same
library call as ``GET /captions/search`` (:class:`indexer.captions.cross_lingual.CrossLingualCaptions`)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from app.cli import captions_cmd
from app.cli.common import fail
from app.cli.settings_cli import read_settings
from app.service_settings import ServiceSettings

app = typer.Typer(
    help="Search the caption collection across languages (index captions with `polyglot index captions add`).",
    no_args_is_help=True,
)


@app.command("search")
def search(
    query: str = typer.Argument(..., help="The text, in language --lang."),
    lang: str = typer.Option(..., "--lang", help="Language of QUERY (ISO 639-1, e.g. de)."),
    target: str = typer.Option(..., "--target", help="Language of the captions to rank (e.g. en)."),
    k: int = typer.Option(5, "--k", min=1, max=50, help="Captions to show."),
    json_out: bool = typer.Option(False, "--json", help="Print the answer as JSON (the HTTP endpoint's shape)."),
) -> None:
    """The captions in --target closest to QUERY: in the pair's trained alignment when there is one, else in the
    fallback space (POLYGLOT_CAPTION_SEARCH_FALLBACK)."""
    from indexer.captions import CaptionIndex
    from indexer.captions.cross_lingual import CaptionSearchError, CrossLingualCaptions
    from indexer.query import ModelsError, load_alignments
    from indexer.query.pipeline import clean_query

    text = clean_query(query)
    if not text:
        raise fail("empty query: give some visible text")
    settings = read_settings(ServiceSettings)
    try:
        embedder = captions_cmd.load_embedder(settings)
        alignments, encoders = load_alignments(settings, embedder)
    except (FileNotFoundError, ModelsError, ValueError) as exc:
        raise fail(f"cannot load the models: {exc}") from None
    index = CaptionIndex.from_settings(settings, embedder)
    try:
        search = CrossLingualCaptions(index, embedder, alignments, encoders, settings.query.caption_search_fallback)
        code, wanted = lang.strip().lower(), target.strip().lower()
        try:
            found, space = search.search([text], code, wanted, k)
        except CaptionSearchError as exc:
            raise fail(str(exc)) from None
    finally:
        index.close()
    hits = found[0]
    if json_out:
        rows = [
            {"id": h.id, "text": h.text, "score": h.score, "rank": r, "image": h.image, "source": h.source}
            for r, h in enumerate(hits, start=1)
        ]
        answer = {"query": text, "lang": code, "target": wanted, "space": space, "captions": rows}
        typer.echo(json.dumps(answer, ensure_ascii=False, indent=2))
        return
    table = Table("rank", "score", "caption", "image", title=f"{code} → {wanted} ({space})")
    for rank, hit in enumerate(hits, start=1):
        table.add_row(str(rank), f"{hit.score:.3f}", hit.text, hit.image or "")
    Console().print(table)
