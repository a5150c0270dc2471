/**
 * `gpuwise smi`: one snapshot of the GPUs, as a table or JSON; from the live GPUs, from nvidia-smi
 * files (`--from`), or from a recording (`--replay`). `--bench N` (for bench/telemetry) takes N live
 * samples and prints gpuwise's own CPU and wall time per sample, then N more (the steady cost, once V8
 * has compiled the sampling code).
 */
import { writeFileSync } from 'node:fs';
import { readSmiFiles } from '../io/readSmiFile.js';
import { checkHtmlTarget } from '../io/reportTarget.js';
import { readRecording } from '../io/recordStore.js';
import { summarizeRecording } from '../telemetry/recordSummary.js';
import { formatBytes, formatNumber, renderSmi, table } from '../telemetry/render.js';
import { renderSmiMarkdown } from '../telemetry/smiReport.js';
import { inlineAssets } from '../serve/assets.js';
import { renderSmiHtml } from '../serve/pages/smi.js';
import { type Snapshot, snapshotJson } from '../telemetry/sample.js';
import type { LiveSampler } from '../live/sampler.js';
import { jsonReport } from './jsonReport.js';
import { parseCount, parseDurationMs } from './telemetryArgs.js';
import { NO_GPU_HINTS, openLive } from './telemetryLive.js';
import { parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise smi: one snapshot of the NVIDIA GPUs and their processes.

Usage: gpuwise smi [--json | --md] [--html FILE] [--from FILE]... [--replay FILE.sqlite [--at SECONDS]]

  --json            JSON instead of the table (schema: docs/telemetry.md)
  --md              Markdown tables (for an issue)
  --html FILE       also write the snapshot as a self-contained HTML page to FILE
  --from FILE       read nvidia-smi output instead of the live GPUs: the plain 'nvidia-smi' table,
                    'nvidia-smi -q -x' XML or
                    '--query-gpu' CSV, plus optional '--query-compute-apps' CSV files (.gz accepted)
  --replay FILE     read a 'gpuwise record' file: per-GPU summary and the snapshot at --at (default: last)
  --no-procfs       do not read /proc for user, command, CPU, RSS, rank
  --bench N         take 2 x N live samples and print gpuwise's CPU time per sample: over the first N
                    (compilation included) and the next N (steady) (benchmarks)
`;

function out(s: string): void {
  process.stdout.write(s);
}

/** CPU and wall time per sample over `n` samples (process CPU: the GC's threads included). */
async function timeSamples(sampler: LiveSampler, n: number): Promise<{ cpuUs: number; wallUs: number; processes: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let processes = 0;
  for (let i = 0; i < n; i++) processes += (await sampler.sample()).gpus.reduce((a, g) => a + g.processes.length, 0);
  const wallNs = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage(cpu0);
  return { cpuUs: (cpu.user + cpu.system) / n, wallUs: wallNs / 1000 / n, processes: processes / n };
}

async function bench(n: number, procfs: boolean): Promise<number> {
  const sampler = await openLive({ procfs, hint: NO_GPU_HINTS.smi });
  try {
    await sampler.sample(); // first sample opens /proc caches and NVML state
    // The first n samples include V8 compiling the sampling code (what a short or slow-paced run pays);
    // the next n are the steady cost of a sample once it is compiled.
    const first = await timeSamples(sampler, n);
    const steady = await timeSamples(sampler, n);
    const last = await sampler.sample();
    out(
      `${JSON.stringify({
        schemaVersion: 1,
        source: sampler.source.kind,
        procfs,
        samples: n,
        gpus: last.gpus.length,
        processesPerSample: first.processes,
        cpuUsPerSample: first.cpuUs,
        wallUsPerSample: first.wallUs,
        steadyCpuUsPerSample: steady.cpuUs,
        steadyWallUsPerSample: steady.wallUs,
        rssBytes: process.memoryUsage().rss,
        nvmlCalls: sampler.source.callTimings?.() ?? null,
      })}\n`,
    );
  } finally {
    sampler.close();
  }
  return 0;
}

function replay(path: string, atText: string | undefined, json: boolean): number {
  const rec = readRecording(path);
  if (rec.recoveredFromCrash) process.stderr.write(`gpuwise smi: ${path}: the recorder was killed; read the samples it had committed\n`);
  if (rec.snapshots.length === 0) {
    if (json)
      out(jsonReport({ schemaVersion: 1, recording: { file: path, meta: rec.meta, samples: 0 }, summary: [], snapshot: null }));
    else out(`${path}: a recording with no samples\n`);
    return 0;
  }
  const first = rec.snapshots[0]!;
  const lastSnap = rec.snapshots[rec.snapshots.length - 1]!;
  const startMs = first.timestampMs ?? 0;
  let snap: Snapshot = lastSnap;
  if (atText !== undefined) {
    const at = startMs + parseDurationMs(atText, '--at');
    snap = rec.snapshots.find((s) => (s.timestampMs ?? 0) >= at) ?? lastSnap;
  }
  const summary = summarizeRecording(rec.snapshots);
  const recording = {
    file: path,
    meta: rec.meta,
    samples: rec.snapshots.length,
    startMs,
    endMs: lastSnap.timestampMs,
    recoveredFromCrash: rec.recoveredFromCrash,
  };
  if (json) {
    out(jsonReport({ schemaVersion: 1, recording, summary, snapshot: snap && snapshotJson(snap) }));
    return 0;
  }
  const spanS = ((lastSnap.timestampMs ?? 0) - startMs) / 1000;
  out(`recording ${path}: ${rec.snapshots.length} samples over ${spanS.toFixed(1)} s on ${rec.meta.hostname ?? '?'}\n\n`);
  const rows = [
    ['GPU', 'Name', 'Util mean', 'Util max', 'Peak memory', 'Power mean', 'Power max', 'Lost'],
    ...summary.map((g) => [
      String(g.index),
      g.name,
      formatNumber(g.utilizationGpuMeanPercent, '%', 1),
      formatNumber(g.utilizationGpuMaxPercent, '%'),
      formatBytes(g.memoryUsedMaxBytes),
      formatNumber(g.powerMeanWatts, ' W'),
      formatNumber(g.powerMaxWatts, ' W'),
      g.lostSamples > 0 ? `${g.lostSamples} samples` : '',
    ]),
  ];
  out(`${table(rows, [true, false, true, true, true, true, true, false]).join('\n')}\n\n`);
  out(`snapshot at +${(((snap.timestampMs ?? 0) - startMs) / 1000).toFixed(1)} s:\n`);
  out(renderSmi(snap, process.stdout.columns ?? 160));
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      md: { type: 'boolean', default: false },
      html: { type: 'string' },
      from: { type: 'string', multiple: true },
      replay: { type: 'string' },
      at: { type: 'string' },
      'no-procfs': { type: 'boolean', default: false },
      bench: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (files go after --from or --replay)`);
  if (values.from && values.replay) throw new UsageError('--from and --replay exclude each other');
  if (values.at !== undefined && !values.replay) throw new UsageError('--at needs --replay');
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  if (values.html !== undefined) checkHtmlTarget(values.html, [...(values.from ?? []), ...(values.replay ? [values.replay] : [])]);
  if ((values.md || values.html !== undefined) && values.replay) throw new UsageError('--md and --html show one snapshot: use them with --from or the live GPUs');
  if (values.bench !== undefined) return bench(parseCount(values.bench, '--bench', 1), !values['no-procfs']);
  if (values.replay) return replay(values.replay, values.at, values.json);
  let snapshot: Snapshot;
  if (values.from) snapshot = readSmiFiles(values.from);
  else {
    const sampler = await openLive({ procfs: !values['no-procfs'], hint: NO_GPU_HINTS.smi });
    try {
      snapshot = await sampler.sample();
    } finally {
      sampler.close();
    }
  }
  out(
    values.json
      ? jsonReport(snapshotJson(snapshot))
      : values.md
        ? renderSmiMarkdown(snapshot)
        : renderSmi(snapshot, process.stdout.isTTY ? (process.stdout.columns ?? 160) : 400),
  );
  if (values.html !== undefined) {
    writeFileSync(values.html, renderSmiHtml(snapshot, inlineAssets()));
    process.stderr.write(`gpuwise smi: wrote ${values.html}\n`);
  }
  return 0;
}
