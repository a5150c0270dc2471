import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { unpickle } from '../../src/memory/pickle.js';
import { type Analysis, analyze } from '../../src/memory/report.js';
import { type Snapshot, toSnapshot } from '../../src/memory/snapshot.js';

export const FIXTURES = fileURLToPath(new URL('../fixtures/memory/', import.meta.url));

export function fixturePath(name: string): string {
  return FIXTURES + name;
}

/** The pickle bytes of a fixture (decompressed when gzipped). */
export function fixtureBytes(name: string): Uint8Array {
  const raw = readFileSync(fixturePath(name));
  return raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw;
}

export function loadSnapshot(name: string): Snapshot {
  return toSnapshot(unpickle(fixtureBytes(name)));
}

export function analyzeFixture(name: string, batchSize?: number): Analysis {
  return analyze(loadSnapshot(name), { path: name, batchSize });
}

export function truth(name: string): Record<string, number | string> {
  return JSON.parse(readFileSync(fixturePath(name), 'utf8'));
}

export const MiB = 1 << 20;
