/** Reads the real nvidia-smi fixtures copied into test/fixtures/telemetry. */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

const DIR = new URL('../fixtures/telemetry/', import.meta.url);

export function fixture(name: string): string {
  const bytes = readFileSync(new URL(name, DIR));
  return (name.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8');
}

export function fixturePath(name: string): string {
  return new URL(name, DIR).pathname;
}
