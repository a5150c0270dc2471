/** The doctor report as terminal text (pure). */

import { paceHeadline, paceRows } from '../pace/report.js';
import { findingLines } from '../report/findingText.js';
import { flopsLeftOut, flopsSplit, mfuText } from '../report/flopsText.js';
import { inPlanText, planFirstLines, RUN_STEP_NAME } from '../report/planFirst.js';
import { PLAIN, type Style } from '../report/style.js';
import { fmtBytes, fmtGpuMemory, fmtInt, fmtMs, fmtPct } from '../util/format.js';
import {
  batchDimText,
  decodeText,
  distributedTable,
  exceptionWhen,
  gpuProcessRows,
  hangLines,
  hostCpuNote,
  planModelLine,
  probeSilentText,
  rankLabel,
  s2ns,
  setupFacts,
  setupGuesses,
  stallNote,
  stepSourceNote,
} from './renderParts.js';
import type { DoctorReport, RankSummary } from './reportTypes.js';

function stepLine(r: RankSummary): string {
  const st = r.steps;
  if (st.steps === 0) return 'no step identified (see the notes)';
  if (st.medianS === null) return `${st.steps} step(s) seen; too few to time (the first step is warm-up)`;
  const parts = [
    // The statistics are over the steps timed (warm-up, profiled and sampled-out steps left out): say so when they are
    // fewer than the steps run (issue 47 item 4: "30 steps, median 688 us" where 8 were measured).
    st.measuredSteps !== st.steps
      ? `${st.steps} steps (${st.measuredSteps} timed${st.timing === 'gpu' ? ' on the GPU' : ''})`
      : `${st.steps} steps${st.timing === 'gpu' ? ' (timed on the GPU)' : ''}`,
    `median ${fmtMs(s2ns(st.medianS))}`,
    `mean ${fmtMs(s2ns(st.meanS ?? 0))}`,
    `p90 ${fmtMs(s2ns(st.p90S ?? 0))}`,
    `min ${fmtMs(s2ns(st.minS ?? 0))}`,
    `max ${fmtMs(s2ns(st.maxS ?? 0))}`,
  ];
  // A generation loop's steps are decode steps: tokens generated per second, not samples.
  const decode = decodeText(r);
  if (decode) parts.push(decode);
  else {
    if (st.samplesPerS !== null) parts.push(`${st.samplesPerS.toFixed(st.samplesPerS >= 100 ? 0 : 1)} samples/s`);
    if (st.tokensPerS !== null) parts.push(`${fmtInt(st.tokensPerS)} tokens/s (seq ${st.seqLen})`);
  }
  const host = hostCpuNote(r);
  if (host) parts.push(host);
  const note = stepSourceNote({ steps: st });
  if (note) parts.push(note);
  return parts.join(', ');
}

/**
 * `style`: plain or colour (the caller's choice, as analyze's); `width`: wrap the findings' prose to the terminal's
 * columns (0: lines whole).
 */
export function renderDoctorText(r: DoctorReport, style: Style = PLAIN, width = 0): string {
  const out: string[] = [];
  const e = r.environment;
  out.push(`gpuwise doctor: ${r.run.command.join(' ')}`);
  out.push(`Outcome: ${r.run.outcomeText}`);
  out.push(`Run directory: ${r.run.runDir}`);
  out.push('');
  if (r.pace)
    out.push(
      ...planFirstLines({
        plan: r.pace.plan,
        findings: r.findings,
        stepName: RUN_STEP_NAME,
        measuredHere: r.measuredHere,
        from: 'run',
      }).map((l, i) => (i === 0 ? style.bold(l) : l)),
      '',
    );
  out.push('Environment');
  if (e.probeSilent) out.push(`  ${probeSilentText(e)}`);
  else {
    out.push(
      `  Python ${e.python ?? '?'}, torch ${e.torch ?? '?'}, CUDA ${e.cuda ?? 'none'}${e.cudnn ? `, cuDNN ${e.cudnn}` : ''}${e.driver ? `, driver ${e.driver}` : ''}, host ${e.hostname ?? '?'}`,
    );
    if (e.worldSize !== null) out.push(`  world size ${e.worldSize}`);
    for (const d of e.devices) out.push(`  cuda:${d.index} ${d.name} (${fmtGpuMemory(d.totalMemoryBytes)}, sm ${d.capability})`);
    if (e.devices.length === 0) out.push('  no CUDA device in use: CPU run');
  }
  if (r.model) {
    const m = r.model;
    const dtypes = new Map<string, number>();
    for (const mod of m.modules) for (const [d, n] of Object.entries(mod.dtypes)) dtypes.set(d, (dtypes.get(d) ?? 0) + n);
    const dt = [...dtypes].map(([d, n]) => `${d} ${fmtPct(n / Math.max(1, m.totalParamCount))}`).join(', ');
    const batch = batchDimText(m);
    out.push(
      `  model ${m.name}: ${fmtInt(m.paramCount)} trainable parameters (${dt}); ${m.optimizer ? `optimizer ${m.optimizer.class}, state ${fmtBytes(m.optimizer.stateBytes)}` : 'no optimizer'}${batch ? `; ${batch}` : ''}`,
    );
  }
  const planLine = r.planModel ? planModelLine(r) : null;
  if (planLine) out.push(`  ${planLine}`);
  for (const r0 of r.ranks) {
    out.push('');
    out.push(rankLabel(r0));
    out.push(`  steps: ${stepLine(r0)}`);
    if (r0.steps.dataWaitShare !== null) out.push(`  DataLoader wait: ${fmtPct(r0.steps.dataWaitShare)} of step time`);
    const stalls = stallNote(r0);
    if (stalls) out.push(`  stalls: ${stalls}`);
    const a = r0.allocator;
    if (a) {
      out.push(
        `  memory (cuda:${a.device}): allocated ${fmtBytes(a.allocatedBytes)} (peak ${fmtBytes(a.peakAllocatedBytes)}), reserved ${fmtBytes(a.reservedBytes)} (peak ${fmtBytes(a.peakReservedBytes)}), ${a.allocRetries} allocation retries, ${a.ooms} OOMs`,
      );
      if (r0.nvmlUsedBytes !== null && r0.nonAllocatorBytes !== null)
        out.push(
          `  seen by NVML: reserved ${fmtBytes(a.peakReservedBytes)} + CUDA context and other ${fmtBytes(Math.max(0, r0.nonAllocatorBytes))} = ${fmtBytes(r0.nvmlUsedBytes)}`,
        );
    }
    if (r0.oom)
      out.push(
        `  OUT OF MEMORY in step ${r0.oom.step}: asked ${fmtBytes(r0.oom.allocBytes)} with ${fmtBytes(r0.oom.deviceFreeBytes)} free${r0.oom.snapshot ? `; snapshot ${r0.oom.snapshot}` : ''}`,
      );
    if (r0.exception)
      out.push(`  exception ${exceptionWhen(r0.exception.step)}: ${r0.exception.name}: ${r0.exception.message.split('\n')[0] ?? ''}`);
  }
  const dt = distributedTable(r);
  if (dt) {
    out.push('');
    out.push(`Ranks compared: ${dt.summary}`);
    const widths = dt.head.map((h, i) => Math.max(h.length, ...dt.rows.map((row) => (row[i] ?? '').length)));
    const line = (cells: string[]) =>
      `  ${cells
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}`;
    out.push(line(dt.head));
    for (const row of dt.rows) out.push(line(row));
    for (const w of dt.why) out.push(`  ${w}`);
  }
  const hl = hangLines(r);
  if (hl) {
    out.push('');
    out.push(hl.head);
    for (const l of hl.ranks) out.push(`  ${l}`);
  }
  if (r.gpus) {
    out.push('');
    out.push('GPUs (sampled every second)');
    const procRows = gpuProcessRows(r);
    for (const g of r.gpus) {
      out.push(
        `  GPU ${g.index} ${g.name}: max used ${g.maxUsedBytes === null ? 'n/a' : fmtBytes(g.maxUsedBytes)}${g.totalBytes ? ` of ${fmtGpuMemory(g.totalBytes)}` : ''}, utilisation mean ${g.meanUtilizationPercent === null ? 'n/a' : `${g.meanUtilizationPercent.toFixed(0)}%`} (max ${g.maxUtilizationPercent ?? 'n/a'}%), ${g.samples} samples`,
      );
      // one line per process seen on it: who, how long, memory peak/mean, SM share, samples with work
      for (const [gi, who, present, peak, mean, sm, work] of procRows)
        if (gi === String(g.index))
          out.push(`    ${who}: ${present}, memory peak ${peak} (mean ${mean}), SM share mean ${sm}, running work in ${work}`);
    }
  } else if (r.gpuUnavailableReason) {
    out.push('');
    out.push(`GPUs: no samples (${r.gpuUnavailableReason})`);
  }
  out.push('');
  out.push('Captured window');
  if (r.profile.traces.length === 0) out.push('  no profiler trace (the run ended before the profiled steps, or profiling was off)');
  for (const t of r.profile.traces) {
    out.push(`  trace ${t.path}${t.error ? `: not analysed (${t.error})` : ''}`);
    const mf = t.modelFlops;
    if (mf)
      out.push(
        `  model FLOPs ${mfuText(mf, "on the run's step")} (${flopsSplit(mf)} a step${flopsLeftOut(mf) ? `; ${flopsLeftOut(mf)}` : ''})`,
      );
  }
  for (const s of r.profile.snapshots)
    out.push(
      `  ${s.kind === 'oom' ? 'out-of-memory snapshot' : 'memory snapshot'} ${s.path}${s.error ? `: not analysed (${s.error})` : ''}`,
    );
  if (r.whatIfs.length > 0 || r.whatIfProblem !== null) {
    out.push('');
    out.push('What if (estimates)');
    const c = r.whatIfBasis?.calibration;
    const su = r.whatIfBasis?.setup;
    if (su && su.microBatch !== null)
      out.push(
        `  run: batch ${su.microBatch}${su.gradAccum > 1 ? ` x ${su.gradAccum} accumulation` : ''}${su.seq !== null ? `, seq ${su.seq}` : ''}, ${su.precision ?? 'precision ?'}, ${su.optimizerClass ?? 'no optimizer'}${su.checkpointing !== 'none' ? ', checkpointing' : ''}, ${
          // A CPU run has no GPU to count (issue 47 item 4: "1 GPU(s) of 0 visible").
          // Ranks are not GPUs: two gloo ranks on one GPU read "2 GPU(s) of 1 visible".
          su.visibleGpus === 0
            ? 'on the CPU (no GPU visible)'
            : su.worldSize > 1
              ? `${su.worldSize} ranks, ${su.visibleGpus} GPU(s) visible to each`
              : `1 GPU of ${su.visibleGpus} visible`
        }`,
      );
    if (c) out.push(`  calibration: ${c.text}`);
    if (r.whatIfProblem) out.push(`  none: ${r.whatIfProblem}`);
    for (const w of r.whatIfs) out.push(`  - ${w.title}${w.basis === 'planner' ? ' (planner only)' : ''}`);
    for (const fact of setupFacts(r)) out.push(`  ${fact}`);
    for (const g of setupGuesses(r)) out.push(`  ${g}`);
  }
  out.push('');
  out.push('Findings');
  if (r.findings.length === 0) out.push('  none');
  r.findings.forEach((f, i) => {
    out.push(...(i === 0 ? [] : ['']), ...findingLines(f, style, i, width, inPlanText(r.pace?.plan, f)));
  });
  if (r.notes.length) {
    out.push('');
    out.push('Notes');
    for (const n of r.notes) out.push(`  - ${n}`);
  }
  // The report ends with what sets the pace, stage by stage (the plan opened it).
  if (r.pace) {
    out.push('');
    out.push(`What sets the pace: ${paceHeadline(r.pace, r.ranks.length)}`);
    for (const [what, time, how, evidence] of paceRows(r.pace)) out.push(`  ${what}: ${time} (${how}): ${evidence}`);
  }
  return `${out.join('\n')}\n`;
}
