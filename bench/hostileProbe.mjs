#!/usr/bin/env node
// A repeat of the issue-20 probe's hostile inputs: each one run as its own process, with its wall time, peak RSS
// (VmHWM) and exit status. Usage: npm run build && node bench/hostileProbe.mjs [BUNDLE] [--all]
// Without --all the inputs that made earlier versions read or inflate gigabytes are run only with a bundle that
// bounds them (pass --all to run them with an old bundle anyway, on a machine that can afford it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';

const root = new URL('../', import.meta.url).pathname;
const bundle = process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : join(root, 'dist', 'gpuwise.mjs');
const all = process.argv.includes('--all');
const dir = mkdtempSync(join(tmpdir(), 'gpuwise-probe-'));
const put = (name, bytes) => {
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return p;
};

const long4 = Buffer.alloc(2 + 5 + (1 << 20) + 1, 0x11);
long4.set([0x80, 0x04, 0x8b], 0);
long4.writeInt32LE(1 << 20, 3);
long4[long4.length - 1] = 0x2e;
const tuples = [0x80, 0x04, 0x7d, 0x29];
for (let i = 0; i < 100; i++) tuples.push(0x32, 0x86);
tuples.push(0x4e, 0x73, 0x2e);
const bigCsv = put('big.csv', 'index, name\n');
truncateSync(bigCsv, 600e6);
const xml = gunzipSync(readFileSync(join(root, 'test/fixtures/telemetry/nvidia-smi-q.idle.xml.gz')))
  .toString()
  .replace('<product_name>', '<product_name>&#x110000;');
const htmlDir = join(dir, 'html-dir');
mkdirSync(htmlDir);
const trace = join(root, 'examples/traces/resnet_starved.trace.json.gz');
function gapTrace() {
  const text = gunzipSync(readFileSync(join(root, 'examples/traces/gpt2_amp.trace.json.gz')));
  const at = text.indexOf('},{', text.length >> 1) + 2;
  return put('gap.trace.json.gz', gzipSync(Buffer.concat([text.subarray(0, at), Buffer.alloc(60 << 20, 0x20), text.subarray(at)])));
}

const cases = [
  [
    'pickle: 200 MB of NONE (gzipped)',
    [
      'memory',
      put(
        'none.pickle.gz',
        gzipSync(Buffer.concat([Buffer.from([0x80, 4]), Buffer.alloc(200 << 20, 0x4e), Buffer.from('.')]), { level: 1 }),
      ),
    ],
    false,
  ],
  ['pickle: 1 MB LONG4 integer', ['memory', put('long4.pickle', long4)], false],
  ['pickle: 261 bytes of shared tuples', ['memory', put('tuples.pickle', Buffer.from(tuples))], false],
  [
    'memory: gzip bomb (1 GB of zeros after a pickle header)',
    ['memory', put('bomb.pickle.gz', gzipSync(Buffer.concat([Buffer.from([0x80, 4]), Buffer.alloc(1 << 30)]), { level: 9 }))],
    false,
  ],
  ['smi --from: gzip bomb', ['smi', '--from', put('bomb.csv.gz', gzipSync(Buffer.alloc(1 << 30, 0x20), { level: 9 }))], false],
  ['smi --from: 600 MB CSV', ['smi', '--from', bigCsv], true],
  ['smi --from: &#x110000; in XML', ['smi', '--from', put('bad.xml', xml)], true],
  ['smi --from /dev/zero', ['smi', '--from', '/dev/zero'], false],
  ['plan --model /dev/zero', ['plan', '--model', '/dev/zero'], false],
  ['runs show /dev/zero', ['runs', 'show', '/dev/zero'], false],
  ['compare /dev/zero /dev/zero', ['compare', '/dev/zero', '/dev/zero'], false],
  ['plan --search --gpus 1e12', ['plan', '--model', join(root, 'test/fixtures/planner/configs/gpt2'), '--search', '--gpus', '1e12'], false],
  ['analyze --html into a directory', ['analyze', trace, '--html', htmlDir], true],
  ['analyze: 60 MB whitespace gap (gzip), GPUWISE_THREADS=3', ['analyze', gapTrace(), '--json'], true, { GPUWISE_THREADS: '3' }],
];

const boundedBundle =
  readFileSync(bundle, 'utf8').includes('MAX_STACK_SLOTS') || readFileSync(bundle, 'utf8').includes('more than the planner searches');
console.log(`bundle: ${bundle}`);
for (const [name, args, safe, env = {}] of cases) {
  if (!safe && !boundedBundle && !all) {
    console.log(`${name.padEnd(58)} skipped (unbounded in this bundle; --all runs it)`);
    continue;
  }
  const rss = join(dir, 'rss');
  rmSync(rss, { force: true });
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', join(root, 'test/helpers/rssOnExit.mjs'), bundle, ...args], {
    env: { ...process.env, ...env, GPUWISE_TEST_RSS_FILE: rss, GPUWISE_STORE: join(dir, 'store') },
    encoding: 'utf8',
    timeout: 300_000,
    maxBuffer: 1 << 28,
  });
  const s = ((performance.now() - t0) / 1000).toFixed(2);
  let peak = '?';
  try {
    peak = String(Math.round(Number(readFileSync(rss, 'utf8')) / 2 ** 20));
  } catch {}
  const line = (r.stderr ?? '').trim().split('\n')[0].slice(0, 90);
  console.log(`${name.padEnd(58)} ${s.padStart(7)} s ${peak.padStart(6)} MiB  exit ${r.status ?? r.signal}  ${line}`);
}
rmSync(dir, { recursive: true, force: true });
