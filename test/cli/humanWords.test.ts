/**
 * Human reports speak words, not the code's names (issue 24, item 11): every command's terminal, Markdown and HTML
 * output on shipped inputs holds no camelCase identifier (`cudaWorkspace`, `peakAllocatedBytes`) unless it is a
 * name the user meets outside gpuwise (a CUDA API call, a library's name). The JSON keeps its keys (schema).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';

const ROOT = join(__dirname, '..', '..');
const at = (p: string) => join(ROOT, p);
const CONFIGS = 'test/fixtures/planner/configs';
const MEMORY = 'test/fixtures/memory';
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-words-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

/** Names from outside gpuwise that are camelCase by birth: CUDA runtime calls and NVIDIA's library names. */
const EXTERNAL = /^(cuda(Stream|Event|Device|Memcpy|Memset|Malloc|Free|Launch|Graph|Host)[A-Za-z]*|cuBLAS(Lt)?|cuDNN|nccl[A-Z][A-Za-z]*)$/;

/** The camelCase words of a text (a lower-case start, then an upper-case letter), minus the external names. */
function camelCaseWords(text: string): string[] {
  const words = text.match(/\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b/g) ?? [];
  return [...new Set(words.filter((w) => !EXTERNAL.test(w)))];
}

/** What a reader sees on a page: the text outside tags, scripts, styles and embedded JSON, entities decoded. */
function visibleText(html: string): string {
  return html
    .replace(/<(script|style)\b[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

async function run(args: string[]): Promise<string> {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
    out += String(s);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  const code = await main(args);
  vi.restoreAllMocks();
  expect(code, args.join(' ')).toBeLessThan(2);
  return out;
}

/** Each command's text, Markdown and page on shipped inputs. */
const COMMANDS: [string, string[]][] = [
  ['plan', ['plan', '--model', at(`${CONFIGS}/gpt2`), '--gpu', 'h200', '--batch', '8']],
  ['plan, training that does not fit', ['plan', '--model', at(`${CONFIGS}/llama-2-7b`), '--gpu', 'rtx4090']],
  ['plan, FSDP with checkpointing', ['plan', '--model', at(`${CONFIGS}/llama-2-7b`), '--gpu', 'h100-sxm', '--gpus', '8', '--strategy', 'fsdp', '--checkpointing', 'full']],
  ['plan, ZeRO at the optimizer step', ['plan', '--model', at(`${CONFIGS}/gpt2-medium`), '--gpu', 'a100-80', '--gpus', '4', '--strategy', 'zero1', '--batch', '1', '--seq', '128']],
  ['plan, inference', ['plan', '--model', at(`${CONFIGS}/mixtral-8x7b-2l`), '--gpu', 'h200', '--mode', 'infer', '--batch', '4']],
  ['plan --search', ['plan', '--model', at(`${CONFIGS}/gpt2`), '--gpu', 'h100-sxm', '--gpus', '8', '--search', '--global-batch', '256', '--top', '5']],
  ['memory', ['memory', at(`${MEMORY}/oom_fragmentation.pickle.gz`)]],
  ['memory diff', ['memory', 'diff', at(`${MEMORY}/leak_step2.pickle`), at(`${MEMORY}/leak_step6.pickle`)]],
  ['analyze', ['analyze', at('examples/traces/gpt2_amp.trace.json.gz')]],
  ['doctor --from', ['doctor', '--from', at('examples/realworld/runs/hf_trainer_gpt2')]],
  ['compare', ['compare', at('examples/realworld/runs/hf_trainer_gpt2'), at('examples/realworld/runs/hf_trainer_gpt2_bf16')]],
  ['smi --from', ['smi', '--from', at('test/fixtures/telemetry/nvidia-smi-q.busy.xml.gz')]],
];

/** Where the command has them: --md on stdout, --html FILE (memory diff takes its flags before the files). */
function variants(name: string, args: string[]): { kind: string; args: string[]; page?: string }[] {
  const page = join(tmp, `${name.replace(/\W+/g, '-')}.html`);
  const cmd = args[0] === 'memory' && args[1] === 'diff' ? 2 : 1;
  const withFlags = (...f: string[]) => [...args.slice(0, cmd), ...f, ...args.slice(cmd)];
  const out: { kind: string; args: string[]; page?: string }[] = [{ kind: 'terminal', args }];
  if (name !== 'smi --from') out.push({ kind: 'md', args: withFlags('--md') });
  if (name !== 'compare') out.push({ kind: 'html', args: withFlags('--html', page), page });
  return out;
}

describe('human outputs use words, not internal names', () => {
  it('the guard sees what it looks for', () => {
    expect(camelCaseWords('  cudaWorkspace 0.09 GiB; peakAllocatedBytes; cudaStreamSynchronize; cuBLAS; max_memory_allocated')).toEqual([
      'cudaWorkspace',
      'peakAllocatedBytes',
    ]);
  });
  for (const [name, args] of COMMANDS) {
    it(name, async () => {
      for (const v of variants(name, args)) {
        const stdout = await run(v.args);
        const text = v.page ? visibleText(readFileSync(v.page, 'utf8')) : stdout;
        expect(text.length, `${name} ${v.kind}`).toBeGreaterThan(100);
        expect([`${name} ${v.kind}`, camelCaseWords(text)]).toEqual([`${name} ${v.kind}`, []]);
      }
    }, 60_000);
  }
});
