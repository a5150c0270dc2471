/**
 * The live fallback when NVML cannot be loaded (shell): one `nvidia-smi --query-gpu` and one
 * `--query-compute-apps` process per sample (about 25-35 ms each on an H200 host), parsed by the
 * same CSV reader as `smi --from`. If the driver rejects gpuwise's longer field list (old drivers do
 * not know every field), it retries with the basic fields.
 */
import { execFile } from 'node:child_process';
import { GPU_QUERY_FIELDS, APPS_QUERY_FIELDS, attachApps, parseAppsCsv, parseGpuCsv } from '../telemetry/smiCsv.js';
import type { Snapshot } from '../telemetry/sample.js';

const BASIC_FIELD_COUNT = 22;

function run(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { timeout: 15000, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${bin} ${args[0]} failed: ${(stderr || err.message).trim().split('\n')[0]}`));
      else resolve(stdout);
    });
  });
}

export class SmiSource {
  readonly kind = 'nvidia-smi' as const;
  private fields: readonly string[] = GPU_QUERY_FIELDS;

  constructor(private readonly bin = process.env.GPUWISE_NVIDIA_SMI ?? 'nvidia-smi') {}

  async sample(): Promise<Snapshot> {
    let gpuCsv: string;
    try {
      gpuCsv = await run(this.bin, [`--query-gpu=${this.fields.join(',')}`, '--format=csv,nounits']);
    } catch (e) {
      if (this.fields.length === BASIC_FIELD_COUNT) throw e;
      this.fields = GPU_QUERY_FIELDS.slice(0, BASIC_FIELD_COUNT);
      gpuCsv = await run(this.bin, [`--query-gpu=${this.fields.join(',')}`, '--format=csv,nounits']);
    }
    const timestampMs = Date.now();
    const apps = await run(this.bin, [`--query-compute-apps=${APPS_QUERY_FIELDS.join(',')}`, '--format=csv,nounits']);
    const s = attachApps(parseGpuCsv(gpuCsv), parseAppsCsv(apps.trim() === '' ? `${APPS_QUERY_FIELDS.join(', ')}\n` : apps));
    s.source = 'nvidia-smi';
    s.timestampMs = timestampMs;
    s.notes = s.notes.filter((n) => !n.startsWith('fields not used'));
    s.notes.push('NVML could not be loaded: sampled by running nvidia-smi (slower, no per-process utilisation)');
    return s;
  }

  close(): void {}
}
