/**
 * The monitor screen in a real terminal: tmux runs it, capture-pane reads it (skipped without tmux or
 * a C compiler for the fake NVML). Checks the GPU rows and sparklines, a resize, the sort key and a
 * clean exit with the terminal restored.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildBundle, buildFakeNvml } from '../cliBundle.js';
import { cleanScratch } from './scratch.js';

const SESSION = `gpuwise-tui-${process.pid}`;
let fake: string | null = null;
let bundle = '';
let tmux = false;

const sh = (args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
const screen = () => sh(['capture-pane', '-p', '-t', SESSION]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(pred: (s: string) => boolean, ms = 10_000): Promise<string> {
  let s = '';
  for (let t = 0; t < ms; t += 100) {
    s = screen();
    if (pred(s)) return s;
    await sleep(100);
  }
  return s;
}

beforeAll(async () => {
  try {
    execFileSync('tmux', ['-V']);
    tmux = true;
  } catch {
    tmux = false;
  }
  bundle = await buildBundle();
  fake = buildFakeNvml();
}, 60_000);

afterAll(() => {
  cleanScratch();
  if (tmux)
    try {
      sh(['kill-session', '-t', SESSION]);
    } catch {
      // already gone
    }
});

it('draws, survives a resize, sorts and quits cleanly in tmux', async ({ skip }) => {
  if (!tmux || !fake) skip();
  const cmd = `GPUWISE_NVML_LIB=${fake} ${process.execPath} ${bundle} monitor --interval 100ms; echo "EXIT=$?"; sleep 30`;
  sh(['new-session', '-d', '-s', SESSION, '-x', '120', '-y', '30', cmd]);
  let s = await waitFor((x) => /█|▅/.test(x) && x.includes('1019'));
  expect(s).toMatch(/gpuwise monitor .* every 100ms/);
  expect(s).toMatch(/^ 0 Fake H200\s+util {2}50%\s+▅+ mem/m);
  expect(s).toMatch(/^ 1 Fake H200\s+util {2}51%/m);
  expect(s).toContain('sort (memory)');
  // Resize: every line fits, nothing wraps, the notes stay at the bottom.
  sh(['resize-window', '-t', SESSION, '-x', '50', '-y', '12']);
  s = await waitFor((x) => x.split('\n').length <= 13 && x.split('\n')[0]!.length <= 50 && x.includes('note:'));
  for (const line of s.split('\n')) expect([...line].length).toBeLessThanOrEqual(50);
  expect(s.split('\n').filter((l) => l.startsWith('note:')).length).toBe(1);
  sh(['send-keys', '-t', SESSION, 's']);
  s = await waitFor((x) => x.includes('sort (sm)'));
  expect(s).toContain('sort (sm)');
  sh(['send-keys', '-t', SESSION, 'q']);
  s = await waitFor((x) => x.includes('EXIT='));
  expect(s).toContain('EXIT=0');
  expect(s).not.toContain('gpuwise monitor'); // the alternate screen is gone
}, 60_000);
