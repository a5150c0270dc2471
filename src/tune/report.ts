/**
 * The result of `gpuwise tune` (the `--json` contract, schemaVersion 1) and its terminal rendering. Pure.
 */
import { fmtInt, fmtBytes, fmtGpuMemory } from '../util/format.js';
import { type SearchSpace, TUNE, type TuneResult, throughputOf } from './predict.js';
import type { TrialSummary } from './trial.js';

export const TUNE_SCHEMA_VERSION = 1;

export interface TuneTrial extends TrialSummary {
  /** 1-based, in the order run. */
  index: number;
  /** search: chosen by the search; curve: an extra point of the throughput curve (--curve). */
  kind: 'search' | 'curve';
  /** Why this value was tried. */
  reason: string;
  /** The command as run (placeholders substituted). */
  command: string[];
  runDir: string;
}

export interface TuneReport {
  schemaVersion: typeof TUNE_SCHEMA_VERSION;
  tool: 'gpuwise';
  command: 'tune';
  version: string;
  param: { name: string; lo: number; hi: number; start: number; multipleOf: number };
  /** Steps each trial ran (GPUWISE_MAX_STEPS). */
  stepsPerTrial: number;
  /** Share of the GPU's memory left free at the recommended value. */
  margin: number;
  maxTrials: number;
  outDir: string;
  device: { name: string | null; totalBytes: number } | null;
  trials: TuneTrial[];
  /** Trials the search used (curve points not counted). */
  searchTrials: number;
  /** Why the search stopped. */
  stopReason: string;
  /** Whether the trials reported GPU memory (else the search bisected without a model). */
  memoryFigures: boolean;
  throughputUnit: 'samples/s' | 'tokens/s' | null;
  result: TuneResult;
  /** 0: a value fits; 1: none does, or a trial failed for another reason; 130: interrupted. */
  exitCode: number;
  notes: string[];
}

export interface TuneReportInput {
  version: string;
  space: SearchSpace;
  stepsPerTrial: number;
  margin: number;
  maxTrials: number;
  outDir: string;
  trials: TuneTrial[];
  stopReason: string;
  result: TuneResult;
  interrupted: boolean;
}

export function buildTuneReport(input: TuneReportInput): TuneReport {
  const { trials, result } = input;
  const failed = trials.some((t) => t.outcome === 'failed' || t.outcome === 'timeout');
  const exitCode = input.interrupted ? 130 : result.largestOk === null || failed ? 1 : 0;
  const notes: string[] = [];
  const memoryFigures = trials.some((t) => t.peakAllocatedBytes !== null);
  if (!memoryFigures && trials.some((t) => t.outcome === 'ok'))
    notes.push(
      'no GPU memory figures (no CUDA, or the probe saw no step): the search bisected in log scale without predicting; the answer is the bracket found',
    );
  for (const t of trials) {
    if (t.outcome === 'ok' && t.steps < 2 && t.peakAllocatedBytes !== null)
      notes.push(
        `trial ${t.index}: fewer than 2 steps, so its peak may miss the optimizer's state (raise --steps or the script's own step count)`,
      );
    if (t.outcome === 'ok' && (t.allocRetries ?? 0) > 0)
      notes.push(
        `trial ${t.index} (${input.space.name}=${t.value}): the allocator had to free its cache ${t.allocRetries} time(s) to fit: it runs, but near the limit and slower`,
      );
    if (t.recoveredOom)
      notes.push(
        `trial ${t.index}: an allocation failed and the command went on (a caught out-of-memory error, or cuDNN trying another algorithm)`,
      );
  }
  if (result.budget?.nonAllocatorSource === 'calibration' && memoryFigures)
    notes.push(
      `memory outside PyTorch's allocator (CUDA context) not measured (no NVML per-process figures): ${fmtBytes(result.budget.nonAllocatorBytes)} assumed`,
    );
  const dev = trials.find((t) => t.deviceTotalBytes !== null);
  return {
    schemaVersion: TUNE_SCHEMA_VERSION,
    tool: 'gpuwise',
    command: 'tune',
    version: input.version,
    param: { name: input.space.name, lo: input.space.lo, hi: input.space.hi, start: input.space.start, multipleOf: input.space.multipleOf },
    stepsPerTrial: input.stepsPerTrial,
    margin: input.margin,
    maxTrials: input.maxTrials,
    outDir: input.outDir,
    device: dev ? { name: dev.deviceName, totalBytes: dev.deviceTotalBytes as number } : null,
    trials,
    searchTrials: trials.filter((t) => t.kind === 'search').length,
    stopReason: input.stopReason,
    memoryFigures,
    throughputUnit: throughputOf(trials).unit,
    result,
    exitCode,
    notes,
  };
}

function pad(s: string, n: number, right = false): string {
  return right ? s.padStart(n) : s.padEnd(n);
}

function rate(x: number | null): string {
  if (x === null) return '-';
  return x >= 100 ? fmtInt(x) : x.toPrecision(3);
}

const OUTCOME_TEXT: Record<TrialSummary['outcome'], string> = {
  ok: 'OK',
  oom: 'OOM',
  failed: 'FAILED',
  timeout: 'TIMEOUT',
  interrupted: 'STOPPED',
};

export function renderTuneText(r: TuneReport): string {
  const out: string[] = [];
  const name = r.param.name;
  const dev = r.device ? ` on ${r.device.name ?? 'GPU'} (${fmtGpuMemory(r.device.totalBytes)})` : '';
  out.push(`gpuwise tune: ${name} in ${r.param.lo}..${r.param.hi}${dev}, ${r.stepsPerTrial} steps per trial`);
  const unit = r.throughputUnit;
  // Token models: tokens/s beside samples/s.
  const ok = r.trials.filter((t) => t.outcome === 'ok');
  const tokensToo = unit === 'samples/s' && ok.every((t) => t.tokensPerS !== null);
  const head = ['#', name, 'outcome', 'peak alloc', 'peak reserved', 'step', unit ?? 'throughput', ...(tokensToo ? ['tokens/s'] : [])];
  const rows = r.trials.map((t) => [
    `${t.index}${t.kind === 'curve' ? 'c' : ''}`,
    String(t.value),
    OUTCOME_TEXT[t.outcome],
    t.peakAllocatedBytes !== null ? fmtBytes(t.peakAllocatedBytes) : '-',
    t.peakReservedBytes !== null ? fmtBytes(t.peakReservedBytes) : '-',
    t.stepTimeS !== null ? `${(t.stepTimeS * 1e3).toFixed(t.stepTimeS < 0.1 ? 1 : 0)} ms` : '-',
    rate(unit === 'samples/s' ? t.samplesPerS : unit === 'tokens/s' ? t.tokensPerS : null),
    ...(tokensToo ? [rate(t.tokensPerS)] : []),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => pad(c, widths[i] as number, i !== 2)).join('  ')}`;
  out.push('', line(head), ...rows.map(line));
  for (const t of r.trials) if (t.outcome !== 'ok') out.push(`  #${t.index}: ${t.detail}`);

  const res = r.result;
  out.push('');
  if (res.line && res.budget) {
    const src =
      res.line.source === 'two-trials'
        ? `trials at ${res.line.values.join(' and ')}`
        : `trial at ${res.line.values[0]} (${res.line.source}${res.line.note ? `: ${res.line.note}` : ''})`;
    out.push(
      `Memory: peak allocated = ${fmtBytes(res.line.fixedBytes)} + ${fmtBytes(res.line.perValueBytes)} x ${name} (from the ${src})`,
      `  limit: ${fmtGpuMemory(res.budget.totalBytes)} - ${fmtBytes(res.budget.nonAllocatorBytes)} outside the allocator (${res.budget.nonAllocatorSource === 'nvml' ? 'measured by NVML' : 'assumed'}), / ${TUNE.allocatorSlack} allocator slack = ${fmtBytes(res.budget.allocatorLimitBytes)} allocated`,
    );
  }
  if (res.largestOk === null) {
    out.push(`No value fits: ${r.stopReason}.`);
  } else {
    out.push(largestLine(r));
    if (res.predictedLargest !== null && res.predictedLargest > res.largestOk)
      out.push(`  the memory line puts the limit at ${res.predictedLargest} (not verified)`);
    const pct = `${Math.round(r.margin * 100)}%`;
    if (res.line === null) out.push(`Recommended: no margin: the trials measured no memory figures to apply ${pct} to`);
    else if (res.recommended !== null) {
      const peak =
        res.recommendedPeakBytes !== null && r.device
          ? `: about ${fmtBytes(res.recommendedPeakBytes)} of ${fmtGpuMemory(r.device.totalBytes)} in use`
          : '';
      out.push(`Recommended: ${name}=${res.recommended} (leaves ${pct} of the GPU memory free${peak})`);
    } else out.push(`Recommended: none leaves ${pct} of the GPU memory free`);
    if (res.goldilocks !== null) out.push(`Goldilocks: ${name}=${res.goldilocks}: ${res.goldilocksReason}`);
  }
  out.push(
    `Trials: ${r.searchTrials} of at most ${r.maxTrials}${r.trials.length > r.searchTrials ? ` (+${r.trials.length - r.searchTrials} for the curve)` : ''}; stopped: ${r.stopReason}`,
  );
  out.push(`Runs: ${r.outDir}`);
  for (const n of r.notes) out.push(`note: ${n}`);
  return `${out.join('\n')}\n`;
}

/**
 * "Largest that fits: batch_size=37 (verified; 42 ran out of memory)" only when a value above it ran out of memory or it
 * is the upper limit; else "Largest tried: batch_size=22 (nothing above it tried: --max-trials)" (issue 47).
 */
export function largestLine(r: TuneReport): string {
  const res = r.result;
  const name = r.param.name;
  // Reports of before issue 47 have no `verified`: what they say can be told from the bracket alone.
  const verified = res.verified !== undefined ? res.verified : res.smallestOom !== null ? 'oom' : (res.largestOk ?? 0) >= r.param.hi ? 'limit' : null;
  if (verified === 'oom') return `Largest that fits: ${name}=${res.largestOk} (verified; ${res.smallestOom} ran out of memory)`;
  if (verified === 'limit') return `Largest that fits: ${name}=${res.largestOk} (verified: the upper limit, ${r.param.hi})`;
  const why = /\(--max-trials\)/.test(r.stopReason) ? '--max-trials' : r.stopReason || 'the search stopped';
  return `Largest tried: ${name}=${res.largestOk} (nothing above it tried: ${why})`;
}
