/** Renders the analyze report for a terminal (pure: returns a string; colour is the caller's choice). */

import { paceHeadline, paceRows } from '../pace/report.js';
import { CATEGORY_NAMES } from '../trace/kernelClass.js';
import { IDLE_CAUSES, type IdleCause, type TraceMetrics } from '../trace/metrics/types.js';
import { fmtBytes, fmtGpuMemory, fmtMs, fmtPct, fmtWindow } from '../util/format.js';
import { wrapLine } from '../util/wrap.js';
import type { AnalyzeReport } from './analyzeReport.js';
import { findingLines } from './findingText.js';
import { flopsLeftOut, flopsSplit, mfuText } from './flopsText.js';
import { inPlanText, planFirstLines } from './planFirst.js';
import type { Style } from './style.js';

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
      (dev ? ` · ${dev.name} (sm_${dev.computeCapability.replace('.', '')}, ${fmtGpuMemory(dev.totalMemoryBytes)})` : '') +
      ` · ${m.steps.length} step${m.steps.length === 1 ? '' : 's'}${m.stepsFromMarkers ? '' : ' (no ProfilerStep markers: whole trace as one window)'}`,
  );
  out.push(
    `  step time   median ${fmtMs(m.stepTime.medianNs)}  (mean ${fmtMs(m.stepTime.meanNs)}, min ${fmtMs(m.stepTime.minNs)}, max ${fmtMs(m.stepTime.maxNs)})   GPU busy ${fmtPct(m.gpuBusyShare)}` +
      (m.smEfficiency !== null ? `   est. SM efficiency ${fmtPct(m.smEfficiency)}` : ''),
  );
  const nGpus = m.crossDevice?.devices.length ?? 1;
  // Over several GPUs each row is a GPU's mean, not their union (the pace section's GPU stage is the union).
  out.push(
    '',
    `  ${st.bold('Where a step goes')} ${st.dim(nGpus > 1 ? `(mean per step and per GPU, over this rank's ${nGpus} GPUs)` : '(mean per step)')}`,
  );
  const rows: [string, number][] = [
    ['GPU busy', m.perStep.busyNs],
    ...IDLE_CAUSES.map((c) => [`idle: ${IDLE_LABELS[c]}`, m.perStep.idleByCauseNs[c]] as [string, number]),
  ];
  const total = m.perStep.busyNs + m.perStep.idleNs || 1;
  for (const [label, ns] of rows) {
    if (ns <= 0 && label !== 'GPU busy') continue;
    out.push(`    ${label.padEnd(34)} ${fmtMs(ns).padStart(10)} ${fmtPct(ns / total).padStart(5)}  ${bar(ns / total, 30)}`);
  }
  const cats = CATEGORY_NAMES.map((c) => [c, m.perStep.kernelNsByCategory[c]] as const).filter(([, v]) => v > 0);
  const catTotal = cats.reduce((a, [, v]) => a + v, 0) || 1;
  if (cats.length) {
    out.push('', `  ${st.bold('GPU time by kind')} ${st.dim('(kernel durations per step)')}`);
    for (const [c, v] of [...cats].sort((a, b) => b[1] - a[1]))
      out.push(`    ${c.padEnd(14)} ${fmtMs(v).padStart(10)} ${fmtPct(v / catTotal).padStart(5)}  ${bar(v / catTotal, 30)}`);
  }
  const p = m.precision;
  // Kernel and copy totals are over the analysed steps, beside the per-step figures above: each line says which.
  const win = fmtWindow(m.steps.length);
  out.push('');
  out.push(
    `  matmuls      tensor cores ${p.tensorCoreShare === null ? 'n/a' : fmtPct(p.tensorCoreShare)} of known-precision matmul time` +
      ` (${win}: bf16/fp16 ${fmtMs(p.tensorCore16Ns)}, tf32 ${fmtMs(p.tensorCoreTf32Ns)}, fp8/int8 ${fmtMs(p.tensorCore8Ns)}, fp32 ${fmtMs(p.fp32Ns)})`,
  );
  const l = m.launch;
  out.push(
    `  launches     ${l.kernelsPerStep.toFixed(0)} kernels per step, median kernel ${fmtMs(l.medianKernelNs)}, CPU ahead by ${fmtMs(l.medianLaunchToStartNs)} (median); ${win}: CPU in launch calls ${fmtMs(l.cpuLaunchNs)} vs GPU kernels ${fmtMs(l.gpuKernelNs)}`,
  );
  const mf = m.modelFlops;
  if (mf !== null) {
    out.push(
      `  model FLOPs  ${mfuText(mf)} ` +
        st.dim(`(${flopsSplit(mf)} per median step${flopsLeftOut(mf) ? `; ${flopsLeftOut(mf)}: a floor` : ''})`),
    );
  }
  for (const c of m.copies)
    out.push(
      `  memcpy       ${c.kind.padEnd(14)} ${String(c.count).padStart(6)} copies ${fmtBytes(c.bytes).padStart(10)} ${fmtMs(c.durNs).padStart(10)} ${c.bandwidthGBs.toFixed(1).padStart(7)} GB/s  ${win}`,
    );
  if (m.comm.collectives > 0) {
    out.push(
      `  comm         ${m.comm.collectives} collectives ${win}, ${fmtMs(m.comm.commNsPerStep)} per step, exposed ${fmtMs(m.comm.exposedNsPerStep)} per step, overlap ${m.comm.overlapShare === null ? 'n/a' : fmtPct(m.comm.overlapShare)}, median message ${fmtBytes(m.comm.medianMessageBytes)}`,
    );
  }
  for (const mem of m.memory) {
    out.push(
      `  memory       GPU ${mem.device}: peak allocated ${fmtBytes(mem.peakAllocatedBytes)}, peak reserved ${fmtBytes(mem.peakReservedBytes)}${mem.deviceTotalBytes ? ` of ${fmtGpuMemory(mem.deviceTotalBytes)}` : ''}`,
    );
  }
  if (step <= 0) out.push(st.dim('  (no GPU activity in the analysed window)'));
  return out;
}

/**
 * What to do first (the plan, report/planFirst.ts), then the findings (why), then what the input could support
 * (warnings), then the figures per rank and what sets the pace: the same order as every gpuwise report. `width`: the terminal's columns for wrapping prose (0: no wrapping).
 */
export function renderTerminal(r: AnalyzeReport, st: Style, width = 0): string {
  const out: string[] = [];
  const names = r.inputs.map((i) => i.path.split('/').pop()).join(', ');
  out.push(st.bold(`gpuwise analyze · ${names}`), '');
  if (r.pace)
    out.push(
      ...planFirstLines({ plan: r.pace.plan, findings: r.findings }).flatMap((l, i) => wrapLine(i === 0 ? st.bold(l) : l, width, 7)),
      '',
    );
  if (r.findings.length === 0) {
    out.push(st.bold('No findings: nothing in this trace points to a fix worth making.'), '');
  } else {
    out.push(st.bold(`Findings (${r.findings.length}, most gain first)`), '');
    r.findings.forEach((f, i) => {
      out.push(...findingLines(f, st, i, width, inPlanText(r.pace?.plan, f)), '');
    });
  }
  const warnings = r.inputs.flatMap((i) => i.warnings.map((w) => `${i.path}: ${w}`));
  if (warnings.length) out.push(...warnings.flatMap((w) => wrapLine(`warning: ${w}`, width, 2)).map((l) => st.severity('medium', l)), '');
  for (const m of r.metrics.ranks) {
    // Prose rows wrap under their text; bar rows (fixed columns) stay whole.
    out.push(...rankSection(m, st).flatMap((l) => (l.includes('█') ? [l] : wrapLine(l, width, 13))), '');
  }
  // It ends with what sets the pace in the window, stage by stage (the plan opened it).
  if (r.pace) {
    out.push(...wrapLine(st.bold(`What sets the pace: ${paceHeadline(r.pace, r.metrics.ranks.length)}`), width, 2));
    for (const [what, time, how, evidence] of paceRows(r.pace)) out.push(...wrapLine(`  ${what}: ${time} (${how}): ${evidence}`, width, 4));
  }
  return `${out.join('\n').replace(/\n+$/, '')}\n`;
}
