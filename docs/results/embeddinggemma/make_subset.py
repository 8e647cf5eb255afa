"""The caption subset EmbeddingGemma was trained and evaluated on (CPU budget): one caption per photo and language.

Run from the repository root: writes var/data/m30k-f8k-gemma (captions.jsonl: train photos' task-1 English and Czech
captions, dev photos' task-1 en/de/fr/cs and first pt caption; images and splits as m30k-f8k) and
var/data/gemma-dev-extras.jsonl (the first zh, ja, ar, es, uk caption of each dev photo, for --extra-captions).
"""

import collections
import json
import os
from pathlib import Path

SOURCE = Path("../shared/data")
OUT = Path("var/data/m30k-f8k-gemma")
CORE = {"en", "de", "fr", "cs", "pt"}


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def main() -> None:
    train = set((SOURCE / "m30k-f8k/splits/train.txt").read_text().split())
    dev = set((SOURCE / "m30k-f8k/splits/dev.txt").read_text().split())
    rows: list[dict] = []
    seen: set[tuple[str, str]] = set()

    def keep(row: dict) -> None:
        key = (row["image"], row["lang"])
        if key not in seen:
            seen.add(key)
            rows.append(row)

    for row in read_jsonl(SOURCE / "m30k-f8k/captions.jsonl"):
        if row["image"] in train and row["lang"] in ("en", "cs") and row["source"] == "multi30k-task1":
            keep(row)
        if row["image"] in dev and (row["source"] == "multi30k-task1" or row["lang"] == "pt"):
            keep(row)
    for row in read_jsonl(SOURCE / "more-langs/f8k-captions.jsonl"):
        if row["image"] in dev:  # first caption per photo and language (es, uk: multi30k-ext-mt; zh, ja, ar: first)
            keep(row)
    (OUT / "splits").mkdir(parents=True, exist_ok=True)
    for name in ("train.txt", "dev.txt"):
        (OUT / "splits" / name).write_text((SOURCE / "m30k-f8k/splits" / name).read_text())
    if not (OUT / "images").exists():
        os.symlink((SOURCE / "m30k-f8k/images").resolve(), OUT / "images")
    lines = {
        core: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if (r["lang"] in CORE) == core)
        for core in (True, False)
    }
    (OUT / "captions.jsonl").write_text(lines[True], encoding="utf-8")
    Path("var/data/gemma-dev-extras.jsonl").write_text(lines[False], encoding="utf-8")
    print(collections.Counter((r["lang"], r["image"] in dev) for r in rows))


if __name__ == "__main__":
    main()
