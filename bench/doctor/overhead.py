"""The probe's cost per training step outside the profiled window, on CPU (`npm run bench:doctor`).

Runs the same small loop (a 2-layer MLP, SGD, a DataLoader over tensors) in fresh processes with
and without the probe (profiler off, records to files), several times alternately, and prints the
median step time of each and the difference per step. The issue's target (< 2% of step time) is
about GPU steps of real models; this figure is the probe's fixed cost, to be compared with them.
Usage: python3 bench/doctor/overhead.py [STEPS] [REPEATS]   (needs torch; CI has Debian's CPU torch)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOP = r"""
import json, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1])
m = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32))
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
data = TensorDataset(torch.randn(steps * 32, 32), torch.randn(steps * 32, 32))
times, t = [], time.perf_counter()
for x, y in DataLoader(data, batch_size=32):
    loss = torch.nn.functional.mse_loss(m(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    now = time.perf_counter()
    times.append(now - t)
    t = now
print(json.dumps(times))
"""


def run(steps, probe, run_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWISE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if probe:
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python", "gpuwise", "boot"), os.path.join(REPO, "python")])
        env["GPUWISE_RUN_DIR"] = run_dir
        env["GPUWISE_PROFILE_STEPS"] = "0"
    out = subprocess.run([sys.executable, "-c", LOOP, str(steps)], env=env, capture_output=True, text=True, check=True).stdout
    times = json.loads(out.strip().splitlines()[-1])
    return statistics.median(times[10:])


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    bare, probe = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            bare.append(run(steps, False, tmp))
            probe.append(run(steps, True, os.path.join(tmp, "r%d" % i)))
    # The least disturbed run of each: this machine is shared, and noise only ever adds time.
    b, p = min(bare), min(probe)
    print("steps per run %d, runs %d each" % (steps, repeats))
    print("median step without probe: %.1f us" % (b * 1e6))
    print("median step with probe:    %.1f us" % (p * 1e6))
    print("probe cost per step:       %+.1f us (%+.1f%% of this tiny CPU step)" % ((p - b) * 1e6, (p / b - 1) * 100))
    print("=> under 2%% of any step longer than %.1f ms" % (max(0.0, p - b) / 0.02 * 1e3))


if __name__ == "__main__":
    main()
