"""Does the probe's sampled steady loop (steps.py: bursts of 32 steps in 1024 past GPUWISE_FULL_STEPS) keep a run's
mean step, and do a burst's first steps get their own GPU time? (issue 27: the probe's cost)

One process trains a small MLP for --steps steps (CUDA when there is one), with a step every --stall-every that also
sleeps --stall-ms (a loader that stalls in turn), under the probe with GPUWISE_FULL_STEPS=--full-steps and its records
in a run directory. It prints, as JSON: the step records kept, the steps counted, the mean step the records give
against the true mean (the loop's wall time over its steps, timed by the script itself), and on CUDA the GPU time of
each burst's first step against the median GPU step.

    python3 bench/doctor/sampled_steps.py [--steps 6000] [--full-steps 300] [--stall-every 7] [--stall-ms 2] [--width W]
"""
import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--full-steps", default="300")
    ap.add_argument("--stall-every", type=int, default=7)
    ap.add_argument("--stall-ms", type=float, default=2.0)
    ap.add_argument("--width", type=int, default=0, help="the MLP's width (default: 4096 on CUDA, 128 on the CPU)")
    args = ap.parse_args()
    from gpuwise import probe as probe_mod

    run_dir = tempfile.mkdtemp()
    p = probe_mod.start({"GPUWISE_RUN_DIR": run_dir, "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0", "GPUWISE_FULL_STEPS": args.full_steps})
    import torch

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    w = args.width or (4096 if dev == "cuda" else 128)
    model = torch.nn.Sequential(torch.nn.Linear(w // 4, w), torch.nn.GELU(), torch.nn.Linear(w, w // 4)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.utils.data.TensorDataset(torch.randn(args.steps * 32, w // 4))
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    t0 = None
    for i, (x,) in enumerate(loader):
        if i == 1:
            t0 = time.perf_counter()  # the probe's first step ends at the first optimizer step: times from there
        if args.stall_every and i % args.stall_every == 0:
            time.sleep(args.stall_ms / 1000.0)
        x = x.to(dev, non_blocking=True)
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if dev == "cuda":
        torch.cuda.synchronize()
    true_mean = (time.perf_counter() - t0) / (args.steps - 1)
    p.guarded(p.end, "exit")
    p.sender.flush()
    recs = [json.loads(line) for f in glob.glob(os.path.join(run_dir, "probe*.jsonl")) for line in open(f)]
    steps = [r for r in recs if r["type"] == "step"]
    end = [r for r in recs if r["type"] == "end"]
    host = [s["stepTimeS"] for s in steps if s["step"] > 1 and s["stepTimeS"] is not None]
    gpu = {}
    for r in recs:
        for at, dur in r.get("gpuStepTimes") or []:
            gpu[at] = dur
    firsts = sorted(s["step"] for s in steps if s["step"] >= 1024 and s["step"] % 1024 == 0)
    out = {
        "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "stepRecords": len(steps),
        "stepsCounted": end[-1]["steps"] if end else None,
        "trueMeanMs": true_mean * 1e3,
        "recordsMeanMs": statistics.mean(host) * 1e3 if host else None,
        "recordsMedianMs": statistics.median(host) * 1e3 if host else None,
        "gpuMedianMs": statistics.median(gpu.values()) * 1e3 if gpu else None,
        "gpuAtBurstStartsMs": {s: round(gpu[s] * 1e3, 3) for s in firsts if s in gpu},
        "gpuStepsTimed": len(gpu),
        # The DataLoader seen again in the bursts (its __next__ is not watched between them), and every batch counted.
        "burstStepsWithABatch": sum(1 for s in steps if s["step"] >= 1024 and s["batches"] == 1),
        "burstSteps": sum(1 for s in steps if s["step"] >= 1024),
        "loaderBatches": ([r["batches"] for r in recs if r["type"] == "loader"] or [None])[-1],
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
