#!/usr/bin/env bash
# The probe's cost per step in machine instructions (valgrind's cachegrind): a count that a shared machine's load does
# not blur, where timing the same loop moved by +20 to +600 us between repeats on the 2-core VM (2026-11-29).
#
# The loop of overhead.py (a 16-wide linear layer, SGD, batches of 8 from a DataLoader), with the probe started before
# the model as doctor's boot starts it, or without it. Each side runs twice, for SHORT and LONG steps; the difference
# over LONG - SHORT steps is the per-step count without the start-up. The probe runs without its background runs
# (its timed work would scale with valgrind's 50x slowdown) and in two modes: `write` writes its records at every step
# (more often than a real run, which writes every 2 to 20 ms), `hooks` drops each step's row as it is queued (the hooks
# alone; a queue never written would grow, and the garbage collector's scans of it cost 25k instructions a step), each
# with every step recorded (GPUWISE_FULL_STEPS=all, a run's head); `sampled` is the steady loop (1 step in 16 recorded,
# the records written as in a run; steps.py).
#   bash bench/doctor/probe_instructions.sh [PYTHON_DIR]    (default: this checkout's python/; needs valgrind, torch)
# Prints instructions per step: plain, with the probe (write), with the probe (hooks), and the differences.
# PARTS=1 adds the hooks with one of the probe's handlers made a no-op after the first 100 steps (the batch's, the
# backward's, the step's end, the optimizer step's with its step end): what each costs a step.
set -eu
cd "$(dirname "$0")/../.."
probe_dir=$(realpath "${1:-python}")
python=${PYTHON:-/usr/bin/python3}
short=${SHORT:-200}
long=${LONG:-2200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/loop.py" <<'EOF'
import sys, tempfile
mode, probe_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode != "plain":
    sys.path.insert(0, probe_dir)
    from gpuwise import probe as probe_mod
    from gpuwise.probe import background, records
    background.Background.ensure = lambda self: None
    if mode == "write":
        records.FLUSH_S = records.MAX_FLUSH_S = 0.0
    elif mode != "sampled":
        records.Sender.put = lambda self, rec, now=False: False
    # Every step recorded, as in a run's first GPUWISE_FULL_STEPS, except in `sampled`: the steady loop from the start.
    full = "0" if mode == "sampled" else "all"
    p = probe_mod.start({"GPUWISE_RUN_DIR": tempfile.mkdtemp(), "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0", "GPUWISE_FULL_STEPS": full})
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
xs, ys = torch.randn(steps * 8, 16), torch.randn(steps * 8, 16)
for i, (x, y) in enumerate(DataLoader(TensorDataset(xs, ys), batch_size=8)):
    if i == 100 and mode.startswith("hooks-no"):  # the part left out, once the probe has settled
        setattr(p.steps, {"hooks-no-batch": "on_batch", "hooks-no-backward": "on_backward", "hooks-no-end": "end_step", "hooks-no-optimizer": "_on_optimizer_step"}[mode], lambda *a, **k: None)
    loss = torch.nn.functional.mse_loss(m(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
if mode != "plain" and not mode.startswith("hooks-no"):
    assert p.steps.step >= steps - 1, "the probe counted %d steps of %d" % (p.steps.step, steps)
    assert (mode == "sampled") == (p.sampler.burst_at is not None), "the steady loop sampled: %s" % p.sampler.burst_at
EOF
count() { # mode steps -> instructions
  PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$python" "$tmp/loop.py" "$1" "$probe_dir" "$2" 2>&1 |
    sed -n 's/.*I *refs: *//p' | tr -d ,
}
declare -A per
modes="plain write hooks sampled"
[ "${PARTS:-0}" = 1 ] && modes="$modes hooks-no-batch hooks-no-backward hooks-no-end hooks-no-optimizer"
for mode in $modes; do
  a=$(count $mode "$short") &&
  b=$(count $mode "$long") &&
  per[$mode]=$(( (b - a) / (long - short) ))
done
echo "instructions per step ($((long - short)) steps, $probe_dir):"
echo "  plain           ${per[plain]}"
echo "  probe, write    ${per[write]}  (+$(( per[write] - per[plain] )))"
echo "  probe, hooks    ${per[hooks]}  (+$(( per[hooks] - per[plain] )): rows dropped as queued)"
echo "  probe, sampled  ${per[sampled]}  (+$(( per[sampled] - per[plain] )): the steady loop, 1 step in 16 recorded and written every 2-20 ms)"
if [ "${PARTS:-0}" = 1 ]; then
  for part in batch backward end optimizer; do
    echo "  hooks without $part: $(( per[hooks] - per[hooks-no-$part] )) of them"
  done
fi
