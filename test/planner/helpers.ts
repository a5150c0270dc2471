import { readFileSync } from 'node:fs';
import { expect, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { gpuById } from '../../src/gpus/catalogue.js';
import { ConfigError } from '../../src/planner/errors.js';
import { describeHfConfig } from '../../src/planner/hfConfig.js';
import type { ModelDescription } from '../../src/planner/model.js';
import type { PlanRequest } from '../../src/planner/plan.js';
import type { Hardware, Parallelism, TrainingSetup } from '../../src/planner/setup.js';

export const configPath = (name: string) => new URL(`../fixtures/planner/configs/${name}/config.json`, import.meta.url).pathname;

export function model(name: string): ModelDescription {
  return describeHfConfig(JSON.parse(readFileSync(configPath(name), 'utf8')));
}

export function hardware(gpuName = 'h100-sxm', gpusPerNode = 1, nodes = 1, extra: Partial<Hardware> = {}): Hardware {
  const gpu = gpuById(gpuName);
  return { gpu, gpusPerNode, nodes, intraNodeBandwidth: gpu.intraNodeBandwidth, interNodeBandwidth: 25e9, hostBandwidth: 25e9, ...extra };
}

export function request(
  name: string,
  setup: Partial<TrainingSetup> = {},
  par: Partial<Parallelism> = {},
  hw: Hardware = hardware(),
): PlanRequest {
  return {
    model: model(name),
    setup: {
      microBatch: 1,
      seq: 1024,
      precision: 'amp-bf16',
      optimizer: 'adamw',
      checkpointing: 'none',
      gradAccum: 1,
      mode: 'train',
      ...setup,
    },
    parallelism: { dp: 'none', dpSize: 1, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false, ...par },
    hardware: hw,
  };
}

/** `gpuwise plan ARGS` in this process: its exit code and what it wrote to stdout and stderr. */
export async function planCli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
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
    return { code: await main(['plan', ...args]), out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

/** The one-line message a config is refused with (a ConfigError naming the field); throws where it is accepted. */
export function configErrorOf(c: unknown): string {
  try {
    describeHfConfig(c);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('no error');
}
