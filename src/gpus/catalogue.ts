/**
 * The GPU catalogue (pure, a leaf every pillar imports; it reads only util/units.ts): per-precision dense peak rates,
 * memory and link bandwidth of each GPU, and how to recognise it from what NVML, nvidia-smi, torch and Kineto print
 * ("NVIDIA H100 80GB HBM3" is the H100 SXM) or what a user types ("h100", "RTX 4090", "A100-PCIE-40GB"). Rates are the vendor's datasheet peaks
 * (dense, no sparsity); the planner's time model applies fitted efficiencies to them, and analyze's rules read them
 * for the tensor-core and MFU estimates. `memoryBytes` is what `torch.cuda.get_device_properties().total_memory`
 * reports where measured, else the nvidia-smi total in MiB.
 *
 * `lookupGpu` returns null for a GPU it does not know: the caller words the problem (a CLI names its flag and can list
 * `closeGpuMatches`; a report says "not in the catalogue").
 */
import { GiB, MiB } from '../util/units.js';

/**
 * A catalogue entry as a report names it. Its name carries the memory it is sold with ("NVIDIA H200 141GB": 10^9
 * bytes, rounded), which is not the memory CUDA can use (139.8 GiB, the one figure reports give for a GPU): the
 * name is said to be the catalogue's, so the "141GB" in it reads as a name, not as a second memory figure.
 */
export function catalogueName(name: string): string {
  return `the catalogue's ${name}`;
}

export interface GpuSpec {
  /** Canonical id (`h100-sxm`), what `--gpu` takes. */
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

/** How a catalogue entry is recognised; kept apart from GpuSpec, which reports (plan --json) print. */
interface GpuIdentity {
  id: string;
  /** Names as NVML / nvidia-smi / torch.cuda.get_device_name print them (one entry can have several). */
  deviceNames: string[];
  /** Short names users type, beside the id, that name this entry only. */
  aliases: string[];
  /** Names that fit several entries ("a100": SXM or PCIe, 40 or 80 GB) and usually mean this one. */
  usualFor?: string[];
  /** Family word in device names ("h100"): an unlisted variant of the family is matched by the tie-breakers. */
  family: string;
  /** Streaming multiprocessors. */
  smCount: number;
  /** PCI device ids (the upper 16 bits of nvidia-smi's `pci_device_id`, e.g. 0x2335 for 233510DE). */
  pciDeviceIds: number[];
}

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
    id: 'h100-nvl',
    name: 'NVIDIA H100 NVL 94GB',
    memoryBytes: 95_830 * MiB,
    bf16Tflops: 835.5,
    fp16Tflops: 835.5,
    tf32Tflops: 417.5,
    fp32Tflops: 60,
    memoryBandwidth: 3.9 * TB,
    intraNodeBandwidth: 64 * GB,
    source:
      'NVIDIA H100 Tensor Core GPU datasheet (H100 NVL column, dense: half the sparse figures); PCIe Gen5 x16 (an NVLink bridge pairs two cards at 600 GB/s); memory: nvidia-smi total, approximate',
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
    id: 'h200-nvl',
    name: 'NVIDIA H200 NVL 141GB',
    memoryBytes: 139.8 * GiB,
    bf16Tflops: 835.5,
    fp16Tflops: 835.5,
    tf32Tflops: 417.5,
    fp32Tflops: 60,
    memoryBandwidth: 4.8 * TB,
    intraNodeBandwidth: 64 * GB,
    source:
      'NVIDIA H200 datasheet (H200 NVL column, dense: half the sparse figures); PCIe Gen5 x16 (NVLink bridges join two or four cards at 900 GB/s); memory as the H200 SXM',
  },
  {
    id: 'gh200',
    name: 'NVIDIA GH200 96GB HBM3',
    memoryBytes: 97_871 * MiB,
    bf16Tflops: 989.4,
    fp16Tflops: 989.4,
    tf32Tflops: 494.7,
    fp32Tflops: 66.9,
    memoryBandwidth: 4.0 * TB,
    intraNodeBandwidth: 450 * GB,
    source:
      'NVIDIA GH200 Grace Hopper Superchip datasheet (the Hopper GPU, dense; 96 GB HBM3, "480GB" counts the Grace LPDDR5X); memory: nvidia-smi total, approximate',
  },
  {
    id: 'b200',
    name: 'NVIDIA B200 180GB',
    memoryBytes: 183_359 * MiB,
    bf16Tflops: 2250,
    fp16Tflops: 2250,
    tf32Tflops: 1100,
    fp32Tflops: 75,
    memoryBandwidth: 8.0 * TB,
    intraNodeBandwidth: 900 * GB,
    source: 'NVIDIA HGX B200 datasheet per GPU (dense: half the sparse figures); NVLink 5: 1.8 TB/s bidirectional; memory: nvidia-smi total, approximate',
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
    id: 'a100-pcie-80',
    name: 'NVIDIA A100 PCIe 80GB',
    memoryBytes: 81_920 * MiB,
    bf16Tflops: 312,
    fp16Tflops: 312,
    tf32Tflops: 156,
    fp32Tflops: 19.5,
    memoryBandwidth: 1.935 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA A100 datasheet (PCIe 80GB, dense); PCIe Gen4 x16 (an NVLink bridge pairs two cards at 300 GB/s)',
  },
  {
    id: 'a100-pcie-40',
    name: 'NVIDIA A100 PCIe 40GB',
    memoryBytes: 40_960 * MiB,
    bf16Tflops: 312,
    fp16Tflops: 312,
    tf32Tflops: 156,
    fp32Tflops: 19.5,
    memoryBandwidth: 1.555 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA A100 datasheet (PCIe 40GB, dense); PCIe Gen4 x16',
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
    id: 'l40',
    name: 'NVIDIA L40 48GB',
    memoryBytes: 46_068 * MiB,
    bf16Tflops: 181.05,
    fp16Tflops: 181.05,
    tf32Tflops: 90.5,
    fp32Tflops: 90.5,
    memoryBandwidth: 0.864 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA L40 datasheet (dense: half the sparse figures); PCIe Gen4 x16',
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
    id: 'a10',
    name: 'NVIDIA A10 24GB',
    memoryBytes: 23_028 * MiB,
    bf16Tflops: 125,
    fp16Tflops: 125,
    tf32Tflops: 62.5,
    fp32Tflops: 31.2,
    memoryBandwidth: 0.6 * TB,
    intraNodeBandwidth: 32 * GB,
    source: 'NVIDIA A10 Tensor Core GPU datasheet (dense); PCIe Gen4 x16; memory as the A10G',
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

/**
 * Device names are those NVML and nvidia-smi print (torch.cuda.get_device_name and Kineto's deviceProperties give the
 * same string). PCI device ids from the PCI ID repository (pci-ids.ucw.cz) and nvidia-smi -q.
 */
const IDENTITIES: readonly GpuIdentity[] = [
  { id: 'h100-sxm', deviceNames: ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 SXM5 80GB'], aliases: ['h100-sxm5'], usualFor: ['h100', 'h100-80'], family: 'h100', smCount: 132, pciDeviceIds: [0x2330] },
  { id: 'h100-pcie', deviceNames: ['NVIDIA H100 PCIe'], aliases: ['h100-pcie-80'], family: 'h100', smCount: 114, pciDeviceIds: [0x2331] },
  { id: 'h100-nvl', deviceNames: ['NVIDIA H100 NVL'], aliases: ['h100-94', 'h100-nvl-94'], family: 'h100', smCount: 132, pciDeviceIds: [0x2321] },
  { id: 'h200', deviceNames: ['NVIDIA H200'], aliases: ['h200-sxm'], usualFor: ['h200-141'], family: 'h200', smCount: 132, pciDeviceIds: [0x2335] },
  { id: 'h200-nvl', deviceNames: ['NVIDIA H200 NVL'], aliases: ['h200-nvl-141'], family: 'h200', smCount: 132, pciDeviceIds: [] },
  { id: 'gh200', deviceNames: ['NVIDIA GH200 480GB'], aliases: ['gh200-480', 'grace-hopper'], family: 'gh200', smCount: 132, pciDeviceIds: [0x2342, 0x2345] },
  { id: 'b200', deviceNames: ['NVIDIA B200'], aliases: ['b200-180'], family: 'b200', smCount: 148, pciDeviceIds: [0x2901] },
  { id: 'a100-80', deviceNames: ['NVIDIA A100-SXM4-80GB'], aliases: ['a100-sxm-80', 'a100-sxm4-80'], usualFor: ['a100'], family: 'a100', smCount: 108, pciDeviceIds: [0x20b2] },
  { id: 'a100-40', deviceNames: ['NVIDIA A100-SXM4-40GB'], aliases: ['a100-sxm-40', 'a100-sxm4-40'], family: 'a100', smCount: 108, pciDeviceIds: [0x20b0] },
  { id: 'a100-pcie-80', deviceNames: ['NVIDIA A100 80GB PCIe', 'NVIDIA A100-PCIE-80GB'], aliases: [], family: 'a100', smCount: 108, pciDeviceIds: [0x20b5] },
  { id: 'a100-pcie-40', deviceNames: ['NVIDIA A100-PCIE-40GB'], aliases: [], usualFor: ['a100-pcie'], family: 'a100', smCount: 108, pciDeviceIds: [0x20f1] },
  { id: 'l40s', deviceNames: ['NVIDIA L40S'], aliases: [], family: 'l40s', smCount: 142, pciDeviceIds: [0x26b9] },
  { id: 'l40', deviceNames: ['NVIDIA L40'], aliases: [], family: 'l40', smCount: 142, pciDeviceIds: [0x26b5] },
  { id: 'l4', deviceNames: ['NVIDIA L4'], aliases: [], family: 'l4', smCount: 58, pciDeviceIds: [0x27b8] },
  { id: 'a10', deviceNames: ['NVIDIA A10'], aliases: [], family: 'a10', smCount: 72, pciDeviceIds: [0x2236] },
  { id: 'a10g', deviceNames: ['NVIDIA A10G'], aliases: [], family: 'a10g', smCount: 80, pciDeviceIds: [0x2237] },
  { id: 'rtx3090', deviceNames: ['NVIDIA GeForce RTX 3090'], aliases: ['3090', 'rtx-3090'], family: 'rtx3090', smCount: 82, pciDeviceIds: [0x2204] },
  { id: 'rtx4090', deviceNames: ['NVIDIA GeForce RTX 4090'], aliases: ['4090', 'rtx-4090'], family: 'rtx4090', smCount: 128, pciDeviceIds: [0x2684] },
  { id: 't4', deviceNames: ['Tesla T4', 'NVIDIA T4'], aliases: ['tesla-t4'], family: 't4', smCount: 40, pciDeviceIds: [0x1eb8] },
  { id: 'v100-32', deviceNames: ['Tesla V100-SXM2-32GB', 'NVIDIA V100-SXM2-32GB'], aliases: ['v100-sxm2-32'], usualFor: ['v100'], family: 'v100', smCount: 80, pciDeviceIds: [0x1db5] },
  { id: 'v100-16', deviceNames: ['Tesla V100-SXM2-16GB', 'NVIDIA V100-SXM2-16GB'], aliases: ['v100-sxm2-16'], family: 'v100', smCount: 80, pciDeviceIds: [0x1db1] },
];

/** What a caller knows about a device; every field but the name is an optional tie-breaker. */
export interface GpuQuery {
  name: string;
  /** Total memory in bytes (torch's total_memory or NVML's), to choose within a family. */
  memoryBytes?: number | null;
  smCount?: number | null;
  /** PCI device id: a number (0x2335) or nvidia-smi's `pci_device_id` text ("233510DE", "0x233510DE"). */
  pciDeviceId?: number | string | null;
}

/** Lower case, vendor words dropped, separators unified: "NVIDIA GeForce RTX 4090" -> "rtx-4090". */
function normalise(s: string): string {
  return s
    .toLowerCase()
    .replace(/\b(nvidia|geforce|tesla)\b/g, ' ')
    .replace(/[^a-z0-9.]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** The same without separators, so "rtx 4090", "rtx-4090" and "rtx4090" meet. */
const compact = (s: string) => normalise(s).replace(/-/g, '');

const specOf = new Map(GPUS.map((g) => [g.id, g]));

/** The names that point at this entry alone: id, aliases, device names, the catalogue name. */
function ownKeys(e: GpuIdentity): string[] {
  const spec = specOf.get(e.id);
  return [e.id, ...e.aliases, ...e.deviceNames, ...(spec ? [spec.name] : [])].map(compact);
}

/** Every name the entry answers to, the shared ones ("a100") included: for "did you mean". */
function keysOf(e: GpuIdentity): string[] {
  return [...ownKeys(e), ...(e.usualFor ?? []).map(compact)];
}

function pciIdOf(v: number | string | null | undefined): number | null {
  if (typeof v === 'number') return Number.isInteger(v) ? (v > 0xffff ? v >>> 16 : v) : null;
  if (typeof v !== 'string') return null;
  const hex = v.trim().replace(/^0x/i, '');
  if (!/^[0-9a-f]{4}([0-9a-f]{4})?$/i.test(hex)) return null;
  return Number.parseInt(hex.slice(0, 4), 16);
}

/** The family word a name carries ("NVIDIA H100 NVL" -> h100, "RTX 4090" -> rtx4090): a token or two adjacent ones. */
function familyOf(name: string): string | null {
  const tokens = normalise(name).split('-');
  const words = new Set([...tokens, ...tokens.slice(1).map((t, i) => `${tokens[i]}${t}`)]);
  return IDENTITIES.find((e) => words.has(e.family))?.family ?? null;
}

function choose(candidates: GpuIdentity[], q: GpuQuery): GpuIdentity | null {
  if (candidates.length <= 1) return candidates[0] ?? null;
  let pool = candidates;
  if (typeof q.smCount === 'number' && q.smCount > 0) {
    const bySm = pool.filter((e) => e.smCount === q.smCount);
    if (bySm.length > 0) pool = bySm;
  }
  if (typeof q.memoryBytes === 'number' && q.memoryBytes > 0) {
    const mem = q.memoryBytes;
    const dist = (e: GpuIdentity) => Math.abs((specOf.get(e.id)?.memoryBytes ?? 0) / mem - 1);
    pool = [...pool].sort((a, b) => dist(a) - dist(b));
    // within 10% of the entry's memory (torch reports slightly less than nvidia-smi)
    if (dist(pool[0] as GpuIdentity) <= 0.1) return pool[0] as GpuIdentity;
  }
  return pool[0] ?? null;
}

/**
 * A name matched to the catalogue, and how surely. `exact`: a PCI device id, or a name, id or alias that names this
 * entry alone. `usual`: a name that fits several entries ("a100": SXM or PCIe, 40 or 80 GB), read as the usual one.
 * `closest`: a variant the catalogue does not list by name ("H100 80GB" without the form factor, "GH200 144G"), the
 * family's entry its words, memory or SM count come closest to. A report that rests on a `usual` or `closest` match
 * says so, with the alternatives.
 */
export interface GpuMatch {
  gpu: GpuSpec;
  how: 'exact' | 'usual' | 'closest';
  /** Ids of the other entries the name could mean (empty for an exact match). */
  alternatives: string[];
}

const matchOf = (e: GpuIdentity, how: GpuMatch['how'], pool: GpuIdentity[] = []): GpuMatch | null => {
  const gpu = specOf.get(e.id);
  return gpu ? { gpu, how, alternatives: how === 'exact' ? [] : pool.filter((x) => x.id !== e.id).map((x) => x.id) } : null;
};

/**
 * The catalogue entry for a device name as NVML / nvidia-smi / torch print it, or as a user types it, with how surely
 * it matched; null when the GPU is not in the catalogue. Order: PCI device id, then a name, id or alias of one entry,
 * then a name several entries share (its usual entry unless memory or SM count say which), then the family word in
 * the name with the form factor, the size in the name, the SM count and memory to choose the variant.
 */
export function matchGpu(query: string | GpuQuery): GpuMatch | null {
  const q: GpuQuery = typeof query === 'string' ? { name: query } : query;
  const pci = pciIdOf(q.pciDeviceId);
  if (pci !== null) {
    const byPci = IDENTITIES.find((e) => e.pciDeviceIds.includes(pci));
    if (byPci) return matchOf(byPci, 'exact');
  }
  const k = compact(q.name);
  if (k === '') return null;
  const hinted = Boolean(q.memoryBytes || q.smCount);
  const own = IDENTITIES.filter((e) => ownKeys(e).includes(k));
  if (own.length > 0) return matchOf(choose(own, q) as GpuIdentity, 'exact');
  const family = familyOf(q.name);
  const usual = IDENTITIES.find((e) => (e.usualFor ?? []).map(compact).includes(k));
  if (family === null) return usual && !hinted ? matchOf(usual, 'usual') : null;
  const members = IDENTITIES.filter((e) => e.family === family);
  // Several variants: form-factor words in the name decide first ("pcie", "sxm", "nvl"), then the size in the name.
  const form = /pcie/.test(k) ? /pcie/ : /nvl/.test(k) ? /nvl/ : /sxm/.test(k) ? /^(?!.*(pcie|nvl))/ : null;
  const formed = form ? members.filter((e) => form.test(e.id)) : members;
  let pool = formed.length > 0 ? formed : members;
  const sized = memoryInName(q.name);
  if (sized !== null) {
    const bySize = pool.filter((e) => Math.abs((specOf.get(e.id)?.memoryBytes ?? 0) / sized - 1) < 0.1);
    if (bySize.length > 0) pool = bySize;
  }
  // A shared name means its usual entry unless memory or SM count say which variant.
  if (usual && !hinted) return matchOf(usual, 'usual', pool.includes(usual) ? pool : [usual, ...pool]);
  const chosen = hinted ? choose(pool, q) : pool[0];
  return chosen ? matchOf(chosen, 'closest', pool) : null;
}

/** The catalogue entry for a device name, however it matched (see matchGpu); null when the GPU is not in the catalogue. */
export function lookupGpu(query: string | GpuQuery): GpuSpec | null {
  return matchGpu(query)?.gpu ?? null;
}

/** A profiled device's catalogue entry (a trace's `devices` row: its name and memory), or null for one the catalogue lacks. */
export function gpuOfDevice(d: { name: string; totalMemoryBytes: number } | undefined): GpuSpec | null {
  return d?.name ? lookupGpu({ name: d.name, memoryBytes: d.totalMemoryBytes }) : null;
}

/** "A100-SXM4-40GB" -> 40 GiB; GH200's "480GB" counts host memory and is ignored by the caller's family check. */
function memoryInName(name: string): number | null {
  const m = /(\d{2,3})\s*gb/i.exec(name);
  if (!m) return null;
  const gb = Number(m[1]);
  return gb >= 8 && gb <= 300 ? gb * GiB : null;
}

/** A catalogue entry by its id; throws for an id not in the catalogue (a programming error, not user input). */
export function gpuById(id: string): GpuSpec {
  const g = specOf.get(id);
  if (!g) throw new Error(`no GPU with id '${id}' in the catalogue`);
  return g;
}

/** Up to `max` catalogue ids whose id, alias or device name is closest to `name` (for "did you mean" lines). */
export function closeGpuMatches(name: string, max = 3): string[] {
  const k = compact(name);
  if (k === '') return [];
  const scored = IDENTITIES.map((e) => {
    const d = Math.min(...keysOf(e).map((key) => editDistance(k, key) - (key.includes(k) || k.includes(key) ? 2 : 0)));
    return { id: e.id, d };
  });
  const limit = Math.max(2, Math.ceil(k.length / 2));
  return scored
    .filter((s) => s.d <= limit)
    .sort((a, b) => a.d - b.d || a.id.localeCompare(b.id))
    .slice(0, max)
    .map((s) => s.id);
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length] as number;
}
