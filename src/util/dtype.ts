/**
 * Bytes of one element of a dtype, and whether it is a 16-bit float, each defined once (pure): torch names (`float32`, `torch.bfloat16`, `c10::Half`), the
 * names Kineto writes in collective args (`Float`, `BFloat16`, `Long`) and NCCL's (`ncclFloat16`). The float8 kinds
 * are 1 byte; a name this does not know counts as 4 bytes, the size of torch's default dtype (float32), which is
 * what an unknown parameter or collective most likely is.
 */
const EXACT: Record<string, number> = {
  float64: 8,
  double: 8,
  complex128: 16,
  cdouble: 16,
  complex64: 8,
  cfloat: 8,
  int64: 8,
  long: 8,
  uint64: 8,
  float32: 4,
  float: 4,
  int32: 4,
  int: 4,
  uint32: 4,
  complex32: 4,
  float16: 2,
  half: 2,
  bfloat16: 2,
  int16: 2,
  short: 2,
  uint16: 2,
  int8: 1,
  uint8: 1,
  byte: 1,
  char: 1,
  bool: 1,
};

export const DEFAULT_DTYPE_BYTES = 4;

export function dtypeBytes(name: string | null): number {
  if (name === null) return DEFAULT_DTYPE_BYTES;
  const d = name
    .toLowerCase()
    .replace(/^(torch\.|c10::|at::|nccl)/, '')
    .trim();
  const exact = EXACT[d];
  if (exact !== undefined) return exact;
  if (/float8|fp8|e4m3|e5m2/.test(d)) return 1;
  if (/bfloat16|half|float16|bf16|f16|short|int16/.test(d)) return 2;
  if (/double|float64|int64|long|f64/.test(d)) return 8;
  if (/int8|uint8|byte|char|bool/.test(d)) return 1;
  return DEFAULT_DTYPE_BYTES;
}

/**
 * The one test of a 16-bit float dtype, by name: the profiler's (`c10::BFloat16`, `c10::Half`, in GEMM and attention
 * shapes), torch's (`bfloat16`, `float16`, with or without `torch.`: the probe's parameter and optimizer-state dtypes,
 * autocast's dtype, a `--dtype` flag). bf16 is tested first: `bfloat16` holds `float16`.
 */
const BF16_DTYPE = /BFloat16|bfloat16/;
const FP16_DTYPE = /Half|float16/;

/** `bf16` or `fp16` for a 16-bit float dtype's name, null for any other (fp32, integers, fp8) or none. */
export function halfDtypeOf(dtype: string | null): 'bf16' | 'fp16' | null {
  if (dtype === null) return null;
  if (BF16_DTYPE.test(dtype)) return 'bf16';
  return FP16_DTYPE.test(dtype) ? 'fp16' : null;
}

/** A bf16 or fp16 dtype (halfDtypeOf). */
export function isHalfDtype(dtype: string | null): boolean {
  return halfDtypeOf(dtype) !== null;
}
