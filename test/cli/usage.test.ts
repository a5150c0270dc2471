/** Flag mistakes are one line with a did-you-mean, never Node's parser text (issue 16). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { closeMatches, editDistance } from '../../src/util/closeMatches.js';
import { runCli } from '../helpers/cli.js';
import { REPO } from '../doctor/helpers.js';
import { tracePath } from '../helpers/fixtures.js';

describe('commands: a typo, help, the version', () => {
  it('a mistyped command is one line with the command meant, exit 2', async () => {
    const r = await runCli(['analyse', 'x']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("gpuwise: unknown command 'analyse': did you mean analyze? (gpuwise --help lists the commands)\n");
  });

  it('a word like no command is one line that names the commands', async () => {
    const r = await runCli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^gpuwise: unknown command 'frobnicate': the commands are analyze, plan, memory, .*, exporter\n$/);
  });

  it('gpuwise help COMMAND is gpuwise COMMAND --help; help of an unknown command is the typo line', async () => {
    for (const name of ['analyze', 'doctor', 'serve']) {
      const help = await runCli(['help', name]);
      const direct = await runCli([name, '--help']);
      expect(help).toEqual({ ...direct, code: 0 });
      expect(help.stdout).toMatch(/Usage: gpuwise|gpuwise \w+:/);
    }
    const r = await runCli(['help', 'analyse']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('did you mean analyze?');
  });

  it('-v, -V and --version print the version', async () => {
    const { VERSION } = await import('../../src/util/version.js');
    for (const flag of ['-v', '-V', '--version']) expect(await runCli([flag])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });
});

describe('--no-color, the one colour flag', () => {
  const COMMANDS = ['analyze', 'plan', 'memory', 'smi', 'monitor', 'select', 'record', 'doctor', 'tune', 'runs', 'compare', 'serve', 'exporter'];
  it('every command accepts it', async () => {
    for (const name of COMMANDS) {
      const r = await runCli([name, '--no-color', '--help']);
      expect([name, r.code, r.stderr]).toEqual([name, 0, '']);
    }
  });

  it('doctor --from, runs, runs show and compare print their text with it', async () => {
    const run = join(REPO, 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader');
    const other = join(REPO, 'examples', 'doctor', 'runs', 'h200', 'host_sync');
    const store = mkdtempSync(join(tmpdir(), 'gpuwise-nocolor-'));
    try {
      for (const args of [
        ['doctor', '--from', run, '--no-color'],
        ['runs', '--store', store, '--no-color'],
        ['runs', 'show', run, '--no-color'],
        ['compare', run, other, '--no-color'],
      ]) {
        const r = await runCli(args);
        expect([args, r.code, r.stderr]).toEqual([args, 0, '']);
        expect(r.stdout).not.toContain('\x1b[');
      }
    } finally {
      rmSync(store, { recursive: true, force: true });
    }
  });
});

describe('unknown flags', () => {
  it.each([
    [['analyze', '--jsn', tracePath('resnet_starved')], /^gpuwise analyze: unknown option '--jsn': did you mean --json\?/],
    [['analyze', '--fail_on', 'high', tracePath('resnet_starved')], /unknown option '--fail_on': did you mean --fail-on\?/],
    [['plan', '--gpu-mem', '40'], /^gpuwise plan: unknown option '--gpu-mem': did you mean --gpu-memory/],
    [['memory', '--jason', 'x'], /did you mean --json\?/],
    [['smi', '--form', 'x'], /did you mean --from\?/],
  ])('%j', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/To specify a positional argument/);
  });

  it("a negative number reaches the flag's own check (issue 47: `plan --batch -4` read \"argument is ambiguous\")", async () => {
    for (const args of [
      ['plan', '--model', 'gpt2', '--gpu', 'h100', '--batch', '-4'],
      ['plan', '--model', 'gpt2', '--gpu', 'h100', '--batch=-4'],
    ]) {
      const r = await runCli(args);
      expect([r.code, r.stderr]).toEqual([2, "gpuwise plan: --batch: '-4' is not an integer >= 1\n"]);
    }
  });

  it('a flag without its value says so', async () => {
    const r = await runCli(['analyze', tracePath('resnet_starved'), '--fail-on']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('gpuwise analyze: --fail-on needs a value (see --help)\n');
  });
});

describe('closeMatches', () => {
  it('finds typos, prefixes and model tokens; nothing for unrelated words', () => {
    expect(editDistance('fial-on', 'fail-on')).toBe(1);
    expect(closeMatches('--jsno', ['--json', '--md', '--html'])).toEqual(['--json']);
    expect(closeMatches('NVIDIA H100 80GB HBM3', ['h100-sxm', 'h100-pcie', 'a100-80', 't4'])).toEqual(['h100-sxm', 'h100-pcie']);
    expect(closeMatches('zzz', ['--json', '--md'])).toEqual([]);
  });
});

describe('wrapLine', () => {
  it('breaks at spaces within the width, keeps the indent plus the hanging indent, never splits a word', async () => {
    const { wrapLine } = await import('../../src/util/wrap.js');
    expect(wrapLine('    fix: alpha beta gamma delta', 20, 5)).toEqual(['    fix: alpha beta', '         gamma delta']);
    expect(wrapLine('short', 20)).toEqual(['short']);
    expect(wrapLine('averyveryverylongword x', 10)).toEqual(['averyveryverylongword', 'x']);
    expect(wrapLine('a b c', 0)).toEqual(['a b c']);
  });
});
