"""The `gpuwise` command of the pip package (its console entry point): replaces this Python process
with the standalone CLI shipped beside it, `gpuwise/_cli/gpuwise` (Node and the bundled CLI in one
executable, built by `npm run wheel`), so the command needs no Node installed.
"""
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "_cli", "gpuwise")
    if not os.access(exe, os.X_OK):
        sys.stderr.write(
            "gpuwise: %s is missing: this copy of the gpuwise package has no standalone CLI "
            "(in a source checkout, run `node dist/gpuwise.mjs`)\n" % exe
        )
        return 2
    env = dict(os.environ)
    # doctor's probe is this package: the CLI looks for gpuwise/ in GPUWISE_PROBE_DIR.
    env.setdefault("GPUWISE_PROBE_DIR", os.path.dirname(here))
    os.execve(exe, [exe] + sys.argv[1:], env)


if __name__ == "__main__":
    sys.exit(main())
