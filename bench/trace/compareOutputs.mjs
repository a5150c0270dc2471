#!/usr/bin/env node
// Regression check for the parser and model: `analyze --json` on every shipped trace must not change.
//   node bench/trace/compareOutputs.mjs --save DIR [extra traces...]    record the current outputs
//   node bench/trace/compareOutputs.mjs --check DIR [extra traces...]   compare against them (exit 1 on a difference)
// Inputs: each trace in examples/traces and examples/traces/scenarios alone, each multi-rank run
// (files named *.rankN.*, and directories) as one analysis, plus any extra files given (e.g. .bench/ traces).
// Run `npm run build` first: it runs dist/gpuwise.mjs, the whole pipeline.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(root, 'dist/gpuwise.mjs');
const [mode, dir, ...extra] = process.argv.slice(2);
if ((mode !== '--save' && mode !== '--check') || !dir) {
  console.error('usage: compareOutputs.mjs --save|--check DIR [extra traces...]');
  process.exit(2);
}

function cases() {
  const out = [];
  for (const sub of ['examples/traces', 'examples/traces/scenarios']) {
    const d = join(root, sub);
    const groups = new Map();
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        if (name !== 'scenarios') out.push({ id: `${sub}/${name}/`, args: [p] });
        continue;
      }
      if (!/\.trace\.json(\.gz)?$/.test(name)) continue;
      out.push({ id: `${sub}/${name}`, args: [p] });
      const m = /^(.*)\.rank\d+\./.exec(name);
      if (m) groups.set(m[1], [...(groups.get(m[1]) ?? []), p]);
    }
    for (const [g, files] of groups) if (files.length > 1) out.push({ id: `${sub}/${g}.rank*`, args: files });
  }
  for (const f of extra) out.push({ id: `extra/${basename(f)}`, args: [f] });
  return out;
}

/** The report without what legitimately varies (input paths). */
function analyze(args) {
  const text = execFileSync('node', [cli, 'analyze', '--json', '--no-progress', ...args], { maxBuffer: 1 << 28, encoding: 'utf8' });
  const report = JSON.parse(text);
  for (const input of report.inputs ?? []) input.path = basename(input.path);
  return report;
}

/** Paths where a and b differ; numbers that differ only in the last bits are listed separately. */
function diff(a, b, path, out) {
  if (typeof a === 'number' && typeof b === 'number') {
    if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return;
    const rel = Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b));
    out.push(`${path}: ${a} -> ${b}${rel < 1e-9 ? ' (rounding)' : ''}`);
    return;
  }
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    if (a !== b) out.push(`${path}: ${JSON.stringify(a)?.slice(0, 80)} -> ${JSON.stringify(b)?.slice(0, 80)}`);
    return;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) diff(a[k], b[k], `${path}.${k}`, out);
}

if (!existsSync(cli)) {
  console.error('compareOutputs: run `npm run build` first');
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
let failed = 0;
for (const c of cases()) {
  const file = join(dir, `${c.id.replace(/[^A-Za-z0-9_.-]+/g, '_')}.json`);
  const report = analyze(c.args);
  if (mode === '--save') {
    writeFileSync(file, JSON.stringify(report, null, 1));
    console.log(`saved   ${c.id}`);
    continue;
  }
  if (!existsSync(file)) {
    console.log(`MISSING ${c.id} (no saved output)`);
    failed++;
    continue;
  }
  const out = [];
  diff(JSON.parse(readFileSync(file, 'utf8')), report, '', out);
  if (out.length === 0) console.log(`same    ${c.id}`);
  else {
    failed++;
    console.log(`DIFFERS ${c.id}: ${out.length} values`);
    for (const line of out.slice(0, 12)) console.log(`    ${line}`);
  }
}
if (mode === '--check') console.log(failed === 0 ? 'all outputs identical' : `${failed} output(s) differ`);
process.exit(failed === 0 ? 0 : 1);
