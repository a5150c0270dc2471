/**
 * GPU catalogue: memory, dense (no sparsity) tensor-core rates, memory bandwidth and link bandwidth.
 * Rates are the vendor's datasheet peaks; the time model applies fitted efficiencies to them.
 * `memoryBytes` is what `torch.cuda.get_device_properties().total_memory` reports (slightly under the
 * marketing size); where not measured it is the nvidia-smi total in MiB.
 */
import { PlanError } from './errors.js';

export interface GpuSpec {
  /** Canonical id used with --gpu. */
  id: string;
  name: string;
  memoryBytes: number;
  /** Dense TFLOP/s (1e12) with fp32 accumulate. 0 means the type is not supported natively. */
  bf16Tflops: number;
  fp16Tflops: number;
  tf32Tflops: number;
  /** Non-tensor-core fp32 (what fp32 training gets with PyTorch's default matmul precision). */
  fp32Tflops: number;
  /** HBM/GDDR bandwidth, bytes/s. */
  memoryBandwidth: number;
  /** Per-GPU unidirectional bandwidth to its peers in the node (NVLink, else PCIe), bytes/s. */
  intraNodeBandwidth: number;
  source: string;
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const TB = 1e12;
const GB = 1e9;

export const GPUS: readonly GpuSpec[] = [
  {
    id: 'h100-sxm',
    name: 'NVIDIA H100 SXM5 80GB',
    memoryBytes: 81_559 * MiB,
    bf16Tflops: 989.4,
    fp16Tflops: 989.4,
    tf32Tflops: 494.7,
    fp32Tflops: 66.9,
    memoryBandwidth: 3.35 * TB,
    intraNodeBandwidth: 450 * GB,
    source: 'NVIDIA H100 Tensor Core GPU datasheet (SXM column, dense); NVLink 4: 900 GB/s bidirectional',
  },
  {
    id: 'h100-pcie',
    name: 'NVIDIA H100 PCIe 80GB',
    memoryBytes: 81_559 * MiB,
    bf16Tflops: 756.5,
    fp16Tflops: 756.5,
    tf32Tflops: 378,
    fp32Tflops: 51.2,
    memoryBandwidth: 2.0 * TB,
    intraNodeBandwidth: 64 * GB,
    source: 'NVIDIA H100 Tensor Core GPU datasheet (PCIe column, dense); PCIe Gen5 x16',
  },
  {
    id: 'h200',
    name: 'NVIDIA H200 141GB',
    memoryBytes: 139.8 * GiB,
    bf16Tflops: 989.4,
    fp16Tflops: 989.4,
    tf32Tflops: 494.7,
    fp32Tflops: 66.9,
    memoryBandwidth: 4.8 * TB,
    intraNodeBandwidth: 450 * GB,
    source: 'NVIDIA H200 datasheet (SXM, dense); memory as measured with torch 2.11 (groundtruth README)',
  },
  {
    id: 'a100-80',
    name: 'NVIDIA A100 SXM4 80GB',
    memoryBytes: 81_920 * MiB,
    bf16Tflops: 312,
    fp16Tflops: 312,
    tf32Tflops: 156,
    fp32Tflops: 19.5,
    memoryBandwidth: 2.039 * TB,
    intraNodeBandwidth: 300 * GB,
    source: 'NVIDIA A100 datasheet (SXM 80GB, dense); NVLink 3: 600 GB/s bidirectional',
  },
  {
    id: 'a100-40',
    name: 'NVIDIA A100 SXM4 40GB',
    memoryBytes: 40_960 * MiB,
    bf16Tflops: 312,
    fp16Tflops: 312,
    tf32Tflops: 156,
    fp32Tflops: 19.5,
    memoryBandwidth: 1.555 * TB,
    intraNodeBandwidth: 300 * GB,
    source: 'NVIDIA A100 datasheet (SXM 40GB, dense)',
  },
  {
    id: 'l40s',
    name: 'NVIDIA L40S 48GB',
    memoryBytes: 46_068 * MiB,
    bf16Tflops: 362.05,
    fp16Tflops: 362.05,
    tf32Tflops: 183,
    fp32Tflops: 91.6,
    memoryBandwidth: 0.864 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA L40S datasheet (dense); PCIe Gen4 x16',
  },
  {
    id: 'l4',
    name: 'NVIDIA L4 24GB',
    memoryBytes: 23_034 * MiB,
    bf16Tflops: 121,
    fp16Tflops: 121,
    tf32Tflops: 60,
    fp32Tflops: 30.3,
    memoryBandwidth: 0.3 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA L4 datasheet (dense); PCIe Gen4 x16',
  },
  {
    id: 'a10g',
    name: 'NVIDIA A10G 24GB',
    memoryBytes: 23_028 * MiB,
    bf16Tflops: 70,
    fp16Tflops: 70,
    tf32Tflops: 35,
    fp32Tflops: 31.2,
    memoryBandwidth: 0.6 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'AWS EC2 G5 documentation and public GA102 figures (NVIDIA publishes no A10G datasheet): approximate',
  },
  {
    id: 'rtx3090',
    name: 'NVIDIA GeForce RTX 3090 24GB',
    memoryBytes: 24_576 * MiB,
    bf16Tflops: 71,
    fp16Tflops: 71,
    tf32Tflops: 35.6,
    fp32Tflops: 35.6,
    memoryBandwidth: 0.936 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA Ampere GA102 whitepaper (fp16 tensor with fp32 accumulate, dense)',
  },
  {
    id: 'rtx4090',
    name: 'NVIDIA GeForce RTX 4090 24GB',
    memoryBytes: 24_564 * MiB,
    bf16Tflops: 165.2,
    fp16Tflops: 165.2,
    tf32Tflops: 82.6,
    fp32Tflops: 82.6,
    memoryBandwidth: 1.008 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA Ada Lovelace whitepaper (fp16/bf16 tensor with fp32 accumulate, dense)',
  },
  {
    id: 't4',
    name: 'NVIDIA T4 16GB',
    memoryBytes: 15_360 * MiB,
    bf16Tflops: 0,
    fp16Tflops: 65,
    tf32Tflops: 0,
    fp32Tflops: 8.1,
    memoryBandwidth: 0.32 * TB,
    intraNodeBandwidth: 16 * GB,
    source: 'NVIDIA T4 datasheet; Turing has no bf16 or tf32 tensor cores',
  },
  {
    id: 'v100-32',
    name: 'NVIDIA V100 SXM2 32GB',
    memoryBytes: 32_768 * MiB,
    bf16Tflops: 0,
    fp16Tflops: 125,
    tf32Tflops: 0,
    fp32Tflops: 15.7,
    memoryBandwidth: 0.9 * TB,
    intraNodeBandwidth: 150 * GB,
    source: 'NVIDIA V100 datasheet (SXM2); Volta has no bf16 or tf32 tensor cores',
  },
  {
    id: 'v100-16',
    name: 'NVIDIA V100 SXM2 16GB',
    memoryBytes: 16_384 * MiB,
    bf16Tflops: 0,
    fp16Tflops: 125,
    tf32Tflops: 0,
    fp32Tflops: 15.7,
    memoryBandwidth: 0.9 * TB,
    intraNodeBandwidth: 150 * GB,
    source: 'NVIDIA V100 datasheet (SXM2)',
  },
];

const ALIASES: Record<string, string> = {
  h100: 'h100-sxm',
  'h100-80': 'h100-sxm',
  h200: 'h200',
  'h200-141': 'h200',
  a100: 'a100-80',
  '3090': 'rtx3090',
  '4090': 'rtx4090',
  v100: 'v100-32',
};

function key(s: string): string {
  return s
    .toLowerCase()
    .replace(/nvidia|geforce|gb$/g, '')
    .replace(/[\s_]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/-?sxm[45]?$/, '-sxm');
}

/** Looks a GPU up by id, alias or name (case-insensitive, `NVIDIA`/`GeForce` optional). */
export function findGpu(name: string): GpuSpec {
  const k = key(name);
  const id = ALIASES[k] ?? k;
  const hit = GPUS.find((g) => g.id === id || key(g.name) === k);
  if (!hit)
    throw new PlanError(`--gpu: unknown GPU '${name}' (known: ${GPUS.map((g) => g.id).join(', ')}; or give --gpu-memory and --gpu-tflops)`);
  return hit;
}
