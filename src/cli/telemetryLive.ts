/** Opening the live GPUs for a one-shot command: a clear line and exit 2 when there is none. */
import { LiveSampler, NoGpu, openLiveSource } from '../telemetry/sampler.js';
import { UsageError } from './usage.js';

export class NoGpuError extends UsageError {
  override name = 'NoGpuError';
}

export async function openLive(opts: { procfs?: boolean } = {}): Promise<LiveSampler> {
  try {
    return new LiveSampler(await openLiveSource(), { procfs: opts.procfs });
  } catch (e) {
    if (e instanceof NoGpu) throw new NoGpuError(e.message);
    throw e;
  }
}
