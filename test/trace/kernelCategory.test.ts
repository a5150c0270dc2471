/**
 * A kernel's category from its name (trace/kernelClass.ts). Names from the H100 ViT run
 * (examples/pace/runs/h100/gpu_bound): PyTorch's elementwise kernels carry `{lambda()#2}` in their names, and the
 * optimizer pattern's `lamb` (the LAMB optimizer) once took every one of them for the optimizer's work: 34.5 ms a step
 * of "optimizer" in a ViT whose AdamW took 2.6 ms.
 */
import { describe, expect, it } from 'vitest';
import { categoriseKernel, KernelCategory } from '../../src/trace/kernelClass.js';

const GELU =
  'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)';
const COPY =
  'void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})';

describe('kernel categories', () => {
  it('keeps elementwise kernels whose names hold a lambda out of the optimizer', () => {
    expect(categoriseKernel(GELU, false)).toBe(KernelCategory.elementwise);
    expect(categoriseKernel(COPY, false)).toBe(KernelCategory.elementwise);
  });

  it("still takes the optimizers' own kernels for the optimizer, LAMB's among them", () => {
    expect(categoriseKernel('multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamMathFunctor<float, 4>>', false)).toBe(
      KernelCategory.optimizer,
    );
    expect(categoriseKernel('void multi_tensor_lamb_stage1_kernel<float>(...)', false)).toBe(KernelCategory.optimizer);
    expect(categoriseKernel('FusedLAMBKernel<float>', false)).toBe(KernelCategory.optimizer);
  });
});
