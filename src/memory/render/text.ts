/** Terminal and Markdown renderings of a memory report (pure: report in, text out). */
import { findingLines, findingMarkdown } from '../../report/findingText.js';
import { PLAIN, type Style } from '../../report/style.js';
import { SOURCE_LINE_WORDS } from '../frames.js';
import type { LiveSet, MemoryReport } from '../report.js';
import { fmtInt, fmtBytes, fmtPct, fmtUs } from '../../util/format.js';

const label = (c: string): string => c.replace('_', ' ');

function since(r: MemoryReport, us: number | null): string {
  return us === null || r.history.firstUs === null ? '' : ` at t=${fmtUs(us - r.history.firstUs)}`;
}

function bar(share: number, width = 24): string {
  const n = Math.round(Math.max(0, Math.min(1, share)) * width);
  return '█'.repeat(n) + '·'.repeat(width - n);
}

function liveLines(live: LiveSet, indent: string): string[] {
  const out: string[] = [];
  for (const c of live.byCategory) {
    const share = live.bytes > 0 ? c.bytes / live.bytes : 0;
    out.push(`${indent}${label(c.category).padEnd(22)}${fmtBytes(c.bytes).padStart(11)} ${fmtPct(share).padStart(4)} ${bar(share)}`);
  }
  if (live.bySource.length > 0) {
    out.push('', `${indent}Largest sources (${SOURCE_LINE_WORDS}):`);
    for (const s of live.bySource.slice(0, 10)) {
      out.push(`${indent}${fmtBytes(s.bytes).padStart(11)}  ${label(s.category).padEnd(20)} ${s.shortSource}${s.function ? ` (${s.function})` : ''}  x${s.allocations}`);
    }
  }
  return out;
}

/**
 * Findings first, in the style of every gpuwise report (report/findingText.ts: numbered, severity in
 * capitals, evidence, fix and code); `width` wraps prose to the terminal (0: no wrapping).
 */
export function renderText(r: MemoryReport, st: Style = PLAIN, width = 0): string {
  const t = r.totals;
  const h = r.history;
  const out: string[] = [];
  out.push(
    `gpuwise memory: ${r.input.path}  (device ${r.device}; ${fmtInt(h.entries)} history entries${h.durationUs !== null ? ` over ${fmtUs(h.durationUs)}` : ''}${r.input.legacy ? '; legacy segment list' : ''})`,
    '',
  );
  if (r.findings.length === 0) out.push('No findings.', '');
  else {
    out.push(st.bold(`Findings (${r.findings.length}, most severe first)`), '');
    r.findings.forEach((f, i) => {
      out.push(...findingLines(f, st, i, width), '');
    });
  }
  const row = (name: string, peak: number | null, end: number | null): string =>
    `  ${name.padEnd(26)}${(peak === null ? '' : fmtBytes(peak)).padStart(12)}${(end === null ? '' : fmtBytes(end)).padStart(12)}`;
  out.push(`  ${'Totals'.padEnd(26)}${'peak'.padStart(12)}${'end'.padStart(12)}`);
  out.push(row('allocated', t.peakAllocatedBytes, t.finalAllocatedBytes));
  out.push(row('requested', t.peakRequestedBytes, t.finalRequestedBytes));
  out.push(row('reserved', t.peakReservedBytes, t.finalReservedBytes));
  out.push(row('rounding waste', t.roundingWasteAtPeakBytes, t.finalRoundingWasteBytes));
  out.push(row('reserved, not allocated', t.reservedAtPeakAllocatedBytes - t.peakAllocatedBytes, t.finalReservedUnallocatedBytes));
  out.push(row('inactive split blocks', null, t.finalInactiveSplitBytes));
  out.push(row('largest free block', null, t.finalLargestFreeBlockBytes));
  out.push('');
  out.push(`Peak allocated${since(r, t.peakAllocatedAtUs)}: ${fmtBytes(r.peak.bytes)} live in ${r.peak.byCategory.reduce((s, c) => s + c.allocations, 0)} allocations`);
  out.push(...liveLines(r.peak, '  '));
  if (r.oom) {
    const o = r.oom;
    out.push('', `OUT OF MEMORY${since(r, o.timeUs)}${o.count > 1 ? ` (first of ${o.count})` : ''}, during ${o.phase}`);
    out.push(`  requested                 ${fmtBytes(o.requestedBytes).padStart(12)}`);
    out.push(`  allocated                 ${fmtBytes(o.allocatedBytes).padStart(12)}`);
    out.push(`  reserved                  ${fmtBytes(o.reservedBytes).padStart(12)}`);
    out.push(`  cached free (reserved-allocated) ${fmtBytes(o.reservedUnallocatedBytes).padStart(5)}`);
    if (o.largestFreeBlockBytes !== null) out.push(`  largest cached free block ${fmtBytes(o.largestFreeBlockBytes).padStart(12)}`);
    out.push(`  free on the device        ${(o.deviceFreeBytes === null ? 'unknown' : fmtBytes(o.deviceFreeBytes)).padStart(12)}`);
    out.push('', '  Live at the failure:');
    out.push(...liveLines(o.live, '  '));
  }
  out.push('');
  for (const w of r.warnings) out.push(`warning: ${w}`);
  return `${out.join('\n').trimEnd()}\n`;
}

function mdLive(live: LiveSet): string[] {
  const out = ['| Category | Bytes | Share | Allocations |', '|---|---:|---:|---:|'];
  for (const c of live.byCategory) out.push(`| ${label(c.category)} | ${fmtBytes(c.bytes)} | ${fmtPct(live.bytes > 0 ? c.bytes / live.bytes : 0)} | ${c.allocations} |`);
  if (live.bySource.length > 0) {
    out.push('', '| Source line | Function | Category | Bytes | Allocations |', '|---|---|---|---:|---:|');
    for (const s of live.bySource.slice(0, 10)) out.push(`| \`${s.shortSource}\` | ${s.function ? `\`${s.function}\`` : ''} | ${label(s.category)} | ${fmtBytes(s.bytes)} | ${s.allocations} |`);
  }
  return out;
}

export function renderMarkdown(r: MemoryReport): string {
  const t = r.totals;
  const out: string[] = [`## gpuwise memory: \`${r.input.path}\``, ''];
  out.push(`Device ${r.device}, ${r.history.entries} history entries${r.history.durationUs !== null ? ` over ${fmtUs(r.history.durationUs)}` : ''}.`, '');
  out.push('### Findings', '');
  if (r.findings.length === 0) out.push('None.', '');
  r.findings.forEach((f, i) => {
    out.push(...findingMarkdown(f, i, '####'));
  });

  out.push('| | Peak | End |', '|---|---:|---:|');
  out.push(`| Allocated | ${fmtBytes(t.peakAllocatedBytes)} | ${fmtBytes(t.finalAllocatedBytes)} |`);
  out.push(`| Requested | ${fmtBytes(t.peakRequestedBytes)} | ${fmtBytes(t.finalRequestedBytes)} |`);
  out.push(`| Reserved | ${fmtBytes(t.peakReservedBytes)} | ${fmtBytes(t.finalReservedBytes)} |`);
  out.push(`| Rounding waste | ${fmtBytes(t.roundingWasteAtPeakBytes)} | ${fmtBytes(t.finalRoundingWasteBytes)} |`);
  out.push(`| Largest free block | | ${fmtBytes(t.finalLargestFreeBlockBytes)} |`, '');
  out.push(`### Live at the peak${since(r, t.peakAllocatedAtUs)}: ${fmtBytes(r.peak.bytes)}`, '', ...mdLive(r.peak), '');
  if (r.oom) {
    const o = r.oom;
    out.push(`### Out of memory${since(r, o.timeUs)}, during ${o.phase}`, '');
    out.push(
      `Requested **${fmtBytes(o.requestedBytes)}**; allocated ${fmtBytes(o.allocatedBytes)}, reserved ${fmtBytes(o.reservedBytes)}, cached free ${fmtBytes(o.reservedUnallocatedBytes)}${o.largestFreeBlockBytes !== null ? ` (largest block ${fmtBytes(o.largestFreeBlockBytes)})` : ''}, free on the device ${o.deviceFreeBytes === null ? 'unknown' : fmtBytes(o.deviceFreeBytes)}.`,
      '',
      ...mdLive(o.live),
      '',
    );
  }
  if (r.warnings.length > 0) out.push('', ...r.warnings.map((w) => `> warning: ${w}`));
  return `${out.join('\n')}\n`;
}
