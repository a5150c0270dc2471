/** What a model-FLOPs figure counted, in words shared by analyze's and doctor's reports. */
import { catalogueName } from '../gpus/catalogue.js';
import type { ModelFlops } from '../trace/metrics/types.js';
import { fmtPct, fmtTflops } from '../util/format.js';

/** "3.11 TFLOP (convolutions 3.11, GEMMs 0.00)", or "9.10 TFLOP of GEMMs" when only GEMMs were counted. */
export function flopsSplit(mf: ModelFlops): string {
  const t = (x: number) => (x / 1e12).toFixed(2);
  if (!(mf.convFlopsPerStep > 0)) return `${t(mf.flopsPerStep)} TFLOP of GEMMs`;
  return `${t(mf.flopsPerStep)} TFLOP: convolutions ${t(mf.convFlopsPerStep)}, GEMMs ${t(mf.gemmFlopsPerStep)}`;
}

/** "2.4 TFLOP/s achieved, MFU 0.5% of the tf32 dense peak 494.7 TFLOP/s of the catalogue's NVIDIA H200 141GB" */
export function mfuText(mf: ModelFlops, achieved = 'achieved'): string {
  return `${fmtTflops(mf.achievedTflops)} TFLOP/s ${achieved}, MFU ${fmtPct(mf.mfu)} of the ${mf.peakPrecision} dense peak ${mf.peakTflops} TFLOP/s of ${catalogueName(mf.gpu)}`;
}
