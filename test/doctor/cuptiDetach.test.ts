/**
 * When the profiler window's stop detaches CUPTI (issue 27). Left attached, CUPTI slowed every later step of a compiled
 * ResNet-50 on an H200 by 25-35%; detaching it races with a profiler of the script's that takes over from the window
 * (it then recorded no GPU event on an H100), and torch leaves it attached where inductor captures CUDA graphs. The
 * decision is checked here with the probe's own code; its effect on a GPU is the equivalence suite's (cuda_graphs,
 * cuda_profiler) and examples/levers/runs/h200/compiled_cnn_detached.
 */
import { describe, expect, it } from 'vitest';
import { PROBE_ROOT, PYTHON, SKIP_PYTHON, pyEnv, runProcess } from './helpers.js';

const DECIDE = `
import os, sys, types
from gpuwise.probe.window import WindowMixin
out = []
for cuda, why, env in [("13.0", "steps", None), ("12.6", "time", None), ("12.4", "steps", None), (None, "steps", None),
                       ("13.0", "user-profiler", None), ("13.0", "exit", None), ("13.0", "error", None),
                       ("13.0", "steps", "0"), ("13.0", "steps", "1")]:
    os.environ.pop("TEARDOWN_CUPTI", None)
    if env is not None:
        os.environ["TEARDOWN_CUPTI"] = env
    probe = types.SimpleNamespace(torch=types.SimpleNamespace(version=types.SimpleNamespace(cuda=cuda)))
    out.append("%s %s %s: %s" % (cuda, why, env, WindowMixin._cupti_detach_wanted(probe, why)))
print("\\n".join(out))
`;

describe.skipIf(SKIP_PYTHON)("the window's stop and CUPTI", () => {
  it('detaches after a step or time window on CUDA 12.6 and later, never over a profiler of the script or a set TEARDOWN_CUPTI', async () => {
    const r = await runProcess(PYTHON, ['-c', DECIDE], pyEnv({ PYTHONPATH: PROBE_ROOT }));
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual([
      '13.0 steps None: True',
      '12.6 time None: True',
      '12.4 steps None: False',
      'None steps None: False',
      '13.0 user-profiler None: False',
      '13.0 exit None: False',
      '13.0 error None: False',
      '13.0 steps 0: False',
      '13.0 steps 1: False', // the script's own TEARDOWN_CUPTI=1 detaches it without the probe
    ]);
  });
});
