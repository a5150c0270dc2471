/**
 * How doctor reaches the command's processes (run/attach.ts, python/gpuwise/probe/config.py): the boot folder written
 * into PYTHONPATH comes off exactly, whatever a shell did around it, and a process that used torch without the probe
 * is named with the reason that holds for it.
 */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CommandProcess,
  bootTokens,
  hasBootEntry,
  interpreterFlags,
  parentAndStart,
  unprobedProcesses,
  unprobedReason,
  withBootEntry,
} from '../../src/run/attach.js';
import { PROBE_ROOT, SKIP_PYTHON } from '../doctor/helpers.js';

const BOOT = '/opt/gpuwise/python/gpuwise/boot';
const tokens = bootTokens(BOOT);

/** A path entry as users write them: words, empty entries, spaces; never the boot folder itself. */
const entry = fc.oneof(fc.constant(''), fc.stringMatching(/^\/[a-z ._-]{0,8}$/), fc.stringMatching(/^[a-z.]{1,6}$/));
const userValue = fc.oneof(fc.constant(undefined), fc.constant(''), fc.array(entry, { minLength: 1, maxLength: 4 }).map((a) => a.join(':')));
/** What a shell does to PYTHONPATH on the way: nothing, `X:$PYTHONPATH`, `$PYTHONPATH:X`, or both. */
const edit = fc.record({ before: fc.option(entry, { nil: undefined }), after: fc.option(entry, { nil: undefined }) });
const applyEdit = (v: string | undefined, e: { before?: string; after?: string }): string | undefined => {
  if (e.before === undefined && e.after === undefined) return v;
  return `${e.before !== undefined ? `${e.before}:` : ''}${v ?? ''}${e.after !== undefined ? `:${e.after}` : ''}`;
};

describe('the boot folder in PYTHONPATH', () => {
  it('is written as one of three texts, each found again', () => {
    expect(withBootEntry(undefined, tokens)).toBe(`${BOOT}/.`);
    expect(withBootEntry('', tokens)).toBe(`${BOOT}/./`);
    expect(withBootEntry('/a:/b', tokens)).toBe(`${BOOT}:/a:/b`);
    for (const v of [undefined, '', '/a:/b']) expect(hasBootEntry(withBootEntry(v, tokens), tokens)).toBe(true);
    expect(hasBootEntry('/a:/b', tokens)).toBe(false);
  });

  it.skipIf(SKIP_PYTHON)(
    "comes off exactly in the probe (config.without_boot_entry), whatever a shell put before or after it: the script and its children see the plain run's value",
    () => {
      const cases = fc.sample(fc.tuple(userValue, edit), { numRuns: 400, seed: 43 }).map(([user, e]) => ({
        underDoctor: applyEdit(withBootEntry(user, tokens), e) ?? null,
        plain: applyEdit(user, e) ?? null,
      }));
      const script = [
        'import json, sys',
        `sys.path.insert(0, ${JSON.stringify(PROBE_ROOT)})`,
        'from gpuwise.probe.config import without_boot_entry',
        'tokens, cases = json.load(sys.stdin)',
        'print(json.dumps([without_boot_entry(c["underDoctor"], tokens) for c in cases]))',
      ].join('\n');
      const r = spawnSync('/usr/bin/python3', ['-c', script], { input: JSON.stringify([tokens, cases]), encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const back = JSON.parse(r.stdout) as (string | null)[];
      const wrong = cases.filter((c, i) => back[i] !== c.plain).map((c, i) => ({ ...c, back: back[i] }));
      expect(wrong).toEqual([]);
    },
  );
});

describe('/proc/PID/stat', () => {
  it('gives the parent and the start time after a command name with spaces and parentheses', () => {
    const rest = 'S 41 43 43 0 -1 4194560 1 0 0 0 2 1 0 0 20 0 1 0 987654 1 2';
    expect(parentAndStart(`12 (a) b (c)) ${rest}`)).toEqual({ ppid: 41, startTicks: 987654 });
    expect(parentAndStart('garbage')).toBeNull();
  });
});

const proc = (p: Partial<CommandProcess> & { pid: number }): CommandProcess => ({
  ppid: 1,
  argv: ['python3', 'train.py'],
  exe: '/usr/bin/python3.11',
  torch: true,
  probed: false,
  pythonpath: undefined,
  siteHook: false,
  ...p,
});

describe('a process that used torch without the probe', () => {
  it('reads the interpreter options before the script, not the script arguments', () => {
    expect([...interpreterFlags(['python3', '-X', 'dev', '-IS', 'train.py', '-E'])].sort()).toEqual(['I', 'S']);
    expect([...interpreterFlags(['python3', '-m', 'torch.distributed.run', '-E'])]).toEqual([]);
    expect([...interpreterFlags(['python3', '-Wignore', '-E', 'x.py'])]).toEqual(['E']);
  });

  it('is told why, by what the command did', () => {
    const path = (p: Partial<CommandProcess>) => unprobedReason(proc({ pid: 9, ...p }), 'path', tokens);
    expect(path({ pythonpath: 'pkg' })).toMatch(/PYTHONPATH was replaced \(PYTHONPATH=pkg\)/);
    expect(path({ pythonpath: undefined })).toMatch(/PYTHONPATH was removed/);
    expect(path({ argv: ['python3', '-I', 'train.py'], pythonpath: withBootEntry(undefined, tokens) })).toMatch(/python -I ignores PYTHONPATH/);
    expect(path({ argv: ['python3', '-E', 'train.py'], pythonpath: 'x' })).toMatch(/python -E ignores PYTHONPATH/);
    expect(path({ argv: ['python3', '-S', 'train.py'] })).toMatch(/-S skips the site module/);
    expect(path({ pythonpath: null })).toMatch(/environment could not be read/);
    expect(unprobedReason(proc({ pid: 9, siteHook: false }), 'site', null)).toMatch(/has no gpuwise site hook/);
  });

  it('is not a DataLoader worker or compile worker under a probed process, nor a launcher', () => {
    const all = [
      proc({ pid: 10, argv: ['torchrun', '--nproc_per_node', '2', 'train.py'] }),
      proc({ pid: 11, ppid: 10, probed: true }),
      proc({ pid: 12, ppid: 11 }), // its DataLoader worker
      proc({ pid: 13, ppid: 12 }), // below that
      proc({ pid: 14, ppid: 10, pythonpath: 'pkg' }), // a rank the probe did not reach
      proc({ pid: 15, ppid: 10, torch: false, pythonpath: 'pkg' }), // a helper that never imported torch
    ];
    expect(unprobedProcesses(all, 'path', tokens).map((u) => u.pid)).toEqual([14]);
  });
});
