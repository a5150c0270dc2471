/** Renders the analyze report for a terminal (pure: returns a string; colour is the caller's choice). */
import { flopsLeftOut, flopsSplit } from './flopsText.js';
import { fmtBytes, fmtMs, fmtPct, fmtTflops } from '../util/format.js';
import { wrapLine } from '../util/wrap.js';
import type { Finding, Severity } from '../findings/finding.js';
import { CATEGORY_NAMES } from '../trace/kernelClass.js';
import { IDLE_CAUSES, type IdleCause, type TraceMetrics } from '../trace/metrics/types.js';
import type { AnalyzeReport } from './analyzeReport.js';

export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  severity(s: Severity, text: string): string;
}

export const PLAIN: Style = { bold: (s) => s, dim: (s) => s, severity: (_s, t) => t };

export const ANSI: Style = {
  bold: (s) => `\x1b[1m${s}\x1b[22m`,
  dim: (s) => `\x1b[2m${s}\x1b[22m`,
  severity: (s, t) => `${{ high: '\x1b[1;31m', medium: '\x1b[33m', low: '\x1b[36m', info: '\x1b[2m' }[s]}${t}\x1b[0m`,
};

export const IDLE_LABELS: Record<IdleCause, string> = {
  dataloader: 'waiting for DataLoader',
  hostSync: 'after host sync',
  h2dCopy: 'host-to-device copy',
  communication: 'CPU collective / barrier',
  launch: 'CPU launch-bound',
  other: 'other',
};

function bar(fraction: number, width: number): string {
  const n = Math.max(0, Math.min(width, Math.round(fraction * width)));
  return '█'.repeat(n) + ' '.repeat(width - n);
}

function rankSection(m: TraceMetrics, st: Style): string[] {
  const out: string[] = [];
  const dev = m.devices[0];
  const step = m.perStep.durNs;
  out.push(
    st.bold(`Rank ${m.rank}${m.worldSize > 1 ? ` of ${m.worldSize}` : ''}`) +
      (dev ? ` · ${dev.name} (sm_${dev.computeCapability.replace('.', '')}, ${fmtBytes(dev.totalMemoryBytes)})` : '') +
      ` · ${m.steps.length} step${m.steps.length === 1 ? '' : 's'}${m.stepsFromMarkers ? '' : ' (no ProfilerStep markers: whole trace as one window)'}`,
  );
  out.push(
    `  step time   median ${fmtMs(m.stepTime.medianNs)}  (mean ${fmtMs(m.stepTime.meanNs)}, min ${fmtMs(m.stepTime.minNs)}, max ${fmtMs(m.stepTime.maxNs)})   GPU busy ${fmtPct(m.gpuBusyShare)}` +
      (m.smEfficiency !== null ? `   est. SM efficiency ${fmtPct(m.smEfficiency)}` : ''),
  );
  out.push('', `  ${st.bold('Where a step goes')} ${st.dim('(mean per step, all GPUs of this rank)')}`);
  const rows: [string, number][] = [['GPU busy', m.perStep.busyNs], ...IDLE_CAUSES.map((c) => [`idle: ${IDLE_LABELS[c]}`, m.perStep.idleByCauseNs[c]] as [string, number])];
  const total = m.perStep.busyNs + m.perStep.idleNs || 1;
  for (const [label, ns] of rows) {
    if (ns <= 0 && label !== 'GPU busy') continue;
    out.push(`    ${label.padEnd(34)} ${fmtMs(ns).padStart(10)} ${fmtPct(ns / total).padStart(5)}  ${bar(ns / total, 30)}`);
  }
  const cats = CATEGORY_NAMES.map((c) => [c, m.perStep.kernelNsByCategory[c]] as const).filter(([, v]) => v > 0);
  const catTotal = cats.reduce((a, [, v]) => a + v, 0) || 1;
  if (cats.length) {
    out.push('', `  ${st.bold('GPU time by kind')} ${st.dim('(kernel durations per step)')}`);
    for (const [c, v] of [...cats].sort((a, b) => b[1] - a[1])) out.push(`    ${c.padEnd(14)} ${fmtMs(v).padStart(10)} ${fmtPct(v / catTotal).padStart(5)}  ${bar(v / catTotal, 30)}`);
  }
  const p = m.precision;
  out.push('');
  out.push(
    `  matmuls      tensor cores ${p.tensorCoreShare === null ? 'n/a' : fmtPct(p.tensorCoreShare)} of known-precision matmul time` +
      ` (bf16/fp16 ${fmtMs(p.tensorCore16Ns)}, tf32 ${fmtMs(p.tensorCoreTf32Ns)}, fp8/int8 ${fmtMs(p.tensorCore8Ns)}, fp32 ${fmtMs(p.fp32Ns)})`,
  );
  const l = m.launch;
  out.push(
    `  launches     ${l.kernelsPerStep.toFixed(0)} kernels/step, median kernel ${fmtMs(l.medianKernelNs)}, CPU in launch calls ${fmtMs(l.cpuLaunchNs)} vs GPU kernels ${fmtMs(l.gpuKernelNs)}, CPU ahead by ${fmtMs(l.medianLaunchToStartNs)} (median)`,
  );
  const mf = m.modelFlops;
  if (mf !== null) {
    out.push(
      `  model FLOPs  ${fmtTflops(mf.achievedTflops)} TFLOP/s achieved, MFU ${fmtPct(mf.mfu)} of the ${mf.gpu} ${mf.peakPrecision} dense peak ${mf.peakTflops} TFLOP/s ` +
        st.dim(`(${flopsSplit(mf)} per median step${flopsLeftOut(mf) ? `; ${flopsLeftOut(mf)}: a floor` : ''})`),
    );
  }
  for (const c of m.copies) out.push(`  memcpy       ${c.kind.padEnd(14)} ${String(c.count).padStart(6)} copies ${fmtBytes(c.bytes).padStart(10)} ${fmtMs(c.durNs).padStart(10)} ${c.bandwidthGBs.toFixed(1).padStart(7)} GB/s`);
  if (m.comm.collectives > 0) {
    out.push(
      `  comm         ${m.comm.collectives} collectives, ${fmtMs(m.comm.commNsPerStep)}/step, exposed ${fmtMs(m.comm.exposedNsPerStep)}/step, overlap ${m.comm.overlapShare === null ? 'n/a' : fmtPct(m.comm.overlapShare)}, median message ${fmtBytes(m.comm.medianMessageBytes)}`,
    );
  }
  for (const mem of m.memory) {
    out.push(
      `  memory       GPU ${mem.device}: peak allocated ${fmtBytes(mem.peakAllocatedBytes)}, peak reserved ${fmtBytes(mem.peakReservedBytes)}${mem.deviceTotalBytes ? ` of ${fmtBytes(mem.deviceTotalBytes)}` : ''}`,
    );
  }
  if (step <= 0) out.push(st.dim('  (no GPU activity in the analysed window)'));
  return out;
}

/** `width`: wrap evidence and advice to it (the terminal's columns); 0 leaves lines whole. */
export function renderFinding(
  f: Pick<Finding, 'id' | 'severity' | 'title' | 'evidence' | 'recommendation'> & Partial<Pick<Finding, 'ranks' | 'estimatedGain'>>,
  st: Style,
  index: number,
  width = 0,
): string[] {
  const out: string[] = [];
  const wrap = (line: string, hang: number) => wrapLine(line, width, hang);
  const tag = st.severity(f.severity, f.severity.toUpperCase().padEnd(6));
  const ranks = f.ranks ?? [];
  const idText = `[${f.id}${ranks.length > 1 ? `, ranks ${ranks.join(',')}` : ''}]`;
  const num = `${String(index + 1).padStart(2)}.`;
  const head = wrap(`${num} ${f.severity.toUpperCase().padEnd(6)} ${f.title}  ${idText}`, 11);
  if (head.length === 1) out.push(`${num} ${tag} ${st.bold(f.title)}  ${st.dim(idText)}`);
  else out.push(`${num} ${tag} ${st.bold(head[0]!.slice(num.length + 8))}`, ...head.slice(1).map((l) => st.bold(l)));
  const g = f.estimatedGain;
  if (g) {
    out.push(`    expected: ${fmtMs(g.stepTimeNs)} -> ${fmtMs(g.expectedStepTimeNs)} per step (-${fmtPct(g.savedFraction)}, ${(g.stepTimeNs / g.expectedStepTimeNs).toFixed(2)}x)`);
    out.push(...wrap(`    how: ${g.arithmetic}`, 5).map((l) => st.dim(l)));
  }
  for (const e of f.evidence) out.push(...wrap(`    · ${e}`, 2));
  out.push(...wrap(`    fix: ${f.recommendation.summary}`, 5));
  for (const line of f.recommendation.code.split('\n')) out.push(`      ${st.dim('|')} ${line}`);
  return out;
}

/**
 * Findings first (the answer), then what the input could support (warnings), then the figures per rank: the same
 * order as every gpuwise report. `width`: the terminal's columns for wrapping prose (0: no wrapping).
 */
export function renderTerminal(r: AnalyzeReport, st: Style, width = 0): string {
  const out: string[] = [];
  const names = r.inputs.map((i) => i.path.split('/').pop()).join(', ');
  out.push(st.bold(`gpuwise analyze · ${names}`), '');
  if (r.findings.length === 0) {
    out.push(st.bold('No findings: nothing in this trace points to a fix worth making.'), '');
  } else {
    out.push(st.bold(`Findings (${r.findings.length}, most gain first)`), '');
    r.findings.forEach((f, i) => {
      out.push(...renderFinding(f, st, i, width), '');
    });
  }
  const warnings = r.inputs.flatMap((i) => i.warnings.map((w) => `${i.path}: ${w}`));
  if (warnings.length) out.push(...warnings.flatMap((w) => wrapLine(`warning: ${w}`, width, 2)).map((l) => st.severity('medium', l)), '');
  for (const m of r.metrics.ranks) {
    // Prose rows wrap under their text; bar rows (fixed columns) stay whole.
    out.push(...rankSection(m, st).flatMap((l) => (l.includes('█') ? [l] : wrapLine(l, width, 13))), '');
  }
  return `${out.join('\n').replace(/\n+$/, '')}\n`;
}
