/**
 * The doctor report (pure: data in, data out), built by a short pipeline of named stages over one model of the run;
 * each stage is a module of stages/ with its typed input and output:
 *
 *   records (stages/records.ts)   the probe's records grouped by process
 *   run     (stages/run.ts)       the `Run`: who the run is, each rank's summary, the GPUs, how it ended, its set-up
 *   pace    (stages/pace.ts)      each process's pipeline outside the profiler, the probe's rank balance, the job
 *   whatIfs (stages/whatIfs.ts)   the planner calibrated on the run's memory
 *   findings (stages/findings.ts) every registered producer's findings (producers.ts), ranked
 *   plan    (stages/plan.ts)      what sets the pace and the plan of the findings' fixes; the findings valued by it
 *   report  (stages/report.ts)    the `--json` contract (reportTypes.ts) and its notes
 *
 * A run diagnosed by doctor reads like `analyze` and `memory` on its files: the trace findings are analyze's rules,
 * the memory findings memory's, judged on the run.
 */
import { findingsByPlanWorth } from '../pace/report.js';
import type { DoctorInput, DoctorReport } from './reportTypes.js';
import { findingsOf } from './stages/findings.js';
import { paceOf } from './stages/pace.js';
import { planOf } from './stages/plan.js';
import { groupProcesses } from './stages/records.js';
import { reportOf } from './stages/report.js';
import { runOf } from './stages/run.js';
import { whatIfsOf } from './stages/whatIfs.js';

export function buildDoctorReport(input: DoctorInput): DoctorReport {
  const processes = groupProcesses(input.records);
  const run = runOf(input, processes);
  const pace = paceOf(run);
  const whatIfs = whatIfsOf(run, pace);
  const findings = findingsOf({ run, pace, whatIfs });
  const plan = planOf(run, pace, findings);
  return reportOf({ run, whatIfs, findings: findingsByPlanWorth(findings, plan?.plan), pace: plan });
}
