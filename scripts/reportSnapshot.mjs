#!/usr/bin/env node
// Every shipped trace, run directory and memory snapshot through the built CLI's --json, written to one folder, so a
// change that should not change behaviour (a refactor) can be checked: `node scripts/reportSnapshot.mjs OUT` before
// and after, then `node scripts/reportSnapshot.mjs --compare A B`. Timings of the tool itself are dropped, and the
// checkout's path, so two worktrees compare.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = new URL('..', import.meta.url).pathname;
const CLI = join(REPO, 'dist', 'gpuwise.mjs');
/** Keys whose values are the tool's own timing or clock, not what it concluded. */
const VOLATILE = new Set(['generatedAt', 'elapsedMs', 'parseMs', 'wallMs', 'analysisMs', 'createdAt', 'durationMs']);

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === '__pycache__') continue;
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

function jobs() {
  const files = walk(join(REPO, 'examples'));
  const runDirs = [...new Set(files.filter((f) => f.endsWith('/probe.jsonl')).map((f) => f.slice(0, -'/probe.jsonl'.length)))];
  const inRunDir = (f) => runDirs.some((d) => f.startsWith(`${d}/`));
  const traces = files.filter((f) => /\.json(\.gz)?$/.test(f) && /trace|scenarios|pt\.trace/.test(relative(REPO, f)) && !inRunDir(f) && !/(report|\.meta)\.json$/.test(f));
  const snapshots = files.filter((f) => f.endsWith('.pickle') && !inRunDir(f));
  return [
    ...runDirs.map((d) => ['doctor', '--from', d, '--json']),
    ...traces.map((t) => ['analyze', t, '--json']),
    ...snapshots.map((s) => ['memory', s, '--json']),
  ];
}

function scrub(v) {
  if (Array.isArray(v)) return v.map(scrub);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k]) => !VOLATILE.has(k)).map(([k, x]) => [k, scrub(x)]));
  return typeof v === 'string' ? v.replaceAll(REPO, '') : v;
}

async function snapshot(out) {
  mkdirSync(out, { recursive: true });
  const all = jobs();
  let next = 0;
  const worker = async () => {
    while (next < all.length) {
      const args = all[next++];
      const name = `${args[0]}__${relative(REPO, args[args[0] === 'doctor' ? 2 : 1]).replaceAll('/', '__')}.json`;
      let text;
      try {
        const { stdout } = await run(process.execPath, [CLI, ...args], { maxBuffer: 1 << 28, cwd: REPO });
        text = JSON.stringify(scrub(JSON.parse(stdout)), null, 1);
      } catch (e) {
        text = JSON.stringify({ exit: e.code ?? null, stderr: String(e.stderr ?? e.message).trim() }, null, 1);
      }
      writeFileSync(join(out, name), `${text}\n`);
    }
  };
  await Promise.all([worker(), worker()]);
  console.log(`${all.length} outputs in ${out}`);
}

function compare(a, b) {
  const names = new Set([...readdirSync(a), ...readdirSync(b)]);
  const differ = [...names].sort().filter((n) => !existsSync(join(a, n)) || !existsSync(join(b, n)) || readFileSync(join(a, n), 'utf8') !== readFileSync(join(b, n), 'utf8'));
  for (const n of differ) console.log(`differs: ${n}`);
  console.log(`${names.size - differ.length} of ${names.size} outputs identical`);
  return differ.length === 0 ? 0 : 1;
}

const argv = process.argv.slice(2);
if (argv[0] === '--compare' && argv.length === 3) process.exitCode = compare(argv[1], argv[2]);
else if (argv.length === 1) await snapshot(argv[0]);
else {
  console.error('usage: node scripts/reportSnapshot.mjs OUT | --compare A B');
  process.exitCode = 2;
}
