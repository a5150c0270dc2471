"""The probe's cost per step on a GPU, interleaved runs: the loop of examples/doctor/gpu_check.py (an 8192-wide MLP,
AdamW, a DataLoader, a synchronisation per step so each step is timed whole) without the probe, with it, and with it
but without CUDA timing events (GPUWISE_GPU_TIMING=0). Prints the median step of each run and the overheads.

    python bench/doctor/gpu_overhead.py [ROUNDS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "examples", "doctor"))
from gpu_check import OVERHEAD_SNIPPET  # noqa: E402


def median_step_s(mode, run_dir):
    env = dict(os.environ)
    if mode != "bare":
        env.update(
            PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python", "gpuwise", "boot"), os.path.join(REPO, "python")]),
            GPUWISE_RUN_DIR=run_dir,
            GPUWISE_PROFILE_STEPS="0",
        )
        if mode == "probe-no-events":
            env["GPUWISE_GPU_TIMING"] = "0"
    p = subprocess.run([sys.executable, "-c", OVERHEAD_SNIPPET, "cuda"], capture_output=True, text=True, env=env, check=True)
    return statistics.median(json.loads(p.stdout.strip().splitlines()[-1])[20:])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    modes = ["bare", "probe", "probe-no-events"]
    got = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for m in modes:
                got[m].append(median_step_s(m, os.path.join(tmp, "%s-%d" % (m, r))))
                print("round %d %-16s %.3f ms" % (r, m, got[m][-1] * 1e3), flush=True)
    base = min(got["bare"])
    for m in modes[1:]:
        print("%-16s %+.2f%% (best of %d: %.3f ms against %.3f ms bare)" % (m, (min(got[m]) / base - 1) * 100, rounds, min(got[m]) * 1e3, base * 1e3))


if __name__ == "__main__":
    main()
