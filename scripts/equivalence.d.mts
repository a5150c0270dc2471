/** Types of scripts/equivalence.mjs, the behaviour-equivalence runner (issue 27), for the tests that read its output. */

export declare const SCHEMA_VERSION: 1;

/** A case: `NAME.py`, or a folder `NAME/` (its `main.py`, or `case.txt`, holds the declarations) run as the working directory. */
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
  /** Processes whose report has steps (a torchrun of two ranks: 2). */
  probed: number;
  probeErrors: string[];
  outcome: string | null;
  signal: string | null;
  /** Processes doctor found using torch without the probe, each as `pid N: reason` (report.environment.unprobed). */
  unprobed: string[];
  /** Every unprobed process is named in the report's notes, and no note says the probe sent nothing. */
  unprobedNoted: boolean;
}

/** `steps`: doctor recorded steps in fewer processes than the case declares (`probed`, 1 by default). */
export type Aspect = 'exit' | 'stdout' | 'stderr' | 'files' | 'steps';

/** What a case's stdout or stderr is (see scripts/equivalence.mjs's header). */
export type StdioKind = 'own' | 'file' | 'pipe' | 'slow' | 'tee' | 'closing' | 'closed';

/** A case's `# equivalence:` declarations. */
export interface Declarations {
  allow: { kind: 'stdout-line' | 'stderr-line' | 'file'; pattern: RegExp; source: string; reason: string }[];
  /** The command's words (`{python}`, `{script}` not yet filled in); null: `{python} {script}`. */
  command: string[] | null;
  stdio: { stdout: StdioKind; stderr: StdioKind };
  /** Variables of the environment both runs start in. */
  env: Record<string, string>;
  probed: number;
}

export interface CaseResult {
  name: string;
  equal: boolean;
  /** The aspects that differ, in this order: exit, stdout, stderr, files, steps. */
  differs: Aspect[];
  /** One line per differing aspect, in the same order. */
  details: string[];
  /** For each differing stream, the non-blank lines only one run printed (the first 60 of each, 300 characters each). */
  lines: Partial<Record<'stdout' | 'stderr', { doctorOnly: string[]; plainOnly: string[] }>>;
  /** The reason the case printed with `skip: ` (an optional package or a device missing here), else null. */
  skipped: string | null;
  /** The differences the case documents as allowed (`# equivalence: allow KIND REGEX -- why`). */
  allowed: { kind: 'stdout-line' | 'stderr-line' | 'file'; pattern: string; reason: string }[];
  /** The command the case declares (null: `{python} {script}`) and its stdio. */
  command: string[] | null;
  stdio: { stdout: StdioKind; stderr: StdioKind };
  droppedLines: { stdout: number; stderr: number };
  plain: RunExit & { stderrTail: string };
  /** The run under doctor (with --self-check: the plain command's second run, without `probe`). */
  doctor: RunExit & { stderrTail: string; probe: ProbeSummary | null; ownStderrTail: string };
  /** Files and folders the plain run left in its working directory (the case's own file included). */
  files: number;
  wallS: number;
  /** With --keep: the folder holding both runs' streams, files and doctor's run directory. */
  kept?: string;
  /** A generated program (--generate): its path (removed after the run unless a generated program differs). */
  generated?: string;
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
  /** --generate: the seeds, whether blocked behaviours were kept, the folder kept (null: removed) and the differing programs. */
  generated: { seeds: string; all: boolean; kept: string | null; differing: string[] } | null;
  summary: { cases: number; equal: number; differ: number; skipped: number };
  cases: CaseResult[];
}

export declare function listCases(dir: string): EquivalenceCase[];

export declare function splitWords(text: string): string[];
export declare function declarationsOf(text: string, name: string): Declarations;
/** The `sh -c` script giving a side's parent its stdout and stderr ("$@" is the parent's argv). */
export declare function stdioScript(
  stdio: { stdout: StdioKind; stderr: StdioKind },
  files: { stdout: string; stderr: string; ownStdout: string; ownStderr: string },
  python: string,
): string;
/** A stream doctor shares with the script, cut into the script's part and doctor's own. */
export declare function splitDoctorOutput(stream: 'stdout' | 'stderr', text: string, command: string[]): { script: string; own: string };
export declare function resolvePython(python: string, path?: string): string | null;
