/**
 * bf16 weights for a generation loop (advice/bf16Weights.ts): each GEMM costed as a fixed cost plus its bytes over the
 * bandwidth, the line fitted on the trace's own GEMMs. Checked on a real H200 decode: Hugging Face GPT-2 generating in
 * bf16 at batch 1 (examples/levers/runs/h200/hf_generate), five GEMM shapes from 1.2 to 77 MB a call.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bf16WeightsEffect, fitGemmLine, gemmBytes } from '../../src/advice/bf16Weights.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { REPO } from '../doctor/helpers.js';

let decode: TraceMetrics;
beforeAll(async () => {
  decode = analyzeTrace(await loadTrace(join(REPO, 'examples', 'levers', 'runs', 'h200', 'hf_generate', 'trace-pid10346.json.gz')));
});

describe('the GEMM line of a decode step', () => {
  it('is fitted on the trace: a few microseconds a call plus the bytes at less than the H200 peak of 4.8 TB/s', () => {
    const line = fitGemmLine(decode)!;
    expect(line.shapes).toBe(decode.gemmShapes.length);
    expect(line.fixedNs).toBeGreaterThan(1_000);
    expect(line.fixedNs).toBeLessThan(8_000);
    const tbPerS = 1 / line.nsPerByte / 1e3;
    expect(tbPerS).toBeGreaterThan(1.5);
    expect(tbPerS).toBeLessThan(4.8);
  });

  it("gives each shape's time within 25% and the window's GEMM time within 5%", () => {
    const line = fitGemmLine(decode)!;
    let measured = 0;
    let modelled = 0;
    for (const g of decode.gemmShapes) {
      const perCall = g.gpuNs / g.calls;
      const predicted = line.fixedNs + line.nsPerByte * gemmBytes(g, 2);
      expect(Math.abs(predicted / perCall - 1), `${g.m}x${g.n}x${g.k}`).toBeLessThan(0.25);
      measured += g.gpuNs;
      modelled += predicted * g.calls;
    }
    expect(Math.abs(modelled / measured - 1)).toBeLessThan(0.05);
  });

  it('leaves a bf16 decode alone: no fp32 GEMM, no effect', () => {
    expect(bf16WeightsEffect(decode)).toBeNull();
  });

  it('on fp32 weights following the same line, saves half the bytes term of each call and none of its fixed cost', () => {
    const line = fitGemmLine(decode)!;
    // The same decode with fp32 weights: each call's bytes doubled on the measured line.
    const fp32 = {
      ...decode,
      gemmShapes: decode.gemmShapes.map((g) => ({
        ...g,
        dtype: 'float',
        gpuNs: g.calls * (line.fixedNs + line.nsPerByte * gemmBytes(g, 4)),
      })),
    };
    const effect = bf16WeightsEffect(fp32)!;
    const n = Math.max(1, decode.steps.length);
    const bytesTermNs = fp32.gemmShapes.reduce((a, g) => a + g.calls * line.nsPerByte * gemmBytes(g, 4), 0) / n;
    const fixedNs = fp32.gemmShapes.reduce((a, g) => a + g.calls * line.fixedNs, 0) / n;
    expect(effect.memoryBoundNs).toBeCloseTo(effect.fp32GemmNs, 0);
    expect(effect.fp32GemmNs).toBeCloseTo(bytesTermNs + fixedNs, -1);
    expect(effect.savedNs / (bytesTermNs / 2)).toBeCloseTo(1, 2);
    // GPT-2's small layers: far less than the half that "half the bytes" would suggest.
    expect(effect.savedNs / effect.fp32GemmNs).toBeLessThan(0.4);
    expect(effect.ops).toHaveLength(1);
    expect(effect.ops[0]).toMatchObject({ kind: 'gpu', work: 'fp32-matmul', ns: effect.fp32GemmNs });
    expect((effect.ops[0] as { factor: number }).factor).toBeCloseTo(1 - effect.savedNs / effect.fp32GemmNs, 9);
  });
});
