/**
 * `gpuwise select -n N`: prints the CUDA_VISIBLE_DEVICES value for the N best GPUs, or runs a
 * command with it set (`-- CMD ...`). Exit 1 when fewer than N GPUs qualify (the command is not run).
 */
import { spawn } from 'node:child_process';
import { readSmiFiles } from '../io/readSmiFile.js';
import { resolveCudaVisibleDevices } from '../telemetry/cudaVisible.js';
import type { Snapshot } from '../telemetry/sample.js';
import { selectGpus, visibleDevicesValue } from '../telemetry/select.js';
import { VERSION } from '../util/version.js';
import { parseCount, splitCommand } from './telemetryArgs.js';
import { NO_GPU_HINTS, openLive } from './telemetryLive.js';
import { parseBytes, parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise select: choose the N best GPUs for a new job: idle GPUs (at most 10% busy) first, then
the most free memory, then the least busy. A GPU at 90% utilisation or more is busy, not free: it is
not chosen unless --max-util accepts it.

Usage: gpuwise select -n N [--min-free SIZE] [--max-util PERCENT] [--format index|uuid] [-- CMD ARGS...]

  -n, --count N       how many GPUs (default 1)
  --min-free SIZE     only GPUs with at least this much free memory (e.g. 20, in GiB, or 20GiB)
  --max-util PERCENT  only GPUs at most this busy (GPU utilisation; default: under 90%)
  --format index|uuid what to print (default index)
  --all               also consider GPUs hidden by the caller's CUDA_VISIBLE_DEVICES
  --from FILE         choose from nvidia-smi output files (the plain table, -q -x XML, query CSV)
                      instead of the live GPUs
  --json              print the choice and the reasons for each rejected GPU as JSON
  -- CMD ARGS...      run CMD with CUDA_VISIBLE_DEVICES set to the choice; exit with its status
`;

export async function run(argv: string[]): Promise<number> {
  const { own, command } = splitCommand(argv);
  const { values, positionals } = parseFlags({
    args: own,
    allowPositionals: true,
    options: {
      count: { type: 'string', short: 'n' },
      'min-free': { type: 'string' },
      'max-util': { type: 'string' },
      format: { type: 'string', default: 'index' },
      all: { type: 'boolean', default: false },
      from: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (put the command after --)`);
  const format = values.format;
  if (format !== 'index' && format !== 'uuid') throw new UsageError(`--format: '${format}' is not index or uuid`);
  const count = parseCount(values.count, '--count', 1);
  const minFreeBytes = values['min-free'] === undefined ? null : parseBytes(values['min-free'], '--min-free');
  let maxUtilPercent: number | null = null;
  if (values['max-util'] !== undefined) {
    maxUtilPercent = Number(values['max-util'].replace(/%$/, ''));
    if (!Number.isFinite(maxUtilPercent) || maxUtilPercent < 0 || maxUtilPercent > 100)
      throw new UsageError(`--max-util: '${values['max-util']}' is not a percentage`);
  }
  let snapshot: Snapshot;
  if (values.from) snapshot = readSmiFiles(values.from);
  else {
    const sampler = await openLive({ procfs: false, hint: NO_GPU_HINTS.select });
    try {
      snapshot = await sampler.sample();
    } finally {
      sampler.close();
    }
  }
  const inherited = process.env.CUDA_VISIBLE_DEVICES;
  let candidates: Set<number> | null = null;
  if (!values.all && inherited !== undefined) {
    const vis = resolveCudaVisibleDevices(inherited, snapshot.gpus);
    candidates = new Set(vis.ordinalOf.keys());
    for (const n of vis.notes) process.stderr.write(`gpuwise select: ${n}\n`);
  }
  const sel = selectGpus(snapshot.gpus, { count, minFreeBytes, maxUtilPercent, candidates });
  const value = visibleDevicesValue(sel.chosen, format);
  if (values.json)
    process.stdout.write(
      `${JSON.stringify({
        schemaVersion: 1,
        version: VERSION,
        satisfied: sel.satisfied,
        cudaVisibleDevices: sel.satisfied ? value : null,
        chosen: sel.chosen.map((g) => ({
          index: g.index,
          uuid: g.uuid,
          memoryFreeBytes: g.memoryFreeBytes,
          utilizationGpuPercent: g.utilizationGpuPercent,
        })),
        rejected: sel.rejected.map((r) => ({ index: r.gpu.index, uuid: r.gpu.uuid, reason: r.reason })),
      })}\n`,
    );
  if (!sel.satisfied) {
    const why = sel.rejected.map((r) => `GPU ${r.gpu.index}: ${r.reason}`).join('; ');
    process.stderr.write(`gpuwise select: only ${sel.chosen.length} of ${count} GPUs qualify${why ? ` (${why})` : ''}\n`);
    return 1;
  }
  if (command.length === 0) {
    if (!values.json) process.stdout.write(`${value}\n`);
    return 0;
  }
  const [bin, ...args] = command as [string, ...string[]];
  return new Promise<number>((resolve) => {
    const child = spawn(bin, args, { stdio: 'inherit', env: { ...process.env, CUDA_VISIBLE_DEVICES: value } });
    const forward = (sig: NodeJS.Signals) => child.kill(sig);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    child.on('error', (e) => {
      process.stderr.write(`gpuwise select: cannot run ${bin}: ${e.message}\n`);
      resolve(127);
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 + 15 : 1)));
  });
}
