/** Flag mistakes are one line with a did-you-mean, never Node's parser text (issue 16). */
import { describe, expect, it } from 'vitest';
import { closeMatches, editDistance } from '../../src/util/closeMatches.js';
import { runCli } from '../helpers/cli.js';
import { tracePath } from '../helpers/fixtures.js';

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
