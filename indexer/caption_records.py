"""One caption record and one reader of the shared captions JSONL format, for the caption index, training and the
tag-vocabulary builder alike.

A line: ``{"image": "123.jpg", "lang": "en", "text": "...", "source": "multi30k-task1"}``; ``lang`` and ``text``
are required, ``image`` and ``source`` optional. The file is streamed line by line (the m30k-f8k file has 158k
lines), and a bad line raises :class:`CaptionFileError` naming the file and the line number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from indexer.regular_files import open_regular

LANG_CODE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")


class CaptionFileError(ValueError):
    """A captions JSONL file cannot be used; the message names the line and the problem."""


@dataclass(frozen=True, slots=True)
class Caption:
    """One caption. ``image`` and ``source`` are ``""`` when unknown (stored as NULL by the caption index)."""

    lang: str
    text: str
    image: str = ""
    source: str = ""


def iter_captions(path: Path, langs: Iterable[str] | None = None, *, need_image: bool = False) -> Iterator[Caption]:
    """The captions of a JSONL file, in file order: language codes lower-cased, texts stripped, empty texts skipped.

    ``langs``: keep only these languages. ``need_image``: a line without an ``image`` is an error (a training
    set pairs every caption with an image), instead of a caption with ``image == ""``.
    """
    wanted = {lang.strip().lower() for lang in langs} if langs else None
    try:
        # bytes: a bad UTF-8 sequence is then reported on its own line; a FIFO or device is refused at once
        with open_regular(path) as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise CaptionFileError(f"{path}:{number}: not UTF-8 text") from None
                if not line.strip():
                    continue
                caption = _parse(line, f"{path}:{number}", need_image)
                if caption is not None and (wanted is None or caption.lang in wanted):
                    yield caption
    except OSError as exc:
        raise CaptionFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_captions(path: Path, langs: Iterable[str] | None = None, *, need_image: bool = False) -> list[Caption]:
    """:func:`iter_captions` as a list."""
    return list(iter_captions(path, langs, need_image=need_image))


def _parse(line: str, where: str, need_image: bool) -> Caption | None:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CaptionFileError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(row, dict) or not isinstance(row.get("text"), str) or not isinstance(row.get("lang"), str):
        raise CaptionFileError(f"{where}: each line needs string fields 'lang' and 'text'")
    lang, text = row["lang"].strip().lower(), row["text"].strip()
    if not LANG_CODE.match(lang):
        raise CaptionFileError(f"{where}: {row['lang']!r} is not a language code like 'en' or 'pt'")
    image, source = row.get("image"), row.get("source")
    if need_image and (image is None or image == ""):
        raise CaptionFileError(f"{where}: each line needs an 'image' (the file name of the captioned image)")
    if not text:
        return None
    return Caption(lang, text, "" if image is None else str(image), "" if source is None else str(source))
