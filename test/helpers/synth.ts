/**
 * Builds small Kineto-shaped traces for cases no shipped trace covers. The
 * event layout (categories, args, correlation ids) follows what torch 2.11
 * writes; the numbers are chosen by each test.
 */
export interface SynthEvent {
  ph?: string;
  cat: string;
  name: string;
  pid?: number | string;
  tid?: number | string;
  ts: number;
  dur?: number;
  args?: Record<string, unknown>;
}

export class SynthTrace {
  events: SynthEvent[] = [];
  private corr = 1;
  private ext = 1;
  meta: Record<string, unknown> = {
    schemaVersion: 1,
    deviceProperties: [{ id: 0, name: 'NVIDIA H100', totalGlobalMem: 85_000_000_000, computeMajor: 9, computeMinor: 0, numSms: 132 }],
  };

  cpu(name: string, ts: number, dur: number, cat = 'cpu_op', args: Record<string, unknown> = {}): number {
    const ext = this.ext++;
    this.events.push({ ph: 'X', cat, name, pid: 100, tid: 100, ts, dur, args: { 'External id': ext, ...args } });
    return ext;
  }

  step(n: number, ts: number, dur: number): void {
    this.cpu(`ProfilerStep#${n}`, ts, dur, 'user_annotation');
  }

  /** A launch on the CPU at `launchTs` and its kernel on the GPU at `ts`. */
  kernel(name: string, launchTs: number, ts: number, dur: number, opts: { device?: number; stream?: number; ext?: number; args?: Record<string, unknown>; cat?: string } = {}): void {
    const c = this.corr++;
    const device = opts.device ?? 0;
    this.events.push({ ph: 'X', cat: 'cuda_runtime', name: opts.cat === 'gpu_memcpy' ? 'cudaMemcpyAsync' : 'cudaLaunchKernel', pid: 100, tid: 100, ts: launchTs, dur: 4, args: { correlation: c, 'External id': opts.ext ?? 0 } });
    this.events.push({ ph: 'X', cat: opts.cat ?? 'kernel', name, pid: device, tid: opts.stream ?? 7, ts, dur, args: { device, stream: opts.stream ?? 7, correlation: c, ...(opts.args ?? {}) } });
  }

  runtime(name: string, ts: number, dur: number): void {
    this.events.push({ ph: 'X', cat: 'cuda_runtime', name, pid: 100, tid: 100, ts, dur, args: { correlation: this.corr++ } });
  }

  memory(ts: number, allocated: number, reserved: number, device = 0): void {
    this.events.push({ ph: 'i', cat: 'cpu_instant_event', name: '[memory]', pid: 100, tid: 100, ts, args: { 'Total Allocated': allocated, 'Total Reserved': reserved, 'Device Type': 1, 'Device Id': device, Bytes: 1 } });
  }

  toJSON(): string {
    return JSON.stringify({ ...this.meta, traceEvents: this.events, traceName: 'synthetic' });
  }
}

import { TraceModelBuilder } from '../../src/trace/builder.js';
import type { TraceModel } from '../../src/trace/model.js';
import { type CollectiveTimings, analyzeTrace, collectiveTimings } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { TraceJsonParser } from '../../src/trace/parser.js';

export function metricsOfText(text: string, source = 'synthetic'): TraceMetrics {
  return rankOfText(text, source).metrics;
}

/** The model of a trace given as text. */
export function modelOfText(text: string, source = 'synthetic'): TraceModel {
  const b = new TraceModelBuilder(source);
  const p = new TraceJsonParser(b);
  p.push(text);
  const s = p.end();
  return b.finish(s.originUs, s.warnings);
}

/** The metrics and the collective timings of a trace given as text. */
export function rankOfText(text: string, source = 'synthetic'): { metrics: TraceMetrics; collectives: CollectiveTimings } {
  const model = modelOfText(text, source);
  const metrics = analyzeTrace(model);
  return { metrics, collectives: collectiveTimings(model, metrics.steps) };
}
