import { readFileSync } from 'node:fs';
import { gpuById } from '../../src/gpus/catalogue.js';
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
