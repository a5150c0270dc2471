"""The probe's cost per step in user-space instructions of the training thread, read from the CPU's counter
(perf_event_open): for a machine whose timing is too noisy to see microseconds (the H200 host's block means swung
between 918 and 1818 us for the same work, 2026-11-29) and that has no valgrind (probe_instructions.sh).

The loop of probe_instructions.sh (a 16-wide linear layer, SGD, batches of 8 from a DataLoader, no padding) in blocks of
1,000 steps, `--rounds` times each: plainly (`off`), under the probe recording every step (`full`:
GPUWISE_FULL_STEPS=all), and under the probe sampling from the start (`counted`: GPUWISE_FULL_STEPS=0, steps 64-1023
only counted). Instructions are counted over steps 80-999 of each block and the smallest count of each side kept (an
interrupt can only add). The steady loop's cost is the mix: 64 steps in 1024 recorded.

    python3 bench/doctor/probe_instructions_perf.py [--rounds 5] [--json OUT]
Exit 2 with one line where the kernel gives no counter (no PMU in a VM, perf_event_paranoid).
"""
import argparse
import ctypes
import json
import os
import struct
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

BLOCK, FROM, TO = 1000, 80, 1000
BURST, PERIOD = 64, 1024
_SYS_PERF_EVENT_OPEN = 298  # x86-64


class _Attr(ctypes.Structure):  # perf_event_attr up to config2 (PERF_ATTR_SIZE_VER1, 72 bytes)
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64), ("wakeup", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64)]


def instruction_counter():
    """A counter of this thread's user-space instructions (an fd), or None."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _Attr(type=0, size=ctypes.sizeof(_Attr), config=1, flags=(1 << 5) | (1 << 6))  # HW instructions; no kernel, no hypervisor
    fd = libc.syscall(_SYS_PERF_EVENT_OPEN, ctypes.byref(attr), 0, -1, -1, 0)
    return fd if fd >= 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    fd = instruction_counter()
    if fd is None:
        print("probe_instructions_perf.py: this kernel gives no instruction counter (perf_event_open: errno %d)" % ctypes.get_errno(), file=sys.stderr)
        sys.exit(2)
    read = lambda: struct.unpack("q", os.read(fd, 8))[0]  # noqa: E731
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from gpuwise import probe as probe_mod

    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    xs, ys = torch.randn(BLOCK * 8, 16), torch.randn(BLOCK * 8, 16)

    def block():
        at = {}
        for i, (x, y) in enumerate(DataLoader(TensorDataset(xs, ys), batch_size=8)):
            if i in (FROM, TO - 1):
                at[i] = read()
            loss = torch.nn.functional.mse_loss(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return (at[TO - 1] - at[FROM]) / (TO - 1 - FROM)

    sides = {"off": None, "full": "all", "counted": "0"}
    got = {s: [] for s in sides}
    block()  # warm
    for _ in range(args.rounds):
        for side, full in sides.items():
            p = probe_mod.start({"GPUWISE_RUN_DIR": tempfile.mkdtemp(), "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0", "GPUWISE_FULL_STEPS": full}) if full else None
            got[side].append(block())
            if p is not None:
                assert p.quiet == (full == "0")
                p.sender.flush()
                p.switch_off()
    best = {s: min(v) for s, v in got.items()}
    full, counted = best["full"] - best["off"], best["counted"] - best["off"]
    out = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "instructionsPerStep": {s: round(v) for s, v in best.items()},
        "fullCost": round(full),
        "countedCost": round(counted),
        "steadyCost": round((BURST * full + (PERIOD - BURST) * counted) / PERIOD),
        "rounds": {s: [round(x) for x in v] for s, v in got.items()},
    }
    text = json.dumps(out, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
