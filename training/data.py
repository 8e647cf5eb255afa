"""Read an image–caption data set in the m30k-f8k layout: ``images/``, ``captions.jsonl``, ``splits/*.txt``.

``captions.jsonl`` rows: ``{"image": "123.jpg", "lang": "en", "text": "...", "source": "..."}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Caption:
    image: str
    lang: str
    text: str
    source: str = ""


@dataclass
class CaptionDataset:
    root: Path
    images: list[str]
    captions: list[Caption]

    def image_path(self, image: str) -> Path:
        return self.root / "images" / image

    def languages(self) -> list[str]:
        return sorted({caption.lang for caption in self.captions})

    def by_lang(self, lang: str) -> list[Caption]:
        return [caption for caption in self.captions if caption.lang == lang]


class DatasetError(ValueError):
    pass


def read_split(root: Path, split: str) -> list[str]:
    path = Path(root) / "splits" / f"{split}.txt"
    if not path.exists():
        available = sorted(p.stem for p in (Path(root) / "splits").glob("*.txt"))
        raise DatasetError(f"no split {split!r} in {root}: expected {path} (available: {available or 'none'})")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_captions(path: Path) -> Iterable[Caption]:
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                yield Caption(row["image"], row["lang"], row["text"], row.get("source", ""))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DatasetError(f"{path}:{number}: not a caption row ({exc})") from exc


def load_dataset(
    root: Path, split: str, langs: Iterable[str] | None = None, extra: Sequence[Path] = ()
) -> CaptionDataset:
    """Images of ``split`` (in split order) and their captions, optionally restricted to ``langs``; ``extra``:
    more caption files of the same schema whose rows for these images are added (after the data set's own)."""
    root = Path(root)
    images = read_split(root, split)
    wanted = set(images)
    keep_langs = set(langs) if langs else None
    for path in extra:
        if not Path(path).is_file():
            raise DatasetError(f"caption file {path} does not exist")
    captions = [
        caption
        for path in (root / "captions.jsonl", *extra)
        for caption in read_captions(path)
        if caption.image in wanted and (keep_langs is None or caption.lang in keep_langs)
    ]
    return CaptionDataset(root=root, images=images, captions=captions)
