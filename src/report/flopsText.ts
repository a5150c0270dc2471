/** What a model-FLOPs figure counted, in words shared by analyze's and doctor's reports. */
import { catalogueName, lookupGpu } from '../gpus/catalogue.js';
import type { ModelFlops } from '../trace/metrics/types.js';
import { fmtFlops, fmtMs, fmtPct, fmtTflops } from '../util/format.js';

/**
 * "9.10 TFLOP of GEMMs" when only GEMMs were counted, else the parts: "3.11 TFLOP: convolutions 3.11, GEMMs 7.86 GFLOP",
 * "13.07 TFLOP: GEMMs 12.14, fused attention 0.93", "14.00 TFLOP: GEMMs 14.00 (hand-written attention 1.86)".
 */
export function flopsSplit(mf: ModelFlops): string {
  // a part under 0.005 TFLOP in its own unit: "GEMMs 0.00" read as none where 7.86 GFLOP ran (issue 47)
  const t = (x: number) => (x > 0 && x < 5e9 ? fmtFlops(x) : (x / 1e12).toFixed(2));
  // Reports saved before attention was counted lack its fields.
  const fused = mf.fusedAttentionFlopsPerStep ?? 0;
  const handWritten = mf.handWrittenAttentionFlopsPerStep ?? 0;
  if (!(mf.convFlopsPerStep > 0) && !(fused > 0) && !(handWritten > 0)) return `${t(mf.flopsPerStep)} TFLOP of GEMMs`;
  const parts: string[] = [];
  if (mf.convFlopsPerStep > 0) parts.push(`convolutions ${t(mf.convFlopsPerStep)}`);
  parts.push(`GEMMs ${t(mf.gemmFlopsPerStep)}${handWritten > 0 ? ` (hand-written attention ${t(handWritten)})` : ''}`);
  if (fused > 0) parts.push(`fused attention ${t(fused)}`);
  return `${t(mf.flopsPerStep)} TFLOP: ${parts.join(', ')}`;
}

/**
 * What the figure leaves out, or null when nothing: attention kernels that no op gave shapes for (the flash-attn
 * package's). A report saved before attention was counted cannot tell, and says what it said then.
 */
export function flopsLeftOut(mf: ModelFlops): string | null {
  const ns = mf.uncountedAttentionNsPerStep;
  if (ns === undefined) return 'attention kernels without shapes not counted';
  return ns > 0 ? `attention kernels without shapes (${fmtMs(ns)} a step) not counted` : null;
}

/** "2.4 TFLOP/s achieved, MFU 0.5% of the tf32 dense peak 494.7 TFLOP/s of the catalogue's NVIDIA H200 141GB" */
export function mfuText(mf: ModelFlops, achieved = 'achieved'): string {
  return `${fmtTflops(mf.achievedTflops)} TFLOP/s ${achieved}, MFU ${fmtPct(mf.mfu)} of the ${mf.peakPrecision} dense peak ${mf.peakTflops} TFLOP/s of ${catalogueName(mf.gpu)}${halfPeakText(mf)}`;
}

/**
 * Beside an MFU against an fp32 or TF32 peak, the share of the bf16 peak the same work reaches: "51% of the fp32 peak"
 * reads healthy where the tensor cores would do it several times faster (the cold read of issue 47).
 */
function halfPeakText(mf: ModelFlops): string {
  if (mf.peakPrecision !== 'fp32' && mf.peakPrecision !== 'tf32') return '';
  const bf16 = lookupGpu(mf.gpu)?.bf16Tflops;
  return bf16 && bf16 > 0 ? `, ${fmtPct(mf.achievedTflops / bf16)} of its bf16 peak ${bf16} TFLOP/s` : '';
}
