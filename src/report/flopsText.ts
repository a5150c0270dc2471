/** What a model-FLOPs figure counted, in words shared by analyze's and doctor's reports. */
import type { ModelFlops } from '../trace/metrics/types.js';

/** "3.11 TFLOP (convolutions 3.11, GEMMs 0.00)", or "9.10 TFLOP of GEMMs" when only GEMMs were counted. */
export function flopsSplit(mf: ModelFlops): string {
  const t = (x: number) => (x / 1e12).toFixed(2);
  if (!(mf.convFlopsPerStep > 0)) return `${t(mf.flopsPerStep)} TFLOP of GEMMs`;
  return `${t(mf.flopsPerStep)} TFLOP: convolutions ${t(mf.convFlopsPerStep)}, GEMMs ${t(mf.gemmFlopsPerStep)}`;
}
