"""A tiny concept lexicon on disk (two concepts, English and French names), in the shipped format."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

CONCEPTS = [
    ("02084071-n", "noun.animal", "5", "", "", "dog|domestic dog", "a domesticated canid"),
    ("02121808-n", "noun.animal", "3", "", "", "domestic cat|house cat", "a cat kept as a pet"),
]
NAMES = {"fr": [("02084071-n", "chien|toutou"), ("02121808-n", "chat domestique")]}


def write_lexicon(folder: Path) -> Path:
    (folder / "names").mkdir(parents=True)
    files = {
        "concepts.tsv": "synset\tlexname\tfreq\thypernyms\timagenet\tlemmas\tgloss\n"
        + "".join("\t".join(row) + "\n" for row in CONCEPTS)
    }
    for lang, rows in NAMES.items():
        files[f"names/{lang}.tsv"] = "synset\tnames\n" + "".join(f"{s}\t{n}\n" for s, n in rows)
    entries = {}
    for name, body in files.items():
        data = body.encode()
        (folder / name).write_bytes(data)
        entries[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    manifest = {
        "format": 1,
        "columns": {
            "concepts.tsv": ["synset", "lexname", "freq", "hypernyms", "imagenet", "lemmas", "gloss"],
            "names": ["synset", "names"],
        },
        "files": entries,
        "languages": {lang: {"concepts": len(rows)} for lang, rows in NAMES.items()},
        "concepts": len(CONCEPTS),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder
