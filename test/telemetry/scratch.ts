/** Temporary folders for tests, removed by cleanScratch() in each file's afterAll. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

export function makeScratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `gpuwise-${prefix}-`));
  made.push(dir);
  return dir;
}

export function cleanScratch(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
