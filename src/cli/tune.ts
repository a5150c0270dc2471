/**
 * `gpuwise tune --param batch_size=LO..HI [options] -- CMD ... {batch_size} ...`: runs CMD a few times with the
 * probe, each time with another value, and finds the largest value that trains without running out of memory,
 * predicting it from the measured memory (src/tune/predict.ts) instead of bisecting blindly.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type SearchSpace, conclude, curveValues, decideNext } from '../tune/predict.js';
import { checkHtmlTarget } from '../io/reportTarget.js';
import { inlineAssets } from '../serve/assets.js';
import { renderTuneHtml } from '../serve/pages/tune.js';
import { renderTuneMarkdown } from '../tune/markdown.js';
import { type TuneTrial, buildTuneReport, renderTuneText } from '../tune/report.js';
import type { TrialSummary } from '../tune/trial.js';
import { VERSION } from '../util/version.js';
import { makeRunDir } from './probeRun.js';
import { type TrialRun, runTrial } from './trialRun.js';
import { splitCommand } from './telemetryArgs.js';
import { parseParam, shellQuote, substitute } from './tuneParam.js';
import { UsageError, parseFlags } from './usage.js';
import { fmtGiB } from '../util/format.js';

const HELP = `Usage: gpuwise tune --param NAME=LO..HI [options] -- CMD ... {NAME} ...

Finds the largest value of NAME (a batch size) in LO..HI that trains without running out of GPU memory,
in a few short trial runs of CMD with gpuwise's probe: the memory measured by the first trial predicts the
limit, the next trials verify it. Reports each trial's peak memory and throughput, the largest value that
fits, a recommended value that leaves --margin of the memory free, and the Goldilocks value (the smallest
within 5% of the best throughput measured).

  gpuwise tune --param batch_size=8..512 -- python train.py --batch-size {batch_size}
  gpuwise tune --param bs=1..64 --multiple-of 8 -- torchrun --nproc_per_node 4 train.py --bs={bs}
  gpuwise tune --plan -- python train.py     (doctor's plan of fixes, each measured: gpuwise tune --plan --help)

Options:
  --param NAME=LO..HI  the integer to size; CMD must contain {NAME}, replaced by each trial's value
  --steps N            optimizer steps per trial (default 8; the peak needs 2: the optimizer's state appears at step 1)
  --max-trials N       trials of the search (default 3; 6 when the trials report no GPU memory)
  --margin P           GPU memory left free at the recommended value: 10% or 0.1 (default 10%)
  --start V            first value tried (default LO; a value expected to fit comfortably predicts best)
  --multiple-of M      try and recommend only multiples of M (default 1)
  --curve N            N more trials below the largest value that fits, for the throughput curve (default 0)
  --timeout S          end a trial after S seconds (counted as failed; default none)
  --out DIR            where the trials' run directories go (default ./gpuwise-runs/tune-DATE-TIME); new or empty
  --json               the result as JSON on stdout (schemaVersion 1); progress goes to stderr
  --md                 the result as Markdown on stdout; progress goes to stderr
  --html FILE          also write the result as a self-contained HTML page to FILE
  --show-output        echo each trial's output to stderr (it is always kept in the trial's stdout.log/stderr.log)
  -h, --help           this help

Exit status: 0 a value fits; 1 none does, or a trial failed other than by running out of memory
(its last stderr lines are shown); 2 bad usage; 130 interrupted (the partial result is printed).
Method and definitions: docs/tune.md.
`;

const OPTIONS = {
  param: { type: 'string' },
  steps: { type: 'string' },
  'max-trials': { type: 'string' },
  margin: { type: 'string' },
  start: { type: 'string' },
  'multiple-of': { type: 'string' },
  curve: { type: 'string' },
  timeout: { type: 'string' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  md: { type: 'boolean' },
  html: { type: 'string' },
  'show-output': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const DEFAULT_STEPS = 8;
const DEFAULT_MAX_TRIALS = 3;
const DEFAULT_MAX_TRIALS_BLIND = 6;
const DEFAULT_MARGIN = 0.1;

function intFlag(text: string | undefined, flag: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min) throw new UsageError(`${flag}: '${text}' is not an integer >= ${min}`);
  return Number(text);
}

function parseMargin(text: string | undefined): number {
  if (text === undefined) return DEFAULT_MARGIN;
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(text.trim());
  const v = m ? Number(m[1]) / (m[2] ? 100 : 1) : Number.NaN;
  if (!(v >= 0 && v < 1)) throw new UsageError(`--margin: '${text}' is not a share of memory in [0, 1) such as 10% or 0.1`);
  return v;
}

function fmtTrialLine(t: TrialSummary): string {
  if (t.outcome !== 'ok') return `${t.outcome === 'oom' ? 'OOM' : t.outcome.toUpperCase()}: ${t.detail}`;
  const parts = [`OK (${t.detail})`];
  if (t.peakAllocatedBytes !== null) parts.push(`peak ${fmtGiB(t.peakAllocatedBytes, 2)} allocated`);
  if (t.stepTimeS !== null) parts.push(`${(t.stepTimeS * 1e3).toFixed(1)} ms/step`);
  if (t.samplesPerS !== null) parts.push(`${t.samplesPerS >= 100 ? Math.round(t.samplesPerS) : t.samplesPerS.toPrecision(3)} samples/s`);
  else if (t.tokensPerS !== null) parts.push(`${Math.round(t.tokensPerS)} tokens/s`);
  return parts.join(', ');
}

export async function run(argv: string[]): Promise<number> {
  // --plan: the plan's fixes verified (tunePlan.ts), its own flags.
  if (splitCommand(argv).own.includes('--plan')) return (await import('./tunePlan.js')).runPlan(argv);
  const { own, command: cmd } = splitCommand(argv);
  const { values, positionals } = parseFlags({ args: own, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`put the command after --: gpuwise tune [options] -- ${positionals.join(' ')}`);
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  if (values.html !== undefined) checkHtmlTarget(values.html, cmd.slice(1));
  const param = parseParam(values.param);
  if (cmd.length === 0)
    throw new UsageError(
      `missing the command to run: gpuwise tune --param ${param.name}=... -- python train.py --batch-size {${param.name}}`,
    );
  if (!cmd.some((a) => a.includes(`{${param.name}}`)))
    throw new UsageError(
      `the command has no {${param.name}} placeholder: write it where the value goes, e.g. --batch-size {${param.name}}`,
    );
  const steps = intFlag(values.steps, '--steps', 1) ?? DEFAULT_STEPS;
  const maxTrialsFlag = intFlag(values['max-trials'], '--max-trials', 1);
  const margin = parseMargin(values.margin);
  const multipleOf = intFlag(values['multiple-of'], '--multiple-of', 1) ?? 1;
  const start = intFlag(values.start, '--start', 1) ?? param.lo;
  if (start < param.lo || start > param.hi) throw new UsageError(`--start: ${start} is outside ${param.lo}..${param.hi}`);
  if (Math.floor(param.hi / multipleOf) * multipleOf < param.lo)
    throw new UsageError(`--multiple-of ${multipleOf}: no multiple in ${param.lo}..${param.hi}`);
  const curve = intFlag(values.curve, '--curve', 0) ?? 0;
  const timeoutS = intFlag(values.timeout, '--timeout', 1);
  const space: SearchSpace = {
    name: param.name,
    lo: param.lo,
    hi: param.hi,
    start,
    multipleOf,
    maxTrials: maxTrialsFlag ?? DEFAULT_MAX_TRIALS,
  };

  const { runDir: outDir, created } = makeRunDir(values.out, new Date(), 'tune-');
  const say = (s: string) => (values.json || values.md ? process.stderr : process.stdout).write(`${s}\n`);
  let interrupted = false;
  const onSignal = () => {
    interrupted = true; // the running trial gets the signal from probeRun; the search stops after it
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);

  const trials: TuneTrial[] = [];
  let stopReason = '';
  try {
    const runOne = async (value: number, kind: TuneTrial['kind'], reason: string): Promise<TuneTrial> => {
      const index = trials.length + 1;
      const command = substitute(cmd, param.name, value);
      const dir = join(outDir, `trial-${index}-${param.name}-${value}`);
      say(`trial ${index}: ${param.name}=${value} (${reason})\n  $ ${shellQuote(command)}`);
      let r: TrialRun;
      try {
        r = await runTrial({ cmd: command, dir, value, steps, timeoutS, showOutput: values['show-output'] === true });
      } catch (e) {
        // The command could not start: leave nothing behind that this run made.
        rmSync(dir, { recursive: true, force: true });
        if (trials.length === 0 && created) rmSync(outDir, { recursive: true, force: true });
        throw e;
      }
      const t: TuneTrial = { ...r.summary, index, kind, reason, command, runDir: dir };
      trials.push(t);
      say(`  -> ${fmtTrialLine(t)}`);
      if (t.outcome === 'failed' || t.outcome === 'timeout') {
        say('  last lines of its stderr:');
        for (const l of r.stderrTail) say(`  | ${l}`);
      }
      return t;
    };

    for (;;) {
      // Without memory figures the search only bisects: more trials by default.
      const blind = trials.length > 0 && trials.every((t) => t.peakAllocatedBytes === null);
      const maxTrials = maxTrialsFlag ?? (blind ? DEFAULT_MAX_TRIALS_BLIND : DEFAULT_MAX_TRIALS);
      space.maxTrials = maxTrials;
      if (interrupted) {
        stopReason = 'interrupted';
        break;
      }
      const d = decideNext(space, trials, maxTrials);
      if (d.next === null) {
        stopReason = d.reason;
        break;
      }
      await runOne(d.next, 'search', d.reason);
    }
    if (!interrupted && curve > 0 && !trials.some((t) => t.outcome === 'failed' || t.outcome === 'timeout')) {
      for (const v of curveValues(space, trials, curve)) {
        if (interrupted) break;
        const t = await runOne(v, 'curve', 'throughput curve');
        if (t.outcome !== 'ok') break;
      }
    }
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
  if (interrupted) stopReason = 'interrupted';

  const result = conclude(space, trials, margin);
  const report = buildTuneReport({
    version: VERSION,
    space,
    stepsPerTrial: steps,
    margin,
    maxTrials: space.maxTrials,
    outDir,
    trials,
    stopReason,
    result,
    interrupted,
  });
  writeFileSync(join(outDir, 'tune.json'), `${JSON.stringify(report, null, 2)}\n`, { flag: 'wx' });
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else if (values.md) process.stdout.write(renderTuneMarkdown(report));
  else process.stdout.write(`\n${renderTuneText(report)}`);
  if (values.html !== undefined) writeFileSync(values.html, renderTuneHtml(report, inlineAssets()));
  return report.exitCode;
}
