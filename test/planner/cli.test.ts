import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { PlanJson } from '../../src/planner/report.js';
import { configPath } from './helpers.js';

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
    out += String(s);
    return true;
  });
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((s) => {
    err += String(s);
    return true;
  });
  try {
    const code = await main(['plan', ...args]);
    return { code, out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());
const gpt2 = configPath('gpt2');
const llama = configPath('llama-2-7b');

describe('gpuwise plan --json', () => {
  it('has the contract fields with schemaVersion', async () => {
    const r = await cli('--model', gpt2, '--gpu', 'h200', '--batch', '8', '--seq', '1024', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out) as PlanJson;
    expect(j.schemaVersion).toBe(1);
    expect(j.memory.peakAllocatedBytes).toBeGreaterThan(10e9);
    expect(j.memory.peakReservedBytes).toBeGreaterThanOrEqual(j.memory.peakAllocatedBytes);
    expect(j.memory.deviceUsedBytes).toBeGreaterThan(j.memory.peakReservedBytes);
    expect(['forward', 'backward', 'optimizer']).toContain(j.memory.bindingPhase);
    expect(j.memory.components.map((c) => c.name)).toContain('activations');
    expect(j.stepTimeMs).toBeGreaterThan(0);
    expect(j.model.params).toBe(124_439_808);
    expect(j.savers.length).toBeGreaterThan(0);
  });
  it('--max-batch reports the largest batch under --memory-cap and plans at it', async () => {
    const r = await cli('--model', gpt2, '--gpu', 'h200', '--seq', '1024', '--memory-cap', '20GiB', '--max-batch', '--json');
    const j = JSON.parse(r.out) as PlanJson;
    expect(j.maxBatch?.microBatch).toBeGreaterThan(4);
    expect(j.maxBatch?.budgetBytes).toBe(20 * 1024 ** 3);
    expect(j.setup.microBatch).toBe(j.maxBatch?.microBatch);
  });
  it('--search ranks feasible plans by throughput', async () => {
    const r = await cli(
      '--model',
      llama,
      '--gpu',
      'h100',
      '--gpus',
      '8',
      '--seq',
      '2048',
      '--search',
      '--global-batch',
      '64',
      '--top',
      '5',
      '--json',
    );
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out) as PlanJson;
    const plans = j.search?.plans ?? [];
    expect(plans.length).toBe(5);
    for (let i = 1; i < plans.length; i++) expect(plans[i - 1]!.tokensPerSec).toBeGreaterThanOrEqual(plans[i]!.tokensPerSec);
    for (const p of plans) expect(p.globalBatch).toBe(64);
    expect(plans[0]!.savers.length).toBeLessThanOrEqual(3);
  });
  it('terminal output names the binding phase and the three predictions', async () => {
    const r = await cli(
      '--model',
      llama,
      '--gpu',
      'h100',
      '--gpus',
      '8',
      '--strategy',
      'fsdp',
      '--seq',
      '4096',
      '--batch',
      '2',
      '--checkpointing',
      'full',
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/binding phase: (forward|backward|optimizer)/);
    expect(r.out).toContain('max_memory_allocated');
    expect(r.out).toContain('max_memory_reserved');
    expect(r.out).toContain('nvidia-smi');
  });
  it('explicit GPU numbers and tensor/pipeline strategies', async () => {
    const custom = JSON.parse(
      (await cli('--model', gpt2, '--gpu-memory', '32GiB', '--gpu-tflops', '200', '--batch', '4', '--json')).out,
    ) as PlanJson;
    expect(custom.hardware.gpu.memoryBytes).toBe(32 * 1024 ** 3);
    expect(custom.hardware.gpu.bf16Tflops).toBe(200);
    const tp = JSON.parse(
      (await cli('--model', llama, '--gpu', 'h100', '--gpus', '8', '--strategy', 'tp', '--seq', '2048', '--json')).out,
    ) as PlanJson;
    expect([tp.parallelism.tp, tp.parallelism.dpSize, tp.parallelism.dp]).toEqual([8, 1, 'none']);
    const pp = JSON.parse(
      (await cli('--model', llama, '--gpu', 'h100', '--gpus', '4', '--strategy', 'pp', '--grad-accum', '8', '--seq', '2048', '--json')).out,
    ) as PlanJson;
    expect([pp.parallelism.pp, pp.time.bubbleMs > 0]).toEqual([4, true]);
  });
  it('--emit prints a launch config', async () => {
    const r = await cli('--model', llama, '--gpu', 'h100', '--gpus', '8', '--strategy', 'fsdp', '--seq', '4096', '--emit', 'deepspeed');
    expect(JSON.parse(r.out).zero_optimization.stage).toBe(3);
  });
});

describe('bad input: one line, exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuwise-plan-'));
  const write = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  it.each([
    [['--model', '/nonexistent/config.json'], /\/nonexistent\/config.json: no such file/],
    [['--model', write('bad.json', '{oops')], /bad.json: not valid JSON/],
    [['--model', write('t5.json', '{"model_type":"t5"}')], /t5.json: model_type: unknown model type 't5'/],
    [
      [
        '--model',
        write('nolayers.json', '{"model_type":"llama","hidden_size":64,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100}'),
      ],
      /nolayers.json: num_hidden_layers: missing/,
    ],
    [['--model', gpt2, '--gpu', 'b300'], /--gpu: unknown GPU 'b300'/],
    [['--model', gpt2, '--precision', 'fp8'], /--precision: 'fp8' is not one of/],
    [['--model', gpt2, '--batch', '0'], /--batch: '0' is not an integer >= 1/],
    [['--model', llama, '--gpu', 'rtx4090'], /does not fit: needs .* GiB at (forward|backward|optimizer) but the budget is .* GiB/],
    [['--model', llama, '--gpu', 'h100', '--gpus', '8', '--tp', '3'], /--tp 3 x --pp 1 does not divide 8 GPUs/],
    [['--model', gpt2, '--gpu', 't4'], /has no bf16 support/],
    [['--model', llama, '--gpu', 'a100-40', '--gpus', '2', '--seq', '4096'], /does not fit: .*; this fits: --strategy \w+ .*--batch \d+/],
  ])('%j', async (args, message) => {
    const r = await cli(...args);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(message);
  });
  it('the impossible plan says what would fit', async () => {
    const r = await cli('--model', gpt2, '--gpu', 'h200', '--batch', '64', '--memory-cap', '20GiB');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--batch \d+ fits/);
  });
});
