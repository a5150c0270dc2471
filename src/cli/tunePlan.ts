/**
 * `gpuwise tune --plan [options] -- CMD ...` (shell): a diagnosis run as doctor does (probeRun + the doctor report,
 * saved in the history), then a baseline trial and short trials of the plan's fixes, each made by the probe
 * (python/gpuwise/probe/trial.py) on top of the fixes kept so far, in the plan's order (src/tune/planTrials.ts decides
 * what is tried and kept). Each trial runs with GPUWISE_TRIAL=1 in the command's environment and stops cleanly after
 * its steps (doctor's --steps); nothing of a trial's settings outlives its process.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { InputError } from '../io/inputError.js';
import { checkHtmlTarget, writeReportFile } from '../io/reportTarget.js';
import { inlineAssets } from '../serve/assets.js';
import { renderPlanTuneHtml } from '../serve/pages/tunePlan.js';
import { renderPlanTuneMarkdown, renderPlanTuneText, settingsText } from '../tune/planReport.js';
import {
  betterBeyondSpread,
  type Candidate,
  chooseCandidate,
  divergence,
  type Losses,
  type Measure,
  measureTrial,
  PLAN_TUNE,
  PLAN_TUNE_SCHEMA_VERSION,
  type PlanStepIn,
  type PlanTrial,
  type PlanTuneReport,
  type PlanTuneStep,
  parseTry,
  permanentChanges,
  perStartBatch,
  probeSettings,
  type BatchParam,
  runFactsOf,
  stepCapOf,
  type TrialSettings,
  type TrialStop,
  type TrialStopped,
  trialStopOf,
  leastSteadySteps,
  trialEpochSteps,
  trialPlan,
  withChange,
} from '../tune/planTrials.js';
import { machineLeverAccuracy, reportOfRun, saveToHistory } from './doctor.js';
import { makeRunDir, startProbeRun } from './probeRun.js';
import { splitCommand } from './telemetryArgs.js';
import { runTrial } from './trialRun.js';
import { parseParam, shellQuote, substitute } from './tuneParam.js';
import { parseFlags, UsageError } from './usage.js';

export const PLAN_HELP = `Usage: gpuwise tune --plan [options] -- CMD [ARGS...]

Verifies doctor's plan on your own script: a diagnosis run (as gpuwise doctor), then a baseline trial and short
trials of the plan's fixes that the probe can make without an edit to the script, in the plan's order, each on top
of the ones kept: DataLoader num_workers (the plan's count and a neighbour below and above), pin_memory,
persistent_workers, prefetch_factor; TF32 and cudnn.benchmark; bf16 autocast; channels_last; torch.compile.
A fix is kept only when its trial measured better beyond the spread of the mean step. Fixes that need a code
change (SDPA, removing syncs, no_sync) stay predicted. Reports each plan step predicted and measured, the verified
best configuration and the change that makes it permanent. The command runs several times: trials see
GPUWISE_TRIAL=1 in their environment (a script can skip its own side effects, such as checkpoints).

Options:
  --param NAME=LO..HI  the batch as one more lever: CMD has {NAME}; the diagnosis and the baseline run at --start
                     (default LO), then the plan's batch step (doctor's 'batch xK') or, where the plan names none, a
                     last step tries larger values on top of the fixes kept, compared per sample
  --start V          the value of {NAME} the diagnosis and the baseline run at (default LO)
  --try LEVER        also try a fix the plan did not name (repeatable): workers=N, pin-memory, persistent-workers,
                     prefetch-factor=K, tf32, bf16, channels-last, compile, compile-reduce-overhead
  --steps N          run every trial exactly N steps (default: each trial runs until its step is steady, the
                     standard error of its steady mean within ${PLAN_TUNE.stopRelSpread * 100}%, at most --trial-seconds of steady steps)
  --trial-seconds S  the most seconds of steady steps a trial runs when its mean is slow to settle (default ${PLAN_TUNE.trialSeconds})
  --diagnosis-steps N  steps of the diagnosis run (default 100: the profiled window opens once steps settle)
  --timeout S        end a trial after S seconds (counted as failed)
  --out DIR          where the runs go (default ./gpuwise-runs/tune-plan-DATE-TIME); new or empty
  --store DIR        the run history (default: $GPUWISE_STORE, else ~/.gpuwise): the diagnosis and each step's
                     (predicted, measured) pair (gpuwise runs --accuracy)
  --json             the result as JSON on stdout (schemaVersion ${PLAN_TUNE_SCHEMA_VERSION}); progress on stderr
  --md               the result as Markdown on stdout; progress on stderr
  --html FILE        also write the result as a self-contained HTML page to FILE
  --show-output      echo each run's output to stderr (always kept in its stdout.log/stderr.log)

Exit status: 0 when the trials ran (whatever was kept); 1 when the diagnosis or the baseline failed; 2 bad usage;
130 interrupted. Method: docs/tune.md, "--plan".
`;

const OPTIONS = {
  plan: { type: 'boolean' },
  try: { type: 'string', multiple: true },
  steps: { type: 'string' },
  'trial-seconds': { type: 'string' },
  'diagnosis-steps': { type: 'string' },
  timeout: { type: 'string' },
  out: { type: 'string' },
  store: { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
  md: { type: 'boolean' },
  'show-output': { type: 'boolean' },
  param: { type: 'string' },
  start: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const DEFAULT_DIAGNOSIS_STEPS = 100;
const msText = (ns: number) => `${(ns / 1e6).toFixed(2)} ms`;

function intFlag(text: string | undefined, flag: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min) throw new UsageError(`${flag}: '${text}' is not an integer >= ${min}`);
  return Number(text);
}

/** What the probe said of a trial (trial-PID.json of its processes; the first process's losses). */
function readProbeTrial(dir: string): {
  said: boolean;
  /** DataLoaders whose arguments the probe changed. */
  loadersChanged: number;
  applied: string[];
  notApplied: { lever: string; why: string }[];
  losses: Losses | null;
  stopped: TrialStopped | null;
} {
  const applied = new Set<string>();
  const notApplied = new Map<string, string>();
  let losses: Losses | null = null;
  let loadersChanged = 0;
  let stopped: TrialStopped | null = null;
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((f) => /^trial-\d+\.json$/.test(f));
  } catch {
    // no directory: nothing said
  }
  for (const name of names.sort()) {
    try {
      const o = JSON.parse(readFileSync(join(dir, name), 'utf8')) as {
        applied?: { lever?: string }[];
        skipped?: { lever?: string; why?: string }[];
        firstLosses?: (number | string)[];
        lastLosses?: (number | string)[];
        errors?: string[];
        loaders?: unknown[];
        stop?: { why?: unknown; step?: unknown; steadySteps?: unknown } | null;
      };
      const st = o.stop;
      if (stopped === null && st && (st.why === 'steady' || st.why === 'seconds') && typeof st.step === 'number')
        stopped = { why: st.why, step: st.step, steadySteps: typeof st.steadySteps === 'number' ? st.steadySteps : 0 };
      loadersChanged += Array.isArray(o.loaders) ? o.loaders.length : 0;
      for (const a of o.applied ?? []) if (typeof a.lever === 'string') applied.add(a.lever);
      for (const s of o.skipped ?? []) if (typeof s.lever === 'string') notApplied.set(s.lever, String(s.why ?? ''));
      for (const e of o.errors ?? []) notApplied.set('model', String(e));
      if (losses === null && Array.isArray(o.firstLosses) && o.firstLosses.length > 0)
        losses = { first: o.firstLosses, last: Array.isArray(o.lastLosses) ? o.lastLosses : [] };
    } catch {
      // a file torn by a killed process: what it said is unknown
    }
  }
  return {
    said: names.length > 0,
    loadersChanged,
    applied: [...applied],
    notApplied: [...notApplied].map(([lever, why]) => ({ lever, why })),
    losses,
    stopped,
  };
}

/** Two runs of one configuration whose means differ beyond their spread (the keep rule's margin, either way round). */
function sameConfigMoved(a: Measure, b: Measure): boolean {
  return betterBeyondSpread(a, b).better || betterBeyondSpread(b, a).better;
}

/** Whether the settings change a DataLoader argument (not only name the loader to change). */
function changesLoader(s: TrialSettings): boolean {
  const l = s.loader;
  return (
    l !== undefined &&
    (l.numWorkers !== undefined || l.pinMemory !== undefined || l.persistentWorkers !== undefined || l.prefetchFactor !== undefined)
  );
}

export async function runPlan(argv: string[]): Promise<number> {
  const { own, command: cmd } = splitCommand(argv);
  const { values, positionals } = parseFlags({ args: own, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(PLAN_HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`put the command after --: gpuwise tune --plan [options] -- ${positionals.join(' ')}`);
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  if (cmd.length === 0) throw new UsageError('missing the command to run: gpuwise tune --plan -- python train.py ...');
  let param: BatchParam | null = null;
  if (values.param !== undefined) {
    const p = parseParam(values.param);
    if (!cmd.some((a) => a.includes(`{${p.name}}`)))
      throw new UsageError(`the command has no {${p.name}} placeholder: write it where the value goes, e.g. --batch-size {${p.name}}`);
    const start = intFlag(values.start, '--start', 1) ?? p.lo;
    if (start < p.lo || start > p.hi) throw new UsageError(`--start: ${start} is outside ${p.lo}..${p.hi}`);
    param = { ...p, start };
  } else if (values.start !== undefined) throw new UsageError('--start needs --param NAME=LO..HI');
  // The command as it runs at a value of the batch (as it is without --param).
  const cmdAt = (value: number | null) => (param === null ? cmd : substitute(cmd, param.name, value ?? param.start));
  // Before any run: a page that would overwrite one of the command's own files, or a folder, is refused now.
  if (values.html !== undefined) checkHtmlTarget(values.html, cmd.slice(1));
  const tries = (values.try ?? [])
    .flatMap((t) => t.split(','))
    .map((t) => {
      const p = parseTry(t);
      if ('problem' in p) throw new UsageError(`--try: ${p.problem}`);
      return p;
    });
  const stepsFlag = intFlag(values.steps, '--steps', 2);
  const trialSeconds = values['trial-seconds'] !== undefined ? Number(values['trial-seconds']) : PLAN_TUNE.trialSeconds;
  if (!(trialSeconds > 0)) throw new UsageError(`--trial-seconds: '${values['trial-seconds']}' is not a number of seconds > 0`);
  const diagnosisSteps = intFlag(values['diagnosis-steps'], '--diagnosis-steps', 1) ?? DEFAULT_DIAGNOSIS_STEPS;
  const timeoutS = intFlag(values.timeout, '--timeout', 1);
  const showOutput = values['show-output'] === true;

  const t0 = Date.now();
  const { runDir: outDir, created } = makeRunDir(values.out, new Date(), 'tune-plan-');
  const say = (s: string) => (values.json || values.md ? process.stderr : process.stdout).write(`${s}\n`);
  let interrupted = false;
  const onSignal = () => {
    interrupted = true; // the running command gets the signal from probeRun; no trial starts after it
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  try {
    // ---------- the diagnosis ----------
    say(
      `gpuwise tune --plan runs the command several times: a diagnosis as gpuwise doctor (${diagnosisSteps} steps), then a baseline and one short trial per fix to verify (GPUWISE_TRIAL=1 set in the trials' environment).`,
    );
    const diagDir = join(outDir, 'diagnosis');
    mkdirSync(diagDir);
    const diagStart = Date.now();
    let report: DoctorReport;
    try {
      const run = await startProbeRun({
        cmd: cmdAt(null),
        runDir: diagDir,
        env: { GPUWISE_MAX_STEPS: String(diagnosisSteps) },
        output: { stdoutPath: join(diagDir, 'stdout.log'), stderrPath: join(diagDir, 'stderr.log') },
      });
      const done = await run.done;
      report = await reportOfRun({ cmd: cmdAt(null), runDir: diagDir, startedAtMs: diagStart, done, hang: null, leverAccuracy: await machineLeverAccuracy(values.store) });
    } catch (e) {
      if (created) rmSync(outDir, { recursive: true, force: true });
      throw e;
    }
    writeFileSync(join(diagDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`, { flag: 'wx' });
    const runId = await saveToHistory(report, values.store);
    const diagWallS = (Date.now() - diagStart) / 1000;
    const plan = report.pace?.plan ?? null;
    const facts = runFactsOf(report);
    const notes: string[] = [];
    if (report.run.exitCode !== 0) {
      say(
        `gpuwise tune --plan: the diagnosis run ended ${report.run.outcome} (exit ${report.run.exitCode}); the last lines of its stderr:`,
      );
      let tail: string[] = [];
      try {
        tail = readFileSync(join(diagDir, 'stderr.log'), 'utf8')
          .split('\n')
          .filter((l) => l.trim() !== '')
          .slice(-5);
      } catch {
        // no stderr kept
      }
      for (const l of tail) say(`  | ${l}`);
    }
    if (plan === null) notes.push('the diagnosis has no plan (no timed step): nothing to verify');
    const findings = new Map<string, (typeof report.findings)[number]>(report.findings.map((f) => [f.id, f]));
    const planSteps: PlanStepIn[] = (plan?.steps ?? []).map((s) => ({
      id: s.id,
      label: s.label,
      fromStepNs: s.fromStepNs,
      expectedStepNs: s.expectedStepNs,
      workersNeeded: s.workersNeeded,
      data: (findings.get(s.id)?.data as Record<string, unknown> | undefined) ?? null,
    }));
    const stepPlans = trialPlan(planSteps, facts, tries, param);
    // The cap of steps (exactly the steps with --steps); by default a trial stops once its step is steady (steady.py).
    const steps = stepsFlag ?? stepCapOf(plan?.stepNs ?? null, trialSeconds);
    const stop: TrialStop | null = stepsFlag === undefined ? trialStopOf(trialSeconds) : null;
    const nTrials = plan === null ? 0 : 1 + stepPlans.reduce((a, s) => a + s.candidates.length, 0);
    // A trial's start-up is the diagnosis's beyond its steps; its steps from the least a steady stop takes to its cap.
    const paceS = (plan?.stepNs ?? 0) / 1e9;
    const startS = Math.max(1, diagWallS - diagnosisSteps * paceS);
    const stepsS = (n: number) => startS + Math.min(steps, n) * paceS;
    const [leastS, mostS] = stop
      ? [stepsS(leastSteadySteps(facts, {}, steps) + 2), Math.min(stepsS(steps), startS + 2 * stop.maxSeconds + 2)]
      : [stepsS(steps), stepsS(steps)];
    say(
      `diagnosis: ${plan ? `${(plan.stepNs / 1e6).toFixed(1)} ms a step; plan: ${plan.steps.map((s) => s.label).join('; ') || 'nothing to fix'}` : 'no plan'} (${diagWallS.toFixed(0)} s)`,
    );
    if (nTrials > 0)
      say(
        stop
          ? `${nTrials} trial(s) to run, each until its step is steady (at most ${steps} steps): about ${Math.round(nTrials * leastS)} to ${Math.round(nTrials * mostS)} s`
          : `${nTrials} trial(s) of ${steps} steps to run: about ${Math.round(nTrials * leastS)} s`,
      );

    // ---------- the trials ----------
    const trials: PlanTrial[] = [];
    let baselineLosses: Losses | null = null;
    const runOne = async (name: string, stepId: string | null, settings: TrialSettings): Promise<PlanTrial> => {
      const index = trials.length + 1;
      const dir = join(outDir, `trial-${index}-${name.replace(/[^A-Za-z0-9=._-]+/g, '_').slice(0, 60)}`);
      const batch = settings.batch?.value ?? null;
      const command = cmdAt(batch);
      say(`trial ${index}: ${name} (${settingsText(settings)})${param ? `\n  $ ${shellQuote(command)}` : ''}`);
      const r = await runTrial({
        cmd: command,
        dir,
        value: index,
        steps,
        timeoutS,
        showOutput,
        env: {
          GPUWISE_TRIAL_SETTINGS: JSON.stringify(probeSettings(settings, param?.start ?? null)),
          ...(stop ? { GPUWISE_TRIAL_STOP: JSON.stringify({ ...stop, minSteps: leastSteadySteps(facts, settings, steps, param?.start ?? null) }) } : {}),
        },
        commandEnv: { GPUWISE_TRIAL: '1' },
      });
      const probe = readProbeTrial(dir);
      const own = r.summary.outcome === 'ok' ? measureTrial(r.records, trialEpochSteps(facts, settings, param?.start ?? null)) : null;
      // At another batch than the diagnosis's, compared per sample: the step per the diagnosis's batch of samples.
      const measure = own && param && batch !== null ? perStartBatch(own, batch, param.start) : own;
      const diverged = stepId === null ? null : divergence(baselineLosses, probe.losses);
      let outcome: PlanTrial['outcome'] = r.summary.outcome;
      let detail = r.summary.detail;
      if (outcome === 'ok' && !probe.said && r.records.length > 0) {
        // Records but no trial-PID.json: a probe without trial support (another gpuwise's) ran the command as it is.
        outcome = 'failed';
        detail = 'the probe made no change (it wrote no trial-PID.json: a probe without tune --plan support?)';
      } else if (outcome === 'ok' && changesLoader(settings) && probe.loadersChanged === 0) {
        // The training loader was not found (built with other arguments than the diagnosis saw): nothing was tried.
        const m = settings.loader?.match;
        outcome = 'failed';
        detail = `no DataLoader was built with the training loader's arguments (batch size ${m?.batchSize ?? 'any'}, ${m?.numWorkers ?? 'any'} workers): nothing changed`;
      } else if (outcome === 'ok' && diverged !== null) {
        outcome = 'diverged';
        detail = diverged;
      } else if (outcome === 'ok' && measure === null) {
        outcome = 'no-steps';
        detail = 'the probe timed no step';
      }
      if (stepId === null) baselineLosses = probe.losses;
      const t: PlanTrial = {
        index,
        name,
        stepId,
        settings,
        outcome,
        detail,
        measure: outcome === 'ok' ? measure : null,
        applied: probe.applied,
        notApplied: probe.notApplied,
        stopped: probe.stopped,
        batch: param ? (batch ?? param.start) : null,
        batchStepNs: param && own ? own.meanNs : null,
        wallS: r.wallMs / 1000,
        runDir: dir,
      };
      trials.push(t);
      say(
        `  -> ${outcome === 'ok' && measure ? `${(measure.meanNs / 1e6).toFixed(2)} ms ± ${(measure.spreadNs / 1e6).toFixed(2)} ms a step (${measure.steps} steady steps${t.stopped ? `; stopped at step ${t.stopped.step}: ${t.stopped.why === 'steady' ? 'steady' : `${trialSeconds} s of steady steps`}` : ''})` : `${outcome}: ${detail}`}, ${t.wallS.toFixed(1)} s`,
      );
      if (outcome === 'failed' || outcome === 'timeout') for (const l of r.stderrTail.slice(-5)) say(`  | ${l}`);
      return t;
    };

    const baseline = plan !== null && !interrupted ? await runOne('baseline', null, {}) : null;
    let kept: TrialSettings = {};
    let current: Measure | null = baseline?.measure ?? null;
    const keptNames: string[] = [];
    const outSteps: PlanTuneStep[] = [];
    for (const sp of stepPlans) {
      const step: PlanTuneStep = {
        stepId: sp.stepId,
        label: sp.label,
        source: sp.source,
        injectable: sp.candidates.length > 0,
        codeChange: sp.codeChange,
        why: sp.why,
        fromStepNs: sp.fromStepNs,
        predictedStepNs: sp.predictedStepNs,
        predictedRatio: sp.fromStepNs && sp.predictedStepNs !== null ? sp.predictedStepNs / sp.fromStepNs : null,
        measuredFromStepNs: current?.meanNs ?? null,
        measuredStepNs: null,
        measuredSpreadNs: null,
        measuredRatio: null,
        recheck: null,
        chosen: null,
        applied: null,
        kept: false,
        trials: [],
      };
      outSteps.push(step);
      if (sp.candidates.length === 0) continue;
      if (current === null || interrupted) {
        step.why = interrupted ? 'not tried: interrupted' : 'not tried: the baseline measured no step';
        continue;
      }
      const measured: { index: number; measure: Measure; c: Candidate; settings: TrialSettings }[] = [];
      const failures: string[] = [];
      let oomAt: string | null = null;
      for (const c of sp.candidates) {
        if (interrupted) break;
        if (c.lever === 'batch' && oomAt !== null) {
          // Memory grows with the batch: past a value that ran out of memory, every larger one does too.
          failures.push(`${c.name}: not tried (${oomAt} ran out of memory)`);
          continue;
        }
        const settings = withChange(kept, c.change);
        const t = await runOne(c.name, sp.stepId, settings);
        step.trials.push(t.index);
        if (t.outcome === 'oom' && c.lever === 'batch') oomAt = c.name;
        if (t.outcome === 'ok' && t.measure) measured.push({ index: t.index, measure: t.measure, c, settings });
        else failures.push(`${c.name}: ${t.outcome} (${t.detail})`);
      }
      const pick = chooseCandidate(measured.map((m) => ({ index: m.index, measure: m.measure })));
      const chosen = measured.find((m) => m.index === pick);
      if (!chosen) {
        step.why = `every trial failed: ${failures.join('; ')}`;
        continue;
      }
      let verdict = betterBeyondSpread(current, chosen.measure);
      if (verdict.better && verdict.gainNs < PLAN_TUNE.confirmBelow * current.meanNs && !interrupted) {
        // A small gain: the configuration it was tried on runs again, and the fix must beat that run too.
        const again = await runOne(`${keptNames.length ? settingsText(kept) : 'baseline'} again`, sp.stepId, kept);
        step.trials.push(again.index);
        const second = again.measure ? betterBeyondSpread(again.measure, chosen.measure) : null;
        step.recheck = {
          trial: again.index,
          stepNs: again.measure?.meanNs ?? null,
          spreadNs: again.measure?.spreadNs ?? null,
          better: second?.better ?? false,
        };
        // The two runs of the same configuration apart beyond their spread: the machine's load moved between runs,
        // and no small gain is verified under it.
        const moved = again.measure ? sameConfigMoved(current, again.measure) : true;
        step.recheck.moved = moved;
        if (second === null || !second.better || moved) verdict = { ...(second ?? verdict), better: false };
      }
      step.measuredStepNs = chosen.measure.meanNs;
      step.measuredSpreadNs = chosen.measure.spreadNs;
      step.measuredRatio = chosen.measure.meanNs / current.meanNs;
      step.chosen = chosen.c.name;
      step.applied = chosen.settings;
      step.kept = verdict.better;
      if (verdict.better) {
        kept = chosen.settings;
        current = chosen.measure;
        keptNames.push(chosen.c.name);
      } else {
        const gain = verdict.gainNs > 0 ? `a gain of ${msText(verdict.gainNs)}` : `${msText(-verdict.gainNs)} slower`;
        const margin = `not beyond the margin of ${msText(verdict.marginNs)} (${PLAN_TUNE.zSpread} x the spread, at least ${PLAN_TUNE.minGain * 100}% of the step)`;
        step.why =
          step.recheck?.moved && step.recheck.stepNs !== null
            ? `${chosen.c.name} measured ${msText(chosen.measure.meanNs)} against ${msText(current.meanNs)}, but the configuration it was tried on measured ${msText(step.recheck.stepNs)} when run again: the machine's load moved between runs more than the gain, which is not verified (run tune --plan again on a quieter machine)`
            : step.recheck !== null && step.recheck.stepNs !== null
              ? `${chosen.c.name} measured ${msText(chosen.measure.meanNs)}, faster than the first run of the configuration it was tried on (${msText(current.meanNs)}) but not than its second (${msText(step.recheck.stepNs)}): ${gain}, ${margin}`
              : `${chosen.c.name} measured ${msText(chosen.measure.meanNs)} against ${msText(current.meanNs)}: ${gain}, ${margin}`;
      }
      if (failures.length) step.why = [step.why, `failed: ${failures.join('; ')}`].filter(Boolean).join('; ');
    }
    const trialsS = trials.reduce((a, t) => a + t.wallS, 0);
    const warmupCostS = trials.reduce((a, t) => a + (t.measure?.warmupCostNs ?? 0), 0) / 1e9;
    const base = baseline?.measure ?? null;
    const result: PlanTuneReport = {
      schemaVersion: PLAN_TUNE_SCHEMA_VERSION,
      tool: 'gpuwise',
      command: 'tune --plan',
      version: report.version,
      cmd,
      outDir,
      stepsPerTrial: steps,
      trialStop: stop,
      param,
      diagnosis: {
        runDir: diagDir,
        runId,
        stepNs: plan?.stepNs ?? null,
        planExpectedStepNs: plan?.expectedStepNs ?? null,
        bound: report.pace?.bound ?? null,
        wallS: diagWallS,
      },
      baseline,
      steps: outSteps,
      trials,
      best: {
        settings: kept,
        names: keptNames,
        stepNs: current?.meanNs ?? null,
        spreadNs: current?.spreadNs ?? null,
        baselineStepNs: base?.meanNs ?? null,
        speedup: base && current ? base.meanNs / current.meanNs : null,
      },
      permanent: [
        ...(param && kept.batch ? [{ framework: 'command', lines: [shellQuote(cmdAt(kept.batch.value))] }] : []),
        ...permanentChanges(kept, facts.framework),
      ],
      trialsS,
      totalS: (Date.now() - t0) / 1000,
      warmupCostS,
      notes,
      exitCode: interrupted ? 130 : baseline === null || baseline.outcome !== 'ok' ? 1 : 0,
    };
    writeFileSync(join(outDir, 'tune-plan.json'), `${JSON.stringify(result, null, 2)}\n`, { flag: 'wx' });
    await saveHistory(result, report, values.store);
    if (values.html !== undefined) writeReportFile(values.html, renderPlanTuneHtml(result, inlineAssets()), result.cmd.slice(1), '--html');
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else if (values.md) process.stdout.write(renderPlanTuneMarkdown(result));
    else process.stdout.write(`\n${renderPlanTuneText(result)}`);
    return result.exitCode;
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

/** Every measured plan step's (predicted, measured) pair into the history; a store that cannot be written costs a warning. */
async function saveHistory(r: PlanTuneReport, report: DoctorReport, storeFlag: string | undefined): Promise<void> {
  const rows = r.steps
    .filter((s) => s.measuredStepNs !== null)
    .map((s) => ({
      runId: r.diagnosis.runId,
      atMs: Date.now(),
      hostname: report.environment.hostname ?? hostname(),
      device: report.gpus?.[0]?.name ?? (report.environment.cuda ? 'cuda' : 'cpu'),
      commandLine: r.cmd.join(' '),
      stepId: s.stepId,
      lever: r.trials.find((t) => s.trials.includes(t.index))?.name ?? null,
      label: s.label,
      predictedFromS: s.fromStepNs !== null ? s.fromStepNs / 1e9 : null,
      predictedS: s.predictedStepNs !== null ? s.predictedStepNs / 1e9 : null,
      measuredFromS: s.measuredFromStepNs !== null ? s.measuredFromStepNs / 1e9 : null,
      measuredS: (s.measuredStepNs as number) / 1e9,
      spreadS: s.measuredSpreadNs !== null ? s.measuredSpreadNs / 1e9 : null,
      kept: s.kept,
      settingsJson: s.applied ? JSON.stringify(s.applied) : null,
    }));
  if (rows.length === 0) return;
  try {
    const { saveLeverTrials, storeDir } = await import('../io/runStore.js');
    await saveLeverTrials(storeDir(storeFlag), rows);
  } catch (e) {
    process.stderr.write(
      `gpuwise tune --plan: warning: the measured plan steps were not saved in the history (${e instanceof InputError ? e.message : (e as Error).message})\n`,
    );
  }
}
