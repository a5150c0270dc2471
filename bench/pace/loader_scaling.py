"""How a DataLoader's rate grows with its workers on this host: the question behind every worker count doctor
recommends (issue 25). The pace model takes a worker's time a batch from one run and scales the loader's rate with
the worker count; on a host whose CPUs are SMT siblings, or whose clock drops as more cores work, a worker past some
count adds less than its share, and its CPU time a batch grows with it.

For each worker count the loader runs alone, as fast as it can (the loop only takes each batch, optionally copies it
to the GPU from pageable memory as the corpus's scripts do), and prints one JSON line: batches/s, each worker's wall
time a batch (workers / rate), its CPU time a batch (/proc/PID/stat: user + system) and its wait for a CPU
(/proc/PID/schedstat's run delay). The first round of batches (the workers' start-up) is left out. The host's CPU
topology is printed first (SMT siblings, cores, the clock where /proc shows it).

    python3 bench/pace/loader_scaling.py --dataset fakedata --workers 1 2 4 8 12 14 [--to-gpu] [--seconds 8]
    python3 bench/pace/loader_scaling.py --dataset jpeg --data /tmp/gpuwise-corpus-data ...

`--dataset fakedata` is examples/pace/fakedata_resnet.py's (batch 256), `jpeg` is jpeg_resnet.py's ImageFolder
(batch 64; make the JPEGs first with examples/pace/make_data.py)."""
import argparse
import glob
import json
import os
import sys
import time

CLK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_s(pid):
    """User + system CPU seconds of process `pid` (its main thread's group: all threads)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK
    except (OSError, IndexError, ValueError):
        return None


def run_delay_s(pid):
    """Seconds the process's threads waited runnable for a CPU (/proc/PID/task/*/schedstat, second field)."""
    total = 0.0
    for path in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(path) as f:
                total += int(f.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            pass
    return total


def topology():
    """The CPUs this process may use, their SMT siblings and cores, and the clocks /proc reports."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    siblings, cores = set(), set()
    for c in cpus:
        base = "/sys/devices/system/cpu/cpu%d/topology/" % c
        try:
            with open(base + "thread_siblings_list") as f:
                siblings.add(f.read().strip())
            with open(base + "core_id") as f, open(base + "physical_package_id") as g:
                cores.add((g.read().strip(), f.read().strip()))
        except OSError:
            pass
    mhz, model = [], None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    mhz.append(float(line.split(":")[1]))
                elif line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "cpus": len(cpus),
        "siblingSets": len(siblings),
        "siblingsOfFirst": sorted(siblings)[0] if siblings else None,
        "cores": len(cores),
        "model": model,
        "mhz": [round(min(mhz)), round(max(mhz))] if mhz else None,
    }


def dataset(name, data):
    from torchvision import datasets, transforms

    norm = transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    if name == "fakedata":
        tf = transforms.Compose([transforms.ToTensor(), norm])
        return datasets.FakeData(size=50_000, image_size=(3, 224, 224), num_classes=1000, transform=tf), 256
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(), norm])
    return datasets.ImageFolder(os.path.join(data, "jpeg"), transform=tf), 64


def measure(ds, batch, workers, seconds, to_gpu):
    import torch

    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers)
    it = iter(loader)
    for _ in range(workers):  # the start-up round: every worker's first batch
        x, _y = next(it)
    pids = [w.pid for w in it._workers]
    c0 = sum(cpu_s(p) or 0.0 for p in pids)
    d0 = sum(run_delay_s(p) for p in pids)
    t0 = time.perf_counter()
    n, c1, d1, t1 = 0, c0, d0, t0
    while t1 - t0 < seconds or n < 2 * workers:
        try:
            x, _y = next(it)
        except StopIteration:  # the epoch ended first: what was read before it stands
            break
        if to_gpu:
            x.to("cuda")
            torch.cuda.synchronize()
        n += 1
        # Read after each batch: the workers exit with the epoch, and their /proc files with them.
        c1, d1, t1 = sum(cpu_s(p) or 0.0 for p in pids), sum(run_delay_s(p) for p in pids), time.perf_counter()
    dt = t1 - t0
    del it
    rate = n / dt
    return {
        "workers": workers,
        "batches": n,
        "batchesPerS": round(rate, 3),
        "imagesPerS": round(rate * batch),
        "wallMsPerBatchPerWorker": round(1000 * workers / rate, 1),
        "cpuMsPerBatch": round(1000 * (c1 - c0) / n, 1),
        "runDelayMsPerBatch": round(1000 * (d1 - d0) / n, 1),
        "workerBusyShare": round((c1 - c0) / (dt * workers), 3),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["fakedata", "jpeg"], default="fakedata")
    ap.add_argument("--data", default=os.environ.get("GPUWISE_CORPUS_DATA", "/tmp/gpuwise-corpus-data"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    ap.add_argument("--seconds", type=float, default=8.0, help="timed seconds a worker count (at least two rounds)")
    ap.add_argument("--to-gpu", action="store_true", help="copy each batch to the GPU from pageable memory, as the scripts do")
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print("loader_scaling: needs torch and torchvision (%s)" % e, file=sys.stderr)
        sys.exit(77)
    if a.dataset == "jpeg" and not os.path.isdir(os.path.join(a.data, "jpeg")):
        print("loader_scaling: %s has no jpeg folder: run examples/pace/make_data.py --data %s jpeg" % (a.data, a.data), file=sys.stderr)
        sys.exit(2)
    print(json.dumps({"topology": topology(), "dataset": a.dataset, "toGpu": a.to_gpu}), flush=True)
    ds, batch = dataset(a.dataset, a.data)
    for w in a.workers:
        print(json.dumps({"dataset": a.dataset, "batch": batch, **measure(ds, batch, w, a.seconds, a.to_gpu)}), flush=True)


if __name__ == "__main__":
    main()
