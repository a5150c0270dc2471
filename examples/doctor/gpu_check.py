"""Self-checking GPU run of `gpuwise doctor` on one CUDA GPU (the probe's CUDA paths, which CI's
CPU torch cannot reach). Needs `npm run build` first; takes about a minute.

    npm run build && python examples/doctor/gpu_check.py OUTDIR

Checks, each as its own doctor run under OUTDIR:
  cuda     a plain CUDA run: the global optimizer hook (torch >= 2), allocator figures, NVML beside
           them, the profiler window analysed by analyze's rules, the window's memory snapshot
           analysed by memory's code;
  starved  a slow Dataset: the top finding is about the DataLoader;
  oom      a 1 PiB allocation at step 3: outcome out-of-memory, the OOM observer's snapshot written
           and analysed;
  overhead median step time of the same loop with and without the probe (profiler off), printed.
Writes OUTDIR/summary.json and exits 1 if any check failed.
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLI = os.path.join(REPO, "dist", "gpuwise.mjs")
TINY = os.path.join(HERE, "tiny_train.py")
# cpu: a dry run of this script's plumbing without a GPU (the CUDA checks then fail, as they should).
DEVICE = os.environ.get("GPUWISE_CHECK_DEVICE", "cuda")


def doctor(out, args, train_args):
    cmd = ["node", CLI, "doctor", "--out", out] + args + ["--", sys.executable, TINY, "--device", DEVICE] + train_args
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(out + ".log", "w") as f:
        f.write("$ %s\n--- stdout\n%s\n--- stderr\n%s\n" % (" ".join(cmd), p.stdout, p.stderr))
    report = None
    if os.path.exists(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
    return p.returncode, report, time.time() - t0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/doctor/gpu_check.py OUTDIR")
    outdir = os.path.abspath(sys.argv[1])
    os.makedirs(outdir, exist_ok=True)
    if not os.path.exists(CLI):
        sys.exit("build first: npm run build")
    results = {}
    info = {}

    def check(name, ok, detail):
        results[name] = {"ok": bool(ok), "detail": detail}
        print("%-28s %s  %s" % (name, "ok  " if ok else "FAIL", detail), flush=True)

    # 1. A plain CUDA run with a profiler window at steps 5..7.
    code, r, secs = doctor(os.path.join(outdir, "cuda"), ["--profile-at", "5", "--profile-steps", "3"], ["--steps", "20", "--hidden", "2048", "--batch", "256"])
    check("cuda: exit 0", code == 0 and r is not None, "exit %s in %.1f s" % (code, secs))
    if r:
        env, rank = r["environment"], (r["ranks"] or [{}])[0]
        check("cuda: CUDA device seen", len(env["devices"]) >= 1, env["devices"])
        check("cuda: global optimizer hook", env["stepHook"] == "optimizer-step-post-hook", env["stepHook"])
        check("cuda: 20 steps", rank.get("steps", {}).get("steps") == 20, rank.get("steps"))
        alloc = rank.get("allocator") or {}
        check("cuda: allocator figures", alloc.get("reservedBytes", 0) > 0 and alloc.get("peakAllocatedBytes", 0) > 0, alloc)
        check("cuda: NVML beside allocator", rank.get("nvmlUsedBytes") is not None and (rank.get("nonAllocatorBytes") or 0) > 0, [rank.get("nvmlUsedBytes"), rank.get("nonAllocatorBytes")])
        traces = r["profile"]["traces"]
        check("cuda: trace analysed", len(traces) == 1 and traces[0]["error"] is None, traces)
        snaps = [s for s in r["profile"]["snapshots"] if s["kind"] == "window"]
        check("cuda: window snapshot analysed", len(snaps) == 1 and snaps[0]["error"] is None, snaps)
        check("cuda: analyze read the steps", not any("found no profiled steps" in n for n in r["notes"]), r["notes"])
        info["cuda findings"] = [(f["id"], f["severity"], f["source"]) for f in r["findings"]]
        info["cuda ranks"] = r["ranks"]

    # 2. A starved DataLoader: 5 ms per sample in the Dataset, no workers.
    code, r, secs = doctor(os.path.join(outdir, "starved"), ["--profile-at", "4", "--profile-steps", "3"], ["--steps", "12", "--batch", "32", "--loader-delay-ms", "2"])
    top = r["findings"][0]["id"] if r and r["findings"] else None
    check("starved: DataLoader on top", code == 0 and top in ("dataloader-bound", "dataloader-wait"), [(f["id"], f["source"]) for f in (r or {}).get("findings", [])])

    # 3. Out of memory at step 3.
    code, r, secs = doctor(os.path.join(outdir, "oom"), [], ["--steps", "10", "--oom-at", "3"])
    check("oom: exit code passed on", code == 1, code)
    if r:
        check("oom: outcome", r["run"]["outcome"] == "out-of-memory", r["run"]["outcomeText"])
        snaps = [s for s in r["profile"]["snapshots"] if s["kind"] == "oom"]
        check("oom: observer snapshot analysed", len(snaps) == 1 and snaps[0]["error"] is None and os.path.exists(snaps[0]["path"]), snaps)
    else:
        check("oom: report written", False, None)

    # 4. Probe overhead outside the profiled window: the same loop with and without the probe.
    def median_step_s(with_probe):
        env = dict(os.environ)
        rd = os.path.join(outdir, "overhead-%s" % ("probe" if with_probe else "bare"))
        os.makedirs(rd, exist_ok=True)
        args = [sys.executable, "-c", OVERHEAD_SNIPPET, DEVICE]
        if with_probe:
            env.update(PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python", "gpuwise", "boot"), os.path.join(REPO, "python")]), GPUWISE_RUN_DIR=rd, GPUWISE_PROFILE_STEPS="0")
        p = subprocess.run(args, capture_output=True, text=True, env=env)
        times = json.loads(p.stdout.strip().splitlines()[-1])
        return statistics.median(times[20:])

    # Interleaved rounds, compared by their means: single runs of this loop scatter by about 3% on an H200.
    bare, probe = [], []
    for _ in range(3):
        bare.append(median_step_s(False))
        probe.append(median_step_s(True))
    overhead = statistics.mean(probe) / statistics.mean(bare) - 1
    info["overhead"] = {"bareS": bare, "probeS": probe}
    check("overhead < 2%", overhead < 0.02, "mean of 3 median steps %.3f ms bare, %.3f ms with probe: %+.2f%%" % (statistics.mean(bare) * 1e3, statistics.mean(probe) * 1e3, overhead * 100))

    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump({"checks": results, "info": info}, f, indent=2, default=str)
    failed = [k for k, v in results.items() if not v["ok"]]
    print("%d checks, %d failed%s" % (len(results), len(failed), (": " + ", ".join(failed)) if failed else ""))
    sys.exit(1 if failed else 0)


# Times 200 steps of an 8192-wide MLP (about 5-10 ms a step on an H100/H200, fp32) with a synchronize
# per step, so host time is GPU time; a DataLoader over a small dataset, cycled.
OVERHEAD_SNIPPET = r"""
import json, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
dev = sys.argv[1]
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
width, batch = (8192, 256) if dev == "cuda" else (64, 32)
m = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width)).to(dev)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
loader = DataLoader(TensorDataset(torch.randn(4 * batch, width), torch.randn(4 * batch, width)), batch_size=batch)
times = []
t = time.perf_counter()
while len(times) < 200:
    for x, y in loader:
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = torch.nn.functional.mse_loss(m(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync()
        now = time.perf_counter()
        times.append(now - t)
        t = now
print(json.dumps(times))
"""

if __name__ == "__main__":
    main()
