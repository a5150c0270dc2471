#!/usr/bin/env bash
# Issue 44 held out: timm's own train.py (pytorch-image-models at aa4b585, its timm beside it on PYTHONPATH), ResNet-50
# fp32 at batch 128 over 12,800 JPEGs with 4 workers, under doctor; then doctor's plan followed plainly step by step
# (follow_plan.py -> timm flags), each a one-epoch run of 100 updates timed by its own per-update log.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd); cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
R=/tmp/r44c; mkdir -p $R; M=$OUT/measured.jsonl
ROOT=$root python3 - <<'PY'
import sys, os, shutil; sys.path.insert(0, os.environ["ROOT"] + "/examples/pace")
import make_data as m
m.JPEG["images"] = 12800
root = m.ensure_jpeg("/tmp/td0")
os.makedirs("/tmp/td", exist_ok=True)
os.path.exists("/tmp/td/train") or os.symlink(root, "/tmp/td/train")
for c in sorted(os.listdir(root)):
    os.makedirs(f"/tmp/td/validation/{c}", exist_ok=True)
    for f in sorted(os.listdir(f"{root}/{c}"))[:2]:
        shutil.copy(f"{root}/{c}/{f}", f"/tmp/td/validation/{c}/{f}")
PY
export PYTHONPATH=$PWD/timmsrc
T="python3 timmsrc/train.py --data-dir /tmp/td --model resnet50 -b 128 --epochs 1 --num-classes 10 --log-interval 1 --output $R/out"
timeout 150 node $root/dist/gpuwise.mjs doctor --no-serve --out $R/timm_fp32 -- $T -j 4 > $OUT/timm_doctor.txt 2>&1; echo "doctor rc=$?"; head -40 $OUT/timm_doctor.txt
python3 $root/examples/pace/follow_plan.py $R/timm_fp32/report.json timm_train | python3 timm_flags.py | tee $OUT/timm_plan.txt
while IFS= read -r line; do
  label=${line%%=*}; flags=${line#*=}; [[ $flags == *UNMAPPED* ]] && { echo "skip $line"; continue; }
  [[ $label == base ]] && flags="-j 4 $flags"
  [[ $flags != *-j* ]] && flags="-j 4 $flags"
  timeout 150 $T $flags > $R/plain_$label.txt 2>&1
  python3 timm_steps.py $label $R/plain_$label.txt 10 "$flags" | tee -a $M
done < $OUT/timm_plan.txt
cp $R/plain_*.txt $OUT/ 2>/dev/null
cd $R && tar czf $OUT/timm_runs.tgz --exclude='trace-*' --exclude='*.pt.trace*' --exclude='snapshot*' timm_fp32
