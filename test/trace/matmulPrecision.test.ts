/**
 * The precision of a matmul kernel from its name and its op's dtype (trace/kernelClass.ts). Names from the shipped
 * traces and the H200 generation run (examples/levers/runs/h200/hf_generate_probe2).
 */
import { describe, expect, it } from 'vitest';
import { MatmulPrecision, matmulPrecision } from '../../src/trace/kernelClass.js';

const BF16_GEMV = 'void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >';
const FP32_GEMV = 'void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >';

describe('matmul precision', () => {
  it('takes a bf16 matrix-vector product for 16-bit, not fp32 (a bf16 model at batch 1 was told to use bf16)', () => {
    expect(matmulPrecision(BF16_GEMV, null)).toBe(MatmulPrecision.tensorCore16);
    expect(matmulPrecision('gemvNSP_kernel', 'c10::BFloat16')).toBe(MatmulPrecision.tensorCore16);
  });

  it('keeps fp32 SIMT kernels fp32, and tensor-core kernels by their names', () => {
    expect(matmulPrecision(FP32_GEMV, null)).toBe(MatmulPrecision.fp32);
    expect(matmulPrecision('volta_sgemm_128x64_nn', 'float')).toBe(MatmulPrecision.fp32);
    expect(matmulPrecision('ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn', null)).toBe(MatmulPrecision.tensorCore16);
    expect(matmulPrecision('sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16', 'float')).toBe(MatmulPrecision.tensorCoreTf32);
    expect(matmulPrecision('nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT', 'c10::BFloat16')).toBe(MatmulPrecision.tensorCore16);
  });
});
