/**
 * The report's notes (pure): what was left out, what could not be analysed, what switched itself off, and what the
 * reader should know to read the figures (a time window, a partial batch, windows begun apart, the probe's own cost).
 */
import { analysedWindowEnds, type ProbeRecord, type ProfileEndRecord, type ProfileStartRecord } from '../run/records.js';
import type { UnprobedProcess } from '../run/attach.js';
import { batchOfSteps } from '../run/steps.js';
import { fmtMs } from '../util/format.js';
import { innermostFrames, recoveredStalls } from './hang.js';
import type { CommandPython, DoctorInput, RankSummary } from './reportTypes.js';
import type { ProcessRecords } from './stages/records.js';
import type { Run } from './stages/run.js';

/** Every note, in the report's order: the time windows first, then the shell's, the windows', the ranks', the model's. */
export function notesOf(run: Run): string[] {
  const { input, processes, ranks } = run;
  return [
    ...timeWindowNotes(processes),
    ...shellNotes(input, processes),
    ...windowNotes(input, processes, ranks),
    ...recoveredStalls(input.records).map(
      (st) => `rank ${st.rank ?? 0}: no progress for ${st.sinceStepS.toFixed(0)} s in step ${st.step} (at ${innermostFrames(st.stack, 1)[0] ?? '?'}), then it went on`,
    ),
    ...processes.flatMap((p) => partialBatchNote(p) ?? []),
    ...ranks.flatMap(rankNotes),
    ...(run.windowsApart ? [windowsApartNote(run.windowsApart)] : []),
    ...paramCountNote(run),
  ];
}

/** What the shell said, lines it left out, processes that used torch without the probe, a probe that sent nothing. */
function shellNotes(input: DoctorInput, processes: readonly ProcessRecords[]): string[] {
  const notes = [...input.notes];
  if (input.skippedLines > 0)
    notes.push(
      `${input.skippedLines} probe line(s) left out: not JSON (a process killed mid-write) or not a record this gpuwise understands`,
    );
  for (const u of input.unprobed ?? []) notes.push(unprobedNote(u));
  if (processes.length === 0 && (input.unprobed ?? []).length === 0) notes.push(nothingSentNote(input.python ?? null));
  return notes;
}

/** The profiler windows: without steps, without a trace or snapshot, what their stop cost, CUPTI left attached, begun early. */
function windowNotes(input: DoctorInput, processes: readonly ProcessRecords[], ranks: readonly RankSummary[]): string[] {
  return [
    ...input.traces
      .filter((t) => t.metrics !== null && t.metrics.steps.length === 0)
      .map(
        (t) =>
          `${t.path}: analyze found no profiled steps in it (a process without CUDA is profiled by torch's legacy profiler, whose CPU-only trace has no event categories)`,
      ),
    ...processes.flatMap(profileEndNotes),
    ...ranks.flatMap((r) => {
      const slowed = r.steps.slowedAfterWindow;
      return slowed
        ? [
            `rank ${r.rank}: the steps after the profiler window ran ${(slowed.slowdown * 100).toFixed(0)}% slower than the ${slowed.stepsBefore} steady steps before it (CUPTI, the profiler's CUDA tracing, stayed attached after this window, and each launch pays its callback): the run's statistics are those ${slowed.stepsBefore} steps`,
          ]
        : [];
    }),
    ...processes.flatMap(unsettledStartNotes),
  ];
}

/** A window's end without its trace or snapshot, and what its stop and export cost the training. */
function profileEndNotes(p: ProcessRecords): string[] {
  const notes: string[] = [];
  for (const r of p.records)
    if (r.type === 'profile-end') {
      if (r.traceError !== undefined) notes.push(`pid ${p.pid}: the profiler window has no trace: ${r.traceError}`);
      if (r.snapshotError !== undefined) notes.push(`pid ${p.pid}: the profiler window has no memory snapshot: ${r.snapshotError}`);
      if (r.stopS !== undefined) notes.push(windowCostNote(p.pid, r.stopS, r.exportS));
    }
  return notes;
}

/** A window started before the step times settled (protocol 2). */
function unsettledStartNotes(p: ProcessRecords): string[] {
  return p.records.flatMap((r) =>
    r.type === 'profile-start' && r.settled === false
      ? [
          `rank ${p.rank}: the profiled window started at step ${r.step} before the step times settled (${r.reason === 'cap' ? 'the wait reached its cap' : 'a fixed step'}${r.warmupSteps !== undefined ? `, after ${r.warmupSteps} steps` : ''}): its figures may include warm-up; the run's own statistics use its steady steps`,
        ]
      : [],
  );
}

/** A rank's probe that switched itself off, or whose step times never settled. */
function rankNotes(r: RankSummary): string[] {
  const notes: string[] = [];
  if (r.probeError) notes.push(`probe on rank ${r.rank} switched itself off after an internal error: ${r.probeError}`);
  if (r.steps.settled === false)
    notes.push(
      `rank ${r.rank}: the step times never settled (no run of steps at the pace of the run's second half): the statistics use the second half`,
    );
  return notes;
}

/** The model's config and the probe disagree on the parameter count by more than 1%: model.json describes the config's. */
function paramCountNote(run: Run): string[] {
  const plan = run.planModel.model;
  const model = run.model;
  if (!plan || !model || Math.abs(plan.paramCount - model.totalParamCount) <= 0.01 * plan.paramCount) return [];
  return [
    `the model's config gives ${plan.paramCount} parameters, the probe counted ${model.totalParamCount}: model.json describes the config's model`,
  ];
}

/**
 * What the profiler window's end cost the run: the stop on the stepping thread (the profiler collecting its events),
 * and the trace and snapshot written by the probe's background work (holding the GIL through torch's writers). The steps these
 * slowed are the probe's work, left out of the statistics; the note says what the training paid for them.
 */
function windowCostNote(pid: number, stopS: number, exportS: { trace: number; snapshot: number } | undefined): string {
  const s = (x: number) => fmtMs(x * 1e9);
  const written = exportS
    ? `; then the trace took ${s(exportS.trace)} to write${exportS.snapshot > 0 ? ` and the memory snapshot ${s(exportS.snapshot)}` : ''}, beside the training`
    : '';
  return `pid ${pid}: the profiler window's stop held the training thread ${s(stopS)} (the profiler collecting its events)${written}; the steps this slowed are left out of the statistics`;
}

/** Why the probe sent nothing: the command's Python has no PyTorch (which Python, and the import's error), or in general. */
function nothingSentNote(python: CommandPython | null): string {
  if (python === null || python.torch !== null)
    return 'the probe sent nothing: the command did not run Python with torch, or no step happened (no optimizer step, DataLoader batch or gpuwise.step())';
  const which =
    python.executable !== null && python.executable !== python.python ? `${python.python} (${python.executable})` : python.python;
  return `${which} has no PyTorch (${python.importError}): the probe reports from PyTorch, so it had nothing to send; run doctor with the Python of the environment that trains, or install torch into this one`;
}

/** A process of the command that used PyTorch without the probe: which, and why. */
function unprobedNote(u: UnprobedProcess): string {
  return `pid ${u.pid} (${u.command}) imported torch without the probe: ${u.reason}`;
}

/**
 * A loader that hands out a last partial batch each epoch (`drop_last=False`, a dataset size that is not a multiple of
 * the batch): said once, with the batch the report reads (the full batches', run/steps.ts batchOfSteps), and what it
 * costs a compiled model (a recompilation for the odd shape). Null when every step holds a full batch.
 */
export function partialBatchNote(p: ProcessRecords): string | null {
  const b = batchOfSteps(p.steps);
  if (b.partialSteps === 0 || b.samplesPerStep === null) return null;
  const who = p.rankFromEnv ? `rank ${p.rank}` : 'the run';
  const sizes = b.partialSamples.join(', ');
  const when =
    b.partialEvery !== null
      ? `every ${b.partialEvery} steps: the last batch of each epoch, which the DataLoader keeps (drop_last=False)`
      : b.partialSteps === 1
        ? 'once: a last batch the DataLoader keeps (drop_last=False)'
        : 'the DataLoader keeps batches smaller than the others (drop_last=False)';
  const compiled =
    p.model?.compiled === true
      ? "; a compiled model recompiles for the partial batch's shape: DataLoader(..., drop_last=True) avoids it"
      : '';
  return `${who}: ${b.partialSteps} of ${b.sizedSteps} steps ran a partial batch (${sizes} samples; the full batches hold ${b.samplesPerStep}), ${when}; the batch is read as ${b.microBatch}${b.gradAccum > 1 ? ` x ${b.gradAccum} accumulation` : ''}, the size of the full batches, and the what-ifs are scaled from it${compiled}`;
}

/**
 * Ranks whose profiler windows started at different steps (recorded before the probe aligned them, or ranks that
 * could not read rank 0's plan): the rank being profiled is slowed by the profiler and the others wait for it in
 * their collectives, so the windows' exposed communication and imbalance are the profiler's. On 2x H200 such windows
 * showed "communication not hidden: 76%" in a DDP run whose steps took 38 ms. `starts`: each rank's first step, by rank
 * (stages/run.ts Run.windowsApart).
 */
function windowsApartNote(starts: readonly { rank: number; step: number }[]): string {
  const list = starts.map((s) => `rank ${s.rank} from step ${s.step}`).join(', ');
  return `the ranks' profiler windows cover different steps (${list}): the profiled rank runs slower and the others wait for it in their collectives, so comm-bound and rank-imbalance from the windows are left out (the per-rank view and the probe's imbalance use every step's timing)`;
}

/**
 * A time window analysed in place of a step window: say plainly that no step was identified, what the window covers,
 * and what to add to the loop.
 */
function timeWindowNotes(processes: readonly ProcessRecords[]): string[] {
  const windows = new Set<ProbeRecord>(analysedWindowEnds(processes.flatMap((p) => p.records)));
  const notes: string[] = [];
  for (const p of processes) {
    const end = p.records.find((r): r is ProfileEndRecord => r.type === 'profile-end' && r.reason === 'time' && windows.has(r));
    if (!end) continue;
    const start = p.records.find((r): r is ProfileStartRecord => r.type === 'profile-start' && r.reason === 'time');
    const who = p.rankFromEnv ? `rank ${p.rank}` : `process ${p.pid}`;
    const len = end.durationS !== undefined ? `${end.durationS.toFixed(1)} s` : 'a';
    const quiet =
      start?.quietS !== undefined ? ` after ${start.quietS.toFixed(start.quietS < 10 ? 1 : 0)} s of device work without one` : '';
    notes.push(
      p.steps.length === 0
        ? `${who}: no training step was identified (no optimizer step, DataLoader batch, backward pass, forward call of a module, CUDA graph replay or gpuwise.step()), so the probe profiled a ${len} time window${quiet} and its findings take that whole window as one step ("per step" means per window); no step time, throughput or what-if. Call gpuwise.step() at the end of each iteration to get them ("import gpuwise" with the gpuwise wheel pip-installed, or doctor --importable; it does nothing outside doctor)`
        : `${who}: the profiled window is a ${len} time window taken before the first step was identified${quiet}; the steps came too late or too few for a step window: it may show set-up rather than training`,
    );
  }
  return notes;
}
