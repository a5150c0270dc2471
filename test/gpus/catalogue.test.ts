/**
 * The GPU catalogue recognises GPUs by what NVML, nvidia-smi and torch really print (and what users type), and says
 * null for what it does not know. The H200 lines come from the real nvidia-smi outputs in test/fixtures/telemetry.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { closeGpuMatches, GPUS, gpuById, lookupGpu, matchGpu } from '../../src/gpus/catalogue.js';

const FIXTURES = join(__dirname, '..', 'fixtures', 'telemetry');
const id = (q: Parameters<typeof lookupGpu>[0]) => lookupGpu(q)?.id ?? null;

describe('lookupGpu', () => {
  it('reads the names NVML and nvidia-smi print', () => {
    // nvidia-smi --query-gpu=name / NVML nvmlDeviceGetName / torch.cuda.get_device_name
    const printed: [string, string][] = [
      ['NVIDIA H100 80GB HBM3', 'h100-sxm'],
      ['NVIDIA H100 PCIe', 'h100-pcie'],
      ['NVIDIA H100 NVL', 'h100-nvl'],
      ['NVIDIA H200 NVL', 'h200-nvl'],
      ['NVIDIA L40', 'l40'],
      ['NVIDIA A10', 'a10'],
      ['NVIDIA H200', 'h200'],
      ['NVIDIA GH200 480GB', 'gh200'],
      ['NVIDIA B200', 'b200'],
      ['NVIDIA A100-SXM4-80GB', 'a100-80'],
      ['NVIDIA A100-SXM4-40GB', 'a100-40'],
      ['NVIDIA A100-PCIE-40GB', 'a100-pcie-40'],
      ['NVIDIA A100 80GB PCIe', 'a100-pcie-80'],
      ['NVIDIA GeForce RTX 4090', 'rtx4090'],
      ['NVIDIA GeForce RTX 3090', 'rtx3090'],
      ['NVIDIA L4', 'l4'],
      ['NVIDIA L40S', 'l40s'],
      ['NVIDIA A10G', 'a10g'],
      ['Tesla T4', 't4'],
      ['Tesla V100-SXM2-32GB', 'v100-32'],
      ['Tesla V100-SXM2-16GB', 'v100-16'],
    ];
    for (const [name, want] of printed) expect([name, id(name)]).toEqual([name, want]);
  });

  it('every catalogue entry is reached by its own id and by a device name', () => {
    for (const g of GPUS) {
      expect(id(g.id)).toBe(g.id);
      expect(id(g.name)).toBe(g.id);
    }
  });

  it('reads names as users type them', () => {
    const typedNames: [string, string][] = [
      ['h100', 'h100-sxm'],
      ['H100', 'h100-sxm'],
      ['RTX 4090', 'rtx4090'],
      ['rtx4090', 'rtx4090'],
      ['4090', 'rtx4090'],
      ['A100-PCIE-40GB', 'a100-pcie-40'],
      ['a100', 'a100-80'],
      ['B200', 'b200'],
      ['GH200', 'gh200'],
      ['h200-141', 'h200'],
      ['NVIDIA H200 141GB', 'h200'],
    ];
    for (const [typed, want] of typedNames) expect([typed, id(typed)]).toEqual([typed, want]);
  });

  it('reads the real nvidia-smi outputs of the H200 fixtures (CSV name, XML product name and PCI device id)', () => {
    const csv = readFileSync(join(FIXTURES, 'query-gpu.busy.csv'), 'utf8').split('\n')[1]!.split(', ');
    expect(id({ name: csv[2]!, memoryBytes: Number.parseInt(csv[5]!, 10) * 2 ** 20 })).toBe('h200');
    const xml = gunzipSync(readFileSync(join(FIXTURES, 'nvidia-smi-q.busy.xml.gz'))).toString('utf8');
    const product = /<product_name>([^<]+)</.exec(xml)![1]!;
    const pci = /<pci_device_id>([^<]+)</.exec(xml)![1]!;
    expect(pci).toBe('233510DE');
    expect(id(product)).toBe('h200');
    // the PCI device id alone decides, whatever the name says
    expect(id({ name: 'renamed card', pciDeviceId: pci })).toBe('h200');
    expect(id({ name: '', pciDeviceId: '0x233010DE' })).toBe('h100-sxm');
  });

  it('uses memory size and SM count to choose the variant of a family it has not listed', () => {
    // the H100 NVL is listed now (94 GB, issue 24): its name and memory find it, not the 80 GB SXM
    expect(id({ name: 'NVIDIA H100 NVL', memoryBytes: 95_830 * 2 ** 20 })).toBe('h100-nvl');
    expect(id({ name: 'NVIDIA H100', memoryBytes: 95_830 * 2 ** 20 })).toBe('h100-nvl');
    // an A100 variant named without its size: memory decides between 40 and 80 GB
    expect(id({ name: 'NVIDIA A100-SXM4', memoryBytes: 40 * 2 ** 30 })).toBe('a100-40');
    expect(id({ name: 'NVIDIA A100-SXM4', memoryBytes: 80 * 2 ** 30 })).toBe('a100-80');
    expect(id({ name: 'NVIDIA H100', smCount: 114 })).toBe('h100-pcie');
    // a GH200 of another memory size is still a GH200, not an H200
    expect(id('NVIDIA GH200 144G HBM3e')).toBe('gh200');
  });

  it('says null for a GPU it does not know (the caller words the error)', () => {
    for (const unknown of ['NVIDIA RTX A6000', 'b300', 'NVIDIA H800', 'AMD Instinct MI300X', '', 'NVIDIA GB10'])
      expect([unknown, id(unknown)]).toEqual([unknown, null]);
  });
});

// Issue 24 item 7: `--gpu a100` became the 80 GB SXM4 and `--gpu "NVIDIA H100 NVL"` the 80 GB SXM, and no report said so.
describe('matchGpu: how surely a name names one card', () => {
  const how = (name: string) => {
    const m = matchGpu(name);
    return m ? [m.gpu.id, m.how, m.alternatives] : null;
  };
  it('a device name, id or alias of one entry is exact', () => {
    for (const [name, want] of [
      ['NVIDIA H100 NVL', 'h100-nvl'],
      ['h100-pcie', 'h100-pcie'],
      ['H100 SXM', 'h100-sxm'],
      ['NVIDIA A100-SXM4-40GB', 'a100-40'],
      ['h200', 'h200'],
      ['RTX 4090', 'rtx4090'],
    ] as const)
      expect([name, how(name)]).toEqual([name, [want, 'exact', []]]);
    expect(matchGpu({ name: 'renamed', pciDeviceId: '232110DE' })?.gpu.id).toBe('h100-nvl');
  });
  it('a name several cards share is read as the usual one, with the others', () => {
    expect(how('a100')).toEqual(['a100-80', 'usual', ['a100-40', 'a100-pcie-80', 'a100-pcie-40']]);
    expect(how('H100')).toEqual(['h100-sxm', 'usual', ['h100-pcie', 'h100-nvl']]);
    expect(how('a100-pcie')).toEqual(['a100-pcie-40', 'usual', ['a100-pcie-80']]);
    expect(how('v100')).toEqual(['v100-32', 'usual', ['v100-16']]);
    expect(how('h200-141')).toEqual(['h200', 'usual', ['h200-nvl']]);
  });
  it('a variant not listed by name is the closest entry, never exact', () => {
    expect(how('A100 80GB')).toEqual(['a100-80', 'closest', ['a100-pcie-80']]);
    expect(how('A100 40GB SXM')).toEqual(['a100-40', 'closest', []]);
    expect(how('RTX 4090 D')).toEqual(['rtx4090', 'closest', []]);
    expect(how('GH200 144G HBM3e')).toEqual(['gh200', 'closest', []]);
  });
});

describe('closeGpuMatches and gpuById', () => {
  it('offers the nearest ids for a misspelt name', () => {
    expect(closeGpuMatches('h1000')[0]).toBe('h100-sxm');
    expect(closeGpuMatches('b300')).toContain('b200');
    expect(closeGpuMatches('rtx 4080')).toContain('rtx4090');
    expect(closeGpuMatches('zzzzzzzzzzzz')).toEqual([]);
  });
  it('gpuById is for ids the code names', () => {
    expect(gpuById('h200').memoryBytes).toBeGreaterThan(140e9);
    expect(() => gpuById('nope')).toThrow(/no GPU with id 'nope'/);
  });
  it('keeps the per-precision peak rates and bandwidth for every entry', () => {
    for (const g of GPUS) {
      expect(g.fp32Tflops).toBeGreaterThan(0);
      expect(Math.max(g.bf16Tflops, g.fp16Tflops)).toBeGreaterThan(g.fp32Tflops * 0.99);
      expect(g.memoryBandwidth).toBeGreaterThan(1e11);
    }
  });
});
