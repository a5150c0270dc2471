"""conda run -n ENV CMD...: activate ENV, run CMD with its output captured, print it, exit with its status."""
import os
import subprocess
import sys

args = sys.argv[1:]
if args[:1] != ["-n"] or len(args) < 3:
    sys.exit("usage: condarun.py -n ENV CMD...")
name, cmd = args[1], args[2:]
prefix = os.path.join(os.getcwd(), "envs", name)
env = dict(os.environ, CONDA_PREFIX=prefix, CONDA_DEFAULT_ENV=name, CONDA_SHLVL="1")
env["PATH"] = os.path.join(prefix, "bin") + os.pathsep + env["PATH"]
r = subprocess.run(cmd, env=env, capture_output=True)
sys.stdout.buffer.write(r.stdout)
sys.stderr.buffer.write(r.stderr)
sys.exit(r.returncode)
