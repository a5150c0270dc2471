/**
 * The issue-25 corpus against the GPU: scripts of examples/pace run once under doctor (a run directory: probe records
 * and the profiled window) and then plainly with fixes applied one after another (a measured file: each run's mean
 * step from the script's own clock). Each measured configuration's flags are turned into the fixes doctor offers for
 * them (its own findings' fixes for bf16 and pinned memory; the worker count and persistence as flagged) and applied
 * to the run's pipeline: the model's step for that configuration against the measured one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordedRunInput } from '../../src/doctor/rediagnose.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { paceOf } from '../../src/doctor/stages/pace.js';
import { groupProcesses } from '../../src/doctor/stages/records.js';
import { runOf } from '../../src/doctor/stages/run.js';
import { analyseTraceFiles } from '../../src/io/captures.js';
import { readRunDir } from '../../src/io/runDir.js';
import { applyFix, type Fix } from '../../src/pace/fix.js';
import { type Pipeline, stepOf } from '../../src/pace/pipeline.js';

/** One run's JSON line in a measured file (the jsonl files of examples/pace/measured and examples/levers/measured): its mean step is the script's own clock. */
export interface Measured {
  run: string;
  label: string;
  flags: string;
  under: 'plain' | 'doctor';
  mean_step_ms: number;
  samples_per_step?: number;
  /** The device call that ran it (the session's letter), where written. */
  call?: string;
}

/** Every run of the measured files, in order. */
export function readMeasured(...files: string[]): Measured[] {
  return files.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Measured),
  );
}

/** The mean of the plain runs of `run` labelled one of `labels` (a configuration measured more than once: their mean). */
export function measuredMs(measured: readonly Measured[], run: string, ...labels: string[]): number {
  const ms = measured.filter((m) => m.run === run && m.under === 'plain' && labels.includes(m.label)).map((m) => m.mean_step_ms);
  if (ms.length === 0) throw new Error(`no plain run of ${run} labelled ${labels.join('|')}`);
  return ms.reduce((a, b) => a + b, 0) / ms.length;
}

/** The fixes a measured configuration's flags stand for, in the order they compose. */
export function fixesFor(flags: string, fixOf: (ids: string[]) => Fix | null): Fix[] | null {
  const out: Fix[] = [];
  const workers = /--workers (\d+)/.exec(flags);
  if (workers) out.push({ label: `num_workers ${workers[1]}`, ops: [{ kind: 'workers', to: Number(workers[1]) }], arithmetic: '' });
  if (flags.includes('--persistent-workers'))
    out.push({ label: 'persistent workers', ops: [{ kind: 'persistent-workers' }], arithmetic: '' });
  if (/--amp bf16|--precision bf16-mixed/.test(flags)) {
    const f = fixOf(['no-tensor-cores', 'mixed-precision']);
    if (!f) return null;
    out.push(f);
  } else if (flags.includes('--channels-last')) {
    // channels_last alone: a script that runs under autocast already (timm_style)
    const f = fixOf(['channels-last']);
    if (!f) return null;
    out.push(f);
  }
  if (flags.includes('--pin-memory')) {
    const f = fixOf(['pageable-h2d']);
    if (!f) return null;
    out.push(f);
  }
  if (flags.includes('--sync-every')) {
    const f = fixOf(['host-sync']);
    if (!f) return null;
    out.push(f);
  }
  return out;
}

/** doctor's report re-diagnosed from a run directory (as `doctor --from` does), and the pipeline of its slowest process. */
export async function runReport(runDir: string, name: string): Promise<{ report: ReturnType<typeof buildDoctorReport>; pace: Pipeline }> {
  const dir = readRunDir(runDir);
  const traces = await analyseTraceFiles(
    dir.traces.map((f) => ({ rank: f.rank, path: f.path, label: f.path ?? f.recorded, missing: `not in ${name}` })),
  );
  const input = recordedRunInput({ ...dir, traces, snapshots: [], version: 'test' });
  const report = buildDoctorReport(input);
  const pace = [...paceOf(runOf(input, groupProcesses(input.records))).byPid.values()].sort((a, b) => b.stepNs - a.stepNs)[0] as Pipeline;
  return { report, pace };
}

export interface Row {
  run: string;
  label: string;
  flags: string;
  predictedMs: number;
  measuredMs: number;
  error: number;
  bound: string;
}

/**
 * Each measured plain configuration of `runs` (default: every run the measured file names; `calls`: of the device
 * calls it keeps) predicted from the run directory of its script under `runsDir`: rows, and the first fix of doctor's
 * own plan by script. Prints the table.
 */
export async function corpusRows(
  runsDir: string,
  measuredFile: string,
  runs?: string[],
  calls?: (call: string | undefined) => boolean,
): Promise<{ rows: Row[]; planFirst: Map<string, string | undefined> }> {
  const rows: Row[] = [];
  const planFirst = new Map<string, string | undefined>();
  const measured = readMeasured(measuredFile).filter(
    (m) => m.under === 'plain' && (runs === undefined || runs.includes(m.run)) && (calls === undefined || calls(m.call)),
  );
  for (const run of [...new Set(measured.map((m) => m.run))]) {
    const { report, pace: p } = await runReport(join(runsDir, run), run);
    const fixOf = (ids: string[]) => report.findings.find((f) => ids.includes(f.id) && f.fix)?.fix ?? null;
    planFirst.set(run, report.pace?.plan.steps[0]?.id);
    // One row per configuration; one measured more than once is the mean of its runs.
    const configs = new Map<string, Measured>();
    for (const m of measured) if (m.run === run && !configs.has(m.label)) configs.set(m.label, m);
    for (const m of configs.values()) {
      const fixes = fixesFor(m.flags, fixOf);
      if (fixes === null) continue;
      const after = stepOf(fixes.reduce(applyFix, p));
      const predictedMs = after.perBatchNs / 1e6;
      const ms = measuredMs(measured, run, m.label);
      rows.push({ run, label: m.label, flags: m.flags, predictedMs, measuredMs: ms, error: predictedMs / ms - 1, bound: after.bound });
    }
  }
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${Math.round(x * 100)}%`;
  console.log(
    ['| script | configuration | predicted ms | binds | measured ms | error |', '|---|---|---|---|---|---|']
      .concat(
        rows.map(
          (r) =>
            `| ${r.run} | ${r.label}${r.flags ? ` \`${r.flags}\`` : ''} | ${r.predictedMs.toFixed(1)} | ${r.bound} | ${r.measuredMs.toFixed(1)} | ${pct(r.error)} |`,
        ),
      )
      .join('\n'),
  );
  return { rows, planFirst };
}
