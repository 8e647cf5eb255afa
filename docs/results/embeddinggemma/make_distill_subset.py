"""The parallel text the distilled EmbeddingGemma tower learnt from (CPU budget): a subset of m30k-text task 1.

Run from the repository root: writes var/data/m30k-text-gemma/captions.jsonl, the Multi30K task-1 rows (en and its
human de, fr, cs translations) of PHOTOS photos of ../shared/data/m30k-text drawn at random (seed 0). None of them
is a photo of m30k-f8k (no dev photo). Also var/data/m30k-text-gemma/uk-mt.jsonl: the Ukrainian machine translations
(more-langs text-captions, multi30k-ext-mt) of the same English captions.
"""
import json, random, sys
from pathlib import Path
PHOTOS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
rows = [json.loads(line) for line in open("../shared/data/m30k-text/captions.jsonl", encoding="utf-8")]
rows = [r for r in rows if r["source"] == "multi30k-task1"]
photos = sorted({r["image"] for r in rows})
random.Random(0).shuffle(photos)
keep = set(photos[:PHOTOS])
out = Path("var/data/m30k-text-gemma")
out.mkdir(parents=True, exist_ok=True)
kept = [r for r in rows if r["image"] in keep]
(out / "captions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
print(len(keep), "photos,", len(kept), "rows")
# and the Ukrainian machine translations (more-langs, multi30k-ext-mt) of the same photos' English captions
uk = [json.loads(line) for line in open("../shared/data/more-langs/text-captions.jsonl", encoding="utf-8")]
uk = [r for r in uk if r["lang"] == "uk" and r["image"] in keep]
(out / "uk-mt.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in uk), encoding="utf-8")
print(len(uk), "uk MT rows")
