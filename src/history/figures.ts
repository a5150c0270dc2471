/**
 * The key figures of one doctor run, as the run history stores them in columns and `compare`
 * sets side by side (pure). One definition for both, so `gpuwise runs` and `gpuwise compare`
 * never disagree on what "median step" means for a multi-rank job.
 */
import { SEVERITIES, type Severity } from '../findings/finding.js';
import type { DoctorReport, RankSummary } from '../doctor/reportTypes.js';

export interface RunFigures {
  /** Ranks (processes) that timed at least one step. */
  trainingRanks: number;
  /** Slowest training rank's median / mean / p90 step time: the job goes at the pace of its slowest rank. */
  medianStepS: number | null;
  meanStepS: number | null;
  p90StepS: number | null;
  /** Summed over the training ranks (each rank trains on its own samples); null when a rank could not count them. */
  samplesPerS: number | null;
  tokensPerS: number | null;
  /**
   * Samples and tokens per step, summed over the training ranks (the global batch): the probe's median per step, else
   * throughput x mean step (older reports); null when a rank could not count them.
   */
  samplesPerStep: number | null;
  tokensPerStep: number | null;
  /** Largest DataLoader wait share of any training rank. */
  dataWaitShare: number | null;
  /** Largest allocator peaks of any rank (torch.cuda.memory_stats), null without CUDA. */
  peakAllocatedBytes: number | null;
  peakReservedBytes: number | null;
  /** Largest GPU memory NVML attributed to one of the job's processes. */
  maxProcessNvmlBytes: number | null;
  /** Largest memory used on any sampled GPU, as nvidia-smi shows it (other processes included). */
  maxGpuUsedBytes: number | null;
  /** Distinct GPU names: the probe's CUDA devices, else the sampled GPUs. */
  gpuNames: string[];
  worldSize: number | null;
  findingsBySeverity: Record<Severity, number>;
}

function maxOf(values: (number | null | undefined)[]): number | null {
  const known = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return known.length ? Math.max(...known) : null;
}

function sumOf(values: (number | null | undefined)[]): number | null {
  if (values.length === 0 || values.some((v) => typeof v !== 'number' || !Number.isFinite(v))) return null;
  return (values as number[]).reduce((a, b) => a + b, 0);
}

function perStep(median: number | null | undefined, perS: number | null, meanS: number | null): number | null {
  if (typeof median === 'number' && Number.isFinite(median)) return median;
  return perS !== null && meanS !== null && Number.isFinite(perS * meanS) ? Math.round(perS * meanS) : null;
}

export function trainingRanks(report: DoctorReport): RankSummary[] {
  return (report.ranks ?? []).filter((r) => r.steps?.medianS !== null && r.steps?.medianS !== undefined);
}

export function runFigures(report: DoctorReport): RunFigures {
  const ranks = trainingRanks(report);
  const all = report.ranks ?? [];
  const slowest = [...ranks].sort((a, b) => (b.steps.medianS ?? 0) - (a.steps.medianS ?? 0))[0];
  const devices = report.environment?.devices ?? [];
  const names = devices.length ? devices.map((d) => d.name) : (report.gpus ?? []).map((g) => g.name);
  const bySeverity = Object.fromEntries(SEVERITIES.map((s) => [s, 0])) as Record<Severity, number>;
  for (const f of report.findings ?? []) if (f.severity in bySeverity) bySeverity[f.severity]++;
  return {
    trainingRanks: ranks.length,
    medianStepS: slowest?.steps.medianS ?? null,
    meanStepS: slowest?.steps.meanS ?? null,
    p90StepS: slowest?.steps.p90S ?? null,
    samplesPerS: ranks.length ? sumOf(ranks.map((r) => r.steps.samplesPerS)) : null,
    tokensPerS: ranks.length ? sumOf(ranks.map((r) => r.steps.tokensPerS)) : null,
    samplesPerStep: ranks.length ? sumOf(ranks.map((r) => perStep(r.steps.samplesPerStep, r.steps.samplesPerS, r.steps.meanS))) : null,
    tokensPerStep: ranks.length ? sumOf(ranks.map((r) => perStep(r.steps.tokensPerStep, r.steps.tokensPerS, r.steps.meanS))) : null,
    dataWaitShare: maxOf(ranks.map((r) => r.steps.dataWaitShare)),
    peakAllocatedBytes: maxOf(all.map((r) => r.allocator?.peakAllocatedBytes)),
    peakReservedBytes: maxOf(all.map((r) => r.allocator?.peakReservedBytes)),
    maxProcessNvmlBytes: maxOf(all.map((r) => r.nvmlUsedBytes)),
    maxGpuUsedBytes: maxOf((report.gpus ?? []).map((g) => g.maxUsedBytes)),
    gpuNames: [...new Set(names)],
    worldSize: report.environment?.worldSize ?? null,
    findingsBySeverity: bySeverity,
  };
}
