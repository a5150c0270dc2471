/**
 * `gpuwise compare RUN_A RUN_B`: what changed between two doctor runs (step time, throughput,
 * DataLoader wait, memory, outcome, findings, environment), e.g. before and after a fix.
 */
import { compareRuns } from '../history/compare.js';
import { renderComparisonMarkdown, renderComparisonText } from '../history/render.js';
import { loadRunRef, renderedOrRefused } from './runRef.js';
import { storeDir } from '../io/runStore.js';
import { jsonReport } from './jsonReport.js';
import { UsageError, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise compare RUN_A RUN_B [--store DIR] [--json | --md]

What changed from RUN_A to RUN_B, led by what the runs do not share (another script, other GPUs) and the
figure to compare by (the median step; the throughput when the batch per step changed): median/mean/p90 step time, samples/s and tokens/s, the DataLoader
wait share, peak allocated/reserved and NVML memory, the outcome, the findings (new, gone, changed
severity or estimated gain) and the environment (torch, GPUs, world size, command arguments).

RUN: an id of the history, a unique id prefix, last (the newest run), last~N (N runs before it),
or a run directory / report.json (read directly, no history needed).
  gpuwise compare last~1 last

Options:
  --store DIR    the history folder (default: $GPUWISE_STORE, else ~/.gpuwise)
  --json         the comparison as JSON (schemaVersion 1)
  --md           the comparison as Markdown
  -h, --help     this help

Exit status: 0; 2 for an unknown run, a file that is not a doctor report, or bad usage.
`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      store: { type: 'string' },
      json: { type: 'boolean' },
      md: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length !== 2) throw new UsageError('give two runs: gpuwise compare RUN_A RUN_B (ids, last~1 last, or run directories)');
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  const dir = storeDir(values.store);
  const a = await loadRunRef(positionals[0] as string, dir, { measuredOnly: true });
  const b = await loadRunRef(positionals[1] as string, dir, { measuredOnly: true });
  // `last` never lands on a run that measured nothing without saying so (io/runStore.ts).
  for (const note of new Set([a.note, b.note])) if (note !== null) process.stderr.write(`gpuwise compare: ${note}\n`);
  const out = renderedOrRefused([a, b], () => {
    const c = compareRuns(a, b);
    return values.json ? jsonReport(c) : values.md ? renderComparisonMarkdown(c) : renderComparisonText(c);
  });
  process.stdout.write(out);
  return 0;
}
