/**
 * What the repository tracks: no build output of Python (`__pycache__`, `.pyc`), which .gitignore leaves out but a
 * `git add -f` or an older commit can still carry (issue 47 item 7: examples/doctor/__pycache__ was committed).
 * Skipped where the tree is not a git checkout (an unpacked package).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../doctor/helpers.js';

const git = (args: string[]) => spawnSync('git', args, { cwd: REPO, encoding: 'utf8' });
const IS_CHECKOUT = existsSync(join(REPO, '.git')) && git(['rev-parse', '--is-inside-work-tree']).stdout.trim() === 'true';

describe.skipIf(!IS_CHECKOUT)('tracked files', () => {
  it('no __pycache__ directory or compiled Python file is tracked, and .gitignore leaves them out', () => {
    const r = git(['ls-files', '-z']);
    expect(r.status).toBe(0);
    const tracked = r.stdout.split('\0').filter((f) => f.length > 0);
    expect(tracked.length).toBeGreaterThan(100);
    expect(tracked.filter((f) => /(^|\/)__pycache__\/|\.py[co]$/.test(f))).toEqual([]);
    // A new one is ignored: `git add` would not pick it up.
    const ignored = git(['check-ignore', '--no-index', 'examples/doctor/__pycache__/x.cpython-311.pyc']);
    expect(ignored.stdout.trim()).toBe('examples/doctor/__pycache__/x.cpython-311.pyc');
  });
});
