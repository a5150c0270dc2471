/**
 * The koffi NVML binding against a fake libnvidia-ml (test/fixtures/telemetry/fake-nvml.c), built with
 * the system C compiler; skipped where there is none. Checks struct layouts, version words, the
 * INSUFFICIENT_SIZE protocol, N/A markers, PCIe counter differencing and GPU_IS_LOST handling.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NvmlSource, NvmlUnavailable } from '../../src/live/nvml.js';
import { MIB } from '../../src/telemetry/sample.js';
import { fixturePath } from './fixtures.js';
import { cleanScratch, makeScratch } from './scratch.js';

afterAll(cleanScratch);

let lib: string | null = null;
beforeAll(() => {
  const out = join(makeScratch('nvml'), 'libfake-nvml.so');
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-o', out, fixturePath('fake-nvml.c')], { stdio: 'pipe' });
    lib = out;
  } catch {
    lib = null;
  }
});

const opened: NvmlSource[] = [];
afterEach(() => {
  for (const s of opened.splice(0)) s.close();
  delete process.env.FAKE_NVML_LOSE_GPU1_AFTER;
  delete process.env.FAKE_NVML_NO_DRIVER;
});

function open(slowIntervalMs = 0): NvmlSource {
  const s = NvmlSource.open({ libraryPath: lib!, slowIntervalMs });
  opened.push(s);
  return s;
}

describe('NVML through koffi (fake driver)', () => {
  it('reads identity, memory v2, utilisation, power, clocks and reasons', ({ skip }) => {
    if (!lib) skip();
    const snap = open().sample();
    expect(snap.source).toBe('nvml');
    expect(snap.driverVersion).toBe('999.1.2');
    expect(snap.cudaVersion).toBe('13.0');
    const [g0, g1] = snap.gpus;
    expect(g0).toMatchObject({
      index: 0,
      uuid: 'GPU-fake-0',
      name: 'Fake H200',
      pciBusId: '00000000:00:06.0',
      memoryTotalBytes: 143771 * MIB,
      memoryReservedBytes: 616 * MIB,
      memoryUsedBytes: 1000 * MIB,
      memoryFreeBytes: (143771 - 616 - 1000) * MIB,
      utilizationGpuPercent: 50,
      powerWatts: 300.5,
      powerLimitWatts: 700,
      temperatureC: 40, // through the pre-13 nvmlDeviceGetTemperature fallback
      memoryTemperatureC: 43,
      smClockMhz: 1500,
      memoryClockMhz: 3201,
      smClockMaxMhz: 1980,
      clocksEventReasons: ['sw_power_cap'],
      pcieLinkGen: 5,
      eccErrorsCorrectedVolatile: 3,
      eccErrorsUncorrectedVolatile: 0,
      migMode: 'disabled',
      performanceState: 'P0',
    });
    expect(g0!.fanPercent).toBeNull(); // NOT_SUPPORTED is "not available", not 0
    expect(g1!.memoryUsedBytes).toBe(2000 * MIB);
  });

  it('lists 20 processes through the INSUFFICIENT_SIZE retry, with per-process utilisation', ({ skip }) => {
    if (!lib) skip();
    const [g0, g1] = open().sample().gpus;
    expect(g0!.processes.map((p) => p.pid)).toEqual(Array.from({ length: 20 }, (_, i) => 1000 + i));
    expect(g0!.processes[4]!.usedMemoryBytes).toBe(5 * MIB);
    expect(g0!.processes[0]).toMatchObject({ type: 'C', smUtilPercent: 97, memUtilPercent: 40 }); // newest of two samples
    expect(g0!.processes[1]!.smUtilPercent).toBeNull(); // 250 % is a driver glitch
    expect(g0!.processes[2]!.smUtilPercent).toBe(0); // no sample in the last second: idle
    // ULLONG_MAX = N/A. A sole process gets the GPU's own utilisation (no per-process call).
    expect(g1!.utilizationGpuPercent).not.toBeNull();
    expect(g1!.processes).toEqual([
      expect.objectContaining({ pid: 1100, usedMemoryBytes: null, smUtilPercent: g1!.utilizationGpuPercent, memUtilPercent: g1!.utilizationMemoryPercent }),
    ]);
  });

  it('differences the PCIe byte counters over their own timestamps', ({ skip }) => {
    if (!lib) skip();
    const src = open();
    expect(src.sample().gpus[0]!.pcieTxBytesPerSecond).toBeNull(); // one reading: no rate yet
    const g = src.sample().gpus[0]!;
    // The fake advances 2 MB (tx) and 5 MB (rx) per call and 1 s per call, shared by both GPUs: 2 calls apart.
    expect(g.pcieTxBytesPerSecond).toBe(2_000_000);
    expect(g.pcieRxBytesPerSecond).toBe(5_000_000);
  });

  it('reads slow figures only once per slow interval', ({ skip }) => {
    if (!lib) skip();
    const src = open(60_000);
    src.sample();
    const g = src.sample().gpus[0]!;
    expect(g.pcieTxBytesPerSecond).toBeNull(); // counters not read again within the interval
    expect(g.powerLimitWatts).toBe(700); // cached slow figure still reported
  });

  it('marks a GPU that falls off the bus as lost and keeps sampling the others', ({ skip }) => {
    if (!lib) skip();
    process.env.FAKE_NVML_LOSE_GPU1_AFTER = '2';
    const src = open();
    expect(src.sample().gpus[1]!.lost).toBe(false);
    expect(src.sample().gpus[1]!.lost).toBe(false);
    const s = src.sample();
    expect(s.gpus[1]).toMatchObject({ lost: true, uuid: 'GPU-fake-1', memoryUsedBytes: null, utilizationGpuPercent: null, processes: [] });
    expect(s.gpus[0]!.utilizationGpuPercent).toBe(50);
    expect(s.notes.join(' ')).toMatch(/GPU 1 .* is lost/);
    expect(src.sample().gpus[1]!.lost).toBe(true);
  });

  it('reports a missing driver or library as NvmlUnavailable', ({ skip }) => {
    if (!lib) skip();
    process.env.FAKE_NVML_NO_DRIVER = '1';
    expect(() => NvmlSource.open({ libraryPath: lib! })).toThrow(/nvmlInit failed: Driver Not Loaded/);
    expect(() => NvmlSource.open({ libraryPath: '/nonexistent/libnvidia-ml.so.1' })).toThrow(NvmlUnavailable);
  });
});
