/**
 * CUDA_VISIBLE_DEVICES as the CUDA runtime reads it: a comma list of ordinals or (prefixes of) GPU
 * UUIDs; the first entry that names no device, or repeats one, ends the list (CUDA ignores it and all
 * after it). Ordinals are taken in PCI bus order, which is NVML's order; under the default
 * CUDA_DEVICE_ORDER=FASTEST_FIRST they agree on machines with identical GPUs (see docs/telemetry.md).
 */

export interface VisibleDevice {
  index: number;
  uuid: string;
}

export interface CudaVisibility {
  /** NVML index -> CUDA ordinal, for the GPUs CUDA will see. */
  ordinalOf: Map<number, number>;
  /** Explanations of entries CUDA would ignore. */
  notes: string[];
}

/** Maps NVML indices to CUDA ordinals. `value` undefined means the variable is unset: all GPUs, in order. */
export function resolveCudaVisibleDevices(value: string | undefined, gpus: readonly VisibleDevice[]): CudaVisibility {
  const ordinalOf = new Map<number, number>();
  const notes: string[] = [];
  if (value === undefined) {
    for (const [i, g] of gpus.entries()) ordinalOf.set(g.index, i);
    return { ordinalOf, notes };
  }
  const entries = value.split(',').map((e) => e.trim());
  for (const [pos, entry] of entries.entries()) {
    if (entry === '' && entries.length === 1) break; // CUDA_VISIBLE_DEVICES= hides every GPU
    let found: VisibleDevice | undefined;
    if (/^\d+$/.test(entry)) found = gpus.find((g) => g.index === Number(entry));
    else if (/^GPU-/i.test(entry)) {
      const matches = gpus.filter((g) => g.uuid.toLowerCase().startsWith(entry.toLowerCase()));
      if (matches.length > 1) {
        notes.push(`CUDA_VISIBLE_DEVICES entry '${entry}' matches ${matches.length} GPUs; CUDA stops the list there`);
        break;
      }
      found = matches[0];
    } else if (/^MIG-/i.test(entry)) {
      notes.push(`CUDA_VISIBLE_DEVICES entry '${entry}' is a MIG instance; gpuwise does not map MIG instances yet`);
      break;
    }
    if (found === undefined) {
      notes.push(`CUDA_VISIBLE_DEVICES entry ${pos + 1} '${entry}' names no GPU; CUDA ignores it and every entry after it`);
      break;
    }
    if (ordinalOf.has(found.index)) {
      notes.push(`CUDA_VISIBLE_DEVICES names GPU ${found.index} twice; CUDA stops the list there`);
      break;
    }
    ordinalOf.set(found.index, ordinalOf.size);
  }
  return { ordinalOf, notes };
}
