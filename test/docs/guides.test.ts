/**
 * The user guides stay readable (issue 47 item 8): each command's page in docs/ is under 20 KB and says what the
 * command answers, how to read its report and shows a real one; the model's reference and the validation records
 * live apart, in docs/reference/ and docs/validation/, and every page a guide or the README links to exists.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/updateDocExcerpts.mjs';

const GUIDES = ['doctor', 'analyze', 'memory', 'planner', 'tune', 'telemetry', 'serve'];
const LIMIT = 20_000;

describe('the user guides', () => {
  for (const g of GUIDES) {
    const file = join('docs', `${g}.md`);
    it(`${file} is under 20 KB and says what the command answers`, () => {
      const size = statSync(join(ROOT, file)).size;
      expect(size, `${file} is ${size} bytes: move the model's reference to docs/reference/, measurements to docs/validation/`).toBeLessThan(LIMIT);
      expect(readFileSync(join(ROOT, file), 'utf8')).toMatch(/\*\*What it answers\*\*/);
    });
  }

  it('every user guide of a command with a report says how to read it', () => {
    for (const g of GUIDES.filter((x) => x !== 'serve'))
      expect(readFileSync(join(ROOT, 'docs', `${g}.md`), 'utf8'), g).toMatch(/^## Reading (the report|`smi`)/m);
  });

  it('every page in docs/ is under 20 KB, or is a reference or validation record', () => {
    for (const f of readdirSync(join(ROOT, 'docs')).filter((x) => x.endsWith('.md')))
      expect(statSync(join(ROOT, 'docs', f)).size, f).toBeLessThan(LIMIT);
  });

  it('every relative link of the README, the guides, the reference and the validation pages names a file that exists', () => {
    const pages = ['README.md', ...['docs', 'docs/reference', 'docs/validation'].flatMap((d) => readdirSync(join(ROOT, d)).filter((f) => f.endsWith('.md')).map((f) => join(d, f)))];
    for (const page of pages)
      for (const [, target] of readFileSync(join(ROOT, page), 'utf8').matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        expect(existsSync(join(ROOT, dirname(page), target!)), `${page} links to ${target}`).toBe(true);
      }
  });
});
