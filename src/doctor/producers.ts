/**
 * Every producer of the doctor report's findings, registered in one place (pure). A producer reads the run, its pace
 * and its what-ifs (the stages before the findings) and returns its findings; one that reads other producers' findings
 * names them in `needs`, and the findings stage (stages/findings.ts) runs it after them (it refuses a registry where a
 * producer comes before one it needs). A producer may return a needed producer's findings amended (`revised`, by id):
 * the what-ifs add their evidence to the trace finding that says the same instead of saying it twice.
 *
 * The registry's order is the order findings of equal rank keep (findings/rank.ts sorts stably): trace, memory, probe,
 * telemetry, planner.
 */
import { diagnoseModel, diagnoseRun } from '../advice/engine.js';
import { probeImbalanceFinding } from '../advice/rules/distributed.js';
import type { Finding } from '../findings/finding.js';
import { gpuStepTimesOf } from '../run/steps.js';
import { decodeAutogradFinding, decodeBatchingFinding } from './decode.js';
import type { RankedFinding } from './reportTypes.js';
import { gpuSharedFindings, ranksShareGpuFinding, type SharingProcess } from './sharing.js';
import type { RunPace } from './stages/pace.js';
import { lastMemoryOf } from './stages/records.js';
import { crossRankRulesRun, type Run, windowOf, windowsOf } from './stages/run.js';
import { traceRuleFindings } from './traceRules.js';
import { whatIfFindings, type WhatIfResult } from './whatIfs.js';

export type ProducerName =
  | 'trace-rules'
  | 'memory-snapshots'
  | 'run-pipeline'
  | 'model-rules'
  | 'probe-imbalance'
  | 'decode-levers'
  | 'gpu-sharing'
  | 'what-ifs';

/** What every producer reads: the stages before the findings. */
export interface ProducerInput {
  run: Run;
  pace: RunPace;
  whatIfs: WhatIfResult;
}

interface Produced {
  findings: Finding[];
  /** Findings of the producers it needs, amended (same id): they replace theirs. */
  revised?: Finding[];
}

export interface FindingProducer {
  name: ProducerName;
  /** Where its findings come from, as the report names it (RankedFinding.source). */
  source: RankedFinding['source'];
  /** The producers whose findings it reads: registered (and run) before it. */
  needs: readonly ProducerName[];
  produce(input: ProducerInput, needed: (name: ProducerName) => readonly Finding[]): Produced;
}

export const PRODUCERS: readonly FindingProducer[] = [
  /** analyze's rules on the windows, with the run's context (traceRules.ts). */
  { name: 'trace-rules', source: 'trace', needs: [], produce: ({ run, pace }) => ({ findings: traceRuleFindings(run, pace) }) },
  /** memory's findings on each snapshot, on the snapshot's rank. */
  { name: 'memory-snapshots', source: 'memory', needs: [], produce: ({ run }) => ({ findings: snapshotFindings(run) }) },
  /** For a rank without a window, what its pipeline alone supports (the DataLoader's waits). */
  { name: 'run-pipeline', source: 'probe', needs: [], produce: ({ run, pace }) => ({ findings: unwindowedFindings(run, pace) }) },
  /** The rules on the probe's model record (advice/engine.ts diagnoseModel: half-precision master weights). */
  { name: 'model-rules', source: 'probe', needs: [], produce: ({ run }) => ({ findings: run.model ? diagnoseModel(run.model) : [] }) },
  /** rank-imbalance from the probe's timing alone, where no two windows of one job are compared by the trace rules. */
  { name: 'probe-imbalance', source: 'probe', needs: [], produce: ({ run, pace }) => ({ findings: probeImbalanceFindings(run, pace) }) },
  /** A generation loop's own levers (decode.ts). */
  { name: 'decode-levers', source: 'probe', needs: [], produce: ({ run, pace }) => ({ findings: decodeFindings(run, pace) }) },
  /** GPUs shared while the run trained (sharing.ts). */
  { name: 'gpu-sharing', source: 'telemetry', needs: [], produce: ({ run, pace }) => ({ findings: sharingFindings(run, pace) }) },
  /** The what-ifs that promise throughput (whatIfs.ts), merged into the trace finding that says the same. */
  { name: 'what-ifs', source: 'planner', needs: ['trace-rules'], produce: (input, needed) => whatIfProduced(input, needed('trace-rules')) },
];

function snapshotFindings(run: Run): Finding[] {
  return run.input.snapshots.flatMap((s) => (s.report?.findings ?? []).map((f) => ({ ...f, ranks: [s.rank] })));
}

function unwindowedFindings(run: Run, pace: RunPace): Finding[] {
  const windowed = new Set(windowsOf(run.input.traces).map((t) => t.rank));
  const unwindowed = [...new Set(run.ranks.filter((r) => !windowed.has(r.rank)).map((r) => r.rank))];
  return unwindowed.flatMap((rank) => {
    const p = pace.byRank.get(rank);
    return p ? diagnoseRun(p, rank) : [];
  });
}

function probeImbalanceFindings(run: Run, pace: RunPace): Finding[] {
  const f = pace.probeBalance && !crossRankRulesRun(run.input.traces) ? probeImbalanceFinding(pace.probeBalance) : null;
  return f ? [f] : [];
}

/** On each rank whose steps are decode steps: more sequences per decode step; inference_mode where forwards ran with gradients. */
function decodeFindings(run: Run, pace: RunPace): Finding[] {
  const out: Finding[] = [];
  for (const r of run.ranks) {
    const decode = r.steps.decode;
    if (!decode) continue;
    const p = pace.byRank.get(r.rank) ?? null;
    const f = decodeBatchingFinding(decode, windowOf(run.input.traces, r.rank), p, r.rank);
    if (f) out.push(f);
    const autograd = r.forwardGradModes ? decodeAutogradFinding(decode, r.forwardGradModes, r.rank, p) : null;
    if (autograd) out.push(autograd);
  }
  return out;
}

/** Another process's work beside a training process (`gpu-shared`), ranks of one job on one GPU while others idle (`ranks-share-gpu`). */
function sharingFindings(run: Run, pace: RunPace): Finding[] {
  const procs = sharingProcessesOf(run);
  const gpus = run.gpus ?? [];
  const share = ranksShareGpuFinding(gpus, procs, pace);
  return [...(share ? [share] : []), ...gpuSharedFindings(gpus, procs, pace)];
}

function sharingProcessesOf(run: Run): SharingProcess[] {
  return run.processes.map((p) => {
    const st = run.ranks.find((r) => r.pid === p.pid)?.steps;
    return {
      pid: p.pid,
      rank: p.rank,
      rankFromEnv: p.rankFromEnv,
      hello: p.hello,
      steps: p.steps,
      gpuStepTimes: gpuStepTimesOf(p.records),
      timing: st?.timing ?? 'host',
      medianS: st?.medianS ?? null,
      device: lastMemoryOf(p)?.device ?? null,
      peakAllocatedBytes: lastMemoryOf(p)?.peakAllocatedBytes ?? 0,
    };
  });
}

/** The what-ifs as findings, judged on the set-up rank's pipeline; those that say what a trace finding says merge into it. */
function whatIfProduced({ run, pace, whatIfs }: ProducerInput, traceFindings: readonly Finding[]): Produced {
  const rank = run.setupRank?.rank ?? 0;
  const steps = run.ranks.find((r) => r.rank === rank)?.steps;
  const planned = whatIfFindings(whatIfs, traceFindings, steps?.medianS ?? null, rank, pace.byRank.get(rank) ?? null);
  return { findings: planned.findings, revised: planned.merged };
}
