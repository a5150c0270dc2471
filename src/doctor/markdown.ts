/**
 * The doctor report as Markdown (pure): for a pull request, an issue or a notebook. Same sections
 * as the terminal report; the series over time are drawn as one-line sparklines since Markdown has
 * no charts (the HTML page has them).
 */
import { inPlanText, planFirstMarkdown, RUN_STEP_NAME } from '../report/planFirst.js';
import { paceHeadline, paceRows } from '../pace/report.js';
import { SPARK_BARS, fmtBytes, fmtGpuMemory, fmtPct, fmtRate } from '../util/format.js';
import {
  durationText,
  distributedTable,
  decodeText,
  environmentRows,
  hangLines,
  hostCpuNote,
  stallNote,
  fmtBytesOr,
  fmtStepS,
  modelLine,
  nvmlBesideAllocator,
  planModelLine,
  rankLabel,
  rankShort,
  GPU_PROCESS_COLUMNS,
  GPU_PROCESS_NOTE,
  gpuProcessRows,
  setupFacts,
  setupGuesses,
  stepSourceNote,
  exceptionWhen,
} from './renderParts.js';
import { findingMarkdown, mdCode as code } from '../report/findingText.js';
import type { DoctorReport } from './reportTypes.js';
import { whatIfsOf } from './reportCheck.js';

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** A sparkline of at most `width` characters (each the maximum of its bucket); '·' where nothing is known. */
export function sparkline(values: (number | null)[], width = 48, max?: number): string {
  const known = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (known.length === 0) return '';
  const top = max ?? Math.max(...known);
  const buckets = Math.min(width, values.length);
  let out = '';
  for (let b = 0; b < buckets; b++) {
    const from = Math.floor((b * values.length) / buckets);
    const to = Math.max(from + 1, Math.floor(((b + 1) * values.length) / buckets));
    let m: number | null = null;
    for (let i = from; i < to; i++) {
      const v = values[i];
      if (v !== null && v !== undefined && Number.isFinite(v)) m = Math.max(m ?? v, v);
    }
    out += m === null ? '·' : SPARK_BARS[Math.min(SPARK_BARS.length - 1, Math.max(0, Math.round((top > 0 ? m / top : 0) * (SPARK_BARS.length - 1))))];
  }
  return out;
}

export function renderDoctorMarkdown(r: DoctorReport): string {
  const out: string[] = [];
  out.push(`## gpuwise doctor: ${code(r.run.command.join(' '))}`, '');
  out.push(`**Outcome:** ${r.run.outcomeText} · ran ${durationText(r.run.durationS)} · run directory ${code(r.run.runDir)}`, '');
  if (r.pace) out.push(...planFirstMarkdown({ plan: r.pace.plan, findings: r.findings, stepName: RUN_STEP_NAME, measuredHere: r.measuredHere, from: 'run' }), '');

  out.push('### Environment', '', '| | |', '|---|---|');
  for (const [k, v] of environmentRows(r)) out.push(`| ${cell(k)} | ${cell(v)} |`);
  const ml = modelLine(r);
  if (ml) out.push(`| model | ${cell(ml)} |`);
  out.push('');

  if (r.ranks.length) {
    out.push('### Step time', '');
    out.push('| process | steps | measured | median | mean | p90 | min | max | DataLoader wait | samples/s | tokens/s |', '|---|---|---|---|---|---|---|---|---|---|---|');
    for (const x of r.ranks) {
      const s = x.steps;
      const tokens = s.decode?.tokensPerS
        ? `${fmtRate(s.decode.tokensPerS)} generated`
        : s.tokensPerS !== null && s.tokensPerS !== undefined
          ? `${fmtRate(s.tokensPerS)} (seq ${s.seqLen ?? '?'})`
          : 'n/a';
      out.push(
        `| ${cell(rankShort(x))} | ${s.steps} | ${s.measuredSteps} | ${fmtStepS(s.medianS)} | ${fmtStepS(s.meanS)} | ${fmtStepS(s.p90S)} | ${fmtStepS(s.minS)} | ${fmtStepS(s.maxS)} | ${s.dataWaitShare === null ? 'n/a' : fmtPct(s.dataWaitShare)} | ${fmtRate(s.samplesPerS)} | ${tokens} |`,
      );
    }
    out.push('');
    out.push('Statistics leave out the first step (warm-up) and the profiled steps.');
    for (const x of r.ranks) {
      const note = [decodeText(x), stepSourceNote(x), hostCpuNote(x), stallNote(x)].filter((n) => n !== null).join('; ');
      const tl = x.stepTimeline;
      const line = tl && tl.stepTimeS.length > 1 ? sparkline(tl.stepTimeS.slice(1)) : '';
      if (line || note)
        out.push(`- ${rankShort(x)}${line ? `: step time over the run (steps ${tl?.step[1]}..${tl?.step[tl.step.length - 1]}) ${code(line)}` : ''}${note ? ` (${note})` : ''}`);
    }
    out.push('');

    const withMem = r.ranks.filter((x) => x.allocator || x.nvmlUsedBytes !== null);
    if (withMem.length) {
      out.push('### Memory: allocator beside NVML', '');
      out.push('| process | device | allocated (peak) | reserved (peak) | seen by NVML | retries | OOMs |', '|---|---|---|---|---|---|---|');
      for (const x of withMem) {
        const a = x.allocator;
        out.push(
          `| ${cell(rankShort(x))} | ${a ? `cuda:${a.device}` : '?'} | ${a ? `${fmtBytes(a.allocatedBytes)} (${fmtBytes(a.peakAllocatedBytes)})` : 'n/a'} | ${a ? `${fmtBytes(a.reservedBytes)} (${fmtBytes(a.peakReservedBytes)})` : 'n/a'} | ${fmtBytesOr(x.nvmlUsedBytes)} | ${a?.allocRetries ?? 'n/a'} | ${a?.ooms ?? 'n/a'} |`,
        );
      }
      out.push('');
      for (const x of withMem) {
        const line = nvmlBesideAllocator(x);
        if (line) out.push(`- ${rankShort(x)}: ${line}`);
      }
      out.push('');
    }
    for (const x of r.ranks) {
      if (x.oom)
        out.push(
          `**${rankLabel(x)}: out of memory in step ${x.oom.step}**: asked ${fmtBytes(x.oom.allocBytes)} with ${fmtBytes(x.oom.deviceFreeBytes)} free${x.oom.snapshot ? `; snapshot ${code(x.oom.snapshot)}` : ''}`,
          '',
        );
      if (x.exception)
        out.push(`**${rankLabel(x)}: exception ${exceptionWhen(x.exception.step)}**: ${code(`${x.exception.name}: ${x.exception.message.split('\n')[0] ?? ''}`)}`, '');
    }
  }

  const dt = distributedTable(r);
  if (dt) {
    out.push('### Ranks compared', '', dt.summary, '');
    out.push(`| ${dt.head.join(' | ')} |`, `|${dt.head.map(() => '---').join('|')}|`);
    for (const row of dt.rows) out.push(`| ${row.map(cell).join(' | ')} |`);
    out.push('');
    for (const w of dt.why) out.push(`- ${w}`);
    if (dt.why.length) out.push('');
  }
  const hl = hangLines(r);
  if (hl) {
    out.push(`### ${r.run.outcome === 'hung' ? 'Hang' : 'Stalls'}`, '', hl.head, '');
    for (const l of hl.ranks) out.push(`- ${code(l)}`);
    out.push('');
  }

  out.push('### GPUs over time', '');
  if (r.gpus?.length) {
    out.push('| GPU | name | samples | memory used (max) | utilisation mean (max) | memory over time | utilisation over time |', '|---|---|---|---|---|---|---|');
    for (const g of r.gpus) {
      const tl = g.timeline ?? { usedBytes: [], utilizationPercent: [] };
      out.push(
        `| ${g.index} | ${cell(g.name)} | ${g.samples} | ${fmtBytesOr(g.maxUsedBytes)}${g.totalBytes ? ` of ${fmtGpuMemory(g.totalBytes)}` : ''} | ${g.meanUtilizationPercent === null ? 'n/a' : `${g.meanUtilizationPercent.toFixed(0)}%`} (${g.maxUtilizationPercent ?? 'n/a'}%) | ${code(sparkline(tl.usedBytes, 32, g.totalBytes ?? undefined) || '-')} | ${code(sparkline(tl.utilizationPercent, 32, 100) || '-')} |`,
      );
    }
    out.push('', 'Sampled about once a second; memory sparklines are scaled to the GPU\'s total memory, utilisation to 100%.');
    const perRank = r.ranks.filter((x) => (x.nvmlTimeline?.usedBytes.length ?? 0) > 0);
    for (const x of perRank)
      out.push(`- ${rankShort(x)}: GPU memory of its process over time (max ${fmtBytesOr(x.nvmlUsedBytes)}) ${code(sparkline(x.nvmlTimeline.usedBytes, 32))}`);
    out.push('');
    const procRows = gpuProcessRows(r);
    if (procRows.length) {
      out.push('#### Processes on the GPUs', '', `| ${GPU_PROCESS_COLUMNS.join(' | ')} |`, `|${GPU_PROCESS_COLUMNS.map(() => '---').join('|')}|`);
      for (const row of procRows) out.push(`| ${row.map(cell).join(' | ')} |`);
      out.push('', GPU_PROCESS_NOTE, '');
    }
  } else out.push(`No GPU samples${r.gpuUnavailableReason ? ` (${r.gpuUnavailableReason})` : ''}.`, '');

  out.push('### Findings', '');
  if (r.findings.length === 0) out.push('No findings.', '');
  r.findings.forEach((f, i) => {
    out.push(...findingMarkdown(f, i, '####', inPlanText(r.pace?.plan, f)));
  });

  const whatIfs = whatIfsOf(r);
  if (whatIfs.length) {
    out.push('### What-ifs (planner, calibrated on this run)', '');
    for (const w of whatIfs) out.push(`- **${w.title}**: ${w.text}`);
    for (const line of [...setupFacts(r), ...setupGuesses(r)]) out.push(`- _${line}_`);
    out.push('');
  }

  const pl = planModelLine(r);
  if (pl) out.push('### Model', '', pl, '');

  out.push('### Captured window', '');
  const traces = r.profile?.traces ?? [];
  const snaps = r.profile?.snapshots ?? [];
  if (traces.length === 0) out.push('- no profiler trace (the run ended before the profiled steps, or profiling was off)');
  for (const t of traces) out.push(`- trace (rank ${t.rank}) ${code(t.path)}${t.error ? `: not analysed (${t.error})` : ` (\`gpuwise analyze\` reads it)`}`);
  for (const s of snaps)
    out.push(`- ${s.kind === 'oom' ? 'out-of-memory snapshot' : 'memory snapshot'} (rank ${s.rank}) ${code(s.path)}${s.error ? `: not analysed (${s.error})` : ''}`);
  out.push('');

  if (r.notes?.length) {
    out.push('### Notes', '');
    for (const n of r.notes) out.push(`- ${n}`);
    out.push('');
  }
  // The report ends with what sets the pace, stage by stage (the plan opened it).
  if (r.pace) {
    out.push('### What sets the pace', '', paceHeadline(r.pace, r.ranks.length), '', '| stage | per step | how | evidence |', '|---|---|---|---|');
    for (const row of paceRows(r.pace)) out.push(`| ${row.map(cell).join(' | ')} |`);
    out.push('');
  }
  out.push(`<sub>gpuwise ${r.version}, doctor report schema ${r.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
