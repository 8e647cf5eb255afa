"""The parallel text the distilled EmbeddingGemma tower learnt from (CPU budget): a subset of m30k-text task 1.

Run from the repository root: writes var/data/m30k-text-gemma/captions.jsonl, the Multi30K task-1 rows (en and its
human de, fr, cs translations) of PHOTOS photos of ../shared/data/m30k-text drawn at random (seed 0). None of them
is a photo of m30k-f8k (no dev photo). Also var/data/m30k-text-gemma/uk-mt.jsonl: the Ukrainian machine translations
(more-langs text-captions, multi30k-ext-mt) of the same English captions.
"""

import json
import random
import sys
from pathlib import Path

OUT = Path("var/data/m30k-text-gemma")


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    photos_wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rows = [r for r in read_jsonl("../shared/data/m30k-text/captions.jsonl") if r["source"] == "multi30k-task1"]
    photos = sorted({r["image"] for r in rows})
    random.Random(0).shuffle(photos)
    keep = set(photos[:photos_wanted])
    OUT.mkdir(parents=True, exist_ok=True)
    kept = [r for r in rows if r["image"] in keep]
    write_jsonl(OUT / "captions.jsonl", kept)
    print(len(keep), "photos,", len(kept), "rows")
    # and the Ukrainian machine translations (more-langs, multi30k-ext-mt) of the same photos' English captions
    uk = [r for r in read_jsonl("../shared/data/more-langs/text-captions.jsonl") if r["lang"] == "uk"]
    write_jsonl(OUT / "uk-mt.jsonl", [r for r in uk if r["image"] in keep])
    print(sum(r["image"] in keep for r in uk), "uk MT rows")


if __name__ == "__main__":
    main()
