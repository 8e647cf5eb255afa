"""``polyglot tag IMAGE --lang fr`` and ``polyglot tags vocab build|list``: contextual tags from the shell.

User mistakes (a file that is not an image, a language with no vocabulary, unreadable text) print one clear
line and exit with code 2.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer
from rich.table import Table
from tqdm import tqdm

from app.cli.common import console, fail, out
from app.cli.plugins import PluggableGroup
from app.cli.settings_cli import read_settings
from indexer.asset_paths import SHIPPED_CONCEPTS, SHIPPED_TAGS
from indexer.concepts.lexicon import LexiconError, listed_languages
from indexer.encoders.factory import UnknownEncoderError
from indexer.images import ImageDecodeError, load_image
from indexer.model_files import ChecksumError
from indexer.tagging.shipped import ShippedWords, shipped_languages
from indexer.tagging.source_tags import CaptionRetriever
from indexer.tagging.store import VocabularyStore, check_lang
from indexer.tagging.tagger import UnknownLanguageError
from indexer.tagging.vocabulary import (
    DEFAULT_MAX_WORDS,
    DEFAULT_MIN_COUNT,
    VocabularyError,
    build_vocabulary,
    count_from_texts,
    read_texts,
    read_word_list,
    select_words,
)

tags_app = typer.Typer(help="Target-language tag vocabularies for `polyglot tag`.", no_args_is_help=True)
# PluggableGroup: the lab adds `ship` (training/cli/tags_cmd.py).
vocab_app = typer.Typer(
    help="Build and list tag vocabularies (versioned beside the index).", no_args_is_help=True, cls=PluggableGroup
)
tags_app.add_typer(vocab_app, name="vocab")

# FileNotFoundError covers a missing tower or model file (ModelFileMissingError is one).
USER_ERRORS = (
    LexiconError,
    VocabularyError,
    UnknownLanguageError,
    UnknownEncoderError,
    ChecksumError,
    FileNotFoundError,
    ValueError,
)


def parse_langs(value: str) -> list[str]:
    langs = [part.strip().lower() for part in value.split(",") if part.strip()]
    if not langs:
        raise fail("--lang needs at least one language code, e.g. --lang fr or --lang fr,de")
    try:
        return list(dict.fromkeys(check_lang(lang) for lang in langs))
    except VocabularyError as exc:
        raise fail(str(exc)) from None


def count_words(files: list[Path], lang: str, word_list: bool, forms: dict[str, Counter[str]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in files:
        counts.update(read_word_list(path) if word_list else count_from_texts(read_texts(path, lang), lang, forms))
    return counts


@vocab_app.command("build")
def vocab_build(
    files: list[Path] = typer.Argument(..., help="Caption JSONL files (rows with lang/text) or plain text files."),
    lang: str = typer.Option(..., "--lang", help="Language of the vocabulary (ISO 639-1), e.g. fr."),
    min_count: int = typer.Option(DEFAULT_MIN_COUNT, min=1, help="Keep words seen at least this often."),
    max_words: int = typer.Option(DEFAULT_MAX_WORDS, min=1, max=200_000, help="Keep at most this many words."),
    word_list: bool = typer.Option(False, "--word-list", help="FILES are plain word lists: one tag per line."),
    allow_unsupported: bool = typer.Option(
        False, help="Build even if the text encoder was not trained on this language (tags will be poor)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Count content words (stop words removed) in your own text, embed them once, save a new version."""
    from indexer.query import load_text_tower
    from indexer.tagging.cached import embed_cached

    code = parse_langs(lang)[0]
    settings = read_settings()
    for path in files:
        if not path.is_file():
            raise fail(f"{path} is not a file")
    try:
        forms: dict[str, Counter[str]] = {}
        counts = count_words(files, code, word_list, forms)
        text = load_text_tower(settings)
        if not text.encoder.supports(code) and not allow_unsupported:
            raise fail(
                f"the text encoder {text.encoder.name!r} does not cover {code!r}; tags would be unreliable "
                "(pass --allow-unsupported to build anyway)"
            )
        total = len(select_words(counts, 1 if word_list else min_count, max_words))
        with tqdm(total=total, desc=f"embed {code} tags", unit="tag", disable=quiet) as bar:
            vocabulary = build_vocabulary(
                code,
                counts,
                lambda words: embed_cached(text, words, settings.resolved_cache_dir, lang=code),
                min_count=1 if word_list else min_count,
                max_words=max_words,
                info={
                    "sources": [str(path) for path in files],
                    "kind": "word-list" if word_list else "content-words",
                    "text_encoder": text.encoder.name,
                    "tower": text.fingerprint,
                },
                progress=bar.update,
                forms=forms,
            )
        store = VocabularyStore.beside_index(settings.resolved_index_dir)
        version = store.save(vocabulary)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    out.print(f"{code} v{version}: {len(vocabulary)} tags → {store.root / code / f'v{version}'}", highlight=False)


@vocab_app.command("embed")
def vocab_embed(
    lang: str | None = typer.Option(None, "--lang", help="Languages, comma-separated (default: every shipped one)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Embed the shipped vocabularies with the served text encoder now (part of the set-up; otherwise each
    language is embedded the first time it is asked for). Cached by the text side's fingerprint: run it again
    after changing the text encoder."""
    from indexer.query import load_text_tower
    from indexer.tagging.shipped import ShippedVocabularies

    settings = read_settings()
    shipped = shipped_languages()
    langs = parse_langs(lang) if lang else shipped
    unknown = [code for code in langs if code not in shipped]
    if unknown:
        raise fail(f"no shipped tag vocabulary for {', '.join(unknown)}; shipped: {', '.join(shipped)}")
    try:
        text = load_text_tower(settings)
        vocabularies = ShippedVocabularies(text, text.fingerprint, settings.resolved_cache_dir)
        for code in langs:
            total = len(vocabularies.words(code).rows)
            done = "cached" if vocabularies.is_embedded(code) else "embedded"
            with tqdm(total=total, desc=f"embed {code} tags", unit="tag", disable=quiet) as bar:
                vocabulary = vocabularies.get(code, progress=bar.update)
            out.print(f"{code}: {len(vocabulary)} tags {done} for text side {text.fingerprint}", highlight=False)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None


@vocab_app.command("list")
def vocab_list(json_out: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Languages with a tag vocabulary: built ones (current version, size, most frequent tags), then the shipped
    ones that no built vocabulary replaces."""
    store = VocabularyStore.beside_index(read_settings().resolved_index_dir)
    rows = []
    try:
        for lang in store.languages():
            vocabulary = store.load(lang)
            rows.append(
                {
                    "lang": lang,
                    "version": vocabulary.info.get("version"),
                    "versions": store.versions(lang),
                    "tags": len(vocabulary),
                    "kind": vocabulary.info.get("kind", ""),
                    "created": vocabulary.info.get("created", ""),
                    "top": (vocabulary.display or vocabulary.words)[:8],
                }
            )
        for lang in shipped_languages():
            if lang in store.languages():
                continue  # the built one is used
            words = ShippedWords(lang, SHIPPED_TAGS / f"{lang}.tsv")
            rows.append(
                {
                    "lang": lang,
                    "version": None,
                    "versions": [],
                    "tags": len(words.rows),
                    "kind": "shipped",
                    "created": "",
                    "top": words.shown[:8],
                }
            )
    except VocabularyError as exc:
        raise fail(str(exc)) from None
    if json_out:
        out.print_json(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        console.print(f"no tag vocabularies under {store.root}; build one with `polyglot tags vocab build`")
        return
    table = Table("lang", "version", "tags", "kind", "created", "most frequent")
    for row in rows:
        table.add_row(
            str(row["lang"]),
            f"v{row['version']}" if row["version"] is not None else "-",
            str(row["tags"]),
            str(row["kind"]),
            str(row["created"]),
            ", ".join(row["top"]),
        )
    out.print(table)


def register(cli: typer.Typer) -> None:
    @cli.command("tag")
    def tag_command(
        image: Path = typer.Argument(..., help="Image file to tag."),
        lang: str = typer.Option(..., "--lang", help="Target languages, comma-separated: fr or fr,de."),
        k: int | None = typer.Option(None, "--k", min=1, max=500, help="Tags per language (default: settings)."),
        source: str | None = typer.Option(
            None,
            help="How tags are chosen: concepts (the photo ranks the concept lexicon; the default), or English "
            "source tags: imagenet, captions or auto (default: settings).",
        ),
        captions: Path | None = typer.Option(
            None,
            help="English caption collection (JSONL or lines) for caption source tags "
            "(default: the indexed caption collection, if any).",
        ),
        json_out: bool = typer.Option(
            False, "--json", help="Print {lang: [{tag, score, source, concept, english}]} as JSON."
        ),
    ) -> None:
        """Tags for IMAGE in each language, chosen with the image as context (by concept: one ranking of the concept
        lexicon named in every language)."""
        from indexer.query import load_models
        from indexer.tagging.cached import caption_retriever_from_file
        from indexer.tagging.caption_source import CaptionIndexRetriever
        from indexer.tagging.loading import load_tagger

        langs = parse_langs(lang)
        if source not in (None, "concepts", "auto", "imagenet", "captions"):
            raise fail(f"unknown --source {source!r}; choose concepts, imagenet, captions or auto")
        settings = read_settings()
        tag_settings = settings.tagging
        if k is not None and k > tag_settings.max_k:
            raise fail(f"--k must be at most {tag_settings.max_k} (POLYGLOT_TAG_MAX_K)")
        built = VocabularyStore.beside_index(settings.resolved_index_dir).languages()
        lexicon_languages = listed_languages(tag_settings.lexicon_dir or SHIPPED_CONCEPTS)
        by_concept = (source or tag_settings.source) == "concepts"
        available = sorted(
            set(built) | set(shipped_languages()) | ({"en", *lexicon_languages} if by_concept else set())
        )
        missing = [code for code in langs if code not in available]
        if missing:
            raise fail(str(UnknownLanguageError(missing, available)))
        try:
            picture = load_image(image, max_pixels=settings.index.max_image_pixels)
            models = load_models(settings)
            text = models.text
            retriever: CaptionRetriever | None = None
            if captions is not None:
                retriever = caption_retriever_from_file(captions, text, settings.resolved_cache_dir)
            caption_index = None
            if retriever is None and (settings.resolved_captions_dir / "captions.json").exists():
                # The caption collection indexed with `polyglot index captions add`, as the service uses it.
                from indexer.captions import CaptionIndex

                caption_index = CaptionIndex.from_settings(settings, text)
                retriever = CaptionIndexRetriever(caption_index)
            try:
                tagger = load_tagger(models, settings, captions=retriever)
                result = tagger.tag(picture, langs, k, source=source)
            finally:
                if caption_index is not None:
                    caption_index.close()
        except ImageDecodeError as exc:
            raise fail(f"{image}: {exc}") from None
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None
        if json_out:
            payload = {code: [t.as_dict() for t in tags] for code, tags in result.items()}
            out.print_json(json.dumps(payload, ensure_ascii=False))
            return
        for code, tags in result.items():
            table = Table("tag", "score", "source", "concept", "english", title=f"{image.name} — {code}")
            for t in sorted(tags, key=lambda t: -t.score):  # best first (the tagger's order; said here for the table)
                table.add_row(t.tag, f"{t.score:.3f}", t.source, t.concept or "-", t.english or "-")
            out.print(table)
