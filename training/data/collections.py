"""Cut one image–caption data set into collections that share no photos (the disjoint setting of Kádár et al.,
"Bootstrapping Disjoint Datasets for Multilingual Multimodal Representation Learning", §3.2).

A collection is a folder in the shared layout (``captions.jsonl``, ``images/``, ``splits/``) that the training and
pseudo-pair commands read like any data set. Its ``images/`` holds symbolic links to the source photos (nothing
is copied), its ``captions.jsonl`` only the rows of its photos that its spec selects, and its photos are divided
into ``splits/train.txt`` and ``splits/heldout.txt`` (a share of its own training photos, for early stopping: the
dev split of the source only reports).

A part spec is ``NAME=LANG[:SOURCE[+SOURCE]][,LANG[:SOURCE…]]``: e.g. ``de=de:multi30k-task2`` (German task-2
captions), ``en=en:flickr8k,zh:multi30k-ext-mt`` (English and machine-translated Chinese of the same photos).
The photos of the split are shuffled once (``random.Random(seed)`` of the sorted ids) and cut into as many equal
groups as there are parts; ``NAME@OTHER=…`` gives a part the photos of part OTHER instead of a group of its own
(e.g. translations as an extra collection of the same photos), and a single part gets every photo (aligned).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.caption_records import Caption
from training.data.dataset import DatasetError, load_dataset


@dataclass(frozen=True)
class PartSpec:
    name: str
    wanted: dict[str, frozenset[str]]  # lang → sources kept (empty: every source of that language)
    photos_of: str | None = None  # share the photos of this part instead of a group of its own

    def keeps(self, caption: Caption) -> bool:
        sources = self.wanted.get(caption.lang)
        return sources is not None and (not sources or caption.source in sources)


def parse_part(text: str) -> PartSpec:
    name, sep, body = text.partition("=")
    name, _, photos_of = name.strip().partition("@")
    if not sep or not name or not body.strip():
        raise ValueError(f"part {text!r} is not NAME=LANG[:SOURCE[+SOURCE]][,LANG…], e.g. de=de:multi30k-task2")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"part name {name!r} must be letters, digits, - or _ (it names a folder)")
    wanted: dict[str, frozenset[str]] = {}
    for item in body.split(","):
        lang, _, sources = item.strip().partition(":")
        if not lang:
            raise ValueError(f"part {text!r} has an empty language")
        wanted[lang.lower()] = frozenset(s.strip() for s in sources.split("+") if s.strip())
    return PartSpec(name, wanted, photos_of.strip() or None)


def photo_groups(images: Sequence[str], parts: Sequence[PartSpec], seed: int) -> dict[str, list[str]]:
    """Each part's photos: equal groups of one shuffle for the parts with their own, shared for ``@OTHER``."""
    names = [part.name for part in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"part names must be distinct: {names}")
    own = [part for part in parts if part.photos_of is None]
    for part in parts:
        if part.photos_of is not None and part.photos_of not in {p.name for p in own}:
            raise ValueError(f"part {part.name!r} takes the photos of {part.photos_of!r}, which is not a part")
    if not own:
        raise ValueError("at least one part needs photos of its own (NAME=…, without @)")
    order = sorted(images)
    random.Random(seed).shuffle(order)
    groups = {
        part.name: order[k * len(order) // len(own) : (k + 1) * len(order) // len(own)] for k, part in enumerate(own)
    }
    return {part.name: groups[part.photos_of or part.name] for part in parts}


def split_collections(
    data: Path,
    out: Path,
    parts: Sequence[PartSpec],
    split: str = "train",
    heldout: float = 0.1,
    seed: int = 0,
    extra_captions: Sequence[Path] = (),
) -> dict[str, dict[str, object]]:
    """Writes ``out/NAME/`` for every part; returns per part its photo and caption counts (also in
    ``out/collections.json``)."""
    if not 0 <= heldout < 1:
        raise ValueError("the held-out share must be in [0, 1)")
    dataset = load_dataset(data, split, extra=extra_captions)
    groups = photo_groups(dataset.images, parts, seed)
    summary: dict[str, dict[str, object]] = {}
    for part in parts:
        photos = groups[part.name]
        photo_set = set(photos)
        rows = [c for c in dataset.captions if c.image in photo_set and part.keeps(c)]
        with_rows = {c.image for c in rows}
        captioned = [image for image in photos if image in with_rows]
        if len(captioned) < 2:
            raise DatasetError(f"part {part.name!r} selects captions for {len(captioned)} photo(s) of {split!r}")
        n_held = round(heldout * len(captioned))
        summary[part.name] = _write_collection(
            Path(out) / part.name, dataset.root, rows, captioned[n_held:], captioned[:n_held]
        )
        summary[part.name]["spec"] = {lang: sorted(s) for lang, s in part.wanted.items()}
    atomic_write_json(
        Path(out) / "collections.json",
        {"data": str(data), "split": split, "seed": seed, "heldout": heldout, "parts": summary},
    )
    return summary


def write_lines(path: Path, lines: Sequence[str]) -> None:
    atomic_write_bytes(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def link_images(folder: Path, source_root: Path, images: Sequence[str]) -> None:
    """``folder/images/<id>`` → the source photo, for each id (symbolic links: photos are never copied)."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "splits").mkdir(exist_ok=True)
    for image in images:
        link = folder / "images" / image
        target = (source_root / "images" / image).resolve()
        if link.is_symlink() or link.exists():
            if link.resolve() == target:
                continue
            link.unlink()
        os.symlink(target, link)


def _write_collection(
    folder: Path, source_root: Path, rows: Sequence[Caption], train: Sequence[str], held: Sequence[str]
) -> dict[str, object]:
    link_images(folder, source_root, [*train, *held])
    keep = set(train) | set(held)
    lines = [
        json.dumps({"image": c.image, "lang": c.lang, "text": c.text, "source": c.source}, ensure_ascii=False)
        for c in rows
        if c.image in keep
    ]
    write_lines(folder / "captions.jsonl", lines)
    write_lines(folder / "splits" / "train.txt", train)
    write_lines(folder / "splits" / "heldout.txt", held)
    by_lang: dict[str, int] = {}
    for c in rows:
        by_lang[c.lang] = by_lang.get(c.lang, 0) + 1
    return {"train_photos": len(train), "heldout_photos": len(held), "captions": by_lang}
