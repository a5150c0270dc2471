/**
 * The pace model against the GPU (issue 25): five scripts of examples/pace with real input pipelines, each run once
 * under doctor on an H100 (examples/pace/runs/h100: its probe records and profiled window) and then plainly with
 * fixes applied one after another (examples/pace/measured/h100-2026-11-28.jsonl: each run's mean step from the
 * script's own clock). Each measured configuration's flags are turned into the fixes doctor offers for them (its own
 * findings' fixes for bf16 and pinned memory; the worker count and persistence as flagged) and applied to the run's
 * pipeline: the model's step for that configuration against the measured one. The table is printed (the closing
 * note's); the bounds hold what the model reached, so a change that loses accuracy fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { recordedRunInput } from '../../src/doctor/rediagnose.js';
import { buildDoctorReport, groupProcesses, pacesOf, summarizeRank } from '../../src/doctor/report.js';
import { analyseTraceFiles } from '../../src/io/captures.js';
import { readRunDir } from '../../src/io/runDir.js';
import { applyFix, type Fix } from '../../src/pace/fix.js';
import { type Pipeline, stepOf } from '../../src/pace/pipeline.js';
import { REPO } from '../doctor/helpers.js';

const RUNS = join(REPO, 'examples', 'pace', 'runs', 'h100');
const MEASURED = join(REPO, 'examples', 'pace', 'measured', 'h100-2026-11-28.jsonl');

interface Measured {
  run: string;
  label: string;
  flags: string;
  under: 'plain' | 'doctor';
  mean_step_ms: number;
}

/** The fixes a measured configuration's flags stand for, in the order they compose. */
function fixesFor(flags: string, fixOf: (ids: string[]) => Fix | null): Fix[] | null {
  const out: Fix[] = [];
  const workers = /--workers (\d+)/.exec(flags);
  if (workers) out.push({ label: `num_workers ${workers[1]}`, ops: [{ kind: 'workers', to: Number(workers[1]) }], arithmetic: '' });
  if (flags.includes('--persistent-workers')) out.push({ label: 'persistent workers', ops: [{ kind: 'persistent-workers' }], arithmetic: '' });
  if (/--amp bf16|--precision bf16-mixed/.test(flags)) {
    const f = fixOf(['no-tensor-cores', 'mixed-precision']);
    if (!f) return null;
    out.push(f);
  }
  if (flags.includes('--pin-memory')) {
    const f = fixOf(['pageable-h2d']);
    if (!f) return null;
    out.push(f);
  }
  return out;
}

interface Row {
  run: string;
  label: string;
  flags: string;
  predictedMs: number;
  measuredMs: number;
  error: number;
  bound: string;
}

const rows: Row[] = [];
/** The id of the first fix of doctor's own plan, by script. */
const planFirst = new Map<string, string | undefined>();

describe('the pace model on the H100 corpus (predicted vs measured mean step)', () => {
  beforeAll(async () => {
    const measured = readFileSync(MEASURED, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Measured)
      .filter((m) => m.under === 'plain');
    for (const run of [...new Set(measured.map((m) => m.run))]) {
      const dir = readRunDir(join(RUNS, run));
      const traces = await analyseTraceFiles(dir.traces.map((f) => ({ rank: f.rank, path: f.path, label: f.path ?? f.recorded, missing: `not in ${run}` })));
      const input = recordedRunInput({ ...dir, traces, snapshots: [], version: 'test' });
      const report = buildDoctorReport(input);
      const processes = groupProcesses(input.records);
      const ranks = processes.map((p) => summarizeRank(p, input.gpuSamples, input.disconnectedAtMs));
      const p = [...pacesOf(processes, ranks, input.traces).values()].sort((a, b) => b.stepNs - a.stepNs)[0] as Pipeline;
      const fixOf = (ids: string[]) => report.findings.find((f) => ids.includes(f.id) && f.fix)?.fix ?? null;
      planFirst.set(run, report.pace?.plan.steps[0]?.id);
      for (const m of measured.filter((x) => x.run === run)) {
        const fixes = fixesFor(m.flags, fixOf);
        if (fixes === null) continue;
        const after = stepOf(fixes.reduce(applyFix, p));
        const predictedMs = after.perBatchNs / 1e6;
        rows.push({ run, label: m.label, flags: m.flags, predictedMs, measuredMs: m.mean_step_ms, error: predictedMs / m.mean_step_ms - 1, bound: after.bound });
      }
    }
    const pct = (x: number) => `${x >= 0 ? '+' : ''}${Math.round(x * 100)}%`;
    console.log(
      ['| script | configuration | predicted ms | binds | measured ms | error |', '|---|---|---|---|---|---|']
        .concat(rows.map((r) => `| ${r.run} | ${r.label}${r.flags ? ` \`${r.flags}\`` : ''} | ${r.predictedMs.toFixed(1)} | ${r.bound} | ${r.measuredMs.toFixed(1)} | ${pct(r.error)} |`))
        .join('\n'),
    );
  }, 120_000);

  it('covers every measured configuration of the five scripts', () => {
    expect(new Set(rows.map((r) => r.run)).size).toBe(5);
    expect(rows.length).toBeGreaterThanOrEqual(16);
  });

  /**
   * Configurations the model misses by more than 30%, and why: each must still miss (a fix that brings it within the
   * bound takes it off this list).
   */
  const KNOWN_MISSES: Record<string, string> = {};

  it('predicts each fixed configuration within 30% of its measured mean step but the known misses, 40% of them within 15%', () => {
    const fixed = rows.filter((r) => r.label !== 'base');
    for (const r of fixed) {
      const key = `${r.run} ${r.label}`;
      const text = `${key}: ${r.predictedMs.toFixed(1)} ms predicted, ${r.measuredMs} measured`;
      if (KNOWN_MISSES[key]) expect(Math.abs(r.error), text).toBeGreaterThanOrEqual(0.3);
      else expect(Math.abs(r.error), text).toBeLessThan(0.3);
    }
    expect(fixed.filter((r) => Math.abs(r.error) <= 0.15).length).toBeGreaterThanOrEqual(Math.ceil(0.4 * fixed.length));
  });

  it('puts the lever that measured best first where the loader binds: more workers, not bf16', () => {
    for (const run of ['jpeg_resnet', 'fakedata_resnet', 'timm_style']) {
      const base = rows.find((r) => r.run === run && r.label === 'base');
      const workers = rows.find((r) => r.run === run && /^workers/.test(r.label));
      expect(base?.bound, run).toBe('input');
      expect(planFirst.get(run), run).toBe('dataloader-bound');
      expect(workers && base && workers.predictedMs < 0.85 * base.predictedMs, run).toBe(true);
    }
  });
});
