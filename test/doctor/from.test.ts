/**
 * `gpuwise doctor --from RUN_DIR` and `gpuwise runs show --rediagnose RUN`: reports rebuilt from the real doctor runs
 * recorded on 2x H200 (examples/doctor/runs/h200: probe records, the profiler window gzipped, the report.json of the
 * run), every output format, one clear line for a directory that is not a run, and the README's first command on a
 * machine whose Python has no PyTorch.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { saveRun } from '../../src/io/runStore.js';
import { runCli } from '../helpers/cli.js';
import { cleanScratch, makeScratch } from '../telemetry/scratch.js';
import { REPO } from './helpers.js';

const RUNS = join(REPO, 'examples', 'doctor', 'runs', 'h200');
const RUN_DIRS = readdirSync(RUNS).filter((d) => existsSync(join(RUNS, d, 'probe.jsonl')));

afterAll(cleanScratch);

/** What a finding says, to compare a rebuilt report with the saved one. */
const gist = (r: DoctorReport) =>
  r.findings.map((f) => ({ id: f.id, severity: f.severity, ranks: f.ranks, saved: f.estimatedGain ? Number(f.estimatedGain.savedFraction.toFixed(4)) : null }));

describe('doctor --from RUN_DIR on the recorded H200 runs', () => {
  it('has the five runs', () => expect(RUN_DIRS.sort()).toEqual(['accum_no_sync', 'dataparallel', 'fp32_matmul', 'host_sync', 'starved_dataloader']));

  for (const name of RUN_DIRS)
    it(`${name}: reproduces the saved report's findings and steps`, async () => {
      const dir = join(RUNS, name);
      const saved = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as DoctorReport;
      const { code, stdout, stderr } = await runCli(['doctor', '--from', dir, '--json']);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const r = JSON.parse(stdout) as DoctorReport;
      expect(r.findings.length).toBeGreaterThan(0);
      expect(gist(r)).toEqual(gist(saved));
      expect(r.ranks.map((x) => [x.rank, x.steps.steps, x.steps.medianS])).toEqual(saved.ranks.map((x) => [x.rank, x.steps.steps, x.steps.medianS]));
      // the window in the directory was found (gzipped, under its trimmed name) and analysed
      expect(r.profile.traces[0]).toMatchObject({ rank: 0, path: join(dir, 'trace.json.gz'), error: null });
      expect(r.notes[0]).toMatch(/^re-diagnosed from .* with the rules of gpuwise/);
    });

  it('a rank whose window is not in the directory is named, and the report still comes', async () => {
    const { stdout } = await runCli(['doctor', '--from', join(RUNS, 'accum_no_sync'), '--json']);
    const r = JSON.parse(stdout) as DoctorReport;
    expect(r.profile.traces.map((t) => [t.rank, t.error === null])).toEqual([
      [0, true],
      [1, false],
    ]);
    // named by its file name, not by the recording machine's path, which the error gives as such
    expect(r.profile.traces[1]?.path).toBe('trace-rank1.json');
    expect(r.profile.traces[1]?.error).toBe('not in this run directory: the machine that ran it wrote it to /tmp/w/train/accum_no_sync/trace-rank1.json');
  });

  it('prints every format doctor has (terminal, Markdown, HTML)', async () => {
    const dir = join(RUNS, 'starved_dataloader');
    const text = await runCli(['doctor', '--from', dir]);
    expect(text.stdout).toMatch(/HIGH +The training loop waits on the DataLoader/);
    const md = await runCli(['doctor', '--from', dir, '--md']);
    expect(md.stdout).toMatch(/^#/m);
    expect(md.stdout).toMatch(/HIGH: The training loop waits on the DataLoader/);
    const out = join(makeScratch('from-html'), 'r.html');
    const html = await runCli(['doctor', '--from', dir, '--html', out]);
    expect(html.code).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^<!doctype html>/i);
    // nothing written into the run directory
    expect(readdirSync(dir).sort()).toEqual(['probe.jsonl', 'report.json', 'trace.json.gz']);
  });

  it('reads the probes fallback files, and infers the exit without a report.json', async () => {
    const dir = makeScratch('from-fallback');
    const src = join(RUNS, 'host_sync');
    copyFileSync(join(src, 'probe.jsonl'), join(dir, 'probe-1116.jsonl'));
    copyFileSync(join(src, 'trace.json.gz'), join(dir, 'trace-pid1116.json.gz'));
    const { code, stdout } = await runCli(['doctor', '--from', dir, '--json']);
    expect(code).toBe(0);
    const r = JSON.parse(stdout) as DoctorReport;
    expect(r.profile.traces[0]?.path).toBe(join(dir, 'trace-pid1116.json.gz'));
    expect(r.findings.map((f) => f.id)).toContain('host-sync');
    expect(r.run.outcome).toBe('completed');
    expect(r.notes.join('\n')).toMatch(/exit status is not in the run directory/);
    expect(r.gpuUnavailableReason).toBe(
      "GPU utilisation and memory are sampled while doctor runs the command, and kept in the report it writes; this run directory holds the probe's records but no such report",
    );
  });

  it("says why there are no GPU samples in the user's terms (issue 47: not where the tool keeps them)", async () => {
    // host_sync's report.json was written by doctor --from itself: it had no samples to keep
    const { stdout } = await runCli(['doctor', '--from', join(RUNS, 'host_sync')]);
    expect(stdout.split('\n')).toContain(
      "GPUs: no samples (GPU utilisation and memory are sampled while doctor runs the command, and kept in the report it writes; this run directory's report was itself made by doctor --from from the probe's records, which do not carry them)",
    );
    // a report written with the old wording is still read as a re-diagnosis's
    const dir = makeScratch('from-old-reason');
    for (const f of ['probe.jsonl', 'trace.json.gz']) copyFileSync(join(RUNS, 'host_sync', f), join(dir, f));
    const saved = JSON.parse(readFileSync(join(RUNS, 'host_sync', 'report.json'), 'utf8')) as DoctorReport;
    writeFileSync(join(dir, 'report.json'), JSON.stringify({ ...saved, gpuUnavailableReason: "this run directory's report.json holds none: it was written by doctor --from from the probe records, which carry none" }));
    const again = JSON.parse((await runCli(['doctor', '--from', dir, '--json'])).stdout) as DoctorReport;
    expect(again.gpuUnavailableReason).toMatch(/^GPU utilisation and memory are sampled while doctor runs the command.*report was itself made by doctor --from/);
  });
});

describe('doctor --from: bad input is one line and exit 2', () => {
  const base = makeScratch('from-bad');
  const cases: [string, () => string, RegExp][] = [
    ['missing', () => join(base, 'nope'), /nope: no such directory$/],
    ['empty', () => mkdir(join(base, 'empty')), /empty: empty directory: not a doctor run directory/],
    ['foreign', () => withFile(join(base, 'foreign'), 'notes.txt', 'hello\n'), /foreign: not a doctor run directory: no probe\.jsonl/],
    ['damaged', () => withFile(join(base, 'damaged'), 'probe.jsonl', 'garbage\n{"half": \n'), /probe\.jsonl: damaged: none of its 2 line\(s\) is a probe record/],
    ['a file', () => join(RUNS, 'host_sync', 'probe.jsonl'), /probe\.jsonl: the probe records of a doctor run, not a doctor run directory: gpuwise doctor --from \S+host_sync reads it$/],
    ['a file of no known kind', () => join(REPO, 'README.md'), /README\.md: not a directory \(give the run directory doctor wrote: it holds probe\.jsonl\)$/],
  ];
  for (const [what, make, line] of cases)
    it(what, async () => {
      const { code, stdout, stderr } = await runCli(['doctor', '--from', make()]);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr.trim()).toMatch(line);
    });
  it('refuses a command or run flags with --from', async () => {
    expect((await runCli(['doctor', '--from', RUNS, '--', 'python3', 'x.py'])).stderr).toMatch(/give no command/);
    expect((await runCli(['doctor', '--from', RUNS, '--steps', '3'])).stderr).toMatch(/--steps is for a new run/);
  });
});

function mkdir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}

function withFile(dir: string, name: string, text: string): string {
  mkdir(dir);
  writeFileSync(join(dir, name), text);
  return dir;
}

describe('runs show --rediagnose', () => {
  it('re-diagnoses a run directory, and a run of the history through its saved directory', async () => {
    const dir = join(RUNS, 'dataparallel');
    const direct = await runCli(['runs', 'show', dir, '--rediagnose', '--json']);
    expect(direct.code).toBe(0);
    expect((JSON.parse(direct.stdout) as DoctorReport).findings[0]?.id).toBe('dataparallel');
    const store = makeScratch('rediagnose-store');
    const saved = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as DoctorReport;
    const id = await saveRun(store, saved, { cwd: REPO, hostname: 'test' });
    const viaStore = await runCli(['runs', 'show', id, '--rediagnose', '--store', store, '--json']);
    expect(viaStore.code).toBe(0);
    expect(gist(JSON.parse(viaStore.stdout) as DoctorReport)).toEqual(gist(saved));
    const gone = await saveRun(store, { ...saved, run: { ...saved.run, runDir: join(store, 'moved-away') } }, { cwd: REPO, hostname: 'test' });
    const refused = await runCli(['runs', 'show', gone, '--rediagnose', '--store', store]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/directory is gone: nothing to re-diagnose/);
  });
});

describe("the README's first command without PyTorch", () => {
  it('shows the diagnosis of a recorded H200 run, and says so, instead of a traceback', async () => {
    const bin = makeScratch('no-torch');
    const python = join(bin, 'python3');
    writeFileSync(python, '#!/bin/sh\necho "ModuleNotFoundError: No module named \'torch\'" >&2\nexit 1\n');
    chmodSync(python, 0o755);
    const tiny = join(REPO, 'examples', 'doctor', 'tiny_train.py');
    const { code, stdout, stderr } = await runCli(['doctor', '--', python, tiny, '--loader-delay-ms', '2']);
    expect(code).toBe(0);
    expect(stderr).toMatch(/python3 has no PyTorch \(ModuleNotFoundError: No module named 'torch'\), so .*tiny_train\.py cannot run here/);
    expect(stderr).toMatch(/re-diagnosed from its run directory with gpuwise doctor --from .*runs\/h200\/starved_dataloader/);
    expect(stdout).toMatch(/HIGH +The training loop waits on the DataLoader/);
    expect(stdout).toMatch(/no PyTorch/); // the report's notes say it too
    const missing = await runCli(['doctor', '--json', '--', join(bin, 'nowhere', 'python3'), tiny]);
    expect(missing.code).toBe(0);
    expect(missing.stderr).toMatch(/there is no .*python3 on this machine/);
    expect((JSON.parse(missing.stdout) as DoctorReport).findings[0]?.id).toBe('dataloader-bound');
  });
});

describe('doctor --from a run directory that kept no exit status', () => {
  it('says the outcome was read off the probe records, not that the command exited 0 (issue 47)', async () => {
    const { rediagnosed } = await import('./helpers.js');
    const r = await rediagnosed(join(REPO, 'examples', 'pace', 'runs', 'h100', 'jpeg_resnet'));
    expect(existsSync(join(REPO, 'examples', 'pace', 'runs', 'h100', 'jpeg_resnet', 'report.json'))).toBe(false);
    expect(r.run.outcome).toBe('completed');
    expect(r.run.outcomeText).toBe("completed, as the probe's records tell it: the run directory kept no exit status");
  });
});
