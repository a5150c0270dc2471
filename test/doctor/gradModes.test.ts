/**
 * A generation loop of the script's own: the probe counts the model's forwards by grad mode (issue 26), and a decode
 * whose forwards record a graph gets the inference_mode finding; one under inference_mode or no_grad does not. Run for
 * real with the CPU PyTorch: a tiny decoder fed one token a step after a 16-token prompt, as a generation loop is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDoctorReport } from '../../src/doctor/report.js';
import type { EndRecord } from '../../src/run/records.js';
import { BOOT, PROBE_ROOT, PYTHON, SKIP_PYTHON, fallbackRecords, pyEnv, runProcess } from './helpers.js';
import { doctorInput } from './input.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-grad-modes-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Three prompts of 16 tokens, each followed by 40 decode steps of one token; `context` wraps the loop. */
const generate = (context: string) =>
  [
    'import contextlib, torch',
    'torch.manual_seed(0)',
    'class Decoder(torch.nn.Module):',
    '    def __init__(self):',
    '        super().__init__()',
    '        self.emb = torch.nn.Embedding(100, 32)',
    '        self.head = torch.nn.Linear(32, 100)',
    '    def forward(self, ids):',
    '        return self.head(self.emb(ids))',
    'model = Decoder()',
    `with ${context}:`,
    '    for prompt in range(3):',
    '        ids = torch.randint(0, 100, (1, 16))',
    '        for _ in range(41):',
    '            logits = model(ids)',
    '            ids = logits[:, -1:].argmax(-1)',
  ].join('\n');

async function run(name: string, context: string) {
  const dir = mkdtempSync(join(tmp, `${name}-`));
  const r = await runProcess(
    PYTHON,
    ['-c', generate(context)],
    pyEnv({ PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter), GPUWISE_RUN_DIR: dir, GPUWISE_PROFILE_STEPS: '0' }),
  );
  expect(r.code, r.stderr).toBe(0);
  const records = fallbackRecords(dir);
  return { records, end: records.find((x) => x.type === 'end') as EndRecord };
}

describe.skipIf(SKIP_PYTHON)('the forwards of a generation loop, by grad mode', () => {
  it('with gradients: counted so, and the report says to generate under inference_mode', async () => {
    const { records, end } = await run('grad', 'contextlib.nullcontext()');
    expect(end.forwardGradModes).toEqual({ grad: 123, noGrad: 0, inference: 0 });
    const report = buildDoctorReport(doctorInput(records));
    expect(report.ranks[0]?.steps.decode).not.toBeNull();
    const f = report.findings.find((x) => x.id === 'decode-autograd');
    expect(f?.title).toMatch(/Decode steps run with autograd on: 100% of the model's forwards record a graph/);
    expect(f?.recommendation.code).toMatch(/with torch\.inference_mode\(\):/);
    // No profiled window (GPUWISE_PROFILE_STEPS=0): the host's time is not told apart, so no gain is claimed.
    expect(f?.estimatedGain).toBeNull();
    expect(f?.evidence.join('\n')).toMatch(/without a profiled window the host's time is not told apart/);
  });

  it.each([
    ['inference', 'torch.inference_mode()', { grad: 0, noGrad: 0, inference: 123 }],
    ['no_grad', 'torch.no_grad()', { grad: 0, noGrad: 123, inference: 0 }],
  ])('under %s: counted so, and no such finding', async (name, context, modes) => {
    const { records, end } = await run(name, context);
    expect(end.forwardGradModes).toEqual(modes);
    expect(buildDoctorReport(doctorInput(records)).findings.map((x) => x.id)).not.toContain('decode-autograd');
  });
});
