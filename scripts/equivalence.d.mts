/** Types of scripts/equivalence.mjs, the behaviour-equivalence runner (issue 27), for the tests that read its output. */

export declare const SCHEMA_VERSION: 1;

/** A case: `NAME.py`, or a folder `NAME/` whose `main.py` runs beside the files it holds. */
export interface EquivalenceCase {
  name: string;
  path: string;
  /** The file run, relative to the working directory. */
  script: string;
  folder: boolean;
}

/** One run's end: the exit status (128+N for signal N), the signal's name, whether the time limit killed it. */
export interface RunExit {
  code: number;
  signal: string | null;
  timedOut: boolean;
  wallS: number;
}

/** What doctor's report.json says of the probe in the doctor run. */
export interface ProbeSummary {
  /** doctor wrote a report. */
  report: boolean;
  /** Processes that sent records (the training process, and any other that carried a probe). */
  processes: number;
  steps: number;
  /** Profiler windows captured. */
  windows: number;
  probeErrors: string[];
  outcome: string | null;
  signal: string | null;
}

export type Aspect = 'exit' | 'stdout' | 'stderr' | 'files';

export interface CaseResult {
  name: string;
  equal: boolean;
  /** The aspects that differ, in this order: exit, stdout, stderr, files. */
  differs: Aspect[];
  /** One line per differing aspect, in the same order. */
  details: string[];
  /** For each differing stream, the non-blank lines only one run printed (the first 60 of each, 300 characters each). */
  lines: Partial<Record<'stdout' | 'stderr', { doctorOnly: string[]; plainOnly: string[] }>>;
  /** The reason the case printed with `skip: ` (an optional package or a device missing here), else null. */
  skipped: string | null;
  /** The differences the case documents as allowed (`# equivalence: allow KIND REGEX -- why`). */
  allowed: { kind: 'stdout-line' | 'stderr-line' | 'file'; pattern: string; reason: string }[];
  droppedLines: { stdout: number; stderr: number };
  plain: RunExit & { stderrTail: string };
  /** The run under doctor (with --self-check: the plain command's second run, without `probe`). */
  doctor: RunExit & { stderrTail: string; probe: ProbeSummary | null; ownStderrTail: string };
  /** Files and folders the plain run left in its working directory (the case's own file included). */
  files: number;
  wallS: number;
  /** With --keep: the folder holding both runs' streams, files and doctor's run directory. */
  kept?: string;
}

export interface EquivalenceReport {
  schemaVersion: 1;
  tool: 'gpuwise-equivalence';
  /** `self-check` runs the plain command twice (a case's own determinism), `doctor` compares with doctor. */
  mode: 'doctor' | 'self-check';
  python: string;
  pythonVersion: string | null;
  torchVersion: string | null;
  cli: string;
  jobs: number;
  wallS: number;
  summary: { cases: number; equal: number; differ: number; skipped: number };
  cases: CaseResult[];
}

export declare function listCases(dir: string): EquivalenceCase[];
