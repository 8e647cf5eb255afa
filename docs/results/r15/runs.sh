#!/bin/bash
# Issue 15 measurements, one at a time: docs/results/r15/runs.sh base a-parallel … (steps below), from the repo root.
export POLYGLOT_MODELS_DIR=/work/main/var/models POLYGLOT_CACHE_DIR=var/cache OMP_NUM_THREADS=1 MKL_NUM_THREADS=1; P="nice -n 10 .venv/bin/polyglot"
cd "$(dirname "$0")/../../.."
D=../shared/data
E="--data $D/m30k-f8k --split dev --extra-captions $D/more-langs/f8k-captions.jsonl"
R=docs/results/r15
run() { name=$1; shift; while [ -e /tmp/QUIET ]; do sleep 60; done; echo "== $name $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"; /usr/bin/time -f "$name wall %e s" $P "$@" 2>&1 | grep -v "it/s\]\|query/s\]\|caption/s\]\|%|" | tail -40; }
for step in "$@"; do
case $step in
base) run base evaluate $E --json $R/base.json --by-source $R/base.src.json ;;
a-parallel) run a-parallel evaluate $E --clc average --translator parallel --json $R/clc-a-parallel.json --by-source $R/clc-a-parallel.src.json ;;
a-gloss) run a-gloss evaluate $E --clc average --translator gloss --lexicons $D/lexicons --json $R/clc-a-gloss.json --by-source $R/clc-a-gloss.src.json ;;
a-retrieval) run a-retrieval evaluate $E --clc average --translator retrieval --translation-corpus $D/m30k-text --json $R/clc-a-retrieval.json --by-source $R/clc-a-retrieval.src.json ;;
fit-parallel) run fit-parallel clc fit --data $D/m30k-f8k --extra-captions $D/more-langs/f8k-captions.jsonl --translator parallel --out var/clc/parallel ;;
fit-gloss) run fit-gloss clc fit --data $D/m30k-f8k --extra-captions $D/more-langs/f8k-captions.jsonl --translator gloss --lexicons $D/lexicons --out var/clc/gloss ;;
fit-retrieval) run fit-retrieval clc fit --data $D/m30k-f8k --extra-captions $D/more-langs/f8k-captions.jsonl --translator retrieval --translation-corpus $D/m30k-text --out var/clc/retrieval ;;
c-parallel) run c-parallel evaluate $E --clc classifier --translator parallel --clc-classifier var/clc/parallel --json $R/clc-c-parallel.json --by-source $R/clc-c-parallel.src.json ;;
c-gloss) run c-gloss evaluate $E --clc classifier --translator gloss --lexicons $D/lexicons --clc-classifier var/clc/gloss --json $R/clc-c-gloss.json --by-source $R/clc-c-gloss.src.json ;;
c-retrieval) run c-retrieval evaluate $E --clc classifier --translator retrieval --translation-corpus $D/m30k-text --clc-classifier var/clc/retrieval --json $R/clc-c-retrieval.json --by-source $R/clc-c-retrieval.src.json ;;
esac
done
