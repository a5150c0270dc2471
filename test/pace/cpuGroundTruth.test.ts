/**
 * Ground truth on CPU (issue 44): each script of examples/pace/cpu/ runs under doctor (Debian's CPU torch 1.13), its
 * plan is turned into the script's flags (examples/pace/follow_plan.py, cumulative) and each configuration runs
 * plainly right after; the measured mean step is set against the step the plan expected. The table is printed; the
 * checks are:
 *
 * - the lever: what the plan (and the DataLoader finding's code) says must be right where the lever is clear, the
 *   plan EMPTY included: more workers for a loader waiting on I/O (more than the cores: a waiting worker holds none),
 *   persistent workers for short epochs whose workers start again, no loader step for a host-bound loop, no workers
 *   past the cores for a loader bound by CPU, a batch lever for a loop whose per-sample step falls with the batch, and
 *   never fewer workers than the run has while the loop waits (issue 44: 2 workers waiting on I/O told num_workers=1);
 * - the step: the prediction within 20% (BOUND) of the median of REPEAT plain runs' means.
 *
 * A loaded 2-core machine moves CPU work more than waits: a sleep takes about as long whatever else runs, a core's
 * work does not (on the development VM, shared with other jobs at a load of 5-13, an MLP step's wall time was 3.5x
 * its CPU time). So the steps are held to the bound where waits set them: a loader whose samples wait on I/O, its
 * epoch starts, and doctor's own step of such a loop against the plain runs'. A held step is judged against the
 * plain runs' range (a prediction inside it is off by no more than the machine moved identical runs), then their
 * median; a case whose doctor step misses the plain runs' is measured once more (doctor and the plain runs), a burst
 * of load during one of them being likelier than a probe that misses once. A step the model says the host then
 * binds (CPU) is printed, its time not held: what is held there is that the host binds indeed (the loop idles
 * waiting for its batches less than HOST_BINDS_MAX_IDLE of the step). The scripts bound by CPU (cpu_loader,
 * host_loop) are printed only: doctor's run and the plain runs after it see different loads, and what the workers
 * get of the cores changes with them. Their levers are held all the same: what doctor advises is read off the
 * report, not timed. Every run lasts a few seconds whatever the machine's speed (--seconds: doctor reads the
 * workers' CPU time about once a second), so a quiet machine saves only start-ups: 75 s on the development VM at a
 * load of 4, 80-120 s at 7-9, up to 140 s at 12.
 *
 * KNOWN_FAILING lists the checks today's model fails, each with why: they run as `it.fails`, so CI stays green while
 * they fail and goes red when one passes, which is when its entry goes. KNOWN_FLAKY, those it fails on a loaded
 * machine only: skipped with the failure when they fail.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import type { PlanStep } from '../../src/pace/plan.js';
import { buildBundle } from '../cliBundle.js';
import { PROBE_ROOT, PYTHON, REPO, SKIP_PYTHON, pyEnv, runProcess } from '../doctor/helpers.js';

const SCRIPTS = join(REPO, 'examples', 'pace', 'cpu');
const FOLLOW_PLAN = join(REPO, 'examples', 'pace', 'follow_plan.py');
/** A held step's prediction must be within this share of the measured step. */
const BOUND = 0.2;
/** Plain runs of each configuration, in one process (--repeat): the median of their means is the measured step. */
const REPEAT = 3;
/**
 * After a step the model says the host binds, the loop must idle waiting for its batches (off the CPU in next()) less
 * than this share of the step. A loader that binds leaves the loop idle most of its step (io_loader on the loaded
 * development VM: about 76% with 2 workers, 54-63% with 4); one that keeps up, what the hand-over of a ready batch
 * leaves (6-15% with 12 to 16 workers there; next() also spends about a millisecond of CPU on it, which doctor
 * counts as wait).
 */
const HOST_BINDS_MAX_IDLE = 0.3;
/** GPUWISE_CPU_TRUTH_OUT=DIR keeps the doctor runs, the plain runs' lines (measured.jsonl) and the table there. */
const KEEP = process.env.GPUWISE_CPU_TRUTH_OUT;

type Lever = 'more-workers' | 'persistent' | 'no-loader-step' | 'no-workers-past-cores' | 'batch';

interface Case {
  name: string;
  script: string;
  flags: string[];
  /**
   * Seconds of measured steps in each plain run (--seconds; doctor's run takes the script's default, 3-4 s: doctor's
   * steady part starts where the step times settle, which a loop bound by its loader reaches from its first steps,
   * the batches its workers prefetched while the model was built included, and it reads the workers' CPU time about
   * once a second).
   */
  plainSeconds: number;
  /** What sets the step: waits (held to the bound) or CPU work (printed). */
  work: 'waits' | 'cpu';
  /** The levers the plan must show (never fewer workers than the run has is checked of every case). */
  levers: Lever[];
  /** Why those levers, with what was measured on the development VM. */
  why: string;
  /**
   * The lever an expert would pull: measured once (and printed) where the plan misses a lever, to show what it
   * missed; with GPUWISE_CPU_TRUTH_OUT only (a few seconds a case on a loaded machine, for a figure the check does not
   * need).
   */
  reference?: string[];
}

const CASES: Case[] = [
  {
    name: 'io_w2',
    script: 'io_loader.py',
    flags: ['--workers', '2'],
    plainSeconds: 0.8,
    work: 'waits',
    levers: ['more-workers'],
    why: 'samples wait on I/O (64 ms a batch a worker, little CPU): 2 workers on 2 cores leave the loop waiting most of its step; more workers than cores keep up',
    reference: ['--workers', '16'],
  },
  {
    name: 'io_w4',
    script: 'io_loader.py',
    flags: ['--workers', '4'],
    plainSeconds: 0.8,
    work: 'waits',
    levers: ['more-workers'],
    why: 'already twice the cores, the loop still waits on I/O: more workers still help, the cores do not cap them',
    reference: ['--workers', '16'],
  },
  {
    name: 'cpu_w1',
    script: 'cpu_loader.py',
    flags: ['--workers', '1'],
    plainSeconds: 0.8,
    work: 'cpu',
    levers: ['no-workers-past-cores'],
    why: 'one worker bound by CPU: a second may help where the machine lends it a core, more than the cores share them',
    reference: ['--workers', '2'],
  },
  {
    name: 'cpu_w4',
    script: 'cpu_loader.py',
    flags: ['--workers', '4'],
    plainSeconds: 0.8,
    work: 'cpu',
    levers: ['no-workers-past-cores'],
    why: '4 workers bound by CPU on 2 cores: more would share the same cores (and fewer would not help either)',
  },
  {
    name: 'epochs',
    script: 'epochs.py',
    flags: [],
    plainSeconds: 1.5,
    work: 'waits',
    levers: ['persistent'],
    why: 'epochs of 6 steps whose 2 workers start again each time (300 ms opening the data set): persistent workers start once',
    reference: ['--persistent-workers'],
  },
  {
    name: 'host_loop',
    script: 'host_loop.py',
    flags: [],
    plainSeconds: 0.8,
    work: 'cpu',
    levers: ['no-loader-step', 'batch'],
    why: 'hundreds of tiny ops a step at batch 8: the loop never waits on its loader; a 4x batch costs little more a step',
    reference: ['--batch', '32'],
  },
];

/**
 * The checks today's model fails (issue 44), by id ("CASE lever: LEVER", "CASE never fewer workers", "CASE now",
 * "CASE plan"), each with why. Remove an entry once the model is fixed: its `it.fails` then fails.
 */
const KNOWN_FAILING: Record<string, string> = {
  // Doctor weighs a batch from the pipeline's per-sample work (the GPU's, timed apart in a window) against its per-step
  // work; on a CPU run both are the host's, and the run does not tell them apart: it holds one batch size (host_loop
  // drops no partial batch), and its CPU window has 89-98% of the step inside aten ops (the VM), whose fixed per-op
  // cost a bigger batch does not repeat. Taking all of the op time as per-sample bounds a 4x batch at about 1.1x the
  // samples a second; about 3x was measured (3.9 -> 1.3 ms a batch of 8). A lever needs a second batch size from the run.
  'host_loop lever: batch': "no batch lever on a CPU run: one batch size in the run, its ops' per-sample and per-op costs not told apart",
};

/**
 * Checks today's model fails on a loaded machine only, by id, each with why: run, and where they fail skipped with the
 * failure and why (visible in the test report), so a loaded CI machine stays green. Remove an entry once the model is
 * fixed: the check is then held.
 */
const KNOWN_FLAKY: Record<string, string> = {
  // The loader's period is read within the epochs of doctor's run (pace/run.ts); its workers sleep, but at a load of 8
  // on the 2-core VM a batch took them 14.2 ms in doctor's run and about 22 ms in the plain runs right after it (their
  // 3 persistent workers measured 9.7-14.2 ms a step against 7.1 predicted); at loads of 5-12 otherwise within 11%.
  'epochs plan': "the workers' time a batch moves with the load between doctor's run and the plain runs",
  // workers=0: one step descheduled inside the loop's own fetch (8 ms of a 12 ms step, 1 of 13 steps measured under a
  // load of 9) made "the loader delivers about one batch per mean step, so its period is the mean step": the
  // DataLoader binds, "more DataLoader workers", code num_workers=8, while the loop waited 7% of its step.
  'host_loop lever: no-loader-step': 'one stall of the loop\'s own fetch makes the DataLoader bind (workers=0, waits 7%)',
  // Where the workers' CPU time (read about once a second) is not read within the measured steps, the loader's rate is
  // unknown and the finding falls back to "more DataLoader workers" with num_workers=8 in its code: past the 2 cores
  // for a loader bound by CPU (seen once, a run of 80 steps on the loaded VM).
  'cpu_w1 lever: no-workers-past-cores': 'the workers\' CPU unread, the code falls back to num_workers=8',
  'cpu_w4 lever: no-workers-past-cores': 'the workers\' CPU unread, the code falls back to num_workers=8',
};

interface Line {
  mean_step_ms: number;
  runs_ms?: number[];
  samples_per_step?: number;
  loop_wait_ms?: number;
  loop_idle_ms?: number;
  loop_cpu_share?: number;
  [k: string]: unknown;
}

interface Row {
  step: string;
  flags: string;
  predictedMs: number | null;
  bound: string;
  measured: Line | null;
  /** The measured mean per batch of the doctor run's size. */
  measuredMs: number | null;
  error: number | null;
  /** Held to the bound, printed only, or not measured; with why. */
  judged: 'held' | 'bound held' | 'printed' | 'not measured';
  ok: boolean;
  note: string;
}

interface Outcome {
  c: Case;
  report: DoctorReport;
  doctorS: number;
  rows: Row[];
  plainS: number;
  /** Measured twice: why the first was put aside. */
  retried?: string;
}

const ms = (ns: number | null | undefined) => (typeof ns === 'number' ? ns / 1e6 : null);
const fmt = (x: number | null | undefined, d = 1) => (typeof x === 'number' ? x.toFixed(d) : '-');
const pct = (x: number | null) => (x === null ? '-' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(0)}%`);

let tmp = '';
let out = '';
const outcomes: Outcome[] = [];
let bundle = '';
const t0 = Date.now();

/** The script's one JSON line (the last line of stdout starting with `{`), or null. */
function lineOf(stdout: string): Line | null {
  const json = stdout.split('\n').filter((l) => l.startsWith('{'));
  return json.length ? (JSON.parse(json[json.length - 1] as string) as Line) : null;
}

async function underDoctor(c: Case): Promise<{ report: DoctorReport; seconds: number; reportPath: string }> {
  const dir = join(out, c.name);
  rmSync(dir, { recursive: true, force: true }); // doctor's --out must be new or empty (a kept folder of an earlier run)
  const started = Date.now();
  const r = await runProcess(
    process.execPath,
    [bundle, 'doctor', '--json', '--no-serve', '--store', join(tmp, 'store'), '--out', dir, '--', PYTHON, join(SCRIPTS, c.script), ...c.flags],
    // GPUWISE_PROBE_DIR: this checkout's probe (node_modules may be a link to another checkout's, where the bundle lives).
    pyEnv({ GPUWISE_PROBE_DIR: PROBE_ROOT }),
  );
  expect(r.code, r.stderr.slice(-3000)).toBe(0);
  return { report: JSON.parse(r.stdout) as DoctorReport, seconds: (Date.now() - started) / 1e3, reportPath: join(dir, 'report.json') };
}

async function plain(c: Case, flags: string[], repeat = REPEAT): Promise<Line> {
  const args = [join(SCRIPTS, c.script), ...c.flags, '--seconds', String(c.plainSeconds), ...flags, '--repeat', String(repeat)];
  const r = await runProcess(PYTHON, args, pyEnv({}));
  expect(r.code, r.stderr.slice(-3000)).toBe(0);
  const line = lineOf(r.stdout);
  expect(line, r.stdout.slice(-2000)).not.toBeNull();
  if (KEEP) appendFileSync(join(KEEP, 'measured.jsonl'), `${JSON.stringify({ case: c.name, flags: [...c.flags, ...flags].join(' '), ...line })}\n`);
  return line as Line;
}

/** doctor's plan as the script's flags: [label, flags] per line of follow_plan.py, `base` first. */
async function followPlan(reportPath: string, name: string): Promise<{ lines: [string, string[]][]; stopped: string }> {
  const r = await runProcess(PYTHON, [FOLLOW_PLAN, reportPath, name], pyEnv({}));
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l): [string, string[]] => {
      const i = l.indexOf('=');
      return [l.slice(0, i), l.slice(i + 1).split(' ').filter(Boolean)];
    });
  return { lines, stopped: r.stderr.trim() };
}

/** The batch advice that is not in the plan (advice is weighed, not planned): its label, expected step and flags. */
function batchAdvice(report: DoctorReport, batch: number): { label: string; expectedNs: number | null; flags: string[] } | null {
  for (const f of report.findings) {
    const label = f.fix?.label ?? '';
    const k = /\bbatch x(\d+)\b/.exec(label);
    const n = /\bbatch (?:\d+ -> )?(\d+)\b/.exec(label);
    if (f.kind !== 'advice' || !(k || n)) continue;
    const to = n ? Number(n[1]) : batch * Number((k as RegExpExecArray)[1]);
    return { label: `advice ${f.id}: ${label}`, expectedNs: f.estimatedGain?.expectedStepTimeNs ?? null, flags: ['--batch', String(to)] };
  }
  return null;
}

/**
 * The error a held row is judged on: the prediction against the plain runs' median, less the spread of those runs
 * (a prediction inside their range is off by no more than the machine moved identical runs). On a quiet machine the
 * runs agree and this is the error against the median.
 */
function heldError(predictedMs: number, m: Line, scale = 1): number {
  const runs = (m.runs_ms?.length ? m.runs_ms : [m.mean_step_ms]).map((x) => x * scale);
  const [lo, hi] = [Math.min(...runs), Math.max(...runs)];
  const nearest = Math.min(hi, Math.max(lo, predictedMs));
  return (predictedMs - nearest) / (m.mean_step_ms * scale);
}

/** Whether a row holds, and how it is judged (see the file's comment). */
function judge(c: Case, step: 'now' | 'plan', bound: string, predictedMs: number | null, m: Line | null, measuredMs: number | null) {
  if (m === null || measuredMs === null || predictedMs === null) return { judged: 'not measured' as const, ok: true, note: '' };
  const idleShare = (m.loop_idle_ms ?? 0) / m.mean_step_ms;
  if (c.work === 'cpu')
    return { judged: 'printed' as const, ok: true, note: 'CPU work: a loaded machine moves it between doctor and the plain runs' };
  if (step === 'now' || bound === 'input') {
    const e = heldError(predictedMs, m, measuredMs / m.mean_step_ms);
    return { judged: 'held' as const, ok: Math.abs(e) <= BOUND, note: `waits bind: ${pct(e)} beyond the plain runs' range, within ${BOUND * 100}%` };
  }
  const ok = idleShare < HOST_BINDS_MAX_IDLE;
  return {
    judged: 'bound held' as const,
    ok,
    note: `the ${bound} binds (CPU: time printed); the loop idles ${(idleShare * 100).toFixed(0)}% of the step waiting for batches${ok ? '' : `, not under ${HOST_BINDS_MAX_IDLE * 100}%`}`,
  };
}

/**
 * The case measured (once more where doctor's own step misses the plain runs', which a burst of load during one of
 * them does: on the development VM at a load of 10, doctor's step of io_loader with 4 workers came out at 34 ms
 * against 17-20 ms plainly, its loop's wall time outside the waits 3x its CPU time; a probe or model that misses
 * misses twice).
 */
async function measure(c: Case): Promise<Outcome> {
  const first = await measureOnce(c);
  const now = first.rows[0] as Row;
  if (now.ok) return first;
  const again = await measureOnce(c);
  const why = `doctor's step ${fmt(now.predictedMs)} ms against ${fmt(now.measuredMs)} ms plainly at the first try`;
  return { ...again, retried: why };
}

/** Runs doctor on the case, follows its plan plainly, and measures each step: one row per step, "now" first. */
async function measureOnce(c: Case): Promise<Outcome> {
  const { report, seconds, reportPath } = await underDoctor(c);
  const started = Date.now();
  const name = c.script.replace(/\.py$/, '');
  const { lines, stopped } = await followPlan(reportPath, name);
  const pace = report.pace;
  const steps: PlanStep[] = pace?.plan.steps ?? [];
  const batch = report.ranks[0]?.steps.samplesPerStep ?? null;
  const rows: Row[] = [];
  const perRunBatch = (m: Line) => (batch && m.samples_per_step ? (m.mean_step_ms * batch) / m.samples_per_step : m.mean_step_ms);
  const row = (step: string, flags: string[], predictedMs: number | null, bound: string, kind: 'now' | 'plan', m: Line | null, note = ''): Row => {
    const measuredMs = m ? perRunBatch(m) : null;
    const j = judge(c, kind, bound, predictedMs, m, measuredMs);
    const error = predictedMs !== null && measuredMs ? (predictedMs - measuredMs) / measuredMs : null;
    return { step, flags: flags.join(' ') || '(as run)', predictedMs, bound, measured: m, measuredMs, error, ...j, note: [j.note, note].filter(Boolean).join('; ') };
  };
  for (const [i, [label, flags]] of lines.entries()) {
    const m = await plain(c, flags);
    if (i === 0) {
      rows.push(row('now (doctor\'s step)', flags, ms(pace?.stepNs), pace?.bound ?? '?', 'now', m));
      continue;
    }
    const s = steps[i - 1] as PlanStep;
    const need = s.workersNeeded !== null ? `; needs about ${s.workersNeeded} workers` : '';
    rows.push(row(`${label}. ${s.label}`, flags, ms(s.expectedStepNs), s.bound, 'plan', m, need.slice(2)));
  }
  for (const [i, s] of steps.entries())
    if (i + 1 >= lines.length) rows.push(row(`plan${i + 1}. ${s.label}`, [], ms(s.expectedStepNs), s.bound, 'plan', null, stopped || 'no flag for it'));
  const advice = c.levers.includes('batch') && batch ? batchAdvice(report, batch) : null;
  if (advice) rows.push(row(advice.label, advice.flags, ms(advice.expectedNs), '?', 'plan', await plain(c, advice.flags)));
  // A lever the plan misses: what it would have given, measured once from the run as it was (no prediction to judge).
  if (KEEP && c.reference && c.levers.some((l) => leverProblem(l, c, report) !== null))
    rows.push({ ...row('lever missed (not in the plan)', c.reference, null, '', 'plan', await plain(c, c.reference, 1)), judged: 'printed', note: '' });
  return { c, report, doctorS: seconds, rows, plainS: (Date.now() - started) / 1e3 };
}

// ---- what the plan says (read off the report: held for every case) ----

/** The worker counts the plan's steps and the DataLoader finding's code set, with where each comes from. */
function workerAdvice(report: DoctorReport): { to: number; from: string }[] {
  const out: { to: number; from: string }[] = [];
  for (const s of report.pace?.plan.steps ?? []) {
    const m = /num_workers (\d+) -> (\d+)/.exec(s.label);
    if (m) out.push({ to: Number(m[2]), from: `plan step "${s.label}"` });
    if (s.workersNeeded !== null) out.push({ to: s.workersNeeded, from: `plan step "${s.label}" needs about ${s.workersNeeded} workers` });
  }
  for (const f of report.findings.filter((x) => x.id === 'dataloader-bound')) {
    const rec = f.data?.workersRecommended;
    if (typeof rec === 'number') out.push({ to: rec, from: `dataloader-bound (${f.severity}) recommends ${rec} workers` });
    const code = /num_workers=(\d+)/.exec(f.recommendation?.code ?? '');
    if (code) out.push({ to: Number(code[1]), from: `dataloader-bound's code says num_workers=${code[1]}` });
  }
  return out;
}

function runWorkers(c: Case): number {
  const i = c.flags.indexOf('--workers');
  if (i >= 0) return Number(c.flags[i + 1]);
  return { 'io_loader.py': 2, 'cpu_loader.py': 1, 'epochs.py': 2, 'host_loop.py': 0 }[c.script] ?? 0;
}

/** Why the plan fails the lever, or null when it shows it. */
function leverProblem(lever: Lever, c: Case, report: DoctorReport): string | null {
  const steps = report.pace?.plan.steps ?? [];
  const labels = steps.map((s) => s.label);
  const plan = labels.length ? `the plan: ${labels.map((l, i) => `${i + 1}. ${l}`).join('; ')}` : 'the plan is EMPTY';
  const have = runWorkers(c);
  const cores = report.pace?.loader?.cpuCores ?? null;
  switch (lever) {
    case 'more-workers': {
      const m = steps[0] ? /num_workers (\d+) -> (\d+)/.exec(steps[0].label) : null;
      return m && Number(m[2]) > have ? null : `${plan}; wanted first: more than ${have} workers`;
    }
    case 'persistent':
      return steps[0] && /persistent/.test(steps[0].label) ? null : `${plan}; wanted first: persistent workers`;
    case 'no-loader-step': {
      const s = steps.find((x) => /num_workers|persistent|DataLoader/.test(x.label));
      return s ? `${plan}; the loop does not wait on its loader, yet "${s.label}"` : null;
    }
    case 'no-workers-past-cores': {
      const past = workerAdvice(report).filter((w) => w.to > Math.max(have, cores ?? Number.POSITIVE_INFINITY));
      return past.length ? `${past.map((w) => w.from).join('; ')}: past the ${cores} cores for a loader bound by CPU` : null;
    }
    case 'batch': {
      const inPlan = steps.some((s) => /\bbatch\b/.test(s.label));
      const advice = report.findings.some((f) => /\bbatch\b/.test(f.fix?.label ?? ''));
      return inPlan || advice ? null : `${plan}, and no finding's fix changes the batch (findings: ${report.findings.map((f) => f.id).join(', ') || 'none'})`;
    }
  }
}

/** Why the report advises fewer workers than the run has while the loop waits, or null. */
function fewerWorkersProblem(c: Case, report: DoctorReport): string | null {
  const have = runWorkers(c);
  const waits = report.ranks[0]?.steps.dataWaitShare ?? 0;
  if (have === 0 || waits < 0.05) return null;
  const fewer = workerAdvice(report).filter((w) => w.to < have);
  return fewer.length ? `the run has ${have} workers and waits ${(waits * 100).toFixed(0)}% of its step on them: ${fewer.map((w) => w.from).join('; ')}` : null;
}

// ---- the table ----

function table(): string {
  const lines = [
    `| case | plan step | flags | predicted ms | binds then | measured ms (median of ${REPEAT} runs) | loop waits (idle) | error | judged |`,
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const o of outcomes) {
    for (const [i, r] of o.rows.entries()) {
      const scale = r.measured && r.measuredMs !== null ? r.measuredMs / r.measured.mean_step_ms : 1;
      const many = (r.measured?.runs_ms?.length ?? 0) > 1;
      const runs = many ? ` (${(r.measured?.runs_ms ?? []).map((x) => fmt(x * scale)).join(', ')})` : '';
      const share = (x: number | undefined) => `${(((x ?? 0) / (r.measured as Line).mean_step_ms) * 100).toFixed(0)}%`;
      const wait = r.measured ? `${share(r.measured.loop_wait_ms)} (${share(r.measured.loop_idle_ms)})` : '-';
      const judged = r.judged === 'not measured' ? `not measured: ${r.note}` : `${r.judged}${r.ok ? '' : ' FAILS'}`;
      lines.push(
        `| ${i === 0 ? o.c.name : ''} | ${r.step} | \`${r.flags}\` | ${fmt(r.predictedMs)} | ${r.bound} | ${fmt(r.measuredMs)}${runs} | ${wait} | ${pct(r.error)} | ${judged} |`,
      );
    }
  }
  const notes = outcomes.map((o) => {
    const p = o.report.pace;
    const dl = o.report.findings.find((f) => f.id === 'dataloader-bound');
    const st = o.report.ranks[0]?.steps;
    const steady = st ? `, its step over ${st.measuredSteps} of ${st.steps} steps from step ${st.steadyFromStep}` : '';
    const retried = o.retried ? `; measured again: ${o.retried}` : '';
    return `- ${o.c.name} (doctor ${o.doctorS.toFixed(1)} s${steady}; plain runs ${o.plainS.toFixed(1)} s${retried}): ${p?.why ?? 'no pace section'}${
      dl ? `; dataloader-bound ${dl.severity}, code num_workers=${/num_workers=(\d+)/.exec(dl.recommendation?.code ?? '')?.[1] ?? '?'}` : ''
    }`;
  });
  return [...lines, '', ...notes].join('\n');
}

describe.skipIf(SKIP_PYTHON)("ground truth on CPU: doctor's plan followed and measured (examples/pace/cpu)", () => {
  beforeAll(async () => {
    bundle = await buildBundle('gpuwise-cpu-ground-truth');
    tmp = mkdtempSync(join(tmpdir(), 'gpuwise-cpu-truth-'));
    out = KEEP ?? tmp;
    if (KEEP) mkdirSync(KEEP, { recursive: true });
    if (KEEP) rmSync(join(KEEP, 'measured.jsonl'), { force: true });
  }, 120_000);

  afterAll(() => {
    const text = `${table()}\n\ntotal ${((Date.now() - t0) / 1e3).toFixed(0)} s`;
    console.log(`\nCPU ground truth (issue 44): predicted against measured, per batch of the doctor run's size\n${text}\n`);
    if (KEEP) writeFileSync(join(KEEP, 'table.md'), `${text}\n`);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  for (const c of CASES) {
    describe(`${c.name}: ${c.script} ${c.flags.join(' ')}`, () => {
      let o: Outcome;
      beforeAll(async () => {
        o = await measure(c);
        outcomes.push(o);
      }, 240_000);

      const check = (id: string, fn: () => void) => {
        const known = KNOWN_FAILING[`${c.name} ${id}`];
        const flaky = KNOWN_FLAKY[`${c.name} ${id}`];
        if (known) it.fails(`${id} (fails today: ${known})`, fn);
        else if (flaky)
          it(`${id} (fails today on a loaded machine: skipped then)`, (ctx) => {
            try {
              fn();
            } catch (e) {
              ctx.skip(`fails today on a loaded machine (${flaky}): ${(e as Error).message.split('\n')[0]}`);
            }
          });
        else it(id, fn);
      };

      for (const lever of c.levers) check(`lever: ${lever}`, () => expect(leverProblem(lever, c, o.report), c.why).toBeNull());
      check('never fewer workers', () => expect(fewerWorkersProblem(c, o.report)).toBeNull());
      check('now', () => {
        const r = o.rows[0] as Row;
        expect(r.ok, `doctor's step ${fmt(r.predictedMs)} ms against ${fmt(r.measuredMs)} ms plainly (${pct(r.error)})`).toBe(true);
      });
      check('plan', () => {
        const bad = o.rows.slice(1).filter((r) => !r.ok);
        expect(bad.map((r) => `${r.step}: predicted ${fmt(r.predictedMs)} ms, measured ${fmt(r.measuredMs)} ms (${pct(r.error)}); ${r.note}`)).toEqual([]);
      });
    });
  }
});
