/**
 * The event model: what the streaming parser hands to its sink for every
 * trace event. One mutable instance is reused for every event (no allocation
 * per event); a sink copies what it keeps.
 *
 * Times are integer nanoseconds relative to the trace origin (the first
 * timestamp's whole microsecond), so they stay exact below 2^53 ns (104 days)
 * whatever the absolute clock value. Ids wider than 2^53 are kept as decimal
 * strings.
 */
export type Id = number | string;

/** The `args` fields gpuwise reads (keep in step with parser.ts ARG_KEYS). Everything else is skipped unparsed. */
export interface EventArgs {
  correlation: number;
  externalId: number;
  bytes: number;
  device: number;
  /** Kineto's occupancy estimate (SM efficiency). */
  blocksPerSm: number;
  /** NCCL metadata on collective kernels and `record_param_comms` ops. */
  collectiveName: string | null;
  inMsgNelems: number;
  outMsgNelems: number;
  groupSize: number;
  dtype: string | null;
  processGroupName: string | null;
  processGroupDesc: string | null;
  seq: Id | null;
  /** Shapes and dtypes on CPU ops (record_shapes=True). */
  inputDims: unknown[] | null;
  inputType: unknown[] | null;
  /** Scalar inputs as text (torch >= 2.1 with record_shapes): a convolution's stride, padding, dilation, groups. */
  concreteInputs: unknown[] | null;
  /** `[memory]` instant events (profile_memory=True). */
  totalAllocated: number;
  totalReserved: number;
  deviceType: number;
  deviceId: number;
}

export interface RawEvent {
  ph: string;
  cat: string;
  name: string;
  pid: number | string;
  tid: number | string;
  /** Start, ns relative to the trace origin; NaN when absent or not a number. */
  tsNs: number;
  /** Duration in ns; NaN when absent. */
  durNs: number;
  id: Id | null;
  args: EventArgs;
  /** Whether `args` was present at all. */
  hasArgs: boolean;
}

export function emptyArgs(): EventArgs {
  const a = {} as EventArgs;
  resetArgs(a); // one list of fields; the same assignment order gives every args object one shape
  return a;
}

export function resetArgs(a: EventArgs): void {
  a.correlation = -1;
  a.externalId = -1;
  a.bytes = -1;
  a.device = -1;
  a.blocksPerSm = -1;
  a.collectiveName = null;
  a.inMsgNelems = -1;
  a.outMsgNelems = -1;
  a.groupSize = -1;
  a.dtype = null;
  a.processGroupName = null;
  a.processGroupDesc = null;
  a.seq = null;
  a.inputDims = null;
  a.inputType = null;
  a.concreteInputs = null;
  a.totalAllocated = -1;
  a.totalReserved = -1;
  a.deviceType = -1;
  a.deviceId = -1;
}

/** What the parser calls. Top-level keys other than traceEvents arrive through onMetadata. */
export interface TraceSink {
  onEvent(ev: RawEvent): void;
  onMetadata(key: string, value: unknown): void;
  /**
   * Optional early filter, asked once the phase (for flows) or the category and
   * name are known: false skips the rest of the event unparsed (the bulk of a
   * trace is CPU ops and flows that most analyses never read). It must be a
   * pure function of its arguments: the event scanner keeps its answers.
   */
  wants?(ph: string, cat: string, name: string): boolean;
  /**
   * Counts the events that `wants` turned down, after they were skipped: the
   * parser reports each (count 1), the event scanner a segment's worth at once.
   * (`wants` itself may be asked again for the same event when it was cut by the
   * end of a chunk, so it must not count.)
   */
  onSkipped?(ph: string, cat: string, count: number): void;
}
