/**
 * A real trace with its attention written out by hand, until a GPU run records one (examples/levers/gpt_attention.py
 * in the corpus). examples/traces/gpt2_amp (H200, GPT-2 124M, bf16 autocast, 16 x 1024 tokens, 12 layers, 12 heads of
 * 64) runs cuDNN's fused SDPA kernels; here each fused forward and backward kernel, and the SDPA CPU ops, are replaced
 * by what `att = (q @ k.transpose(-2, -1)) * scale; att = att.masked_fill(mask == 0, -inf); y = softmax(att) @ v`
 * makes on CUDA under bf16 autocast (dropout 0 launches nothing):
 *   forward:  bmm [192,1024,64]x[192,64,1024] (cuBLAS), mul by the scale, eq on the [1,1,T,T] mask, masked_fill,
 *             a cast to fp32 (autocast runs softmax in fp32), softmax_warp_forward, a cast to bf16, v made contiguous,
 *             bmm [192,1024,1024]x[192,1024,64];
 *   backward: bmm dP = dY·Vᵀ, bmm dV = Pᵀ·dY, a cast to fp32, softmax_warp_backward, a cast to bf16, masked_fill of
 *             the gradient, mul by the scale, bmm dQ = dS·K, bmm dKᵀ = Qᵀ·dS,
 * each kernel with torch's kernel name, its CPU op (the matmuls with their recorded shapes and dtype) and its launch.
 * Durations are estimates for an H200: each elementwise kernel moves its score matrices (192 x 1024 x 1024: 403 MB in
 * bf16, 805 MB in fp32) at 3.5 TB/s; a matmul does its 25.8 GFLOP and writes or reads a bf16 score matrix in 130-140
 * us. Later GPU work is shifted by the extra time, so the steps grow as they would.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { type TraceEventJson, tracePath } from './fixtures.js';

type Ev = TraceEventJson;

const BF16 = 'c10::BFloat16';
const GEMM = 'nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNN';
const MUL =
  'void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)';
const EQ =
  'void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<float, float, bool, at::native::(anonymous namespace)::CompareEqFunctor<float> >, std::array<char*, 2ul> >(int, at::native::BUnaryFunctor<float, float, bool, at::native::(anonymous namespace)::CompareEqFunctor<float> >, std::array<char*, 2ul>)';
const MASKED_FILL =
  'void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16, bool)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16, bool)#1} const&)::{lambda(int)#1})';
const TO_FLOAT =
  'void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)';
const TO_BF16 =
  'void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)';
const CONTIGUOUS =
  'void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})';
const SOFTMAX = 'void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, bool const*, int, bool)';
const SOFTMAX_BACKWARD = 'void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, false, false>(float*, float const*, float const*, int, int, int, bool const*)';

/** One kernel of the written-out attention: its CPU op (with shapes for the matmuls), its name, its duration in us. */
interface Launch {
  op: string;
  dims?: number[][];
  kernel: string;
  us: number;
}

const BH = 16 * 12;
const T = 1024;
const D = 64;
const SCORES = [BH, T, D];
const KEYS_T = [BH, D, T];
const PROBS = [BH, T, T];
const VALUES = [BH, T, D];

const FORWARD: Launch[] = [
  { op: 'aten::bmm', dims: [SCORES, KEYS_T], kernel: GEMM, us: 140 },
  { op: 'aten::mul', kernel: MUL, us: 230 },
  { op: 'aten::eq', kernel: EQ, us: 4 },
  { op: 'aten::masked_fill', kernel: MASKED_FILL, us: 240 },
  { op: 'aten::_to_copy', kernel: TO_FLOAT, us: 345 },
  { op: 'aten::_softmax', kernel: SOFTMAX, us: 460 },
  { op: 'aten::_to_copy', kernel: TO_BF16, us: 345 },
  { op: 'aten::clone', kernel: CONTIGUOUS, us: 15 },
  { op: 'aten::bmm', dims: [PROBS, VALUES], kernel: GEMM, us: 130 },
];

const BACKWARD: Launch[] = [
  { op: 'aten::bmm', dims: [SCORES, KEYS_T], kernel: GEMM, us: 140 },
  { op: 'aten::bmm', dims: [PROBS, VALUES], kernel: GEMM, us: 130 },
  { op: 'aten::_to_copy', kernel: TO_FLOAT, us: 345 },
  { op: 'aten::_softmax_backward_data', kernel: SOFTMAX_BACKWARD, us: 690 },
  { op: 'aten::_to_copy', kernel: TO_BF16, us: 345 },
  { op: 'aten::masked_fill', kernel: MASKED_FILL, us: 240 },
  { op: 'aten::mul', kernel: MUL, us: 230 },
  { op: 'aten::bmm', dims: [PROBS, VALUES], kernel: GEMM, us: 130 },
  { op: 'aten::bmm', dims: [KEYS_T, PROBS], kernel: GEMM, us: 130 },
];

const SDPA_CPU = /scaled_dot_product|cudnn_attention|ScaledDotProduct/;
const GPU_CATS = new Set(['kernel', 'gpu_memcpy', 'gpu_memset']);

/**
 * gpt2_amp's trace text with its attention written out. `mathFallback`: the forward's SDPA op is kept, renamed
 * `aten::_scaled_dot_product_attention_math` (SDPA ran, but on its math path: the same kernels).
 */
export function handWrittenAttentionTrace(opts: { mathFallback?: boolean } = {}): string {
  const t = JSON.parse(gunzipSync(readFileSync(tracePath('gpt2_amp'))).toString('utf8')) as { traceEvents: Ev[] };
  const launches = new Map<unknown, Ev>();
  for (const e of t.traceEvents) if (e.cat === 'cuda_runtime' || e.cat === 'cuda_driver') launches.set(e.args?.correlation, e);
  const fusedLaunches = new Set(t.traceEvents.filter((e) => e.cat === 'kernel' && /cudnn_generated.*sdpa/.test(e.name ?? '')).map((e) => e.args?.correlation));
  const out: Ev[] = [];
  for (const e of t.traceEvents) {
    if (GPU_CATS.has(e.cat ?? '')) continue; // placed below, shifted
    if ((e.cat === 'cuda_runtime' || e.cat === 'cuda_driver') && fusedLaunches.has(e.args?.correlation)) continue;
    if (e.cat === 'cpu_op' && SDPA_CPU.test(e.name ?? '')) {
      if (opts.mathFallback && e.name === 'aten::_scaled_dot_product_cudnn_attention') out.push({ ...e, name: 'aten::_scaled_dot_product_attention_math' });
      continue;
    }
    out.push(e);
  }
  const gpu = t.traceEvents.filter((e) => GPU_CATS.has(e.cat ?? '')).sort((a, b) => a.ts! - b.ts!);
  let shiftUs = 0;
  let corr = 10_000_000;
  let ext = 1_000_000;
  for (const e of gpu) {
    const name = e.name ?? '';
    if (e.cat !== 'kernel' || !/cudnn_generated.*sdpa/.test(name)) {
      out.push({ ...e, ts: e.ts! + shiftUs });
      continue;
    }
    const launch = launches.get(e.args?.correlation);
    const seq = /bprop/.test(name) ? BACKWARD : FORWARD;
    let at = e.ts! + shiftUs;
    for (const [i, l] of seq.entries()) {
      const c = corr++;
      if (launch) {
        const x = ext++;
        const cpuTs = launch.ts! + i * 0.01;
        const args: Record<string, unknown> = { 'External id': x };
        if (l.dims) Object.assign(args, { 'Input Dims': l.dims, 'Input type': [BF16, BF16], 'Concrete Inputs': ['', ''] });
        out.push({ ph: 'X', cat: 'cpu_op', name: l.op, pid: launch.pid, tid: launch.tid, ts: cpuTs, dur: 0.005, args });
        out.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaLaunchKernel', pid: launch.pid, tid: launch.tid, ts: cpuTs + 0.001, dur: 0.003, args: { 'External id': x, correlation: c } });
      }
      out.push({ ...e, name: l.kernel, ts: at, dur: l.us, args: { ...e.args, correlation: c } });
      at += l.us;
    }
    shiftUs += at - (e.ts! + shiftUs) - e.dur!;
  }
  return JSON.stringify({ ...t, traceEvents: out });
}
