/**
 * The batch of a sequence-first model (issue 14): an LSTM language model on `[seq, batch]` token ids (the
 * word_language_model style of examples/realworld/manual_sgd_lstm.py) has its batch read from dimension 1, its twin
 * with `batch_first=True` from dimension 0, and a model that transposes a batch-first input before its sequence-first
 * LSTM keeps dimension 0. Run for real with the CPU PyTorch; the report shows how the batch was read.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { doctorInput } from './input.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { renderDoctorMarkdown } from '../../src/doctor/markdown.js';
import type { ProbeRecord } from '../../src/run/records.js';
import { batchOfSteps } from '../../src/run/steps.js';
import { BOOT, PROBE_ROOT, PYTHON, SKIP_PYTHON, fallbackRecords, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-batch-dim-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

// biome-ignore lint/suspicious/noExplicitAny: records are read field by field, as JSON
type Any = any;

async function probe(script: string[]): Promise<{ records: ProbeRecord[]; stderr: string }> {
  const dir = mkdtempSync(join(tmp, `run${n++}-`));
  const r = await runProcess(PYTHON, ['-c', script.join('\n')], pyEnv({ PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter), GPUWISE_RUN_DIR: dir, GPUWISE_PROFILE_STEPS: '0' }));
  return { records: fallbackRecords(dir), stderr: r.stderr };
}

/**
 * A 2-layer LSTM LM updated by hand (manual_sgd_lstm.py, smaller): batch 20, sequence 35. `layout` decides how the
 * batches are sliced and what the LSTM is told; `transpose` feeds [batch, seq] and transposes inside the model.
 */
const lstmLm = (layout: 'seq-first' | 'batch-first' | 'transposed') => [
  'import torch, torch.nn as nn',
  'ntokens, bsz, bptt = 500, 20, 35',
  'class RNNModel(nn.Module):',
  '    def __init__(self):',
  '        super().__init__()',
  '        self.encoder = nn.Embedding(ntokens, 16)',
  `        self.rnn = nn.LSTM(16, 16, 2, batch_first=${layout === 'batch-first' ? 'True' : 'False'})`,
  '        self.decoder = nn.Linear(16, ntokens)',
  '    def forward(self, x):',
  `        e = self.encoder(${layout === 'transposed' ? 'x.t()' : 'x'})`,
  '        out, _ = self.rnn(e)',
  '        return self.decoder(out).view(-1, ntokens)',
  'model = RNNModel()',
  'crit = nn.CrossEntropyLoss()',
  // batchify: [seq total, batch]; slices [bptt, bsz]; batch-first layouts get them transposed
  'data = torch.randint(0, ntokens, (bptt * 12 + 1, bsz))',
  'for i in range(0, bptt * 12, bptt):',
  `    x = data[i : i + bptt]${layout === 'seq-first' ? '' : '.t().contiguous()'}`,
  '    y = torch.randint(0, ntokens, (bptt * bsz,))',
  '    model.zero_grad()',
  '    crit(model(x), y).backward()',
  '    for p in model.parameters():',
  '        p.data.add_(p.grad, alpha=-0.1)',
];

const stepsOf = (recs: ProbeRecord[]): Any[] => recs.filter((r) => r.type === 'step');
const modelOf = (recs: ProbeRecord[]): Any => recs.find((r) => r.type === 'model');

describe.skipIf(SKIP_PYTHON)('the batch of a sequence-first model (CPU torch)', () => {
  it('reads batch 20 and sequence 35 off [35, 20] token ids fed to an LSTM(batch_first=False)', async () => {
    const { records, stderr } = await probe(lstmLm('seq-first'));
    expect(stderr).toBe('');
    const s = stepsOf(records);
    expect(s.length).toBe(11); // 12 backward passes, the first starts the clock
    for (const x of s) expect([x.samples, x.tokens, x.seqLen, x.batchSource]).toEqual([20, 700, 35, 'model-input']);
    expect(modelOf(records)).toMatchObject({ name: 'RNNModel', batchDim: 1, batchDimEvidence: 'LSTM(batch_first=False)' });
  });

  it('reads the same batch off the batch_first=True twin ([20, 35], dimension 0)', async () => {
    const { records, stderr } = await probe(lstmLm('batch-first'));
    expect(stderr).toBe('');
    for (const x of stepsOf(records)) expect([x.samples, x.tokens, x.seqLen]).toEqual([20, 700, 35]);
    expect(modelOf(records)).toMatchObject({ batchDim: 0, batchDimEvidence: 'LSTM(batch_first=True)' });
  });

  it('keeps dimension 0 when the model transposes a batch-first input before its sequence-first LSTM', async () => {
    const { records, stderr } = await probe(lstmLm('transposed'));
    expect(stderr).toBe('');
    const s = stepsOf(records);
    // The LSTM's first call showed its batch is the input's dimension 0; step 1 was counted before that call.
    for (const x of s.slice(1)) expect([x.samples, x.tokens, x.seqLen]).toEqual([20, 700, 35]);
    expect(modelOf(records)).toMatchObject({ batchDim: 0 });
    expect(modelOf(records).batchDimEvidence).toMatch(/^LSTM\(batch_first=False\), fed the input's dimension 0 as its batch/);
  });

  // A Hugging Face model is called with keywords only (`model(**batch)`, every step of `generate()`); a global module
  // hook is given the positional arguments alone, so the batch and the decode steps went unread before.
  it('reads the batch of a model called with keywords only, and names its decode steps', async () => {
    const { records, stderr } = await probe([
      'import time, torch',
      'class LM(torch.nn.Module):',
      '    def __init__(self):',
      '        super().__init__(); self.emb = torch.nn.Embedding(100, 16); self.out = torch.nn.Linear(16, 100)',
      '    def forward(self, input_ids=None, attention_mask=None):',
      '        return self.out(self.emb(input_ids))',
      'm = LM().eval()',
      'with torch.inference_mode():',
      '    for call in range(4):',
      '        ids = torch.randint(0, 100, (4, 8))',
      '        for t in range(16):',
      '            logits = m(input_ids=ids if t == 0 else ids[:, -1:], attention_mask=None)',
      '            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], 1)',
      // Steps of about 2 ms, so a loaded machine's noise leaves the steady state (which the decode figures are over)
      // starting early: 30 us steps once settled only in the second half, past the prefills.
      '            time.sleep(0.002)',
    ]);
    expect(stderr).toBe('');
    const s = stepsOf(records);
    expect(s.length).toBeGreaterThan(40);
    for (const x of s) expect(x.samples).toBe(4);
    const report = buildDoctorReport(doctorInput(records, { command: ['python', 'gen.py'] }));
    const decode = report.ranks[0]!.steps!.decode!;
    expect(decode.batch).toBe(4);
    expect(decode.promptLen).toBe(8);
    expect(decode.decodeSteps).toBeGreaterThan(20);
  });

  // nanoGPT's loop: batches from get_batch(), two micro-batches of 6 a step (gradient accumulation). The step's samples
  // add up its forward calls; the record's `forwards` says how many, so the batch is 6, not 12 (and known at all:
  // without it a run with no DataLoader had no batch for its what-ifs).
  it('reads the micro-batch of a get_batch() loop with gradient accumulation from its forward calls', async () => {
    const { records, stderr } = await probe([
      'import torch',
      'm = torch.nn.Linear(8, 1)',
      'opt = torch.optim.SGD(m.parameters(), lr=0.01)',
      'for step in range(12):',
      '    for micro in range(2):',
      '        m(torch.randn(6, 8)).pow(2).mean().backward()',
      '    opt.step()',
      '    opt.zero_grad()',
    ]);
    expect(stderr).toBe('');
    const s = stepsOf(records);
    expect(s.length).toBeGreaterThan(8);
    for (const x of s.slice(1)) expect([x.batchSource, x.batches, x.forwards, x.samples]).toEqual(['model-input', 0, 2, 12]);
    expect(batchOfSteps(s)).toMatchObject({ microBatch: 6, gradAccum: 2, samplesPerStep: 12 });
  });

  it('says in the report how the batch was read', async () => {
    const { records } = await probe(lstmLm('seq-first'));
    const report = buildDoctorReport(doctorInput(records, { command: ['python', 'lm.py'] }));
    expect(report.model?.batchDim).toBe(1);
    const line = /batch read from dimension 1 of the model's input \(LSTM\(batch_first=False\): \[seq, batch, \.\.\.\]\)/;
    expect(renderDoctorText(report)).toMatch(line);
    expect(renderDoctorMarkdown(report)).toMatch(line);
  });
});
