/**
 * The Python a training command runs, and whether it has PyTorch (shell): doctor's probe reports only from a
 * Python that imports torch, so when it sent nothing, this says whether that is because the command's Python has
 * none, and which Python that is. Also the check behind the README example's fallback (doctor.ts).
 */
import { spawnSync } from 'node:child_process';
import { basename } from 'node:path';
import type { CommandPython } from '../doctor/reportTypes.js';
import { firstLineOf } from '../io/readLimited.js';
import { PYTHON_NAME } from '../run/attach.js';


/**
 * The Python `cmd` starts: its first word when that is a python (python, python3, /opt/env/bin/python3.11), or the
 * interpreter on the `#!` line of a script run directly (./train.py); null for anything else (torchrun, accelerate,
 * a shell script), whose Python doctor cannot name without running it.
 */
export function commandPythonOf(cmd: readonly string[]): string | null {
  const first = cmd[0];
  if (first === undefined) return null;
  if (PYTHON_NAME.test(basename(first))) return first;
  if (!first.includes('/')) return null;
  const line = firstLineOf(first);
  const m = line === null ? null : /^#!\s*(\S+)(.*)$/.exec(line);
  if (m === null) return null;
  // `#!/usr/bin/env python3` (or `env -S python3 -u`): the first word after env's own flags.
  const interpreter = basename(m[1] as string) === 'env' ? ((m[2] as string).trim().split(/\s+/).find((w) => !w.startsWith('-')) ?? '') : (m[1] as string);
  return PYTHON_NAME.test(basename(interpreter)) ? interpreter : null;
}

/**
 * Runs `python` to import torch: its sys.executable and torch's version, or the import's error (its last line).
 * null when that Python does not start at all (not installed, not executable).
 */
export function checkPythonTorch(python: string): CommandPython | null {
  const script = 'import sys\nprint(sys.executable, flush=True)\nimport torch\nprint(torch.__version__)';
  const r = spawnSync(python, ['-c', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  if (r.error !== undefined && (r.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT') return null;
  const [executable, torch] = (r.stdout ?? '').split('\n').map((l) => l.trim());
  if (r.status === 0 && torch) return { python, executable: executable || null, torch, importError: null };
  const importError = (r.stderr ?? '').trim().split('\n').pop()?.trim() || (r.error ? 'import torch timed out' : `import torch failed with status ${r.status}`);
  return { python, executable: executable || null, torch: null, importError };
}
