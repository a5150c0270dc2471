import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../doctor/helpers.js';
import { LONGEST_FIRST } from '../sequencer.js';

describe('the order the test files start in (test/sequencer.ts)', () => {
  it('names test files that exist, each once', () => {
    for (const f of LONGEST_FIRST) expect(existsSync(join(REPO, f)), f).toBe(true);
    expect(new Set(LONGEST_FIRST).size).toBe(LONGEST_FIRST.length);
  });
});
