"""``polyglot index captions add|list|stats|remove``: the caption collection used by ``POST /captions``.

Captions are embedded by the configured text tower (sentence embeddings cached by text hash), so they live
in the image space and an image finds its best captions by cosine similarity.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from tqdm.auto import tqdm

from app.cli.common import console
from app.cli.settings_cli import read_settings
from app.service_settings import ServiceSettings

if TYPE_CHECKING:
    from indexer.captions import CaptionIndex
    from indexer.tower import TextEmbedder

app = typer.Typer(help="Index captions for image → caption retrieval.", no_args_is_help=True)


def load_embedder(settings: ServiceSettings) -> TextEmbedder:
    """The main text tower the service embeds captions with (the query pipeline's models); a seam for tests."""
    from indexer.query import load_text_tower  # torch: imported when a command needs it, not for --help

    return load_text_tower(settings, alignments=False)


@contextmanager
def opened() -> Iterator[CaptionIndex]:
    from indexer.captions import CaptionIndex
    from indexer.store.locks import IndexBusyError
    from indexer.store.opening import IndexMismatchError

    settings = read_settings(ServiceSettings)
    try:
        embedder = load_embedder(settings)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/] cannot load the text tower: {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    index = CaptionIndex.from_settings(settings, embedder)
    try:
        yield index
    # Another `captions add/remove` holds the folder's write lock, or another process saved the captions embedded by
    # another text tower since this one opened them.
    except (IndexBusyError, IndexMismatchError) as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    finally:
        index.close()


def _langs(value: str | None) -> list[str] | None:
    return [code.strip().lower() for code in value.split(",") if code.strip()] if value else None


@app.command("add")
def add(
    file: Path = typer.Argument(..., help="JSONL with the shared schema: image, lang, text, source."),
    lang: str | None = typer.Option(None, "--lang", help="Only these languages, comma-separated (e.g. en,fr)."),
    images: Path | None = typer.Option(
        None, "--images", help="Only captions of these image ids: a file with one id per line (e.g. a split)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Embed and index the captions of FILE that are not indexed yet (same language and text)."""
    from indexer.captions import CaptionFileError, read_captions
    from indexer.regular_files import read_regular_text

    try:
        captions = read_captions(file, _langs(lang))
        if images is not None:
            keep = {line.strip() for line in read_regular_text(images).splitlines() if line.strip()}
            captions = [c for c in captions if c.image in keep]
    except (CaptionFileError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    if not captions:
        console.print(f"[red]error:[/] no captions to add from {file}" + (f" in {lang}" if lang else ""))
        raise typer.Exit(code=2)
    with opened() as index:
        with tqdm(total=len(captions), unit="caption", desc="captions", disable=quiet) as bar:
            added = index.add(captions, progress=bar.update)
            bar.update(max(0, len(captions) - bar.n))
        console.print(
            f"added {added}, already indexed {len(captions) - added}; the collection holds {len(index)} captions"
        )


@app.command("stats")
def stats() -> None:
    """Captions per language, as JSON."""
    with opened() as index:
        typer.echo(json.dumps(index.stats(), indent=2, ensure_ascii=False))


@app.command("list")
def list_captions(
    lang: str | None = typer.Option(None, "--lang", help="Only this language."),
    offset: int = typer.Option(0, min=0),
    limit: int = typer.Option(20, min=1, max=10_000),
) -> None:
    """Print captions as JSON lines."""
    with opened() as index:
        for hit in index.list(lang, offset, limit):
            row = {"id": hit.id, "lang": hit.lang, "text": hit.text, "image": hit.image, "source": hit.source}
            typer.echo(json.dumps(row, ensure_ascii=False))


@app.command("remove")
def remove(
    lang: str | None = typer.Option(None, "--lang", help="Remove captions in this language."),
    source: str | None = typer.Option(None, "--source", help="Remove captions from this source."),
    image: str | None = typer.Option(None, "--image", help="Remove the captions of this image id."),
) -> None:
    """Remove the captions matching all given filters."""
    if not (lang or source or image):
        console.print("[red]error:[/] give --lang, --source and/or --image")
        raise typer.Exit(code=2)
    with opened() as index:
        removed = index.remove(lang=lang, source=source, image=image)
        console.print(f"removed {removed}; the collection holds {len(index)} captions")
