"""What every ``polyglot`` command shares: the two consoles, the one-line user error, the errors a command turns
into it, and the data-folder check. Commands with errors of their own (the index's, tagging's) name them beside
their command and still print through :func:`fail`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from indexer.encoders.factory import UnknownEncoderError
from indexer.model_files import ChecksumError, ModelFileMissingError

console = Console(stderr=True, soft_wrap=True)  # one line per message, whatever the width
out = Console()  # results (tables, JSON) on stdout
# ValueError covers the lab's DatasetError, LexiconError, TranslationError and the models' ModelsError.
USER_ERRORS = (UnknownEncoderError, ModelFileMissingError, ChecksumError, FileNotFoundError, ValueError)


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on one line and return the exit (code 2) for the caller to raise. The message is
    text, not markup: rich swallowed the ``[cluster]`` of "pip install '.[cluster]'" as a tag."""
    console.print(f"[red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(code=2)


def check_data(data: Path) -> None:
    if not data.is_dir():
        raise fail(f"data folder {data} does not exist")
