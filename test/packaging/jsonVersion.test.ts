/** Every JSON report names the gpuwise version that wrote it (the one of `gpuwise --version`), on shipped inputs. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/util/version.js';
import { REPO } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';

const at = (...p: string[]) => join(REPO, ...p);
const smiXml = at('test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz');

describe('version in every JSON report', () => {
  it.each([
    ['analyze', ['analyze', '--json', at('examples', 'traces', 'resnet_starved.trace.json.gz')]],
    ['memory', ['memory', '--json', at('test', 'fixtures', 'memory', 'gpu', 'memory_oom_activations.pickle.gz')]],
    ['memory diff', ['memory', 'diff', '--json', at('test', 'fixtures', 'memory', 'leak_step2.pickle'), at('test', 'fixtures', 'memory', 'leak_step6.pickle')]],
    ['plan', ['plan', '--json', '--model', at('test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json'), '--gpu', 'h200', '--batch', '8', '--seq', '1024']],
    ['smi', ['smi', '--json', '--from', smiXml]],
    ['select', ['select', '--json', '-n', '1', '--max-util', '100', '--from', smiXml]],
  ])('%s', async (_name, argv) => {
    const r = await runCli(argv);
    expect(r.stderr).toBe('');
    const json = JSON.parse(r.stdout) as { schemaVersion: number; version: string };
    expect(json.version).toBe(VERSION);
    expect(Object.keys(json).slice(0, 1)).toEqual(['schemaVersion']);
  });
});
