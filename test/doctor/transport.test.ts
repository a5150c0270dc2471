/**
 * The probe's record sink (python/gpuwise/transport.py) against a script that closes every descriptor
 * (os.closerange, as daemonizing code does) and opens its own under the same numbers: the sink must neither write
 * its records into the script's file nor close it, and must keep the records in its fallback file.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROBE_ROOT, PYTHON, REPO, SKIP_PYTHON } from './helpers.js';

const SCRIPT = join(REPO, 'test', 'fixtures', 'doctor', 'transport', 'reused_fd.py');

describe.skipIf(SKIP_PYTHON)('the probe sink when the script closes its descriptors', () => {
  it("never writes into nor closes a descriptor that became the script's; the records go on in the fallback file", () => {
    const r = spawnSync(PYTHON, ['-S', SCRIPT, PROBE_ROOT], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out.userFileAfterSocket).toBe("the script's bytes");
    expect(out.userFileAfterFile).toBe("the script's bytes");
    expect(out.collectorGot).toBe('{"n":1}\n');
    expect(out.fallbackFile).toBe('{"n":2}\n{"n":3}\n');
    expect(out.unwritableMode).toBe('none');
  });
});
