/**
 * A file given to the wrong command is named for what it is, with the command that reads it, in one line (exit 2):
 * the shipped traces, snapshots, run directories and nvidia-smi files, each given where another is read.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';
import { cleanScratch, makeScratch } from '../telemetry/scratch.js';

const TRACE = join(REPO, 'examples', 'traces', 'resnet_starved.trace.json.gz');
const SNAPSHOT = join(REPO, 'test', 'fixtures', 'memory', 'memory_snapshot.pickle.gz');
const PLAIN_PICKLE = join(REPO, 'test', 'fixtures', 'memory', 'train_p2.pickle');
const RUN = join(REPO, 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader');
const REPORT = join(RUN, 'report.json');
const PROBE = join(RUN, 'probe.jsonl');
const SMI = join(REPO, 'test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz');
const CONFIG = join(REPO, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json');

const PICKLE = 'a Python pickle (what torch.cuda.memory._dump_snapshot writes)';

async function refused(args: string[]): Promise<string> {
  const r = await runCli(args);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  return r.stderr.trimEnd();
}

describe('a file given to the wrong command', () => {
  it.each([
    [['analyze', SNAPSHOT], `gpuwise analyze: ${SNAPSHOT}: ${PICKLE}, not a torch.profiler trace: gpuwise memory ${SNAPSHOT} reads it`],
    [['analyze', PLAIN_PICKLE], `gpuwise analyze: ${PLAIN_PICKLE}: ${PICKLE}, not a torch.profiler trace: gpuwise memory ${PLAIN_PICKLE} reads it`],
    [['analyze', REPORT], `gpuwise analyze: ${REPORT}: a gpuwise doctor report, not a torch.profiler trace: gpuwise runs show ${REPORT} reads it`],
    [['analyze', PROBE], `gpuwise analyze: ${PROBE}: the probe records of a doctor run, not a torch.profiler trace: gpuwise doctor --from ${RUN} reads it`],
    [['analyze', CONFIG], `gpuwise analyze: ${CONFIG}: a Hugging Face model config, not a torch.profiler trace: gpuwise plan --model ${CONFIG} --gpu GPU reads it`],
    [['memory', TRACE], `gpuwise memory: ${TRACE}: a torch.profiler trace, not ${PICKLE}: gpuwise analyze ${TRACE} reads it`],
    [['memory', 'diff', SNAPSHOT, TRACE], `gpuwise memory: ${TRACE}: a torch.profiler trace, not ${PICKLE}: gpuwise analyze ${TRACE} reads it`],
    [['memory', SMI], `gpuwise memory: ${SMI}: nvidia-smi output, not ${PICKLE}: gpuwise smi --from ${SMI} reads it`],
    [['plan', '--model', SNAPSHOT, '--gpu', 'h100'], `gpuwise plan: ${SNAPSHOT}: ${PICKLE}, not a Hugging Face model config: gpuwise memory ${SNAPSHOT} reads it`],
    [['plan', '--model', TRACE, '--gpu', 'h100'], `gpuwise plan: ${TRACE}: a torch.profiler trace, not a Hugging Face model config: gpuwise analyze ${TRACE} reads it`],
    [['plan', '--model', REPORT, '--gpu', 'h100'], `gpuwise plan: ${REPORT}: a gpuwise doctor report, not a Hugging Face model config: gpuwise runs show ${REPORT} reads it`],
    [['smi', '--from', TRACE], `gpuwise smi: ${TRACE}: a torch.profiler trace, not nvidia-smi output: gpuwise analyze ${TRACE} reads it`],
    [['select', '-n', '1', '--from', SNAPSHOT], `gpuwise select: ${SNAPSHOT}: ${PICKLE}, not nvidia-smi output: gpuwise memory ${SNAPSHOT} reads it`],
    [['doctor', '--from', TRACE], `gpuwise doctor: ${TRACE}: a torch.profiler trace, not a doctor run directory: gpuwise analyze ${TRACE} reads it`],
    [['doctor', '--from', PROBE], `gpuwise doctor: ${PROBE}: the probe records of a doctor run, not a doctor run directory: gpuwise doctor --from ${RUN} reads it`],
    [['compare', TRACE, REPORT], `gpuwise compare: ${TRACE}: a torch.profiler trace, not a gpuwise doctor report: gpuwise analyze ${TRACE} reads it`],
    [['runs', 'show', SNAPSHOT], `gpuwise runs: ${SNAPSHOT}: ${PICKLE}, not a gpuwise doctor report: gpuwise memory ${SNAPSHOT} reads it`],
  ])('%j', async (args, line) => {
    expect(await refused(args)).toBe(line);
  });

  it('a pickle that is not a snapshot says so once', async () => {
    const file = join(REPO, 'test', 'fixtures', 'memory', 'not_snapshot.pickle');
    const line = await refused(['memory', file]);
    expect(line).toBe(`gpuwise memory: ${file}: not a memory snapshot: a pickled dict without 'segments'`);
  });

  it('--html given before the input takes it as the page: one line that shows the order', async () => {
    expect(await refused(['analyze', '--html', TRACE])).toBe(
      `gpuwise analyze: --html takes the page to write first: gpuwise analyze --html report.html ${TRACE} (here it took the trace ${TRACE} as the page)`,
    );
    expect(await refused(['memory', '--html', SNAPSHOT])).toBe(
      `gpuwise memory: --html takes the page to write first: gpuwise memory --html report.html ${SNAPSHOT} (here it took the snapshot ${SNAPSHOT} as the page)`,
    );
    // With the page named, the flag goes anywhere.
    const r = await runCli(['analyze', '--html', '/dev/null', TRACE]);
    expect([r.code, r.stderr]).toEqual([0, 'gpuwise analyze: wrote /dev/null\n']);
  });
});

describe('a file that is no gpuwise input is named by what it is (issue 47: a PNG read "not JSON (at character 0)")', () => {
  afterAll(cleanScratch);
  const dir = makeScratch('foreign-');
  const files: [string, number[], string][] = [
    ['plot.png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13], 'an image (PNG, JPEG or GIF)'],
    ['photo.jpg', [0xff, 0xd8, 0xff, 0xe0, 0, 16], 'an image (PNG, JPEG or GIF)'],
    ['paper.pdf', [...Buffer.from('%PDF-1.7\n')], 'a PDF document'],
    ['model.pt', [0x50, 0x4b, 0x03, 0x04, 20, 0], 'a zip archive (a torch.save checkpoint is one)'],
  ];
  it.each(files)('%s', async (name, bytes, what) => {
    const path = join(dir, name);
    writeFileSync(path, Buffer.from(bytes));
    expect(await refused(['analyze', path])).toBe(`gpuwise analyze: ${path}: ${what}, not a torch.profiler trace`);
    expect(await refused(['memory', path])).toBe(`gpuwise memory: ${path}: ${what}, not ${PICKLE}`);
  });
});
