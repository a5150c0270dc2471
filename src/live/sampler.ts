/**
 * The live sampler (shell): picks a source (NVML through koffi, else the nvidia-smi fallback), then
 * adds the host view (/proc), CUDA_VISIBLE_DEVICES ordinals and the hostname to each snapshot.
 * Environment: GPUWISE_SOURCE=nvml|nvidia-smi forces a source; GPUWISE_NVML_LIB names the NVML
 * library (default libnvidia-ml.so.1); GPUWISE_NVIDIA_SMI names the nvidia-smi binary.
 */
import { hostname } from 'node:os';
import { type CudaVisibility, resolveCudaVisibleDevices, type VisibleDevice } from '../telemetry/cudaVisible.js';
import { NvmlSource, NvmlUnavailable } from './nvml.js';
import { ProcReader } from './procfs.js';
import type { Snapshot } from '../telemetry/sample.js';
import { SmiSource } from './smiFallback.js';
import { lookUp } from '../io/siteHook.js';

export interface GpuSource {
  readonly kind: 'nvml' | 'nvidia-smi';
  sample(): Snapshot | Promise<Snapshot>;
  close(): void;
  /** Per-call cost of the driver calls so far, when timing was asked for (GPUWISE_NVML_TIMINGS=1). */
  callTimings?(): Record<string, { calls: number; usPerCall: number }> | null;
}

/** No NVIDIA GPU can be read on this machine; the message gives the reasons found. */
export class NoGpu extends Error {
  override name = 'NoGpu';
}

export interface LiveSourceOptions {
  /**
   * How often NVML's slow figures (the PCIe byte counters and HBM temperature, one ~0.5 ms call per GPU) are read;
   * default 1 s. A view that does not show them asks less often.
   */
  slowIntervalMs?: number;
}

export async function openLiveSource(env: NodeJS.ProcessEnv = process.env, opts: LiveSourceOptions = {}): Promise<GpuSource> {
  const want = env.GPUWISE_SOURCE;
  const reasons: string[] = [];
  if (want !== 'nvidia-smi') {
    try {
      const nvml = NvmlSource.open({ libraryPath: env.GPUWISE_NVML_LIB || undefined, slowIntervalMs: opts.slowIntervalMs });
      if (nvml.deviceCount > 0) return nvml;
      nvml.close();
      reasons.push('NVML works but reports no GPU');
    } catch (e) {
      if (!(e instanceof NvmlUnavailable)) throw e;
      reasons.push(e.message);
    }
  }
  const smiBin = env.GPUWISE_NVIDIA_SMI || 'nvidia-smi';
  // Not on PATH: said without a spawn (forking this process for a program that is not there cost doctor about 0.1 s
  // of a CPU machine's time at each start).
  if (want !== 'nvml' && !smiBin.includes('/') && lookUp(smiBin, env.PATH) === null) reasons.push(`${smiBin} is not installed`);
  else if (want !== 'nvml') {
    const smi = new SmiSource(env.GPUWISE_NVIDIA_SMI || undefined);
    try {
      const first = await smi.sample();
      if (first.gpus.length > 0) return smi;
      reasons.push('nvidia-smi lists no GPU');
    } catch (e) {
      reasons.push((e as Error).message.includes('ENOENT') ? 'nvidia-smi is not installed' : (e as Error).message);
    }
  }
  throw new NoGpu(`no NVIDIA GPU can be read here: ${reasons.join('; ')}`);
}

export interface LiveSamplerOptions {
  /** Read /proc for user, command, CPU, RSS and job environment (default true). */
  procfs?: boolean;
  cudaVisibleDevices?: string | undefined;
}

export class LiveSampler {
  private readonly proc: ProcReader | null;
  private readonly host = hostname();
  private readonly cudaVisible: string | undefined;
  private lastVisibility: { gpus: VisibleDevice[]; vis: CudaVisibility } | null = null;

  constructor(
    readonly source: GpuSource,
    opts: LiveSamplerOptions = {},
  ) {
    this.proc = opts.procfs === false ? null : new ProcReader();
    this.cudaVisible = 'cudaVisibleDevices' in opts ? opts.cudaVisibleDevices : process.env.CUDA_VISIBLE_DEVICES;
  }

  async sample(): Promise<Snapshot> {
    const s = await this.source.sample();
    s.hostname = this.host;
    const vis = this.visibility(s.gpus);
    for (const g of s.gpus) g.cudaIndex = vis.ordinalOf.get(g.index) ?? null;
    for (const n of vis.notes) s.notes.push(n);
    if (this.proc) this.proc.enrich(s);
    return s;
  }

  /** CUDA ordinals, worked out again only when the GPUs (index and uuid) differ from the last sample's. */
  private visibility(gpus: readonly VisibleDevice[]): CudaVisibility {
    const last = this.lastVisibility;
    if (
      last !== null &&
      last.gpus.length === gpus.length &&
      gpus.every((g, i) => g.index === last.gpus[i]!.index && g.uuid === last.gpus[i]!.uuid)
    )
      return last.vis;
    const vis = resolveCudaVisibleDevices(this.cudaVisible, gpus);
    this.lastVisibility = { gpus: gpus.map((g) => ({ index: g.index, uuid: g.uuid })), vis };
    return vis;
  }

  close(): void {
    this.proc?.close();
    this.source.close();
  }
}
