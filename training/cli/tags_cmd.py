"""``polyglot tags vocab ship``: rebuild the shipped tag vocabularies from their sources (maintainers' command,
:mod:`training.tag_vocab`). Added to the ``tags vocab`` group by :mod:`training.cli`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.common import console, fail, out
from app.cli.tag_cmd import parse_langs
from indexer.asset_paths import SHIPPED_TAGS
from training.tag_vocab.build import DEFAULT_PER_CLASS_WORD

vocab_app = typer.Typer()


@vocab_app.command("ship")
def vocab_ship(
    lexicons: Path = typer.Option(..., help="Folder of MUSE dictionaries en-XX.tsv (../shared/data/lexicons)."),
    data: Path = typer.Option(..., help="Shared data folder with m30k-f8k, m30k-text, more-langs (captions)."),
    out_dir: Path = typer.Option(SHIPPED_TAGS, "--out", help="Where the word files go (the shipped folder)."),
    lang: str | None = typer.Option(None, "--lang", help="Only these languages (default: en + every dictionary)."),
    per_class_word: int = typer.Option(
        DEFAULT_PER_CLASS_WORD,
        min=1,
        help="Translations kept at most per ImageNet class name (caption words keep 3).",
    ),
    borrowed_animal_names: bool = typer.Option(
        False,
        "--borrowed-animal-names",
        help="Keep an animal class name's identity pair the language's lemma list knows (measured, not shipped).",
    ),
) -> None:
    """Rebuild the shipped vocabularies (words only) from their sources: maintainers' command, reproducible (the
    same sources give the same files). See indexer/assets/tags/README.md."""
    from training.tag_vocab.build import ship

    for folder in (lexicons, data):
        if not folder.is_dir():
            raise fail(f"{folder} is not a folder")
    try:
        reports = ship(
            lexicons,
            data,
            out_dir,
            parse_langs(lang) if lang else None,
            per_class_word=per_class_word,
            borrowed_animal_names=borrowed_animal_names,
            command="polyglot tags vocab ship --lexicons ../shared/data/lexicons --data ../shared/data"
            + (f" --per-class-word {per_class_word}" if per_class_word != DEFAULT_PER_CLASS_WORD else "")
            + (" --borrowed-animal-names" if borrowed_animal_names else ""),
            progress=lambda message: console.print(message, highlight=False),
        )
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    for report in reports:
        out.print(f"{report.lang}: {report.tags} tags", highlight=False)
