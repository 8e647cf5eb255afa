#!/bin/bash
# SMALR-family tower + CLC rows (issue 15): T=la-long|smalr-long docs/results/r15/smalr_clc.sh (tower in var/towers/T,
# trained by docs/results/r15/run.sh); CLC-C checkpoints fitted on held-out train photos into var/clc/T-*.
cd "$(dirname "$0")/../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 POLYGLOT_FAST_TOWER=off
D=../shared/data; R=docs/results/r15; P=.venv/bin/polyglot
T=${T:-la-long}
export POLYGLOT_TOWER_PATH=var/towers/$T
E="--data $D/m30k-f8k --split dev"
$P evaluate $E --clc average --translator parallel --json $R/$T-clc-a-parallel.json --by-source $R/$T-clc-a-parallel.src.json
$P evaluate $E --clc average --translator gloss --lexicons $D/lexicons --json $R/$T-clc-a-gloss.json --by-source $R/$T-clc-a-gloss.src.json
$P clc fit --data $D/m30k-f8k --translator parallel --out var/clc/$T-parallel
$P evaluate $E --clc classifier --translator parallel --clc-classifier var/clc/$T-parallel --json $R/$T-clc-c-parallel.json --by-source $R/$T-clc-c-parallel.src.json
$P clc fit --data $D/m30k-f8k --translator gloss --lexicons $D/lexicons --out var/clc/$T-gloss
$P evaluate $E --clc classifier --translator gloss --lexicons $D/lexicons --clc-classifier var/clc/$T-gloss --json $R/$T-clc-c-gloss.json --by-source $R/$T-clc-c-gloss.src.json
