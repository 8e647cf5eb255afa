#!/bin/bash
export POLYGLOT_MODELS_DIR=/work/main/var/models POLYGLOT_CACHE_DIR=var/cache OMP_NUM_THREADS=1 MKL_NUM_THREADS=1; P="nice -n 10 .venv/bin/polyglot"
cd "$(dirname "$0")/../../.."
D=../shared/data
for t in "$@"; do
  while [ -e /tmp/QUIET ]; do sleep 60; done
  echo "== sweep $t $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  POLYGLOT_CLC_MIN_SIMILARITY=$t $P clc fit --data $D/m30k-f8k --extra-captions $D/more-langs/f8k-captions.jsonl --translator retrieval --translation-corpus $D/m30k-text --iterations 30 --out var/clc/retrieval-min$t 2>&1 | grep -v "it/s\]\|query/s\]\|caption/s\]\|%|" | tail -3
done
