"""tune --plan's verified best configuration as a corpus script's own flags, so that it can be run plainly with the
change made by hand (issue 46: the best configuration's step measured by tune against the same run without gpuwise).

    python3 examples/pace/tune_flags.py PLAN.json NAME      prints the flags (empty: the script as it is)

Exits 1 with one line when a kept setting has no flag in the script (then no plain run can stand for it)."""
import json
import sys

LIGHTNING = {"lightning_datamodule"}
HF_TRAINER = {"hf_trainer"}


def flags_of(settings, name):
    """The flags for a TrialSettings object (src/tune/planTrials.ts), or raises ValueError naming what has none."""
    out = []
    loader = settings.get("loader") or {}
    if loader.get("numWorkers") is not None:
        out += ["--workers", str(loader["numWorkers"])]
    if loader.get("pinMemory"):
        if name in HF_TRAINER:
            pass  # the Trainer pins by default (dataloader_pin_memory=True)
        else:
            out.append("--pin-memory")
    if loader.get("persistentWorkers"):
        if name in HF_TRAINER:
            raise ValueError("persistent workers (TrainingArguments(dataloader_persistent_workers=True)) has no flag in hf_trainer.py")
        out.append("--persistent-workers")
    if loader.get("prefetchFactor") is not None:
        out += ["--prefetch-factor", str(loader["prefetchFactor"])]
    if settings.get("tf32"):
        out.append("--tf32")
    if settings.get("cudnnBenchmark"):
        out.append("--cudnn-benchmark")
    if settings.get("autocast") == "bf16":
        out += ["--precision", "bf16-mixed"] if name in LIGHTNING else ["--bf16"] if name in HF_TRAINER else ["--amp", "bf16"]
    if settings.get("channelsLast"):
        out.append("--channels-last")
    mode = settings.get("compile")
    if mode:
        out.append("--compile")
        if mode == "reduce-overhead":
            out += ["--compile-mode", "reduce-overhead"]
    return out


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: tune_flags.py PLAN.json NAME\n")
        return 2
    try:
        with open(argv[1]) as f:
            report = json.load(f)
        print(" ".join(flags_of((report.get("best") or {}).get("settings") or {}, argv[2])))
    except (OSError, ValueError) as e:
        sys.stderr.write("tune_flags.py: %s: %s\n" % (argv[1], e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
