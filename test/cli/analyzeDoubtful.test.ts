/**
 * Doubtful input gets an honest answer (issue 16): a damaged trace is judged on
 * whole steps only, a trace with nothing to judge says what is missing and exits
 * 2, and a folder of traces is split into the runs it holds.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { TRACES, tracePath } from '../helpers/fixtures.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-doubt-'));
const starved = tracePath('resnet_starved');
const starvedText = gunzipSync(readFileSync(starved)).toString('utf8');

function write(name: string, data: string | Buffer): string {
  const p = join(tmp, name);
  writeFileSync(p, data);
  return p;
}

describe('a damaged trace is judged on whole steps only', () => {
  it('the first 200 kB of a gzip trace (CPU events only): nothing to judge, exit 2, no finding', async () => {
    const cut = write('cut200k.json.gz', readFileSync(starved).subarray(0, 200_000));
    const r = await runCli(['analyze', '--fail-on', 'high', cut]);
    expect(r.code).toBe(2);
    expect(r.stdout).not.toMatch(/HIGH|No findings/);
    expect(r.stderr).toMatch(/nothing to judge: .*events read, none of them GPU activity/);
    const j = JSON.parse((await runCli(['analyze', '--json', cut])).stdout);
    expect(j.findings).toEqual([]);
    expect(j.inputs[0].coverage).toMatchObject({ gpuOps: 0, stepsUsed: [] });
    expect(j.inputs[0].coverage.nothingToJudge).toMatch(/GPU activity/);
  });

  it('cut inside the GPU activity: the cut step is left out, findings capped at medium, and it says how much was read', async () => {
    const cut = write('cut70.json', starvedText.slice(0, Math.floor(starvedText.length * 0.7)));
    const r = await runCli(['analyze', '--json', '--fail-on', 'high', cut]);
    expect(r.code).toBe(0); // no high finding from a trace that cannot prove its steps whole
    const j = JSON.parse(r.stdout);
    const c = j.inputs[0].coverage;
    expect(c.stepMarkers).toBe(3);
    expect(c.stepsUsed).toEqual([4, 5]);
    expect(c.stepsLeftOut).toEqual([{ step: 6, reason: 'cut by the end of the input' }]);
    expect(c.severityCap).toBe('medium');
    expect(j.metrics.ranks[0].steps.map((s: { step: number }) => s.step)).toEqual([4, 5]);
    expect(j.findings[0]).toMatchObject({ id: 'dataloader-bound', severity: 'medium' });
    expect(j.findings.map((f: { id: string }) => f.id)).not.toContain('gpu-underused');
    expect(j.inputs[0].warnings.join('\n')).toMatch(/read \d+ events; findings rest on the 2 of 3 profiler steps that look whole \(1 cut left out\)/);
  });

  it('cut after the GPU activity (only trailing metadata lost): every step and the high finding stay', async () => {
    const cut = write('cutTail.json', starvedText.slice(0, starvedText.length - 2000));
    const j = JSON.parse((await runCli(['analyze', '--json', cut])).stdout);
    expect(j.inputs[0].coverage).toMatchObject({ severityCap: null, stepsUsed: [4, 5, 6] });
    expect(j.findings[0]).toMatchObject({ id: 'dataloader-bound', severity: 'high' });
  });
});

describe('nothing to judge: say what is missing, exit 2, never "no findings"', () => {
  it('a Chrome trace that torch.profiler did not write', async () => {
    const p = write('chrome.json', '{"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]}');
    const r = await runCli(['analyze', p]);
    expect(r.code).toBe(2);
    expect(r.stdout).not.toMatch(/No findings/);
    expect(r.stderr).toMatch(/chrome\.json: nothing to judge: not a PyTorch profiler trace/);
  });

  it('a TensorFlow timeline', async () => {
    const p = write('tf.json', JSON.stringify({ traceEvents: [{ name: 'MatMul', cat: 'Op', ph: 'X', ts: 1, dur: 5, pid: 1, tid: 0 }] }));
    const r = await runCli(['analyze', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/a TensorFlow timeline, not a PyTorch profiler trace/);
  });

  it('a real trace with its GPU activity removed (profiled without ProfilerActivity.CUDA)', async () => {
    const full = JSON.parse(starvedText);
    full.traceEvents = full.traceEvents.filter((e: { cat?: string }) => !['kernel', 'gpu_memcpy', 'gpu_memset', 'cuda_runtime', 'cuda_driver', 'ac2g'].includes(e.cat ?? ''));
    const p = write('cpuonly.json.gz', gzipSync(JSON.stringify(full)));
    const r = await runCli(['analyze', '--fail-on', 'high', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/nothing to judge: no GPU activity .*ProfilerActivity\.CUDA/);
    const j = JSON.parse((await runCli(['analyze', '--json', p])).stdout);
    expect(j.findings).toEqual([]);
    expect(j.metrics.ranks).toEqual([]);
  });

  it('no profiler steps: judged as one window, and it says so', async () => {
    const full = JSON.parse(starvedText);
    full.traceEvents = full.traceEvents.filter((e: { name?: string }) => !String(e.name ?? '').startsWith('ProfilerStep'));
    const p = write('nosteps.json.gz', gzipSync(JSON.stringify(full)));
    const r = await runCli(['analyze', '--json', p]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.inputs[0].coverage.stepMarkers).toBe(0);
    expect(j.inputs[0].warnings.join('\n')).toMatch(/no ProfilerStep markers: the whole trace is taken as one step/);
    expect(j.metrics.ranks[0].stepsFromMarkers).toBe(false);
  });

  it('one judged trace beside one with nothing to judge: the judged one is reported', async () => {
    const p = write('chrome2.json', '{"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]}');
    const r = await runCli(['analyze', starved, p]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/The GPU waits on the DataLoader/);
    expect(r.stderr).toMatch(/chrome2\.json: nothing to judge/);
  });
});

describe('a folder of traces is grouped into runs by distributedInfo and time', () => {
  it('examples/traces/: four unrelated single-process runs, analysed one by one, no cross-rank finding', async () => {
    const r = await runCli(['analyze', '--json', TRACES]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.split).toMatch(/4 traces form 4 separate runs.*4 single-process traces/);
    expect(j.runs).toHaveLength(4);
    for (const run of j.runs) {
      expect(run.metrics.ranks).toHaveLength(1);
      expect(run.findings.map((f: { id: string }) => f.id)).not.toContain('rank-imbalance');
    }
    const text = await runCli(['analyze', TRACES]);
    expect(text.stdout).toMatch(/^4 traces form 4 separate runs/);
    expect(text.stdout).toMatch(/Run 4 of 4: a single-process trace/);
    expect(text.stdout).not.toMatch(/rank-imbalance/);
  });

  it('a folder where one file has nothing to judge: the others are reported, that one never as "No findings"', async () => {
    const d = join(tmp, 'mixed');
    mkdirSync(d);
    copyFileSync(starved, join(d, 'a.trace.json.gz'));
    writeFileSync(join(d, 'b.json'), '{"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]}');
    const r = await runCli(['analyze', '--no-color', d]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^2 traces form 2 separate runs/);
    expect(r.stdout).toMatch(/Run 1 of 2: a single-process trace\n\ngpuwise analyze · a\.trace\.json\.gz/);
    expect(r.stdout).not.toMatch(/Run 2 of 2|No findings/);
    expect(r.stderr).toMatch(/b\.json: nothing to judge: not a PyTorch profiler trace/);
    const j = JSON.parse((await runCli(['analyze', '--json', d])).stdout);
    expect(j.runs[1].findings).toEqual([]);
    expect(j.runs[1].inputs[0].coverage.nothingToJudge).toMatch(/not a PyTorch profiler trace/);
  });

  it('examples/traces/scenarios/: each 2-rank DDP run grouped by time, single-process traces alone', async () => {
    const j = JSON.parse((await runCli(['analyze', '--json', `${TRACES}scenarios`])).stdout);
    const ddp = j.runs.filter((r: { run: { label: string } }) => r.run.label.startsWith('ranks'));
    expect(ddp).toHaveLength(5) // ddp_* scenarios and model_parallel_ddp;
    for (const run of ddp) {
      expect(run.run.label).toBe('ranks 0-1 of 2 (nccl)');
      const names = run.inputs.map((i: { path: string }) => (i.path.split('/').pop() ?? '').replace(/\.rank\d.*/, ''));
      expect(new Set(names).size).toBe(1); // both ranks of the same scenario
    }
    const imbalance = ddp.find((r: { inputs: { path: string }[] }) => r.inputs[0]!.path.includes('ddp_imbalance'));
    expect(imbalance.findings.map((f: { id: string }) => f.id)).toContain('rank-imbalance');
  });

  it('a tensorboard_trace_handler folder with two windows per rank: two runs of ranks 0-1', async () => {
    const d = join(tmp, 'tb');
    mkdirSync(d);
    // Two profiling windows of a 2-rank job: the files of each window overlap in time, the windows do not.
    for (const [scenario, w] of [
      ['ddp_comm_bound', 'a'],
      ['ddp_imbalance', 'b'],
    ] as const) {
      for (const r of [0, 1]) copyFileSync(tracePath(`scenarios/${scenario}.rank${r}`), join(d, `host_${r}.${w}.pt.trace.json.gz`));
    }
    const j = JSON.parse((await runCli(['analyze', '--json', d])).stdout);
    expect(j.split).toMatch(/4 traces form 2 separate runs.*a rank appears in several files/);
    expect(j.runs.map((r: { run: { label: string } }) => r.run.label)).toEqual(['ranks 0-1 of 2 (nccl)', 'ranks 0-1 of 2 (nccl)']);
    expect(j.runs[0].inputs.map((i: { path: string }) => i.path.split('/').pop())).toEqual(['host_0.a.pt.trace.json.gz', 'host_1.a.pt.trace.json.gz']);
    const html = await runCli(['analyze', '--html', join(tmp, 'tb.html'), d]);
    expect(html.code).toBe(2);
    expect(html.stderr).toMatch(/--html: .*give the files of one run/);
  });

  it('world sizes that differ are never one run; a missing rank is said', async () => {
    const d = join(tmp, 'ws');
    mkdirSync(d);
    const r1 = JSON.parse(gunzipSync(readFileSync(tracePath('scenarios/ddp_comm_bound.rank1'))).toString('utf8'));
    r1.distributedInfo.world_size = 4;
    copyFileSync(tracePath('scenarios/ddp_comm_bound.rank0'), join(d, 'r0.json.gz'));
    writeFileSync(join(d, 'r1.json.gz'), gzipSync(JSON.stringify(r1)));
    const r = await runCli(['analyze', '--json', d]);
    const j = JSON.parse(r.stdout);
    expect(j.split).toMatch(/world sizes differ \(2, 4\)/);
    expect(j.runs.map((x: { run: { label: string; notes: string[] } }) => x.run)).toEqual([
      { label: 'rank 0 of 2 (nccl)', notes: ['rank 1 of 2 not among the inputs'] },
      { label: 'rank 1 of 4 (nccl)', notes: ['ranks 0, 2-3 of 4 not among the inputs'] },
    ]);
  });
});

describe('one answer to "how do I log the loss" in every command', () => {
  it('memory (a leak across steps) and analyze (host syncs) give the same change: accumulate detached on the GPU, read every N steps', async () => {
    const mem = JSON.parse((await runCli(['memory', '--json', 'test/fixtures/memory/leak_step6.pickle'])).stdout);
    const kept = mem.findings.find((f: { id: string }) => f.id === 'kept-across-steps');
    const sync = JSON.parse((await runCli(['analyze', '--json', tracePath('scenarios/host_sync')])).stdout).findings.find((f: { id: string }) => f.id === 'host-sync');
    for (const code of [kept.recommendation.code, sync.recommendation.code]) {
      expect(code).toMatch(/running_loss \+= loss\.detach\(\)/);
      expect(code).toMatch(/if step % log_every == 0:\n\s+print\(\(running_loss \/ log_every\)\.item\(\)\)/);
      expect(code).not.toMatch(/running_loss \+= loss\.item\(\)/);
    }
  });
});

describe('one report order and prose wrapped to the terminal', () => {
  it('terminal, Markdown and HTML put the findings first, then warnings, then the figures', async () => {
    const cut = write('cutOrder.json', starvedText.slice(0, Math.floor(starvedText.length * 0.8)));
    const text = (await runCli(['analyze', '--no-color', cut])).stdout;
    expect(text.indexOf('Findings')).toBeLessThan(text.indexOf('warning:'));
    expect(text.indexOf('warning:')).toBeLessThan(text.indexOf('Rank 0'));
    const md = (await runCli(['analyze', '--md', cut])).stdout;
    expect(md.indexOf('### ')).toBeLessThan(md.indexOf('| rank |'));
    expect(md).toMatch(/> ⚠️ `cutOrder\.json`: the input ends before the trace does/);
  });

  it('renderTerminal wraps evidence and advice to the width given, keeping the indent', async () => {
    const { renderTerminal } = await import('../../src/report/terminal.js');
    const { PLAIN } = await import('../../src/report/style.js');
    const j = JSON.parse((await runCli(['analyze', '--json', starved])).stdout);
    const lines = renderTerminal(j, PLAIN, 80).split('\n');
    // Every line but code (after '|') and bars fits, unless one word alone is longer.
    for (const l of lines.filter((x) => !x.includes('|') && !x.includes('█'))) expect(l.length <= 80 || !l.trim().includes(' '), l).toBe(true);
    const fix = lines.findIndex((l) => l.startsWith('    fix: '));
    expect(lines[fix + 1]).toMatch(/^ {9}\S/); // continuation under the text, not under "fix:"
    expect(renderTerminal(j, PLAIN).split('\n').some((l) => l.length > 80)).toBe(true); // width 0: unwrapped
  });
});
