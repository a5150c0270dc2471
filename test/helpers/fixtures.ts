import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadTrace } from '../../src/io/loadTrace.js';
import { type CollectiveTimings, analyzeTrace, collectiveTimings } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';

export const TRACES = fileURLToPath(new URL('../../examples/traces/', import.meta.url));

/** One event of a Chrome trace as torch.profiler writes it, for tests that edit real traces. */
export interface TraceEventJson {
  ph?: string;
  cat?: string;
  name?: string;
  pid?: number | string;
  tid?: number | string;
  ts?: number;
  dur?: number;
  args?: Record<string, unknown>;
}

export function tracePath(name: string): string {
  return name.startsWith('ddp_gpt2') ? `${TRACES}ddp_gpt2/${name}.trace.json.gz` : `${TRACES}${name}.trace.json.gz`;
}

export function meta(name: string): { nvml_util_mean: number; items_per_s: number; peak_reserved: number; peak_alloc: number } {
  const p = name.startsWith('ddp_gpt2') ? `${TRACES}ddp_gpt2/${name}.meta.json` : `${TRACES}${name}.meta.json`;
  return JSON.parse(readFileSync(p, 'utf8'));
}

export interface RankAnalysis {
  metrics: TraceMetrics;
  collectives: CollectiveTimings;
}

const cache = new Map<string, Promise<RankAnalysis>>();
/** A shipped trace's metrics and collective timings (analysed once per test file). */
export function rankOf(name: string): Promise<RankAnalysis> {
  let p = cache.get(name);
  if (!p) {
    p = loadTrace(tracePath(name)).then((model) => {
      const metrics = analyzeTrace(model);
      return { metrics, collectives: collectiveTimings(model, metrics.steps) };
    });
    cache.set(name, p);
  }
  return p;
}

export async function metricsOf(name: string): Promise<TraceMetrics> {
  return (await rankOf(name)).metrics;
}
