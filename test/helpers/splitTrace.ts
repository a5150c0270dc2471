/**
 * A model split over two GPUs in one process, drawn by hand (test/advice/modelParallel.test.ts, test/doctor): steps of
 * 100 ms, forward on GPU 0 then GPU 1, backward back, the optimizer on both at once; or its pipelined twin.
 */
import { SynthTrace } from './synth.js';

const MS = 1000;
/** Two GPUs, `steps` steps of 100 ms: forward on GPU 0 then GPU 1, backward back, the optimizer on both at once. */
export function splitTrace(opts: { pipelined: boolean; dataParallel?: boolean; steps?: number }): SynthTrace {
  const t = new SynthTrace();
  t.meta.deviceProperties = [0, 1].map((id) => ({ id, name: 'NVIDIA H200', totalGlobalMem: 150e9, computeMajor: 9, computeMinor: 0, numSms: 132 }));
  const peer = (t0: number, from: number, to: number, dur: number, launchTs: number) => {
    // Kineto's peer copy: no `device` arg, the device in pid (and inDevice).
    t.events.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaMemcpyAsync', pid: 100, tid: 100, ts: launchTs, dur: 4, args: { correlation: 90000 + t.events.length } });
    const corr = t.events[t.events.length - 1]!.args!.correlation;
    t.events.push({
      ph: 'X',
      cat: 'gpu_memcpy',
      name: 'Memcpy PtoP (Device -> Device)',
      pid: from,
      tid: 7,
      ts: t0,
      dur,
      args: { fromDevice: from, inDevice: from, toDevice: to, stream: 7, correlation: corr, bytes: 16 << 20 },
    });
  };
  for (let i = 0; i < (opts.steps ?? 3); i++) {
    const T = 1_000_000 + i * 100 * MS;
    t.step(i + 1, T, 63 * MS);
    if (opts.dataParallel) t.cpu('DataParallel.forward', T + 1, 20 * MS, 'user_annotation');
    const k = (dev: number, ts: number, dur: number, name = 'sm90_xmma_gemm_bf16bf16_bf16f32') => t.kernel(name, T + 10, ts, dur, { device: dev });
    if (!opts.pipelined) {
      for (let j = 0; j < 5; j++) k(0, T + 1 * MS + j * 2 * MS, 2 * MS);
      peer(T + 11 * MS, 0, 1, 0.5 * MS, T + 20);
      for (let j = 0; j < 5; j++) k(1, T + 11.5 * MS + j * 2 * MS, 2 * MS);
      for (let j = 0; j < 5; j++) k(1, T + 21.5 * MS + j * 4 * MS, 4 * MS);
      peer(T + 41.5 * MS, 1, 0, 0.5 * MS, T + 30);
      for (let j = 0; j < 5; j++) k(0, T + 42 * MS + j * 4 * MS, 4 * MS);
    } else {
      // 8 micro-batches: GPU 1 runs micro-batch j while GPU 0 runs j+1 (forward), and the reverse in backward.
      for (let j = 0; j < 8; j++) {
        k(0, T + 1 * MS + j * 1.25 * MS, 1.25 * MS);
        k(1, T + 2.25 * MS + j * 1.25 * MS, 1.25 * MS);
        peer(T + 2.25 * MS + j * 1.25 * MS, 0, 1, 0.05 * MS, T + 20);
      }
      for (let j = 0; j < 8; j++) {
        k(1, T + 12 * MS + j * 2.5 * MS, 2.5 * MS);
        k(0, T + 14.5 * MS + j * 2.5 * MS, 2.5 * MS);
      }
    }
    const optAt = opts.pipelined ? 34.5 * MS : 62 * MS;
    k(0, T + optAt, 2 * MS, 'multi_tensor_apply_kernel');
    k(1, T + optAt, 2 * MS, 'multi_tensor_apply_kernel');
  }
  return t;
}

