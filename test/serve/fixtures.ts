/**
 * Fixtures for the serve tests: a run history built from the real H200 doctor runs shipped in
 * examples/doctor/runs/h200 (their probe records and profiler windows, through the real report builder, as
 * `gpuwise doctor` would have saved them), and a live-telemetry recording made of the real `nvidia-smi -q -x`
 * sample in test/fixtures/telemetry (one sample a second, written by `record`'s own writer).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parseProbeLines } from '../../src/run/records.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { saveRun } from '../../src/io/runStore.js';
import { RecordWriter } from '../../src/io/recordStore.js';
import { parseSmiXml } from '../../src/telemetry/smiXml.js';
import { analyzeTrace, collectiveTimings } from '../../src/trace/metrics/index.js';
import { doctorInput } from '../doctor/input.js';

export const ROOT = join(__dirname, '..', '..');
export const RUNS = join(ROOT, 'examples', 'doctor', 'runs', 'h200');
export const TRACES = join(ROOT, 'examples', 'traces');
export const SNAPSHOT = join(ROOT, 'test', 'fixtures', 'memory', 'memory_snapshot.pickle.gz');
export const OOM_SNAPSHOT = join(ROOT, 'test', 'fixtures', 'memory', 'oom_fragmentation.pickle.gz');
export const RUN_NAMES = ['starved_dataloader', 'host_sync', 'fp32_matmul'] as const;

/** Saves the H200 example runs in a history at `dir` (oldest first, a minute apart); returns their ids by name. */
export async function makeRunStore(dir: string, names: readonly string[] = RUN_NAMES): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  let i = 0;
  for (const name of names) {
    const { records } = parseProbeLines(readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8'));
    const path = join(RUNS, name, 'trace.json.gz');
    const model = await loadTrace(path);
    const metrics = analyzeTrace(model);
    const t0 = Math.floor(Math.min(...records.map((r) => r.t)) * 1000);
    const t1 = Math.ceil(Math.max(...records.map((r) => r.t)) * 1000);
    const report = buildDoctorReport(
      doctorInput(records, {
        command: ['python3', `examples/train/${name}.py`],
        runDir: join(RUNS, name),
        startedAtMs: t0 + i * 60_000,
        endedAtMs: t1 + i * 60_000,
        traces: [{ rank: 0, path, metrics, collectives: collectiveTimings(model, metrics.steps), error: null }],
      }),
    );
    ids[name] = await saveRun(dir, report, { cwd: ROOT, hostname: 'h200-test' });
    i++;
  }
  return ids;
}

/** The real busy nvidia-smi sample (2 H200s? whatever the file holds), as the sample model. */
export function smiSample() {
  const text = gunzipSync(readFileSync(join(ROOT, 'test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz'))).toString('utf8');
  return parseSmiXml(text);
}

/** A `record` file in `dir` with `n` samples a second apart, the last one `endAgoMs` ago. */
export function makeRecording(dir: string, name: string, n: number, endAgoMs = 5_000): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  const w = new RecordWriter(path, { command: 'test' });
  const base = smiSample();
  const end = Date.now() - endAgoMs;
  for (let k = 0; k < n; k++) w.write({ ...base, timestampMs: end - (n - 1 - k) * 1000 });
  w.close();
  return path;
}
