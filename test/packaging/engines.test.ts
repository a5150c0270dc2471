/**
 * Every package the lock file installs runs on the Node that runs the tests (CI's Node 20, package.json's floor):
 * what `npm install` checks before it warns EBADENGINE. puppeteer-core 25 needed Node 22.12 (issue 24).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../doctor/helpers.js';

type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a = 0, b = 0, c = 0] = v.replace(/^v/, '').split('.').map((x) => (/^\d+$/.test(x) ? Number(x) : 0));
  return [a, b, c];
};
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** Whether `version` satisfies an npm range of the forms engines use (>=, >, <=, <, ^, ~, exact, x, ||, spaces). */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split('||').some((part) =>
    part
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1') // `>= 16` is `>=16`
      .trim()
      .split(/\s+/)
      .filter((c) => c !== '' && c !== '*')
      .every((c) => {
        const m = /^(>=|<=|>|<|\^|~|=)?\s*v?([\d.x*]+)$/.exec(c);
        if (m === null) return false;
        const [op = '', text = ''] = [m[1], m[2]];
        const w = parse(text);
        const fixed = text.split('.').filter((x) => /^\d+$/.test(x)).length;
        const d = cmp(v, w);
        if (op === '>=') return d >= 0;
        if (op === '>') return d > 0;
        if (op === '<=') return d <= 0;
        if (op === '<') return d < 0;
        if (op === '^') return d >= 0 && (w[0] > 0 ? v[0] === w[0] : w[1] > 0 ? v[0] === 0 && v[1] === w[1] : v[0] === 0 && v[1] === 0 && v[2] === w[2]);
        if (op === '~') return d >= 0 && v[0] === w[0] && (fixed < 2 || v[1] === w[1]);
        return v.slice(0, fixed).every((x, i) => x === w[i]);
      }),
  );
}

describe('engines', () => {
  it('the range check reads the forms in the lock file', () => {
    expect(satisfies('20.20.2', '>=18')).toBe(true);
    expect(satisfies('20.20.2', '>=22.12.0')).toBe(false);
    expect(satisfies('20.20.2', '^20.19.0 || >=22.12.0')).toBe(true);
    expect(satisfies('20.18.0', '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfies('20.20.2', '^18.0.0 || ^20.0.0 || >=22.0.0')).toBe(true);
    expect(satisfies('20.20.2', '>= 14')).toBe(true);
    expect(satisfies('20.20.2', '20.x')).toBe(true);
    expect(satisfies('20.20.2', '~20.19.0')).toBe(false);
  });

  it('every package of package-lock.json admits this Node, as package.json promises', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(satisfies(process.versions.node, pkg.engines.node)).toBe(true);
    const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
    };
    const refusing = Object.entries(lock.packages)
      .map(([path, p]) => ({ path, version: p.version, node: Array.isArray(p.engines) ? undefined : p.engines?.node }))
      .filter((p) => p.node !== undefined && !satisfies(process.versions.node, p.node))
      .map((p) => `${p.path.replace(/^node_modules\//, '')}@${p.version} needs node ${p.node}`);
    expect(refusing).toEqual([]);
  });
});
