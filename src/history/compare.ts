/**
 * `gpuwise compare`: what changed between two doctor runs (pure). Step time, throughput, DataLoader
 * wait, memory, outcome, findings (by id) and the environment, from the two reports alone, so a
 * comparison reads the same from the history or from two run directories.
 */
import type { Severity } from '../findings/finding.js';
import { severityRank } from '../findings/rank.js';
import type { DoctorReport, RankedFinding } from '../doctor/reportTypes.js';
import { runFigures } from './figures.js';

export const COMPARE_SCHEMA_VERSION = 1;

/** A figure before and after; `change` = after / before - 1 (null when either is unknown or before is 0). */
export interface Change {
  before: number | null;
  after: number | null;
  change: number | null;
}

export interface ComparedRun {
  /** The history id or the path given. */
  label: string;
  id: string | null;
  runDir: string;
  startedAtMs: number;
  command: string[];
  outcome: string;
  outcomeText: string;
  exitCode: number;
}

export interface FindingState {
  severity: Severity;
  title: string;
  /** Estimated share of the step the fix saves; null for findings without a time estimate (memory). */
  savedFraction: number | null;
}

export interface FindingChange {
  id: string;
  status: 'new' | 'gone' | 'changed' | 'unchanged';
  before: FindingState | null;
  after: FindingState | null;
}

export interface RunComparison {
  schemaVersion: typeof COMPARE_SCHEMA_VERSION;
  tool: 'gpuwise';
  command: 'compare';
  a: ComparedRun;
  b: ComparedRun;
  outcomeChanged: boolean;
  stepTime: { medianS: Change; meanS: Change; p90S: Change };
  throughput: { samplesPerS: Change; tokensPerS: Change };
  dataWaitShare: Change;
  memory: { peakAllocatedBytes: Change; peakReservedBytes: Change; maxProcessNvmlBytes: Change; maxGpuUsedBytes: Change };
  /** Every finding id of either run, new and gone first. */
  findings: FindingChange[];
  /** Only the environment fields that differ. */
  environment: { field: string; before: string | null; after: string | null }[];
  /**
   * What the two runs have in common, said before any ratio: the script (null when the same), the GPUs (null when the
   * same or unknown), the samples per step (null when the same or unknown), and the measure the headline compares by:
   * the step time when the batch is the same, else the throughput both runs count (tokens/s, else samples/s).
   */
  basis: {
    scripts: { before: string; after: string } | null;
    gpus: { before: string; after: string } | null;
    samplesPerStep: { before: number; after: number } | null;
    tokensPerStep: { before: number; after: number } | null;
    measure: 'step' | 'samples/s' | 'tokens/s';
  };
  /** The command's arguments that changed, each with the flag before it for context. */
  commandChanges: { before: string[]; after: string[] }[];
}

export function change(before: number | null, after: number | null): Change {
  const ok = (v: number | null) => v !== null && Number.isFinite(v);
  return { before, after, change: ok(before) && ok(after) && before !== 0 ? (after as number) / (before as number) - 1 : null };
}

function compared(label: string, id: string | null, r: DoctorReport): ComparedRun {
  return {
    label,
    id,
    runDir: r.run.runDir,
    startedAtMs: r.run.startedAtMs,
    command: r.run.command,
    outcome: r.run.outcome,
    outcomeText: r.run.outcomeText,
    exitCode: r.run.exitCode,
  };
}

/** One state per finding id: the most severe (then largest gain) when several ranks or sources report it. */
function byId(findings: RankedFinding[]): Map<string, FindingState> {
  const out = new Map<string, FindingState>();
  for (const f of findings) {
    const state: FindingState = { severity: f.severity, title: f.title, savedFraction: f.estimatedGain?.savedFraction ?? null };
    const prev = out.get(f.id);
    if (
      !prev ||
      severityRank(state.severity) < severityRank(prev.severity) ||
      (state.severity === prev.severity && (state.savedFraction ?? 0) > (prev.savedFraction ?? 0))
    )
      out.set(f.id, state);
  }
  return out;
}

export function compareFindings(a: RankedFinding[], b: RankedFinding[]): FindingChange[] {
  const before = byId(a);
  const after = byId(b);
  const out: FindingChange[] = [];
  for (const [id, s] of after) {
    const p = before.get(id) ?? null;
    const moved = p !== null && (p.severity !== s.severity || Math.abs((p.savedFraction ?? 0) - (s.savedFraction ?? 0)) >= 0.005);
    out.push({ id, status: p === null ? 'new' : moved ? 'changed' : 'unchanged', before: p, after: s });
  }
  for (const [id, p] of before) if (!after.has(id)) out.push({ id, status: 'gone', before: p, after: null });
  const order = { new: 0, gone: 1, changed: 2, unchanged: 3 } as const;
  const sev = (c: FindingChange) => severityRank((c.after ?? c.before)?.severity ?? 'info');
  return out.sort((x, y) => order[x.status] - order[y.status] || sev(x) - sev(y) || x.id.localeCompare(y.id));
}

/** Hunks of differing arguments (longest common subsequence), each led by the flag it belongs to. */
export function commandChanges(a: string[], b: string[]): { before: string[]; after: string[] }[] {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) (lcs[i] as number[])[j] = a[i] === b[j] ? (lcs[i + 1]?.[j + 1] ?? 0) + 1 : Math.max(lcs[i + 1]?.[j] ?? 0, lcs[i]?.[j + 1] ?? 0);
  const hunks: { before: string[]; after: string[] }[] = [];
  let i = 0;
  let j = 0;
  let lastSame: string | null = null;
  let cur: { before: string[]; after: string[] } | null = null;
  const flush = () => {
    if (cur) hunks.push(cur);
    cur = null;
  };
  const open = () => {
    const flag = lastSame?.startsWith('-') ? lastSame : null;
    if (!cur) cur = flag !== null ? { before: [flag], after: [flag] } : { before: [], after: [] };
    return cur;
  };
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      flush();
      lastSame = a[i] as string;
      i++;
      j++;
    } else if (j < m && (i >= n || (lcs[i]?.[j + 1] ?? 0) >= (lcs[i + 1]?.[j] ?? 0))) {
      open().after.push(b[j++] as string);
    } else {
      open().before.push(a[i++] as string);
    }
  }
  flush();
  return hunks;
}

function envRows(r: DoctorReport): Record<string, string | null> {
  const e = r.environment;
  const f = runFigures(r);
  return {
    torch: e.torch ?? null,
    Python: e.python ?? null,
    CUDA: e.cuda ?? null,
    cuDNN: e.cudnn === null || e.cudnn === undefined ? null : String(e.cudnn),
    GPUs: (e.devices ?? []).length ? (e.devices ?? []).map((d) => d.name).join(', ') : f.gpuNames.length ? f.gpuNames.join(', ') : 'none',
    'world size': e.worldSize === null || e.worldSize === undefined ? null : String(e.worldSize),
    'training processes': String(f.trainingRanks),
    host: e.hostname ?? null,
    'gpuwise version': r.version ?? null,
  };
}

const INTERPRETERS = /^(python[\d.]*|python|torchrun|accelerate|deepspeed|uv|env|-m|run|launch|-u)$/;

/** The script a command runs: its first `.py` argument, else the module after -m, else its first argument (basenames). */
export function scriptOf(command: string[]): string {
  const base = (s: string) => s.split(/[\\/]/).pop() ?? s;
  const py = command.find((a) => /\.py$/.test(a));
  if (py !== undefined) return base(py);
  const m = command.indexOf('-m');
  if (m >= 0 && command[m + 1] !== undefined) return command[m + 1] as string;
  const first = command.find((a) => !INTERPRETERS.test(base(a)) && !a.startsWith('-'));
  return base(first ?? command[0] ?? '');
}

const gpuText = (names: string[]) => names.map((n) => n.replace(/^NVIDIA\s+/, '')).join(', ');

function basisOf(a: DoctorReport, b: DoctorReport, fa: ReturnType<typeof runFigures>, fb: ReturnType<typeof runFigures>): RunComparison['basis'] {
  const sa = scriptOf(a.run.command);
  const sb = scriptOf(b.run.command);
  const ga = gpuText(fa.gpuNames);
  const gb = gpuText(fb.gpuNames);
  const differs = (x: number | null, y: number | null) => (x !== null && y !== null && Math.abs(x - y) > 0.005 * Math.max(x, y) ? { before: x, after: y } : null);
  const samplesPerStep = differs(fa.samplesPerStep, fb.samplesPerStep);
  const tokensPerStep = differs(fa.tokensPerStep, fb.tokensPerStep);
  const both = (x: number | null, y: number | null) => x !== null && y !== null && x > 0 && y > 0;
  const measure =
    samplesPerStep === null && tokensPerStep === null
      ? 'step'
      : both(fa.tokensPerS, fb.tokensPerS)
        ? 'tokens/s'
        : both(fa.samplesPerS, fb.samplesPerS)
          ? 'samples/s'
          : 'step';
  return {
    scripts: sa !== sb ? { before: sa, after: sb } : null,
    gpus: ga !== gb && ga !== '' && gb !== '' ? { before: ga, after: gb } : null,
    samplesPerStep,
    tokensPerStep,
    measure,
  };
}

export function compareRuns(a: { label: string; id: string | null; report: DoctorReport }, b: { label: string; id: string | null; report: DoctorReport }): RunComparison {
  const fa = runFigures(a.report);
  const fb = runFigures(b.report);
  const ea = envRows(a.report);
  const eb = envRows(b.report);
  return {
    schemaVersion: COMPARE_SCHEMA_VERSION,
    tool: 'gpuwise',
    command: 'compare',
    a: compared(a.label, a.id, a.report),
    b: compared(b.label, b.id, b.report),
    outcomeChanged: a.report.run.outcome !== b.report.run.outcome,
    stepTime: { medianS: change(fa.medianStepS, fb.medianStepS), meanS: change(fa.meanStepS, fb.meanStepS), p90S: change(fa.p90StepS, fb.p90StepS) },
    throughput: { samplesPerS: change(fa.samplesPerS, fb.samplesPerS), tokensPerS: change(fa.tokensPerS, fb.tokensPerS) },
    dataWaitShare: change(fa.dataWaitShare, fb.dataWaitShare),
    memory: {
      peakAllocatedBytes: change(fa.peakAllocatedBytes, fb.peakAllocatedBytes),
      peakReservedBytes: change(fa.peakReservedBytes, fb.peakReservedBytes),
      maxProcessNvmlBytes: change(fa.maxProcessNvmlBytes, fb.maxProcessNvmlBytes),
      maxGpuUsedBytes: change(fa.maxGpuUsedBytes, fb.maxGpuUsedBytes),
    },
    findings: compareFindings(a.report.findings ?? [], b.report.findings ?? []),
    environment: Object.keys(ea)
      .filter((k) => ea[k] !== eb[k])
      .map((k) => ({ field: k, before: ea[k] ?? null, after: eb[k] ?? null })),
    basis: basisOf(a.report, b.report, fa, fb),
    commandChanges: commandChanges(a.report.run.command, b.report.run.command),
  };
}
