"""``polyglot``: one command line for set-up, indexing, training, evaluation, tagging and serving."""

from __future__ import annotations

import typer

from app.cli import (
    bridge_cmd,
    caption_search_cmd,
    captions_cmd,
    clc_cmd,
    collections_cmd,
    evaluate_cmd,
    index_cmd,
    models_cmd,
    search_cmd,
    serve_cmd,
    tag_cmd,
    train_cmd,
    translator_cmd,
)
from app.cli.logging_setup import configure_logging

cli = typer.Typer(
    name="polyglot",
    help="Polyglot Image Search: search photos in any language, caption and tag them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@cli.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logs (structured, to stderr)."),
) -> None:
    configure_logging(verbose)


index_cmd.app.add_typer(captions_cmd.app, name="captions")
cli.add_typer(index_cmd.app, name="index")
cli.add_typer(caption_search_cmd.app, name="captions")
cli.add_typer(models_cmd.app, name="models")
cli.add_typer(tag_cmd.tags_app, name="tags")
cli.add_typer(collections_cmd.collections_app, name="collections")
cli.add_typer(collections_cmd.pseudopairs_app, name="pseudopairs")
tag_cmd.register(cli)
train_cmd.register(cli)
evaluate_cmd.register(cli)
search_cmd.register(cli)
bridge_cmd.register(cli)
translator_cmd.register(cli)
clc_cmd.register(cli)
serve_cmd.register(cli)


def main() -> None:
    cli()
