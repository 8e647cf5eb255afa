#!/usr/bin/env bash
# Reproduce every number in docs/tagging.md (from the repository root; the shipped tower in indexer/assets/tower).
set -euo pipefail
DATA=../shared/data
PY=.venv/bin/python

# 1. choose the vocabulary's min count on the first half of dev (paper weights fixed)
for mc in 3 10 30; do
  $PY -m training.evaluation.tagging_eval --data $DATA/m30k-f8k --lexicons $DATA/lexicons --images 500 --langs de,fr,pt \
    --min-count $mc --sweep 0,0.35,0.5,0.65,0.8,1 --out docs/tagging/tune-min-count-$mc.json
done

# (results-muse-en.* = step 2 with the first shipped tower, mUSE English-only, passed with --tower)
# 2. the full dev split with the paper's weights and the chosen min count (30), plus the ImageNet zero-shot check
$PY -m training.evaluation.tagging_eval --data $DATA/m30k-f8k --lexicons $DATA/lexicons --langs de,fr,cs,pt \
  --min-count 30 --tuned-on 500 --imagenet-labels $DATA/imagenet-labels/babel-imagenet.json \
  --out docs/tagging/results.json

# 3. gallery of ambiguous words and /tag latency
$PY benchmarks/tagging_gallery.py --out docs/tagging/gallery-ambiguous.md
$PY benchmarks/tagging_latency.py --requests 40 --warmup 10 --captions --out docs/tagging/latency.json

# 4. the shipped vocabularies (issue 35): rebuild the word files (reproducible), measure them on the 700
#    imagenet-samples photos in the 13 imagenet-labels languages (rewrites docs/tagging/shipped/hits.{json,md} and
#    docs/tagging/gallery.md), and time POST /tag on a fresh install with 1-3 languages (no other job running)
.venv/bin/polyglot tags vocab ship --lexicons $DATA/lexicons --data $DATA
$PY -m training.evaluation.shipped_tags --before
$PY benchmarks/tagging_latency.py --shipped --requests 40 --warmup 5 --out docs/tagging/latency-shipped.json
