/**
 * Scripts nobody on the team wrote (issue 44): llm.c's train_gpt2.py and minGPT's chargpt at GPT-2 size, each run under
 * doctor on an H200 (examples/pace/runs/h200-d, one call of 2026-12-07) and then plainly at each plan step in the same
 * call (measured.jsonl: llm.c's own average, minGPT's mean by CUDA events). Each plan step's expected step, from
 * `doctor --from`, against what the run with that change measured; the table is printed. What holds is held; what the
 * model still misses (minGPT's bf16 step and its last, the host's) is held by its bound, so a change that fixes it turns
 * this red and the bound moves with it (examples/pace/external/README.md, docs/validation/compile.md).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, rediagnosed } from '../doctor/helpers.js';
import { externalMeasured, planStepTable } from './external.js';

const RUNS = join(REPO, 'examples', 'pace', 'runs', 'h200-d');
const measured = externalMeasured(RUNS);
const { reports, rows, step } = planStepTable(measured);

describe('public scripts on an H200: doctor plans against plain runs of each step', () => {
  beforeAll(async () => {
    for (const name of ['llmc_hand', 'llmc_sdpa', 'mingpt_fp32', 'mingpt_bf16_sdpa']) reports.set(name, await rediagnosed(join(RUNS, name)));
  }, 240_000);
  afterAll(() => console.log(rows.join('\n')));

  it("doctor's own step is the plain run's (llm.c and minGPT, within 5%)", () => {
    expect(Math.abs((reports.get('llmc_hand')?.pace?.stepNs ?? 0) / 1e6 / (measured.get('llmc:hand') as number) - 1)).toBeLessThan(0.05);
    expect(Math.abs((reports.get('mingpt_fp32')?.pace?.stepNs ?? 0) / 1e6 / (measured.get('mingpt:fp32') as number) - 1)).toBeLessThan(0.05);
  });

  it('llm.c with attention written out: SDPA first, within 15%', () => {
    expect(reports.get('llmc_hand')?.pace?.plan.steps[0]?.id).toBe('attention');
    expect(Math.abs(step('llmc_hand', 1, 'llmc:sdpa'))).toBeLessThan(0.15);
  });

  it('llm.c with SDPA: compile within 15% (chains of pointwise kernels, the GEMMs padded, the host by its kernels)', () => {
    expect(reports.get('llmc_sdpa')?.pace?.plan.steps[0]?.id).toBe('fusion');
    expect(Math.abs(step('llmc_sdpa', 1, 'llmc:sdpa_compile'))).toBeLessThan(0.15);
  });

  it("llm.c written out: its GPU-bound window's kernels taken as measured (the profiler's cost is idle), so the run's serial costs are its SDPA twin's, and compile from there within 15%", () => {
    // Both windows idle about 14 ms a step; both runs 5.8 ms once the kernels are not scaled (they fit in the run's
    // step). Scaled whole, the hand-written run kept 12.9 ms of serial costs and its compile step read 35.0 ms (+51%).
    const serialMs = (name: string) => (reports.get(name)?.pace?.serial ?? []).reduce((a, c) => a + c.ns, 0) / 1e6;
    expect(Math.abs(serialMs('llmc_hand') / serialMs('llmc_sdpa') - 1)).toBeLessThan(0.1);
    expect(reports.get('llmc_hand')?.pace?.plan.steps[1]?.id).toBe('fusion');
    // 25.2 against 23.2: compile reads the chains without attention's kernels, and its pool keeps the pointwise kernels
    // (28.7 before, +24%; docs/validation/compile.md); SDPA's fix leaves the twin's kernels (the layout copies go too).
    const err = step('llmc_hand', 2, 'llmc:sdpa_compile');
    expect(err).toBeGreaterThan(0);
    expect(err).toBeLessThan(0.15);
  });

  it('minGPT in fp32: bf16, then compile and SDPA in the plan; the last step within 25% (bf16 leaves the host binding, and the fp32 run, GPU-bound, did not time it)', () => {
    const plan = reports.get('mingpt_fp32')?.pace?.plan.steps ?? [];
    expect(plan.map((s) => s.id)).toEqual(['no-tensor-cores', 'fusion', 'attention']);
    step('mingpt_fp32', 1, 'mingpt:bf16');
    // The GPU after the three fixes, 15.8 ms, is the bound; the 22.5 ms measured is the host's (its bf16 + SDPA twin's
    // compile: the GPU 14.9 ms, the host 20.4 binds). -17% (17.1 ms of GPU) before compile's pool kept the pointwise
    // kernels the device-to-device copies between attention's matmuls were taken off, and SDPA the layout copies
    // around them (docs/validation/compile.md).
    expect(Math.abs(step('mingpt_fp32', 3, 'mingpt:bf16_sdpa_compile'))).toBeLessThan(0.25);
  });

  it("minGPT with bf16 and SDPA: compile planned (its window's GPU read 39.5% busy under the profiler, the run's 81%) and within 15% (the host keeps half its work: half the kernels)", () => {
    expect(reports.get('mingpt_bf16_sdpa')?.pace?.plan.steps[0]?.id).toBe('fusion');
    expect(Math.abs(step('mingpt_bf16_sdpa', 1, 'mingpt:bf16_sdpa_compile'))).toBeLessThan(0.15);
  });
});
