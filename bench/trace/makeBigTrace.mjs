#!/usr/bin/env node
// Makes a large trace by repeating the profiled steps of a real one, shifting
// times and ids so every copy is distinct: `node makeBigTrace.mjs SRC.json[.gz] OUT.json TARGET_MB`.
import { createWriteStream, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

const [src, out, targetMb] = process.argv.slice(2);
if (!src || !out || !targetMb) {
  console.error('usage: makeBigTrace.mjs SRC OUT TARGET_MB');
  process.exit(2);
}
let raw = readFileSync(src);
if (raw[0] === 0x1f && raw[1] === 0x8b) raw = gunzipSync(raw);
const trace = JSON.parse(raw.toString('utf8'));
const events = trace.traceEvents;
let lo = Infinity;
let hi = -Infinity;
for (const e of events) {
  if (typeof e.ts !== 'number' || e.ph === 'M') continue;
  lo = Math.min(lo, e.ts);
  hi = Math.max(hi, e.ts + (e.dur ?? 0));
}
const span = Math.ceil(hi - lo + 1000);
const target = Number(targetMb) * 1e6;
const ws = createWriteStream(out);
const write = (s) => (ws.write(s) ? Promise.resolve() : new Promise((r) => ws.once('drain', r)));
const { traceEvents: _, ...meta } = trace;
const head = JSON.stringify(meta, null, 1);
await write(`${head.slice(0, -2)},\n"traceEvents": [\n`);
let written = head.length;
let first = true;
let stepNo = 0;
for (let rep = 0; written < target; rep++) {
  const shift = rep * span;
  const idShift = rep * 10_000_000;
  for (const e of events) {
    if (rep > 0 && e.ph === 'M') continue;
    const c = { ...e };
    if (typeof c.ts === 'number') c.ts = Number((c.ts + shift).toFixed(3));
    if (c.args) {
      c.args = { ...c.args };
      for (const k of ['correlation', 'External id']) if (typeof c.args[k] === 'number') c.args[k] += idShift;
    }
    if (typeof c.id === 'number') c.id += idShift;
    if (typeof c.name === 'string' && c.name.startsWith('ProfilerStep#')) c.name = `ProfilerStep#${stepNo++}`;
    const line = `${first ? '' : ',\n'}${JSON.stringify(c)}`;
    first = false;
    written += line.length;
    await write(line);
  }
}
await write('\n]}\n');
ws.end();
console.log(`${out}: ${(written / 1e6).toFixed(0)} MB`);
