/**
 * The `gpuwise` entry point: dispatches to one module per command.
 * Commands are imported lazily so `gpuwise smi` never loads the trace parser.
 */
import { InputError } from '../io/inputError.js';
import { closeMatches } from '../util/closeMatches.js';
import { NoGpuError } from './noGpuError.js';
import { UsageError } from './usage.js';
import { VERSION } from '../util/version.js';
import { EXIT_BAD_INPUT, EXIT_NO_GPU, EXIT_OK } from './version.js';

type Command = { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> };

const COMMANDS: Record<string, Command> = {
  analyze: { summary: 'diagnose torch.profiler traces (one GPU or many ranks)', load: () => import('./analyze.js') },
  plan: { summary: 'predict GPU memory and step time, pick batch size and parallelism, emit launch configs', load: () => import('./plan.js') },
  memory: { summary: 'explain CUDA memory snapshots and out-of-memory errors', load: () => import('./memory.js') },
  smi: { summary: 'one snapshot of the GPUs and their processes (table or JSON)', load: () => import('./smi.js') },
  monitor: { summary: 'live GPU and process view in the terminal, or an NDJSON stream', load: () => import('./monitor.js') },
  select: { summary: 'pick the N best GPUs: print CUDA_VISIBLE_DEVICES or run a command with it', load: () => import('./select.js') },
  record: { summary: 'record GPU samples into a SQLite file, optionally for the life of a command', load: () => import('./record.js') },
  doctor: { summary: 'run a training command with the probe, watch it, and report what limits it', load: () => import('./doctor.js') },
  tune: { summary: 'find the largest batch that fits in a few trial runs, with the throughput of each', load: () => import('./tune.js') },
  runs: { summary: 'list the runs doctor saved in the local history, or show one again', load: () => import('./runs.js') },
  compare: { summary: 'what changed between two doctor runs: step time, memory, findings', load: () => import('./compare.js') },
  serve: { summary: 'local web dashboard: run history, trace and snapshot reports, live GPUs', load: () => import('./serve.js') },
  exporter: { summary: 'Prometheus endpoint with dcgm-exporter metric names, plus per-process metrics', load: () => import('./exporter.js') },
};

function help(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return [
    'gpuwise: find out why a PyTorch job is slow or out of memory, and what to change.',
    '',
    'Commands:',
    ...rows,
    '',
    'Run `gpuwise COMMAND --help` (or `gpuwise help COMMAND`) for the options of a command. Every command takes',
    '--no-color (also NO_COLOR=1; colour is only ever used on a terminal).',
  ].join('\n');
}

/** One line for a word that is no command: the command meant, else the list of commands. */
function unknownCommand(name: string): string {
  const near = closeMatches(name, Object.keys(COMMANDS), 2);
  const hint = near.length
    ? `did you mean ${near.join(' or ')}? (gpuwise --help lists the commands)`
    : `the commands are ${Object.keys(COMMANDS).join(', ')}`;
  return `gpuwise: unknown command '${name}': ${hint}\n`;
}

export async function main(argv: string[]): Promise<number> {
  let [name, ...rest] = argv;
  // `gpuwise help COMMAND` is `gpuwise COMMAND --help`.
  if (name === 'help' && rest.length > 0) [name, rest] = [rest[0], ['--help']];
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${help()}\n`);
    return name === undefined ? EXIT_BAD_INPUT : EXIT_OK;
  }
  if (name === '--version' || name === '-v' || name === '-V') {
    process.stdout.write(`${VERSION}\n`);
    return EXIT_OK;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    process.stderr.write(unknownCommand(name));
    return EXIT_BAD_INPUT;
  }
  try {
    const mod = await command.load();
    return await mod.run(rest);
  } catch (e) {
    if (e instanceof InputError || e instanceof UsageError) {
      process.stderr.write(`gpuwise ${name}: ${e.message}\n`);
      return EXIT_BAD_INPUT;
    }
    if (e instanceof NoGpuError) {
      process.stderr.write(`gpuwise ${name}: ${e.message}\n`);
      return EXIT_NO_GPU;
    }
    // An unexpected failure is a bug in gpuwise: say so in one line, keep the stack for GPUWISE_DEBUG.
    process.stderr.write(`gpuwise ${name}: internal error: ${(e as Error)?.message ?? String(e)} (set GPUWISE_DEBUG=1 for details)\n`);
    if (process.env.GPUWISE_DEBUG) process.stderr.write(`${(e as Error)?.stack}\n`);
    return 70;
  }
}
