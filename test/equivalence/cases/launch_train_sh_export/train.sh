#!/usr/bin/env bash
set -euo pipefail
export PYTHONPATH="$PWD/src"
export OMP_NUM_THREADS=1
echo "launching with PYTHONPATH=${PYTHONPATH#$PWD/}"
python3 -m project.train --epochs 2
echo "train.sh: done"
