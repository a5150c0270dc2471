/**
 * Live and replay run one path (issue 25): the live collector keeps the probe's records in a bounded sample
 * (recordSample.ts) and `doctor --from` puts the records it reads through the same sample, so both build the report
 * with the same code on the same records. Checked over every committed run directory: the report from the records as
 * the collector keeps them equals the report from every record as read (findings, their severities and expected
 * steps, the steps' statistics, what binds the step). An earlier build's sample gave each kept step its own GPU time,
 * which read as "0 steps in flight" live where the same run's files said 1: the eager GPT-2 of the issue was rated
 * fusion INFO live and medium from --from.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RecordSample } from '../../src/doctor/recordSample.js';
import { recordedRunInput } from '../../src/doctor/rediagnose.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { analyseTraceFiles } from '../../src/io/captures.js';
import { readRunDir } from '../../src/io/runDir.js';
import { REPO } from './helpers.js';

const dirsUnder = (root: string, depth: number): string[] =>
  readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => (depth > 1 ? dirsUnder(join(root, e.name), depth - 1) : [join(root, e.name)]));
const RUN_DIRS = [...dirsUnder(join(REPO, 'examples', 'doctor', 'runs'), 2), ...dirsUnder(join(REPO, 'examples', 'realworld', 'runs'), 1)];

const gist = (r: DoctorReport) => ({
  findings: r.findings.map((f) => [f.id, f.severity, f.ranks, f.estimatedGain ? Math.round(f.estimatedGain.expectedStepTimeNs / 1e3) : null]),
  steps: r.ranks.map((x) => [x.pid, x.steps.measuredSteps, x.steps.meanS, x.steps.medianStepsInFlight]),
  bound: r.pace?.bound ?? null,
  plan: r.pace?.plan.steps.map((s) => [s.id, Math.round(s.expectedStepNs / 1e3)]) ?? [],
});

describe('live and replay: one path', () => {
  it('finds the committed run directories', () => expect(RUN_DIRS.length).toBeGreaterThanOrEqual(25));

  for (const dir of RUN_DIRS)
    it(`${dir.slice(REPO.length + 1)}: the records as the collector keeps them give the report every record gives`, async () => {
      const run = readRunDir(dir);
      const traces = await analyseTraceFiles(
        run.traces.map((f) => ({ rank: f.rank, path: f.path, label: f.path ?? f.recorded, missing: `not in ${dir}` })),
      );
      const replay = recordedRunInput({ ...run, traces, snapshots: [], version: 'test' });
      // what the live collector hands to buildDoctorReport: its sample of the records, in arrival order
      const live = new RecordSample();
      for (const r of run.records) live.add(r);
      expect(replay.records).toEqual(live.records());
      // and a report from every record as read says the same
      const all = buildDoctorReport({ ...replay, records: run.records });
      expect(gist(buildDoctorReport(replay))).toEqual(gist(all));
    });
});
