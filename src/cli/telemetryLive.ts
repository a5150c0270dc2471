/** Opening the live GPUs for a one-shot command: a clear line and exit 9 (EXIT_NO_GPU) when there is none. */
import { LiveSampler, NoGpu, openLiveSource } from '../live/sampler.js';
import { NoGpuError } from './noGpuError.js';

export { NoGpuError };

/** `hint`: what the command can do without a GPU, appended to the reason. */
export async function openLive(opts: { procfs?: boolean; hint?: string } = {}): Promise<LiveSampler> {
  try {
    return new LiveSampler(await openLiveSource(), { procfs: opts.procfs });
  } catch (e) {
    if (e instanceof NoGpu) throw new NoGpuError(opts.hint ? `${e.message}. ${opts.hint}` : e.message);
    throw e;
  }
}

/** The hints each command gives when no GPU can be read. */
export const NO_GPU_HINTS = {
  smi: 'Without a GPU: gpuwise smi --from FILE reads nvidia-smi output saved on the GPU host (the plain table, -q -x XML or --query-gpu CSV); --replay FILE.sqlite reads a gpuwise recording',
  monitor: 'Without a GPU: gpuwise monitor --replay FILE.sqlite plays back a gpuwise recording',
  select: 'Without a GPU: gpuwise select --from FILE chooses from nvidia-smi output saved on the GPU host',
  record: 'Record on the GPU host; gpuwise smi --replay FILE.sqlite and monitor --replay read the recording anywhere',
  exporter: 'Run the exporter on the GPU host; gpuwise smi --from FILE reads nvidia-smi output saved there',
} as const;
