/**
 * Model FLOPs of convolutional nets: the convolutions cuDNN ran, counted from the shapes and arguments the profiler
 * recorded, checked against ResNet-50's FLOPs worked out here from torchvision's architecture (not from the code
 * under test) on the real H100/H200 traces of examples/.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lookupGpu } from '../../src/gpus/catalogue.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { convFlops } from '../../src/trace/convFlops.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { REPO } from '../doctor/helpers.js';
import { TRACES } from '../helpers/fixtures.js';

/**
 * torchvision's resnet50 (ResNet v1.5: the stride on the 3x3 conv of a bottleneck), 224 x 224: every convolution's
 * multiply-adds per image, and the first conv's (whose input needs no gradient in training).
 */
function resnet50Macs(): { total: number; stem: number; convs: number } {
  let total = 0;
  let convs = 0;
  const conv = (cin: number, cout: number, k: number, hOut: number) => {
    total += cin * cout * k * k * hOut * hOut;
    convs++;
  };
  conv(3, 64, 7, 112);
  const stem = total;
  let h = 56; // after the 3x3 max pool, stride 2
  let cin = 64;
  for (const [blocks, width, stride] of [
    [3, 64, 1],
    [4, 128, 2],
    [6, 256, 2],
    [3, 512, 2],
  ] as const) {
    for (let b = 0; b < blocks; b++) {
      const s = b === 0 ? stride : 1;
      const hOut = h / s;
      conv(cin, width, 1, h); // 1x1 reduce
      conv(width, width, 3, hOut); // 3x3, strided
      conv(width, width * 4, 1, hOut); // 1x1 expand
      if (b === 0) conv(cin, width * 4, 1, hOut); // downsample branch
      cin = width * 4;
      h = hOut;
    }
  }
  return { total, stem, convs };
}

const RUNS = join(REPO, 'examples', 'realworld', 'runs');
async function metricsAt(path: string): Promise<TraceMetrics> {
  return analyzeTrace(await loadTrace(path));
}

describe('ResNet-50 FLOPs from its architecture', () => {
  it('matches the published figure: 4.1 GMACs a 224 x 224 image, 53 convolutions', () => {
    const r = resnet50Macs();
    expect(r.convs).toBe(53);
    // torchvision's table: 4.09 GFLOPS (multiply-adds) with the 2048 x 1000 fully connected layer.
    expect((r.total + 2048 * 1000) / 1e9).toBeCloseTo(4.09, 2);
  });
});

describe('convolution FLOPs on real traces', () => {
  const { total, stem } = resnet50Macs();
  const forward = (batch: number) => 2 * batch * total;
  // Training: the forward, the weight gradient of every conv, and the input gradient of every conv but the first.
  const training = (batch: number) => 2 * batch * (3 * total - stem);

  it('eval_inference (ResNet-50 inference, batch 128, fp32 on an H100): the forward only, TF32 peak', async () => {
    const m = await metricsAt(join(RUNS, 'eval_inference', 'trace-pid634.json.gz'));
    const f = m.modelFlops!;
    expect(f.convFlopsPerStep).toBe(forward(128));
    // The fc layer: 128 x 2048 x 1000 multiply-adds, a GEMM with shapes.
    expect(f.gemmFlopsPerStep).toBe(2 * 128 * 2048 * 1000);
    expect(f.peakPrecision).toBe('tf32');
    expect(f.peakTflops).toBe(lookupGpu('H100 SXM')!.tf32Tflops);
    expect(f.coveredShare).toBeGreaterThan(0.95);
    expect(f.mfu).toBeCloseTo(f.flopsPerStep / m.stepTime.medianNs / 1e3 / f.peakTflops, 9);
  });

  for (const [run, file] of [
    ['lightning_resnet', 'trace-pid1052.json.gz'],
    ['dataparallel_resnet', 'trace-pid636.json.gz'],
  ] as const)
    it(`${run} (ResNet-50 training, batch 128, fp32): forward + both gradients, about 3x the forward`, async () => {
      const f = (await metricsAt(join(RUNS, run, file))).modelFlops!;
      expect(f.convFlopsPerStep).toBe(training(128));
      expect(f.convFlopsPerStep / forward(128)).toBeGreaterThan(2.9);
      expect(f.convFlopsPerStep / forward(128)).toBeLessThan(3);
      // forward fc 1 pass, backward 2 (input and weight gradients)
      expect(f.gemmFlopsPerStep).toBe(3 * 2 * 128 * 2048 * 1000);
      expect(f.peakPrecision).toBe('tf32');
      expect(f.coveredShare).toBeGreaterThan(0.95);
    });

  it('bf16 channels_last training on an H200 (resnet_tuned, batch 64): the bf16 dense peak', async () => {
    const f = (await metricsAt(`${TRACES}resnet_tuned.trace.json.gz`)).modelFlops!;
    expect(f.convFlopsPerStep).toBe(training(64));
    expect(f.peakPrecision).toBe('bf16');
    expect(f.peakTflops).toBe(lookupGpu('H200')!.bf16Tflops);
  });

  it('a transformer trace has no convolution FLOPs', async () => {
    const f = (await metricsAt(`${TRACES}scenarios/gpt2_fusion.trace.json.gz`)).modelFlops!;
    expect(f.convFlopsPerStep).toBe(0);
    // its FLOPs are its GEMMs' and its fused attention's (SDPA)
    expect(f.gemmFlopsPerStep + f.fusedAttentionFlopsPerStep).toBe(f.flopsPerStep);
  });
});

describe('convFlops', () => {
  it('counts strided, padded, dilated and grouped convolutions from their output positions', () => {
    // ResNet's stem: 128 x 3 x 224 x 224, 64 x 3 x 7 x 7, padding 3, stride 2 -> 112 x 112 outputs.
    expect(convFlops('aten::cudnn_convolution', [[128, 3, 224, 224], [64, 3, 7, 7]], ['', '', '[3, 3]', '[2, 2]', '[1, 1]', '1'])).toBe(
      2 * 128 * 64 * 3 * 49 * 112 * 112,
    );
    // Depthwise 3x3 (groups 32, weight 32 x 1 x 3 x 3), dilation 2, padding 2: 20 x 20 stays 20 x 20.
    expect(convFlops('aten::cudnn_convolution', [[8, 32, 20, 20], [32, 1, 3, 3]], ['', '', '[2, 2]', '[1, 1]', '[2, 2]', '32'])).toBe(
      2 * 8 * 32 * 9 * 400,
    );
    // 1-d and 3-d shapes count the same way.
    expect(convFlops('aten::cudnn_convolution', [[2, 4, 10], [6, 4, 3]], ['', '', '[0]', '[1]', '[1]', '1'])).toBe(2 * 2 * 6 * 4 * 3 * 8);
    expect(convFlops('aten::cudnn_convolution', [[1, 2, 4, 4, 4], [3, 2, 1, 1, 1]], ['', '', '[0, 0, 0]', '[2, 2, 2]', '[1, 1, 1]', '1'])).toBe(
      2 * 3 * 2 * 8,
    );
  });

  it('counts the backward passes its output mask asks for, and a transposed convolution over its input positions', () => {
    const args = (mask: string, transposed = 'False') => ['', '', '', '[0]', '[1, 1]', '[0, 0]', '[1, 1]', transposed, '[0, 0]', '1', mask];
    const dims = [[128, 2048, 7, 7], [128, 512, 7, 7], [2048, 512, 1, 1]];
    const pass = 2 * 128 * 2048 * 512 * 49;
    expect(convFlops('aten::convolution_backward', dims, args('[True, True, False]'))).toBe(2 * pass);
    expect(convFlops('aten::convolution_backward', dims, args('[False, True, True]'))).toBe(pass);
    // Transposed: grad_output 4 x 8 x 16 x 16, input 4 x 16 x 8 x 8, weight 16 x 8 x 2 x 2 (stride 2).
    expect(
      convFlops('aten::convolution_backward', [[4, 8, 16, 16], [4, 16, 8, 8], [16, 8, 2, 2]], args('[True, True, False]', 'True')),
    ).toBe(2 * 2 * 4 * 16 * 8 * 4 * 64);
    expect(convFlops('aten::cudnn_convolution_transpose', [[4, 16, 8, 8], [16, 8, 2, 2]], null)).toBe(2 * 4 * 16 * 8 * 4 * 64);
  });

  it('is null when the trace lacks what the count needs (no Concrete Inputs before torch 2.1, odd text)', () => {
    expect(convFlops('aten::cudnn_convolution', [[1, 3, 8, 8], [4, 3, 3, 3]], null)).toBeNull();
    expect(convFlops('aten::cudnn_convolution', [[1, 3, 8, 8], [4, 3, 3, 3]], ['', '', '[1, 1]', '[0, 0]', '[1, 1]', '1'])).toBeNull();
    expect(convFlops('aten::cudnn_convolution', [[1, 3, 8, 8], [4, 3, 3, 3]], ['', '', '1', '[1, 1]', '[1, 1]', '1'])).toBeNull();
    expect(convFlops('aten::cudnn_convolution', [[1, 3, 2, 2], [4, 3, 5, 5]], ['', '', '[0, 0]', '[1, 1]', '[1, 1]', '1'])).toBeNull();
    expect(convFlops('aten::convolution_backward', [[1, 4, 6, 6], [1, 3, 8, 8], [4, 3, 3, 3]], null)).toBeNull();
    expect(convFlops('aten::conv2d', [[1, 3, 8, 8], [4, 3, 3, 3]], ['', '', '', '[1, 1]', '[0, 0]', '[1, 1]', '1'])).toBeNull();
  });
});
