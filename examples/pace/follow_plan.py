"""doctor's plan as the corpus scripts' flags: one `label=flags` line per plan step, each step's flags carrying the
ones before it (what run.sh runs plainly with PLAN_FROM=doctor), so the plan is followed as doctor wrote it rather
than as the expectations guessed it.

    python3 examples/pace/follow_plan.py REPORT.json NAME

A fix is read from its id and its label (the words doctor prints): `num_workers 4 -> 7` gives `--workers 7` ("more
DataLoader workers", without a count, the count of the DataLoader finding's code), persistent workers
`--persistent-workers`, pinned memory `--pin-memory`, bf16 autocast `--amp bf16` (Lightning's `--precision
bf16-mixed`), channels_last `--channels-last`, torch.compile `--compile`, a fused AdamW `--fused-adamw`, fewer
launches (launch-bound: compile, CUDA graphs) `--compile --compile-mode reduce-overhead` where the script has that
mode, syncs out of the loop `--log-every 50` (the scripts call `.item()` when they log; timm_style's `--sync-every
50`; none for hf_generate, whose syncs are generate()'s own), a batch (`batch 8 -> 32`, `batch x4`) `--batch` in the
CPU scripts of examples/pace/cpu/. A step that needs more DataLoader workers than the flags give
(`workersNeeded`) gets them, and one that asks for drop_last=True (`dropLast`: a compiling fix over a loader with a
partial last batch) `--drop-last`. The first fix these scripts cannot express stops the plan there (said on stderr): the
steps after it assume it.
"""
import json
import re
import sys

# The scripts whose flags differ from _harness.py's (examples/pace/run.sh's names).
LIGHTNING = {"lightning_datamodule"}
# The flag that takes a per-step `.item()` out of the loop, where it is not the logging interval.
SYNC_FLAG = {"timm_style": "--sync-every"}
# Scripts whose syncs are a library loop's own, which no flag takes out: hf_generate.py's are generate()'s stopping
# check at every token (its --log-every only spaces its own progress lines).
OWN_SYNCS = {"hf_generate"}
# The scripts whose DataLoader keeps its last, partial batch unless --drop-last (the others drop it always).
DROP_LAST = {"jpeg_resnet", "fakedata_resnet", "gan_fakedata"}
# The CPU ground-truth scripts (examples/pace/cpu/, test/pace/cpuGroundTruth.test.ts): --batch sets their batch, so a
# batch fix ("batch 8 -> 32", "batch 32", "batch x4" of the run's batch) is followed there.
BATCH = {"io_loader", "cpu_loader", "epochs", "host_loop"}
# The scripts whose --compile takes --compile-mode (_harness.model_flags, compiled_cnn.py): launch-bound's fix there is
# torch.compile(mode="reduce-overhead").
COMPILE_MODE = {"jpeg_resnet", "timm_style", "fakedata_resnet", "gpu_bound", "compiled_cnn"}


def flags_of(fix_id, label, name, flags, batch=None, workers=None):
    """The flags after `flags` with this fix applied, or None when the scripts have no flag for it. `batch`: the run's
    batch (samples a step), for a fix that multiplies it; `workers`: the count the DataLoader finding's code gives, for
    a step that asks for "more DataLoader workers" without one."""
    out = dict(flags)
    text = label.lower()
    known = False
    if name in BATCH:
        m = re.search(r"\bbatch (?:\d+ -> )?(\d+)\b", text)
        k = re.search(r"\bbatch x(\d+)\b", text)
        if m:
            out["--batch"] = m.group(1)
            known = True
        elif k and batch:
            out["--batch"] = str(int(out.get("--batch") or batch) * int(k.group(1)))
            known = True
    m = re.search(r"num_workers (\d+) -> (\d+)", text)
    if m:
        out["--workers"] = m.group(2)
        known = True
    elif "more dataloader workers" in text and workers:
        out["--workers"] = str(workers)  # no count in the label: the one the DataLoader finding's code gives
        known = True
    if "persistent" in text:
        out["--persistent-workers"] = None
        known = True
    if fix_id == "pageable-h2d" or "pinned memory" in text:
        out["--pin-memory"] = None
        known = True
    if fix_id in ("mixed-precision", "no-tensor-cores") or "bf16 autocast" in text:
        if name in LIGHTNING:
            out["--precision"] = "bf16-mixed"
        else:
            out["--amp"] = "bf16"
        known = True
    if fix_id == "channels-last" or "channels_last" in text:
        out["--channels-last"] = None
        known = True
    if fix_id == "fusion" or "torch.compile" in text or text.startswith("compile"):
        out["--compile"] = None
        known = True
    if "fused" in text and "adamw" in text:
        out["--fused-adamw"] = None
        known = True
    if fix_id == "decode-autograd":
        out["--grad-mode"] = "inference"  # decode_loop.py
        known = True
    if fix_id == "bf16-weights":
        out["--dtype"] = "bf16"  # hf_generate.py
        known = True
    if fix_id == "launch-bound" and "static kv cache" in text:
        out["--static-cache"] = None  # hf_generate.py
        known = True
    elif fix_id == "launch-bound" and name in COMPILE_MODE:
        # "fewer launches (compile, CUDA graphs)" or "CUDA graphs (mode=...)": the code the fix shows
        out["--compile"] = None
        out["--compile-mode"] = "reduce-overhead"
        known = True
    if (fix_id == "host-sync" or "syncs out of the" in text) and name not in OWN_SYNCS:
        out[SYNC_FLAG.get(name, "--log-every")] = "50"
        known = True
    return out if known else None


def text_of(flags):
    return " ".join(k if v is None else "%s %s" % (k, v) for k, v in flags.items())


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: follow_plan.py REPORT.json NAME\n")
        return 2
    path, name = argv[1], argv[2]
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("follow_plan.py: %s: cannot read the report (%s)\n" % (path, e))
        return 1
    plan = ((report.get("pace") or {}).get("plan") or {}).get("steps") or []
    batch = (((report.get("ranks") or [{}])[0] or {}).get("steps") or {}).get("samplesPerStep")
    workers = None
    for f in report.get("findings") or []:
        code = re.search(r"num_workers=(\d+)", ((f.get("recommendation") or {}).get("code") or ""))
        if f.get("id") == "dataloader-bound":
            workers = (f.get("data") or {}).get("workersRecommended") or (int(code.group(1)) if code else None)
    flags = {}
    lines = ["base="]
    for i, step in enumerate(plan, 1):
        nxt = flags_of(step.get("id") or "", step.get("label") or "", name, flags, batch, workers)
        if nxt is None:
            sys.stderr.write("follow_plan.py: %s: step %d (%s) has no flag in the script: the plan is followed up to it\n" % (path, i, step.get("label")))
            break
        need = step.get("workersNeeded")
        if need and int(nxt.get("--workers") or 0) < need:
            nxt["--workers"] = str(need)
        if step.get("dropLast"):
            if name not in DROP_LAST:
                sys.stderr.write("follow_plan.py: %s: step %d (%s) asks for drop_last=True, which the script has no flag for: the plan is followed up to it\n" % (path, i, step.get("label")))
                break
            nxt["--drop-last"] = None
        flags = nxt
        lines.append("plan%d=%s" % (i, text_of(flags)))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
