"""The probe's settings, and what the probe leaves of the environment it started in.

A process of a doctor run (the registry, boot/attach.py) gets its settings from the run's entry, never from the
environment; doctor adds at most one entry to PYTHONPATH, the boot folder, and only when the command's Python has no
site hook. That entry is written so that it can be taken out again exactly, whatever the command did around it
(`without_boot_entry`): the script's view loses it at once, the C environment (what children inherit) once the process
trains, or at once when the site hook attached it (its children find the run the same way) (`RunEnvironment`).

The rest of this docstring is the probe's direct interface (the tests, the benches): the command started with `PYTHONPATH=<gpuwise>/boot:<the user's PYTHONPATH>` and the GPUWISE_* variables
below. The user's script must see its own environment, so the boot removes them (`scrub_view`) from `os.environ`
(Python's view, which `os.getenv`, `subprocess.Popen(env=dict(os.environ))` and launchers read) as soon as they
are read, but leaves them in the process's C environment, which children started without an explicit environment
inherit (multiprocessing's spawn, `subprocess` without `env=`). A child process runs the probe only when it is a
training process (`probe_child`): a rank (RANK and the like are set), or a multiprocessing spawn child (a rank of
`torch.multiprocessing.spawn`; a spawned DataLoader worker turns itself off at its first hook). Every other child
(a data preparation script, an evaluation subprocess, a compile worker) removes them from its own environment and
runs as without doctor. Once the process trains (`withdraw_c_environment`), they leave the C environment too, so
children started after that run plainly. Launchers (torchrun, accelerate launch, deepspeed) keep the whole
environment as it is: they build their ranks' environment from `os.environ`.
"""
import os
import sys

# Every variable doctor sets for the probe (removed from the script's view of its environment).
PROBE_VARIABLES = (
    "GPUWISE_SOCKET",
    "GPUWISE_RUN_DIR",
    "GPUWISE_PROFILE_AT",
    "GPUWISE_PROFILE_STEPS",
    "GPUWISE_MAX_STEPS",
    "GPUWISE_TIME_WINDOW_AFTER_S",
    "GPUWISE_TIME_WINDOW_S",
    "GPUWISE_TIME_WINDOW_CPU",
    "GPUWISE_GPU_TIMING",
    "GPUWISE_MEMORY_HISTORY",
    "GPUWISE_MEMORY_STACKS",
    "GPUWISE_PROBE_FAULT",
    "GPUWISE_STALL_S",
    "GPUWISE_STALL_REPEAT_S",
    "GPUWISE_FULL_STEPS",
    "GPUWISE_PROBE_DIR",
    "GPUWISE_USER_PYTHONPATH",
    "GPUWISE_PROBED_PARENT",
    "GPUWISE_IMPORTABLE",
    "GPUWISE_TRIAL_SETTINGS",
    "GPUWISE_TRIAL_STOP",
)
# The marks a probed process leaves in the run's registry folder (boot/attach.py), by doctor's pid and its own: it
# imported torch (it is the training's process, not a wrapper such as `conda run`), it began to train.
TORCH_MARK = "torch-%d-%d"
TRAINED_MARK = "trained-%d-%d"
# Set (in the C environment only) by a probed process: its children know they are children.
PARENT_MARK = "GPUWISE_PROBED_PARENT"
# The user's PYTHONPATH before doctor put the boot folder in front (absent: it was unset).
USER_PYTHONPATH = "GPUWISE_USER_PYTHONPATH"
# What marks a rank of a distributed launcher.
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
# Launchers by module (`python -m X`) or script name: they build their ranks' environment from os.environ.
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch", "deepspeed.launcher.runner", "deepspeed.launcher.launch")
_LAUNCHER_SCRIPTS = ("torchrun", "deepspeed")


def _int_env(env, name, default, minimum):
    try:
        v = int(env.get(name, "") or default)
    except ValueError:
        return default
    return max(minimum, v)


def _float_env(env, name, default):
    try:
        v = float(env.get(name, "") or default)
    except ValueError:
        return default
    return max(0.0, v)


def _first_int(env, names):
    for n in names:
        v = env.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                pass
    return None


def is_launcher(argv):
    """Whether the command line `argv` (sys.orig_argv: the interpreter first) runs a distributed launcher."""
    args = list(argv[1:])
    if "-m" in args:
        i = args.index("-m")
        module = args[i + 1] if i + 1 < len(args) else ""
        return module in _LAUNCHER_MODULES or (module == "accelerate.commands.accelerate_cli" and "launch" in args[i + 2 : i + 3])
    script = os.path.basename(args[0]) if args else ""
    if script in _LAUNCHER_SCRIPTS:
        return True
    return script in ("accelerate", "accelerate-launch") and (script == "accelerate-launch" or "launch" in args[1:2])


def is_spawn_child(argv):
    """A child started by multiprocessing's spawn method (`... -c 'from multiprocessing.spawn import spawn_main; ...'`)."""
    return any("multiprocessing.spawn" in a for a in argv[1:4]) or "--multiprocessing-fork" in argv


def probe_child(env, argv):
    """Whether this process, started with `env` and command line `argv`, runs the probe: the first probed process
    of the command, a rank, or a multiprocessing spawn child; not another child of a probed process."""
    if not env.get(PARENT_MARK):
        return True
    return is_training_child(env, argv)


def _view_delete(name):
    """Removes `name` from os.environ without unsetenv(): the C environment, which children inherit, keeps it."""
    data = getattr(os.environ, "_data", None)
    key = os.environ.encodekey(name) if hasattr(os.environ, "encodekey") else name
    if isinstance(data, dict):
        data.pop(key, None)
    else:
        os.environ.pop(name, None)


def _view_set(name, value):
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict) and hasattr(os.environ, "encodekey") and hasattr(os.environ, "encodevalue"):
        data[os.environ.encodekey(name)] = os.environ.encodevalue(value)
    else:
        os.environ[name] = value


def user_pythonpath(env, boot_dir):
    """The PYTHONPATH the user had (None: unset): the saved value, else the current one without the boot folder."""
    if USER_PYTHONPATH in env:
        return env[USER_PYTHONPATH]
    current = env.get("PYTHONPATH")
    if current is None:
        return None
    parts = [p for p in current.split(os.pathsep) if os.path.abspath(p or ".") != boot_dir]
    return os.pathsep.join(parts) if parts else None


def scrub_view(boot_dir):
    """The script's view of its environment made the user's own: doctor's variables out of os.environ, PYTHONPATH
    as the user had it, the boot folder out of sys.path. The C environment keeps them (see the module docstring)."""
    pythonpath = user_pythonpath(os.environ, boot_dir)
    for name in PROBE_VARIABLES:
        _view_delete(name)
    if pythonpath is None:
        _view_delete("PYTHONPATH")
    else:
        _view_set("PYTHONPATH", pythonpath)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != boot_dir]


def mark_parent():
    """Children of this process will know their parent runs the probe (C environment only)."""
    os.putenv(PARENT_MARK, str(os.getpid()))


def withdraw_c_environment(pythonpath):
    """Doctor's variables out of the C environment too: children started from now on run without the probe.
    `pythonpath` is the user's own (None: unset)."""
    for name in PROBE_VARIABLES:
        try:
            os.unsetenv(name)
        except (OSError, ValueError):
            pass
    _set_c_pythonpath(pythonpath)


def without_boot_entry(value, tokens):
    """PYTHONPATH as the command would have it without doctor (None: unset). doctor wrote the boot folder as one of three
    texts (`tokens`): `set` followed by a separator and the user's value, `unset` alone (no PYTHONPATH), `empty` alone
    (an empty one). A shell or make may have put entries before or after it; each text comes off with exactly what
    doctor added, so `extra:$PYTHONPATH` keeps its trailing separator where the plain run has one."""
    if value is None or not tokens:
        return value
    if value == tokens.get("unset"):
        return None
    parts = value.split(os.pathsep)
    for i, part in enumerate(parts):
        if part == tokens.get("set"):
            return os.pathsep.join(parts[:i] + parts[i + 1 :])
        if part in (tokens.get("unset"), tokens.get("empty")):
            return os.pathsep.join(parts[:i] + [""] + parts[i + 1 :])
    return value


def _set_c_pythonpath(value):
    try:
        if value is None:
            os.unsetenv("PYTHONPATH")
        else:
            os.putenv("PYTHONPATH", value)
    except (OSError, ValueError):
        pass


class RunEnvironment(object):
    """What a process of a doctor run leaves of doctor's one change to its environment (the boot folder on PYTHONPATH)."""

    def __init__(self, tokens, entry=None):
        self.entry = entry
        self.tokens = tokens or None
        self.boot_dir = os.path.abspath(tokens["set"]) if tokens and tokens.get("set") else None
        self.started = os.environ.get("PYTHONPATH")
        self.user = without_boot_entry(self.started, self.tokens)
        self.withdrawn = self.started == self.user  # nothing of doctor's to take out

    def scrub_view(self):
        """The script's view: PYTHONPATH without the boot folder, sys.path without it."""
        if not self.withdrawn:
            if self.user is None:
                _view_delete("PYTHONPATH")
            else:
                _view_set("PYTHONPATH", self.user)
        if self.boot_dir is not None:
            sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != self.boot_dir]

    def imported_torch(self):
        """The process imported torch: its children are the training's own (runs_probe)."""
        if self.entry is not None:
            _mark(self.entry, TORCH_MARK)

    def trains(self):
        """The process began to train: children it starts from now on, and a program it execs, run plainly."""
        if self.entry is not None:
            _mark(self.entry, TRAINED_MARK)
        self.withdraw()

    def withdraw(self):
        """The C environment too: children started from now on inherit the user's PYTHONPATH. A script that set
        PYTHONPATH itself meanwhile (os.environ writes through to the C environment) keeps its value."""
        if self.withdrawn:
            return
        self.withdrawn = True
        if os.environ.get("PYTHONPATH") == self.user:
            _set_c_pythonpath(self.user)


class DirectEnvironment(object):
    """The direct interface's: doctor's variables leave the C environment once the process trains."""

    def __init__(self, pythonpath):
        self.pythonpath = pythonpath

    def imported_torch(self):
        pass

    def trains(self):
        withdraw_c_environment(self.pythonpath)


def _marked(entry, mark, pids):
    folder, doctor = entry.get("registryDir"), entry.get("doctorPid")
    return any(os.path.exists(os.path.join(folder, mark % (doctor, pid))) for pid in pids)


def runs_probe(entry, ancestors, env, argv):
    """Whether this process of a doctor run runs the probe, from the marks of the processes above it (`ancestors`,
    nearest first; its own pid too, for an image that replaced a process by exec): none once one of them began to
    train (children started then run plainly, and so does a program it exec'd); else only a rank or a spawn child
    below a process that imported torch (the training's own children: a data preparation script, an evaluation
    subprocess, a compile worker run plainly); else the probe (the first process of the command that may train: a
    wrapper that never imported torch, such as `conda run`, is not the training)."""
    lineage = [os.getpid()] + list(ancestors)
    if _marked(entry, TRAINED_MARK, lineage):
        return False
    if _marked(entry, TORCH_MARK, lineage):
        return is_training_child(env, argv)
    return True


def _mark(entry, mark):
    """Leaves `mark` for this process in the registry folder (removed with the run's entry)."""
    try:
        path = os.path.join(entry["registryDir"], mark % (entry["doctorPid"], os.getpid()))
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600))
    except (OSError, KeyError, TypeError):
        pass


def is_training_child(env, argv):
    """A child of a probed process that runs the probe too: a rank (RANK and the like set) or a multiprocessing spawn
    child (a rank of `torch.multiprocessing.spawn`; a spawned DataLoader worker turns itself off at its first hook)."""
    return any(env.get(n) not in (None, "") for n in RANK_VARIABLES) or is_spawn_child(argv)


class Settings(object):
    """What doctor asked of the probe (see the package docstring for each variable)."""

    def __init__(self, env):
        self.socket_path = env.get("GPUWISE_SOCKET") or None
        self.run_dir = env.get("GPUWISE_RUN_DIR") or None
        self.rank = _first_int(env, ["RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"])
        self.local_rank = _first_int(env, ["LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"])
        self.world_size = _first_int(env, ["WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"])
        self.profile_at = _int_env(env, "GPUWISE_PROFILE_AT", 10, 1)
        # A step the user named (doctor --profile-at) is taken as it is; by default the window waits for steady state.
        self.profile_fixed = bool(env.get("GPUWISE_PROFILE_AT"))
        self.profile_steps = _int_env(env, "GPUWISE_PROFILE_STEPS", 5, 0)
        self.max_steps = _int_env(env, "GPUWISE_MAX_STEPS", 0, 0) or None
        self.memory_history_always = env.get("GPUWISE_MEMORY_HISTORY") == "1"
        # The allocation history's stacks: "python" by default, or "all" (Python and C++: a backward's allocations
        # named by their autograd node). torch symbolizes C++ frames when the snapshot is taken, holding the GIL: after
        # a ResNet-50 window on an H200 the snapshot took 1.5-2.2 s with them, 0.04-0.07 s without (a stall of the
        # training either way; bench/doctor/results/h200-2026-11-29-real-overhead-stacks.txt).
        self.memory_stacks = "all" if env.get("GPUWISE_MEMORY_STACKS") == "all" else "python"
        self.fault = env.get("GPUWISE_PROBE_FAULT") or None
        # `doctor --importable`: an `import gpuwise` that nothing else resolves gets the running probe (boot/attach.py).
        self.importable = env.get("GPUWISE_IMPORTABLE") == "1"
        self.stall_floor_s = _float_env(env, "GPUWISE_STALL_S", 30.0)
        self.stall_repeat_s = max(0.05, _float_env(env, "GPUWISE_STALL_REPEAT_S", 60.0))
        self.gpu_timing = env.get("GPUWISE_GPU_TIMING") != "0"
        self.time_after_s = _float_env(env, "GPUWISE_TIME_WINDOW_AFTER_S", 20.0)
        self.time_window_s = _float_env(env, "GPUWISE_TIME_WINDOW_S", 5.0)
        self.time_cpu = env.get("GPUWISE_TIME_WINDOW_CPU") == "1"
        # The steps recorded in full before the steady loop is sampled (steps.py); "all": every step, always.
        full = env.get("GPUWISE_FULL_STEPS")
        self.full_steps = None if full == "all" else _int_env(env, "GPUWISE_FULL_STEPS", 2048, 0)
        self.trial = env.get("GPUWISE_TRIAL_SETTINGS") or None  # `tune --plan`'s trial (trial.py); None in doctor's runs
        self.trial_stop = env.get("GPUWISE_TRIAL_STOP") or None  # a trial's steadiness stop (steady.py)
