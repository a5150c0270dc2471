/**
 * Wording shared by the doctor report's Markdown and HTML renderings (pure): the same sentence
 * for the same figure in every format. Everything here reads the report defensively, since a
 * stored report may predate a field added to schema 1.
 */
import { fmtInt, fmtBytes, fmtGpuMemory, fmtMs, fmtPct, fmtRate } from '../util/format.js';
import { withoutControlChars } from '../util/controlChars.js';
import { gpuProcessLabel, isGpuProcess } from './gpuProcesses.js';
import type { DoctorReport, GpuSummary, RankSummary } from './reportTypes.js';

export const s2ns = (s: number) => s * 1e9;

export function fmtStepS(s: number | null | undefined): string {
  return typeof s === 'number' && Number.isFinite(s) ? fmtMs(s2ns(s)) : 'n/a';
}

export function fmtBytesOr(b: number | null | undefined, none = 'n/a'): string {
  return typeof b === 'number' && Number.isFinite(b) ? fmtBytes(b) : none;
}

export function rankLabel(r: RankSummary): string {
  if (r.rankFromEnv) return `Rank ${r.rank} (pid ${r.pid})`;
  if (r.steps.steps === 0) return `Process ${r.pid} (no training step)`;
  return `${r.steps.decode ? 'Generating' : 'Training'} process (pid ${r.pid})`;
}

/** Short label for charts and tables. */
export function rankShort(r: RankSummary): string {
  return r.rankFromEnv ? `rank ${r.rank}` : r.steps.steps > 0 ? `pid ${r.pid}` : `pid ${r.pid} (no step)`;
}

/** "reserved X + CUDA context and other Y = Z seen by NVML", or null when either side is unknown. */
export function nvmlBesideAllocator(r: RankSummary): string | null {
  const a = r.allocator;
  if (!a || r.nvmlUsedBytes === null || r.nvmlUsedBytes === undefined || r.nonAllocatorBytes === null || r.nonAllocatorBytes === undefined)
    return null;
  return `reserved ${fmtBytes(a.peakReservedBytes)} + CUDA context and other ${fmtBytes(Math.max(0, r.nonAllocatorBytes))} = ${fmtBytes(r.nvmlUsedBytes)} seen by NVML`;
}

/** How the steps were found, when not by the optimizer (one wording for every format). */
const STEP_SOURCE_NOTE: Record<string, string> = {
  marker: 'steps marked by gpuwise.step()',
  batch: 'one step per DataLoader batch (no optimizer stepped)',
  backward: 'one step per backward pass (no optimizer stepped)',
  forward: 'one step per forward call of the outermost module (no optimizer or backward)',
  graph: 'one step per replay of a captured CUDA graph (no optimizer, backward or forward call marks them)',
  time: 'no step found: fixed time slices of the run',
};

export function stepSourceNote(r: Pick<RankSummary, 'steps'>): string | null {
  const src = r.steps.stepSource;
  return src ? (STEP_SOURCE_NOTE[src] ?? null) : null;
}

/**
 * A generation loop's figures (run/steps.ts DecodeStats), in the words of its regime: "decode steps: 111 tokens/s
 * generated, 9.01 ms a decode step at batch 1; 12.3 ms to the first token (a 32-token prompt, then 127 decode
 * steps)"; null when the steps are not decode steps.
 */
export function decodeText(r: Pick<RankSummary, 'steps'>): string | null {
  const d = r.steps.decode;
  if (!d) return null;
  const rate = d.tokensPerS === null ? 'tokens/s unknown' : `${fmtInt(d.tokensPerS)} tokens/s generated`;
  const step = d.decodeStepS === null ? '' : `, ${fmtMs(d.decodeStepS * 1e9)} a decode step${d.batch !== null ? ` at batch ${d.batch}` : ''}`;
  const first =
    d.prefillStepS === null
      ? ''
      : `; ${fmtMs(d.prefillStepS * 1e9)} to the first token (${d.promptLen !== null ? `a ${d.promptLen}-token prompt` : 'the prompt'}${d.decodeStepsPerPrefill !== null ? `, then ${Math.round(d.decodeStepsPerPrefill)} decode steps` : ''})`;
  return `decode steps: ${rate}${step}${first}`;
}

/** The host's own time per step (the stepping thread's CPU time, outside the profiler), when the probe measured it. */
export function hostCpuNote(r: Pick<RankSummary, 'steps'>): string | null {
  const s = r.steps.medianHostCpuS;
  return typeof s === 'number' ? `host (main thread) CPU ${fmtMs(s * 1e9)} a step` : null;
}

/**
 * The steps that stalled on the DataLoader, in words: the mean step (the throughput) carries them, the median does
 * not. Null when none stalled (or an older report).
 */
export function stallNote(r: Pick<RankSummary, 'steps'>): string | null {
  const st = r.steps;
  const s = st.stalls;
  if (!s || s.stalledSteps === 0 || st.meanS === null || st.medianS === null) return null;
  const when = s.when === 'periodic' ? `, every ${s.everySteps} steps` : s.when === 'epoch-starts' ? ', at the start of each epoch' : '';
  return `${fmtPct(s.share)} of the steps (${s.stalledSteps} of ${s.measuredSteps}) stall ${fmtMs(s.meanStallS * 1e9)} on the DataLoader${when}: the mean step ${fmtMs(st.meanS * 1e9)} (the throughput) carries them, the median ${fmtMs(st.medianS * 1e9)} does not`;
}

/** Why the probe sent nothing: the process that used torch without it, or what no process did. */
export function probeSilentText(e: DoctorReport['environment']): string {
  const u = e.unprobed ?? [];
  if (u.length > 0)
    return `the probe did not reach ${u.map((p) => `pid ${p.pid} (${withoutControlChars(p.command)}), which imported torch: ${p.reason}`).join('; ')}`;
  return 'the probe did not report (no Python process of the command ran a forward or backward pass of a torch module, stepped an optimizer, iterated a DataLoader or called gpuwise.step())';
}

export function environmentRows(r: DoctorReport): [string, string][] {
  const e = r.environment;
  if (e.probeSilent) return [['probe', probeSilentText(e).replace(/^the probe /, '')]];
  const rows: [string, string][] = [
    ['Python', e.python ?? '?'],
    ['torch', e.torch ?? '?'],
    ['CUDA', `${e.cuda ?? 'none'}${e.cudnn ? ` (cuDNN ${e.cudnn})` : ''}`],
    ...(e.driver ? [['NVIDIA driver', e.driver] as [string, string]] : []),
    ['host', e.hostname ?? '?'],
  ];
  if (e.worldSize !== null && e.worldSize !== undefined) rows.push(['world size', String(e.worldSize)]);
  const devices = e.devices ?? [];
  rows.push([
    'devices',
    devices.length ? devices.map((d) => `cuda:${d.index} ${d.name} (${fmtGpuMemory(d.totalMemoryBytes)}, sm ${d.capability})`).join('; ') : 'no CUDA device in use: CPU run',
  ]);
  if (e.stepHook) rows.push(['step hook', e.stepHook]);
  return rows;
}

/** One sentence on the model, or null without a model summary. */
export function modelLine(r: DoctorReport): string | null {
  const m = r.model;
  if (!m) return null;
  const dtypes = new Map<string, number>();
  for (const mod of m.modules ?? []) for (const [d, n] of Object.entries(mod.dtypes ?? {})) dtypes.set(d, (dtypes.get(d) ?? 0) + n);
  const dt = [...dtypes].map(([d, n]) => `${d} ${fmtPct(n / Math.max(1, m.totalParamCount))}`).join(', ');
  const opt = m.optimizer ? `optimizer ${m.optimizer.class}, state ${fmtBytes(m.optimizer.stateBytes)}` : 'no optimizer';
  const batch = batchDimText(m);
  return `${m.name}: ${fmtInt(m.paramCount)} trainable parameters${dt ? ` (${dt})` : ''}; ${opt}${batch ? `; ${batch}` : ''}`;
}

/** How the batch was read off the model's input, when a module's `batch_first` flag decided it (probe 0.2+). */
export function batchDimText(m: Pick<NonNullable<DoctorReport['model']>, 'batchDim' | 'batchDimEvidence'>): string | null {
  if (typeof m.batchDim !== 'number' || typeof m.batchDimEvidence !== 'string') return null;
  const layout = m.batchDim === 1 ? ': [seq, batch, ...]' : '';
  return `batch read from dimension ${m.batchDim} of the model's input (${m.batchDimEvidence}${layout})`;
}

/**
 * The model handed to `gpuwise plan`: the command to run when its model.json exists (written by the live run, or
 * found in a re-diagnosed directory), else the description alone (a suggestion's input must exist).
 */
export function planModelLine(r: DoctorReport): string | null {
  const p = r.planModel;
  if (!p) return r.planModelProblem ? `no model.json for plan: ${r.planModelProblem}` : null;
  const what = `${p.family}, ${p.layers} layers, hidden ${p.hidden}`;
  // older reports have no planModelFile: their live run wrote RUN_DIR/model.json
  const file = r.planModelFile === undefined ? `${r.run.runDir.replace(/\/+$/, '')}/model.json` : r.planModelFile;
  return file
    ? `model.json for \`gpuwise plan --model ${file}\` (${what})`
    : `the model as plan reads it: ${what} (planModel in the --json report; no model.json in this run directory)`;
}

export function durationText(s: number): string {
  if (!Number.isFinite(s)) return 'n/a';
  if (s < 120) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/**
 * The set-up inferences that are guesses, each with its evidence ("guessed: ..."), for every format; older reports
 * without `inferences` give their assumptions.
 */
export function setupGuesses(r: DoctorReport): string[] {
  const su = r.whatIfBasis?.setup;
  if (!su) return [];
  return (su.assumptions ?? []).map((a) => `guessed: ${a}`);
}

/** Known facts of the set-up worth a word beside the batch: a compiled model. */
export function setupFacts(r: DoctorReport): string[] {
  const su = r.whatIfBasis?.setup;
  const compiled = su?.inferences?.find((i) => i.name === 'compiled' && i.value === true);
  return compiled ? [`compiled: ${compiled.evidence}`] : [];
}

/** The columns of the per-GPU process table, the same in every format. */
export const GPU_PROCESS_COLUMNS = ['GPU', 'process', 'present', 'memory peak', 'memory mean', 'SM share mean', 'running work'];

/**
 * One row per process seen on a GPU (the job's own first): who it is, how long it was there, its memory and SM share
 * over the samples where it was present. Empty for a report without process figures (older, or not sampled).
 */
export function gpuProcessRows(r: DoctorReport): string[][] {
  const rows: string[][] = [];
  for (const g of r.gpus ?? []) {
    const list = (g as GpuSummary).processes;
    if (!Array.isArray(list)) continue;
    for (const p of (list as unknown[]).filter(isGpuProcess)) {
      rows.push([
        String(g.index),
        withoutControlChars(`${gpuProcessLabel(p)}${p.job ? '' : ', not this run'}`),
        `${Number.isFinite(p.presentS) ? p.presentS.toFixed(0) : '?'} s (${Number.isFinite(p.firstS) ? p.firstS.toFixed(0) : '?'}-${Number.isFinite(p.lastS) ? p.lastS.toFixed(0) : '?'} s)`,
        fmtBytesOr(p.peakUsedBytes),
        fmtBytesOr(p.meanUsedBytes),
        typeof p.meanSmUtilPercent === 'number' ? `${p.meanSmUtilPercent.toFixed(0)}%` : 'n/a',
        `${p.activeSamples} of ${p.samples} samples`,
      ]);
    }
  }
  return rows;
}

/** What the process table means, under it in every format. */
export const GPU_PROCESS_NOTE =
  'Every process NVML listed on a GPU over the run: present = the time its samples cover (seconds since the first sample); memory and SM share (nvmlDeviceGetProcessUtilization; a process alone on a GPU gets the GPU\'s utilisation) over the samples where it was present; running work = samples with an SM share above 5%.';

/** The per-rank table of a multi-rank run (report.distributed), the same cells in every format; null without one. */
export function distributedTable(r: DoctorReport): { head: string[]; rows: string[][]; summary: string; why: string[] } | null {
  const d = r.distributed;
  if (!d || !Array.isArray(d.ranks) || d.ranks.length === 0) return null;
  const pct = (x: number | null | undefined) => (typeof x === 'number' && Number.isFinite(x) ? fmtPct(x) : 'n/a');
  const head = ['rank', 'GPU', 'median step', 'p90', 'DataLoader wait', 'samples/s', 'comm exposed', 'comm overlap'];
  const rows = d.ranks.map((v) => [
    String(v.rank),
    v.device ? `cuda:${v.device.index} ${v.device.name}` : 'cpu',
    fmtStepS(v.medianStepS),
    fmtStepS(v.p90StepS),
    pct(v.dataWaitShare),
    fmtRate(v.samplesPerS),
    v.window ? pct(v.window.commExposedShare) : 'no window',
    v.window ? pct(v.window.commOverlapShare) : 'no window',
  ]);
  const skew = typeof d.skew === 'number' ? `skew ${fmtPct(d.skew)} (slowest median / fastest - 1), slowest rank ${d.slowestRank}` : 'skew n/a';
  const strag = d.straggler
    ? d.straggler.by === 'step-time'
      ? `; rank ${d.straggler.rank} is the straggler`
      : `; rank ${d.straggler.rank} waits longest on its DataLoader (spread ${pct(d.dataWaitSpread)} of the step): the others wait for it in collectives`
    : '';
  const subject = d.straggler?.rank ?? d.slowestRank;
  return { head, rows, summary: `${skew}${strag}`, why: (d.why ?? []).map((w) => `rank ${subject}: ${w}`) };
}

/** The stalled ranks of a hang (report.run.hang): one line each with the step and the innermost frames. */
export function hangLines(r: DoctorReport, frames = 4): { head: string; ranks: string[] } | null {
  const h = r.run.hang;
  if (!h || !Array.isArray(h.ranks)) return null;
  const behind = new Set(h.behindRanks ?? []);
  const head = `${r.run.outcome === 'hung' ? 'Hung' : 'Stalled at the end'}: ${h.why}`;
  const ranks = h.ranks.map(
    (s) =>
      `rank ${s.rank} (pid ${s.pid})${behind.has(s.rank) ? ' BEHIND' : ''}: step ${s.step}, no progress for ${s.stalledS.toFixed(0)} s, ${s.inCollective ? 'inside a collective' : 'not in a collective'}; innermost: ${s.stack
        .slice(-frames)
        .map((f) => f.replace(/^.*[/\\]/, ''))
        .reverse()
        .join(' < ')}`,
  );
  return { head, ranks };
}

/**
 * When an exception was raised, from the steps its process had ended: "in step N+1", or "before the first training
 * step" when none had (issue 47 item 4: a script that failed in its set-up read "in step 1"), as the outcome says.
 */
export function exceptionWhen(stepsEnded: number): string {
  return stepsEnded === 0 ? 'before the first training step' : `in step ${stepsEnded + 1}`;
}
