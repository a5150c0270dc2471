import { describe, expect, it } from 'vitest';
import { MIB, TelemetryParseError } from '../../src/telemetry/sample.js';
import { attachApps, isAppsCsv, parseAppsCsv, parseGpuCsv } from '../../src/telemetry/smiCsv.js';
import { decodeClockEventReasons, parseQuantity } from '../../src/telemetry/smiValues.js';
import { parseSmiXml } from '../../src/telemetry/smiXml.js';
import { parseXml } from '../../src/telemetry/xml.js';
import { fixture } from './fixtures.js';

describe('nvidia-smi -q -x', () => {
  it('reads the busy H200 file', () => {
    const s = parseSmiXml(fixture('nvidia-smi-q.busy.xml.gz'));
    expect(s.driverVersion).toBe('580.159.04');
    expect(s.cudaVersion).toBe('13.0');
    expect(s.gpus).toHaveLength(2);
    const g = s.gpus[0]!;
    expect(g.uuid).toBe('GPU-0f176bdc-3405-3276-cdfa-544f010a401d');
    expect(g.name).toBe('NVIDIA H200');
    expect(g.pciBusId).toBe('00000000:00:06.0');
    expect(g.memoryTotalBytes).toBe(143771 * MIB);
    expect(g.memoryReservedBytes).toBe(616 * MIB);
    expect(g.memoryUsedBytes).toBe(6735 * MIB);
    expect(g.memoryFreeBytes).toBe(136422 * MIB);
    expect(g.utilizationGpuPercent).toBe(100);
    expect(g.utilizationMemoryPercent).toBe(24);
    expect(g.powerWatts).toBeCloseTo(687.91);
    expect(g.powerLimitWatts).toBe(700);
    expect(g.temperatureC).toBe(57);
    expect(g.memoryTemperatureC).toBe(43);
    expect(g.fanPercent).toBeNull(); // N/A on a passively cooled H200: not 0
    expect(g.performanceState).toBe('P0');
    expect(g.smClockMhz).toBe(1500);
    expect(g.memoryClockMhz).toBe(3201);
    expect(g.smClockMaxMhz).toBe(1980);
    expect(g.clocksEventReasons).toEqual(['sw_power_cap']);
    expect(g.pcieLinkGen).toBe(5);
    expect(g.pcieLinkWidth).toBe(16);
    expect(g.pcieTxBytesPerSecond).toBe(7738 * 1024);
    expect(g.eccErrorsUncorrectedVolatile).toBe(0);
    expect(g.eccErrorsCorrectedVolatile).toBe(0);
    expect(g.migMode).toBe('disabled');
    expect(g.computeMode).toBe('Default');
    expect(g.processes).toEqual([
      expect.objectContaining({ pid: 620, type: 'C', name: 'python3', usedMemoryBytes: 6726 * MIB, gpuIndex: 0 }),
    ]);
    expect(s.gpus[1]!.processes[0]!.pid).toBe(621);
    expect(s.gpus[1]!.index).toBe(1);
  });

  it('reads the idle file: no processes, zero use is 0 not null', () => {
    const s = parseSmiXml(fixture('nvidia-smi-q.idle.xml.gz'));
    for (const g of s.gpus) {
      expect(g.processes).toEqual([]);
      expect(g.memoryUsedBytes).toBe(0);
      expect(g.utilizationGpuPercent).toBe(0);
    }
  });

  it('rejects truncated and foreign XML with a line number', () => {
    const xml = fixture('nvidia-smi-q.busy.xml.gz');
    expect(() => parseSmiXml(xml.slice(0, xml.indexOf('<fb_memory_usage>')))).toThrow(/<gpu> is never closed/);
    expect(() => parseSmiXml(xml.slice(0, 5000))).toThrow(/malformed XML at line \d+/);
    expect(() => parseSmiXml('<a><b></a>')).toThrow(/<\/a> closes <b>/);
    expect(() => parseSmiXml('<other/>')).toThrow(/not nvidia-smi/);
    expect(() => parseSmiXml('')).toThrow(TelemetryParseError);
  });

  it('decodes entities and attributes', () => {
    const el = parseXml('<r a="x &amp; y"><c>1 &lt; 2</c><d/></r>');
    expect(el.attrs.a).toBe('x & y');
    expect(el.children.map((c) => [c.name, c.text])).toEqual([
      ['c', '1 < 2'],
      ['d', ''],
    ]);
  });
});

describe('--query-gpu CSV', () => {
  it('reads the header+units file and agrees with the XML taken on the same host', () => {
    const csv = parseGpuCsv(fixture('query-gpu.busy.csv'));
    const xml = parseSmiXml(fixture('nvidia-smi-q.busy.xml.gz'));
    expect(csv.driverVersion).toBe('580.159.04');
    expect(csv.gpus.map((g) => g.uuid)).toEqual(xml.gpus.map((g) => g.uuid));
    expect(csv.gpus.map((g) => g.memoryTotalBytes)).toEqual(xml.gpus.map((g) => g.memoryTotalBytes));
    const g = csv.gpus[1]!;
    expect(g.index).toBe(1);
    expect(g.memoryUsedBytes).toBe(8641 * MIB);
    expect(g.powerWatts).toBeCloseTo(691.47);
    expect(g.powerLimitWatts).toBe(700);
    expect(g.smClockMhz).toBe(1455);
    expect(g.migMode).toBe('disabled');
    expect(g.fanPercent).toBeNull(); // column absent: not available, not 0
  });

  it('reads the noheader,nounits file with the same values', () => {
    const a = parseGpuCsv(fixture('query-gpu.busy.noheader.csv'));
    const b = parseGpuCsv(fixture('query-gpu.busy.csv'));
    expect(a.gpus.map((g) => [g.uuid, g.memoryUsedBytes, g.memoryReservedBytes, g.utilizationGpuPercent])).toEqual(
      b.gpus.map((g) => [g.uuid, g.memoryUsedBytes, g.memoryReservedBytes, g.utilizationGpuPercent]),
    );
  });

  it('keeps N/A apart from 0 and rejects bad rows', () => {
    const s = parseGpuCsv('index, uuid, memory.used [MiB], utilization.gpu [%]\n0, GPU-a, [N/A], 0 %\n');
    expect(s.gpus[0]!.memoryUsedBytes).toBeNull();
    expect(s.gpus[0]!.utilizationGpuPercent).toBe(0);
    expect(() => parseGpuCsv('index, uuid, memory.used [MiB]\n0, GPU-a\n')).toThrow(/2 cells, the header has 3/);
    expect(() => parseGpuCsv('index, memory.used [MiB]\n0, lots\n')).toThrow(/'lots' is not a number/);
    expect(() => parseGpuCsv('')).toThrow(/empty/);
    expect(() => parseGpuCsv(`${Array(40).fill('1').join(', ')}\n`)).toThrow(/no header and 40 columns/);
  });

  it('reads compute apps and attaches them to GPUs by UUID', () => {
    const text = fixture('query-compute-apps.busy.csv');
    expect(isAppsCsv(text)).toBe(true);
    expect(isAppsCsv(fixture('query-gpu.busy.csv'))).toBe(false);
    const s = attachApps(parseGpuCsv(fixture('query-gpu.busy.csv')), parseAppsCsv(text));
    expect(s.gpus.map((g) => g.processes.map((p) => [p.pid, p.usedMemoryBytes, p.name]))).toEqual([
      [[620, 6726 * MIB, 'python3']],
      [[621, 8632 * MIB, 'python3']],
    ]);
  });

  it('folds commas in process names back', () => {
    const rows = parseAppsCsv('pid, process_name, used_gpu_memory [MiB], gpu_uuid\n7, python train.py --a=1,2, 100 MiB, GPU-x\n');
    expect(rows[0]!.process.name).toBe('python train.py --a=1,2');
    expect(rows[0]!.process.usedMemoryBytes).toBe(100 * MIB);
  });
});

describe('values', () => {
  it('parses quantities and N/A', () => {
    expect(parseQuantity('6726 MiB')).toBe(6726 * MIB);
    expect(parseQuantity('16x')).toBe(16);
    expect(parseQuantity('[Not Supported]')).toBeNull();
    expect(parseQuantity('[GPU requires reset]')).toBeNull(); // any bracketed text is nvidia-smi's "no value"
    expect(parseQuantity('abc')).toBeUndefined();
    expect(decodeClockEventReasons(0x5n)).toEqual(['gpu_idle', 'sw_power_cap']);
    expect(decodeClockEventReasons(0x10000n)).toEqual(['0x10000']);
  });
});
