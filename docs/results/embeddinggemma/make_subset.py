"""The caption subset EmbeddingGemma was trained and evaluated on (CPU budget): one caption per photo and language.

Run from the repository root: writes var/data/m30k-f8k-gemma (captions.jsonl: train photos' task-1 English and Czech
captions,
dev photos' task-1 en/de/fr/cs and first pt caption; images and splits as m30k-f8k) and
var/data/gemma-dev-extras.jsonl (the first zh, ja, ar, es, uk caption of each dev photo, for --extra-captions).
"""
import json, os
from pathlib import Path
src = Path("../shared/data")
out = Path("var/data/m30k-f8k-gemma")
train = set((src / "m30k-f8k/splits/train.txt").read_text().split())
dev = set((src / "m30k-f8k/splits/dev.txt").read_text().split())
rows, seen = [], set()
def keep(r):
    key = (r["image"], r["lang"])
    if key in seen: return
    seen.add(key); rows.append(r)
for line in open(src / "m30k-f8k/captions.jsonl", encoding="utf-8"):
    r = json.loads(line)
    if r["image"] in train and r["lang"] in ("en", "cs") and r["source"] == "multi30k-task1": keep(r)
    if r["image"] in dev and (r["source"] == "multi30k-task1" or r["lang"] == "pt"): keep(r)
for line in open(src / "more-langs/f8k-captions.jsonl", encoding="utf-8"):
    r = json.loads(line)
    if r["image"] in dev: keep(r)  # first caption per photo and language (es, uk: multi30k-ext-mt; zh, ja, ar: first in file)
(out / "splits").mkdir(parents=True, exist_ok=True)
for name in ("train.txt", "dev.txt"):
    (out / "splits" / name).write_text((src / "m30k-f8k/splits" / name).read_text())
if not (out / "images").exists():
    os.symlink((src / "m30k-f8k/images").resolve(), out / "images")
core = {"en", "de", "fr", "cs", "pt"}
(out / "captions.jsonl").write_text(
    "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["lang"] in core), encoding="utf-8"
)
Path("var/data/gemma-dev-extras.jsonl").write_text(
    "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["lang"] not in core), encoding="utf-8"
)
import collections
print(collections.Counter((r["lang"], r["image"] in dev) for r in rows))
