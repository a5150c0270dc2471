/**
 * Public scripts run on a GPU (issue 44): their plain runs' mean steps and the table of doctor's plan steps against
 * them, as test/pace/h200External, h100External and typicalError read them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';

/** A run directory's `measured.jsonl`: each plain run's mean step (ms) by `script:config` (llm.c's own "avg: X ms" line where no mean). */
export function externalMeasured(runsDir: string): Map<string, number> {
  return new Map(
    readFileSync(join(runsDir, 'measured.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { script: string; config: string; line?: string; mean_step_ms?: number })
      .map((r) => [`${r.script}:${r.config}`, r.mean_step_ms ?? Number(/avg: ([\d.]+)ms/.exec(r.line ?? '')?.[1])] as const),
  );
}

/** Doctor's reports by run name, and plan step `i` (1-based) of a run set against a measured configuration, each a table row. */
export function planStepTable(measured: ReadonlyMap<string, number>) {
  const reports = new Map<string, DoctorReport>();
  const rows: string[] = ['| run | plan step | predicted ms | measured ms | error |', '|---|---|---|---|---|'];
  /** The error of run `name`'s plan step `i` against configuration `config`: predicted / measured - 1. */
  const step = (name: string, i: number, config: string): number => {
    const s = reports.get(name)?.pace?.plan.steps[i - 1];
    const m = measured.get(config) as number;
    const err = ((s?.expectedStepNs ?? Number.NaN) / 1e6 - m) / m;
    rows.push(`| ${name} | ${i}. ${s?.label} | ${((s?.expectedStepNs ?? 0) / 1e6).toFixed(1)} | ${m.toFixed(1)} (${config}) | ${err >= 0 ? '+' : ''}${(err * 100).toFixed(0)}% |`);
    return err;
  };
  return { reports, rows, step };
}
