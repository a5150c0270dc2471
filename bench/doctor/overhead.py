"""The probe's cost per training step on CPU, for steps of about 0.2 ms, 1 ms and 10 ms (`npm run bench:doctor`).

The same loop (a 16-wide linear layer, SGD, batches from a DataLoader, or sliced from a tensor with --loop get_batch,
padded to the target with small matrix products that hold the GIL, as framework code does) runs in fresh processes
plainly and under `gpuwise doctor` (the bundled CLI in dist/, the probe's records going through its collector;
--mode probe: the probe alone, records to files), alternately, `--repeats` times. Each run times its own steps; the
least disturbed median of each side is kept (this machine is shared: noise only ever adds time) and their difference
is the probe's cost per step: in wall-clock time (what the training sees, preemption by other processes of a loaded
machine included), and in the training thread's CPU time (`time.thread_time()`: the work the probe adds to that thread,
which a shared machine's load does not blur).

    python3 bench/doctor/overhead.py [--steps N] [--repeats R] [--targets-ms 0.2,1,10] [--loop dataloader|get_batch]
                                     [--mode doctor|probe|interleaved] [--probe-dir DIR]

--mode interleaved: one process runs blocks of steps with this checkout's probe installed and taken out again
(`Probe.switch_off()`), alternately, 2 x `--repeats` blocks: the machine's load then weighs on both sides alike, which
a shared machine's separate runs cannot promise. It measures the probe alone (records to files, no collector).

--probe-dir: another checkout's python/ folder (its probe), to compare with an older probe.
Needs torch (CI's Debian CPU torch: PYTHON=/usr/bin/python3) and, for --mode doctor, `npm run build`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The measured loop, shared by both snippets and the other benches: a 16-wide linear layer and SGD, padded with matrix
# products to the target step; each step's wall time and the training thread's CPU time; and the padding for a target.
_TIMED_LOOP = r"""
torch.manual_seed(0)
torch.set_num_threads(1)
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
a = torch.randn(32, 32)


def timed_loop(steps, pad, loop, xs, ys):
    # loop: "dataloader" (a DataLoader over all of xs), "get_batch" (steps slices of xs), or an iterator of batches that
    # goes on across calls (the next `steps` of them)
    if not isinstance(loop, str):
        batches = (next(loop) for _ in range(steps))
    elif loop == "dataloader":
        batches = DataLoader(TensorDataset(xs, ys), batch_size=8)
    else:
        batches = ((xs[i:i + 8], ys[i:i + 8]) for i in range(0, steps * 8, 8))
    times, cpus, t, c = [], [], time.perf_counter(), time.thread_time()
    for x, y in batches:
        loss = torch.nn.functional.mse_loss(m(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        for _ in range(pad):
            torch.mm(a, a)
        now, cpu = time.perf_counter(), time.thread_time()
        times.append(now - t)
        cpus.append(cpu - c)
        t, c = now, cpu
    return times, cpus


def pad_for(target_s, loop, which=0):
    # The 32x32 products that pad a step of `loop` to about target_s on this machine now (which: 0 wall, 1 the
    # thread's CPU), measured over 300 steps of its own, three times scaled.
    import statistics
    cx, cy = torch.randn(300 * 8, 16), torch.randn(300 * 8, 16)
    step = lambda pad: statistics.median(timed_loop(300, pad, loop, cx, cy)[which][20:])
    base, pad = step(0), 0
    for _ in range(3):
        trial = max(pad, 20)
        per_mm = (step(trial) - base) / trial
        pad = max(0, int(round((target_s - base) / max(per_mm, 1e-7))))
    return pad
"""

LOOP = (
    r"""
import json, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
"""
    + _TIMED_LOOP
    + r"""
steps, pad, loop, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
xs, ys = torch.randn(steps * 8, 16), torch.randn(steps * 8, 16)
times, cpus = timed_loop(steps, pad, loop, xs, ys)
with open(out, "w") as f:
    json.dump([times, cpus], f)
"""
)


INTERLEAVED = (
    r"""
import json, os, sys, tempfile, time, statistics, torch
sys.path.insert(0, sys.argv[5])  # the python/ folder whose probe is measured
from torch.utils.data import DataLoader, TensorDataset
from gpuwise import probe as probe_mod
"""
    + _TIMED_LOOP
    + r"""
steps, target_s, loop, blocks = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
xs, ys = torch.randn(steps * 8, 16), torch.randn(steps * 8, 16)
# The padding that makes a step about target_s, measured here (a process of its own for each trial would pay torch's
# import each time: 5-10 s with CUDA on the GPU host).
pad = pad_for(target_s, loop)
run_dir = tempfile.mkdtemp()
out = {"off": [[], []], "on": [[], []]}
for b in range(2 * blocks):
    side = "on" if b % 2 else "off"
    p = probe_mod.start({"GPUWISE_RUN_DIR": run_dir, "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0"}) if side == "on" else None
    times, cpus = timed_loop(steps, pad, loop, xs, ys)
    if p is not None:
        p.sender.flush()
        p.switch_off()
    out[side][0].append(statistics.median(times[20:]))
    out[side][1].append(statistics.median(cpus[20:]))
print(json.dumps(out))
"""
)


def interleaved(steps, target_s, loop, blocks, probe_dir=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWISE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run([sys.executable, "-c", INTERLEAVED, str(steps), str(target_s), loop, str(blocks), probe_dir or os.path.join(REPO, "python")], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def calibrate(target_s, loop):
    """The number of 32x32 products that pads a step of this loop to about `target_s`, measured plainly (twice
    scaled: the machine's speed is what the runs see, not a guess)."""
    base = median_step(run_loop(300, 0, loop, None, None, None))
    pad = 0
    for _ in range(3):
        probe_pad = max(pad, 20)
        per_mm = (median_step(run_loop(300, probe_pad, loop, None, None, None)) - base) / probe_pad
        pad = max(0, int(round((target_s - base) / max(per_mm, 1e-7))))
    return pad, base


def run_loop(steps, pad, loop, mode, run_dir, probe_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWISE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "times.json")
        cmd = [sys.executable, "-c", LOOP, str(steps), str(pad), loop, out]
        if mode == "probe":
            env["PYTHONPATH"] = os.path.join(probe_dir or os.path.join(REPO, "python"), "gpuwise", "boot")
            env["GPUWISE_RUN_DIR"] = run_dir
            env["GPUWISE_PROFILE_STEPS"] = "0"
        elif mode == "doctor":
            if probe_dir:
                env["GPUWISE_PROBE_DIR"] = probe_dir
            env["GPUWISE_STORE"] = os.path.join(run_dir, "store")
            cmd = ["node", os.path.join(REPO, "dist", "gpuwise.mjs"), "doctor", "--no-serve", "--profile-steps", "0", "--out", os.path.join(run_dir, "run"), "--"] + cmd
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def median_step(times_and_cpus, which=0):
    return statistics.median(times_and_cpus[which][20:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=0, help="steps per run (default: about 4 s of steps)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--targets-ms", default="0.2,1,10")
    ap.add_argument("--loop", default="dataloader", choices=["dataloader", "get_batch"])
    ap.add_argument("--mode", default="doctor", choices=["doctor", "probe", "interleaved"])
    ap.add_argument("--probe-dir", default=None)
    args = ap.parse_args()
    print("loop %s, mode %s%s, %d runs each, alternated; least disturbed median step of each side" % (args.loop, args.mode, " (probe from %s)" % args.probe_dir if args.probe_dir else "", args.repeats))
    print("%-8s %-5s %7s %12s %12s %12s %8s" % ("target", "time", "steps", "plain", "with doctor", "cost/step", "cost"))
    with tempfile.TemporaryDirectory() as tmp:
        for target_ms in [float(x) for x in args.targets_ms.split(",")]:
            steps = args.steps or max(300, min(20000, int(4.0 / (target_ms / 1000.0))))
            if args.mode == "interleaved":
                got = interleaved(max(200, steps // 4), target_ms / 1000.0, args.loop, args.repeats, args.probe_dir)
                if os.environ.get("BENCH_VERBOSE"):
                    print({k: [round(x * 1e6) for x in v[1]] for k, v in got.items()})
                for which, name in ((0, "wall"), (1, "CPU")):
                    b, p = statistics.median(got["off"][which]), statistics.median(got["on"][which])
                    label = "%g ms" % target_ms if which == 0 else ""
                    print("%-8s %-5s %7d %10.1f us %10.1f us %+9.1f us %+7.2f%%" % (label, name, max(200, steps // 4), b * 1e6, p * 1e6, (p - b) * 1e6, (p / b - 1) * 100))
                sys.stdout.flush()
                continue
            pad, _ = calibrate(target_ms / 1000.0, args.loop)
            plain, probed = [], []
            for i in range(args.repeats):
                plain.append(run_loop(steps, pad, args.loop, None, None, None))
                probed.append(run_loop(steps, pad, args.loop, args.mode, os.path.join(tmp, "r%g-%d" % (target_ms, i)), args.probe_dir))
            for which, name in ((0, "wall"), (1, "CPU")):
                b = min(median_step(r, which) for r in plain)
                p = min(median_step(r, which) for r in probed)
                label = "%g ms" % target_ms if which == 0 else ""
                print("%-8s %-5s %7d %10.1f us %10.1f us %+9.1f us %+7.2f%%" % (label, name, steps, b * 1e6, p * 1e6, (p - b) * 1e6, (p / b - 1) * 100))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
