/** A DoctorInput around probe records, for tests of the pure report builder (no processes, no files). */
import type { ProbeRecord } from '../../src/run/records.js';
import type { DoctorInput } from '../../src/doctor/reportTypes.js';

export function doctorInput(records: ProbeRecord[], over: Partial<DoctorInput> = {}): DoctorInput {
  return {
    version: 'test',
    command: ['python', 'train.py'],
    runDir: '/runs/x',
    startedAtMs: 0,
    endedAtMs: 5000,
    exit: { code: 0, signal: null },
    forwardedSignal: null,
    records,
    skippedLines: 0,
    traces: [],
    snapshots: [],
    gpuSamples: null,
    gpuUnavailableReason: 'no GPU in the test',
    notes: [],
    ...over,
  };
}
