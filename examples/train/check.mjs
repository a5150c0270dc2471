#!/usr/bin/env node
// The examples' GPU check: runs `gpuwise doctor` on each example twice (the problem, then --fixed),
// checks that the problem's finding is reported and gone after the fix, and compares the speed-up
// doctor predicted (the finding's estimated gain) with the one measured.
//
//   node examples/train/check.mjs OUTDIR [NAME...]     (from the repository root, on a GPU machine)
//
// Needs the bundled CLI (dist/gpuwise.mjs; GPUWISE_CLI overrides), python3 with torch + torchvision,
// 2 GPUs for dataparallel and accum_no_sync (skipped with fewer). Writes OUTDIR/summary.json.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const EXAMPLES = [
  { name: 'starved_dataloader', expect: 'dataloader-bound', gpus: 1, launch: (a) => ['python3', 'examples/train/starved_dataloader.py', ...a] },
  { name: 'host_sync', expect: 'host-sync', gpus: 1, launch: (a) => ['python3', 'examples/train/host_sync.py', ...a] },
  { name: 'fp32_matmul', expect: 'no-tensor-cores', gpus: 1, launch: (a) => ['python3', 'examples/train/fp32_matmul.py', ...a] },
  {
    name: 'dataparallel',
    expect: 'dataparallel',
    gpus: 2,
    launch: (a) =>
      a.includes('--fixed')
        ? ['torchrun', '--standalone', '--nproc_per_node', '2', 'examples/train/dataparallel.py', ...a]
        : ['python3', 'examples/train/dataparallel.py', ...a],
  },
  {
    name: 'accum_no_sync',
    expect: 'ddp-accum-without-no-sync',
    gpus: 2,
    launch: (a) => ['torchrun', '--standalone', '--nproc_per_node', '2', 'examples/train/accum_no_sync.py', ...a],
  },
];

const out = resolve(process.argv[2] ?? '.gpu-out/train');
const only = new Set(process.argv.slice(3));
const cli = process.env.GPUWISE_CLI ?? 'dist/gpuwise.mjs';
mkdirSync(out, { recursive: true });
const gpuCount = Number(spawnSync('python3', ['-c', 'import torch; print(torch.cuda.device_count())'], { encoding: 'utf8' }).stdout.trim() || 0);

function doctor(ex, fixed) {
  const dir = join(out, `${ex.name}${fixed ? '-fixed' : ''}`);
  const cmd = ex.launch(fixed ? ['--fixed'] : []);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [cli, 'doctor', '--json', '--out', dir, '--', ...cmd], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const wallS = (Date.now() - t0) / 1000;
  const reportPath = join(dir, 'report.json');
  if (!existsSync(reportPath)) return { cmd, exit: r.status, wallS, error: (r.stderr || '').split('\n').slice(-5).join('\n') };
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  const rank0 = report.ranks.find((x) => x.rank === 0) ?? report.ranks[0];
  const finding = report.findings.find((f) => f.id === ex.expect) ?? null;
  return {
    cmd,
    exit: r.status,
    wallS,
    outcome: report.run.outcome,
    medianStepS: rank0?.steps.medianS ?? null,
    findings: report.findings.map((f) => `${f.id}:${f.severity}`),
    expected: finding && {
      severity: finding.severity,
      stepTimeS: finding.estimatedGain ? finding.estimatedGain.stepTimeNs / 1e9 : null,
      expectedStepTimeS: finding.estimatedGain ? finding.estimatedGain.expectedStepTimeNs / 1e9 : null,
    },
    stdoutTail: (r.stdout || '').split('\n').filter((l) => l.includes('ms/step')).slice(-1)[0] ?? null,
  };
}

const results = [];
for (const ex of EXAMPLES) {
  if (only.size && !only.has(ex.name)) continue;
  if (gpuCount < ex.gpus) {
    results.push({ name: ex.name, skipped: `needs ${ex.gpus} GPUs, ${gpuCount} found` });
    continue;
  }
  const problem = doctor(ex, false);
  const fixed = doctor(ex, true);
  const predicted = problem.expected?.stepTimeS && problem.expected.expectedStepTimeS ? problem.expected.stepTimeS / problem.expected.expectedStepTimeS : null;
  const measured = problem.medianStepS && fixed.medianStepS ? problem.medianStepS / fixed.medianStepS : null;
  const res = {
    name: ex.name,
    expect: ex.expect,
    found: problem.expected !== null,
    severity: problem.expected?.severity ?? null,
    goneAfterFix: fixed.findings ? !fixed.findings.some((f) => f.startsWith(`${ex.expect}:`)) : null,
    predictedSpeedup: predicted,
    measuredSpeedup: measured,
    problem,
    fixed,
  };
  results.push(res);
  writeFileSync(join(out, 'summary.json'), `${JSON.stringify({ gpuCount, results }, null, 1)}\n`); // kept if a later one hangs
  const f = (x) => (x === null || x === undefined ? '-' : x.toFixed(2));
  console.log(
    `${ex.name}: ${res.found ? `${ex.expect} ${res.severity}` : `MISSING ${ex.expect}`}; after --fixed ${res.goneAfterFix ? 'gone' : 'STILL THERE'}; speed-up predicted ${f(predicted)}x, measured ${f(measured)}x (median step ${f(problem.medianStepS * 1000)} -> ${f(fixed.medianStepS * 1000)} ms)`,
  );
}
writeFileSync(join(out, 'summary.json'), `${JSON.stringify({ gpuCount, results }, null, 1)}\n`);
const ok = results.every((r) => r.skipped || (r.found && r.severity === 'high' && r.goneAfterFix));
console.log(ok ? 'examples check: all as expected' : 'examples check: some not as expected (see summary.json)');
process.exitCode = ok ? 0 : 1;
