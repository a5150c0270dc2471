#!/usr/bin/env node
// GPU check of `gpuwise serve` and the notebook (no GPU on the development machines): on a CUDA machine,
//   npm run build && node bench/serve/gpu-check.mjs OUTDIR
// (1) serve samples the real GPUs for 5 s: OUTDIR/live-status.json, OUTDIR/live-history.json;
// (2) examples/notebook/gpuwise.ipynb executed by a real kernel on CUDA (needs nbclient and ipykernel for the python
//     that has torch: PYTHON=..., default python3): OUTDIR/gpuwise-cuda.ipynb, its outputs in OUTDIR/notebook.txt;
// (3) `gpuwise runs` of the history the notebook saved. Everything is summarised on stdout.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
const out = process.argv[2];
if (!out) {
  console.error('usage: node bench/serve/gpu-check.mjs OUTDIR');
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const store = join(out, 'store');
const cli = join(ROOT, 'dist/gpuwise.mjs');
const py = process.env.PYTHON ?? 'python3';

// (1) live GPUs
const serve = spawn(process.execPath, [cli, 'serve', '--port', '0', '--store', store], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((ok, no) => {
  let buf = '';
  serve.stdout.on('data', (c) => {
    buf += c;
    const m = /gpuwise serve: (http:\/\/\S+\/)\?token=/.exec(buf);
    if (m) ok(m[1]);
  });
  serve.on('exit', (code) => no(new Error(`serve exited ${code}`)));
});
await new Promise((r) => setTimeout(r, 5000));
const status = await fetch(`${url}api/live/status`).then((r) => r.json());
const history = await fetch(`${url}api/live/history?seconds=60&points=1000`).then((r) => r.json());
writeFileSync(join(out, 'live-status.json'), JSON.stringify(status, null, 2));
writeFileSync(join(out, 'live-history.json'), JSON.stringify(history));
serve.kill('SIGTERM');
console.log(`live: source ${status.source}, problem ${status.problem}, ${status.samples} samples in 5 s, GPUs: ${(status.latest?.gpus ?? []).map((g) => `${g.index} ${g.name} ${g.utilPercent}% ${Math.round((g.memUsedBytes ?? 0) / 2 ** 30)} GiB`).join('; ')}`);
console.log(`live: ${status.latest?.processes.length ?? 0} processes; history ${history.tS.length} points`);

// (2) the notebook on CUDA
const nb = join(out, 'gpuwise-cuda.ipynb');
const r = spawnSync(py, [join(ROOT, 'test/serve/run_notebook.py'), join(ROOT, 'examples/notebook/gpuwise.ipynb'), nb, '900'], {
  cwd: out,
  env: { ...process.env, PYTHONPATH: join(ROOT, 'python'), GPUWISE_CLI: `${process.execPath} ${cli}`, GPUWISE_STORE: store, GPUWISE_NOTEBOOK_PROXY: '0' },
  encoding: 'utf8',
});
if (r.status !== 0) {
  console.log(`notebook: did not run (${py}: ${r.stderr.trim().split('\n').at(-1)}); needs nbclient and ipykernel beside torch`);
} else {
  const lines = [];
  for (const c of JSON.parse(readFileSync(nb, 'utf8')).cells.filter((x) => x.cell_type === 'code')) {
    lines.push(`---- ${[c.source].flat().join('').split('\n')[0]}`);
    for (const o of c.outputs) {
      if (o.output_type === 'error') lines.push(`ERROR ${o.ename}: ${o.evalue}`);
      else if (o.output_type === 'stream') lines.push([o.text].flat().join(''));
      else if (o.data?.['text/plain']) lines.push([o.data['text/plain']].flat().join(''));
    }
  }
  writeFileSync(join(out, 'notebook.txt'), lines.join('\n'));
  console.log(lines.join('\n'));
}

// (3) the history
console.log(spawnSync(process.execPath, [cli, 'runs', '--store', store], { encoding: 'utf8' }).stdout);
