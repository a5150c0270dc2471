/** The Python a training command runs (src/cli/commandPython.ts): by its name, or a script's #! line. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPythonTorch, commandPythonOf } from '../../src/cli/commandPython.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-python-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('commandPythonOf', () => {
  it('a python named first, or the interpreter of a script run directly; nothing for launchers and shells', () => {
    expect(commandPythonOf(['python3', 'train.py'])).toBe('python3');
    expect(commandPythonOf(['/opt/env/bin/python3.11', '-m', 'trainer'])).toBe('/opt/env/bin/python3.11');
    const script = (name: string, firstLine: string) => {
      const path = join(tmp, name);
      writeFileSync(path, `${firstLine}\nimport torch\n`);
      chmodSync(path, 0o755);
      return path;
    };
    expect(commandPythonOf([script('a.py', '#!/usr/bin/env python3')])).toBe('python3');
    expect(commandPythonOf([script('b.py', '#!/usr/bin/env -S python3 -u')])).toBe('python3');
    expect(commandPythonOf([script('c.py', '#! /opt/conda/bin/python')])).toBe('/opt/conda/bin/python');
    expect(commandPythonOf([script('d.sh', '#!/bin/bash')])).toBeNull();
    expect(commandPythonOf(['torchrun', '--nproc_per_node', '2', 'train.py'])).toBeNull();
    expect(commandPythonOf(['bash', 'run.sh'])).toBeNull();
    expect(commandPythonOf([join(tmp, 'missing.py')])).toBeNull();
    expect(commandPythonOf([])).toBeNull();
  });

  it('checkPythonTorch: null for a Python that does not exist; the import error for one without torch', () => {
    expect(checkPythonTorch(join(tmp, 'no-such-python'))).toBeNull();
    const fake = join(tmp, 'python3');
    writeFileSync(fake, `#!/bin/sh\necho ${join(tmp, 'python3')}\necho "ModuleNotFoundError: No module named 'torch'" >&2\nexit 1\n`);
    chmodSync(fake, 0o755);
    expect(checkPythonTorch(fake)).toEqual({ python: fake, executable: fake, torch: null, importError: "ModuleNotFoundError: No module named 'torch'" });
  });
});
