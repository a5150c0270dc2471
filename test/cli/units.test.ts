/**
 * Units a reader can trust (issue 24 item 10), on the shipped traces, runs and fixtures through the built CLI:
 * a total over the analysed steps says so beside per-step figures; the count of syncs that drained the queue agrees
 * with the sync calls; a time in a trace is told by its step, never as a negative offset from the trace's clock;
 * and one GPU has one memory figure in every command (the memory CUDA can use: 139.8 GiB for an H200), the
 * catalogue's marketed "141GB" only as the catalogue's name and the planner's budget only as a budget.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { runCli } from '../helpers/cli.js';
import { TRACES } from '../helpers/fixtures.js';

const ROOT = join(TRACES, '..', '..');
const out = async (args: string[]) => {
  const r = await runCli(args);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
};

describe('analyze: per step or over the window, said', () => {
  it('resnet_starved: every kernel and copy total beside the per-step figures names the 3-step window', async () => {
    const text = await out(['analyze', join(TRACES, 'resnet_starved.trace.json.gz')]);
    const line = (head: string) => text.split('\n').find((l) => l.startsWith(`  ${head}`)) ?? '';
    expect(line('matmuls')).toMatch(/over the 3-step window: bf16\/fp16 0 ns, tf32 33\.3 ms/);
    expect(line('launches')).toMatch(/793 kernels per step.*; over the 3-step window: CPU in launch calls 11\.2 ms vs GPU kernels 107 ms$/);
    expect(line('memcpy')).toMatch(/6 copies +110 MiB +11\.8 ms .*over the 3-step window$/);
    expect(text).toContain('6 HtoD copies from pageable memory over the 3-step window, 110 MiB in 11.8 ms');
  });

  it('host_sync: the syncs that drained the queue are one per host wait, no more than the waits (before: 70.3 a step beside 4.0 calls)', async () => {
    const r = JSON.parse(await out(['analyze', '--json', join(TRACES, 'scenarios', 'host_sync.trace.json.gz')])) as AnalyzeReport;
    const m = r.metrics.ranks[0]!;
    const calls = m.examples.syncCalls.reduce((a, c) => a + c.count, 0);
    expect(m.perStep.syncDrains).toBeGreaterThan(0);
    // At most one drain per sync call of the window, and one for a call that began before it (the profiler's own
    // cudaDeviceSynchronize as the first step starts).
    expect(m.perStep.syncDrains * m.steps.length).toBeLessThanOrEqual(calls + 1 + 1e-9);
    const ev = r.findings.find((f) => f.id === 'host-sync')!.evidence;
    expect(ev.find((e) => e.includes('drained it'))).toMatch(new RegExp(`^${m.perStep.syncDrains.toFixed(1).replace('.', '\\.')} host waits a step found work queued and drained it \\(a sync call`));
    expect(ev).toContainEqual(expect.stringMatching(/^cudaStreamSynchronize: 4\.0 calls per step, 6\.\d+ ms blocked per step$/));
  });

  it('a time in the trace is said by its step (before: a copy "at t=-15.690 ms")', async () => {
    const starved = await out(['analyze', join(TRACES, 'resnet_starved.trace.json.gz')]);
    expect(starved).toMatch(/largest: "Memcpy HtoD \(Pageable -> Device\)" 36\.8 MiB in 4\.13 ms in step \d+, [\d.]+ ms after it began/);
    const sync = await out(['analyze', join(TRACES, 'scenarios', 'host_sync.trace.json.gz')]);
    expect(sync).toMatch(/aten::item forced a sync 4\.0 times per step, first in step \d+, [\d.]+ (ms|us) after it began/);
    expect(`${starved}${sync}`).not.toMatch(/t=-|at t=/);
  });
});

describe('one H200, one memory figure', () => {
  it('analyze, doctor, smi and plan give 139.8 GiB; 141GB only as the catalogue name; 139.1 GiB only as a budget', async () => {
    const outputs = {
      analyze: await out(['analyze', join(TRACES, 'resnet_starved.trace.json.gz')]),
      analyzeMd: await out(['analyze', '--md', join(TRACES, 'resnet_starved.trace.json.gz')]),
      doctor: await out(['doctor', '--from', join(ROOT, 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader')]),
      smi: await out(['smi', '--from', join(ROOT, 'test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz')]),
      plan: await out(['plan', '--model', join(ROOT, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json'), '--gpu', 'h200']),
    };
    expect(outputs.analyze).toContain('NVIDIA H200 (sm_90, 139.8 GiB)');
    expect(outputs.analyze).toContain('peak reserved 6.55 GiB of 139.8 GiB');
    expect(outputs.doctor).toContain('cuda:0 NVIDIA H200 (139.8 GiB, sm 9.0)');
    expect(outputs.smi).toMatch(/6\.58 GiB \/ 139\.8 GiB/);
    expect(outputs.plan).toContain('1 x 1 NVIDIA H200 141GB (catalogue entry, 139.8 GiB each)');
    for (const [name, text] of Object.entries(outputs)) {
      expect([name, text.match(/\b14[01](\.\d)? ?GiB/g)]).toEqual([name, null]);
      for (const m of text.matchAll(/141 ?GB/g)) expect([name, text.slice(Math.max(0, (m.index ?? 0) - 40), (m.index ?? 0) + 5)]).toEqual([name, expect.stringMatching(/(catalogue's|1 x 1) NVIDIA H200 141GB$/)]);
      for (const m of text.matchAll(/139\.1 GiB/g)) expect([name, text.slice(m.index, (m.index ?? 0) + 16)]).toEqual([name, '139.1 GiB budget']);
    }
    expect(outputs.doctor).toContain('of a 139.1 GiB budget');
  });
});
