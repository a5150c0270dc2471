import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveCudaVisibleDevices } from '../../src/telemetry/cudaVisible.js';
import { fitFrame, History, renderMonitor, renderNoGpu, sortProcesses } from '../../src/telemetry/monitorView.js';
import { cpuPercent, parseCmdline, parseJobEnv, parsePasswd, parseProcStat, parseProcStatus } from '../../src/telemetry/procParse.js';
import { escapeLabelValue, renderExposition } from '../../src/telemetry/prometheus.js';
import { summarizeRecording } from '../../src/telemetry/recordSummary.js';
import { renderSmi, sparkline, table, textWidth } from '../../src/telemetry/render.js';
import { emptyGpu, emptyProcess, MIB, type Snapshot, TelemetryParseError } from '../../src/telemetry/sample.js';
import { BUSY_PERCENT, IDLE_PERCENT, selectGpus, visibleDevicesValue } from '../../src/telemetry/select.js';
import { attachApps, parseAppsCsv, parseGpuCsv } from '../../src/telemetry/smiCsv.js';
import { parseSmiXml } from '../../src/telemetry/smiXml.js';
import { fixture } from './fixtures.js';

const busy = (): Snapshot => attachApps(parseGpuCsv(fixture('query-gpu.busy.csv')), parseAppsCsv(fixture('query-compute-apps.busy.csv')));

describe('select', () => {
  const gpus = () => {
    const s = busy().gpus; // GPU 0: 136422 MiB free, GPU 1: 134516 MiB free, both 100 %
    const idle = parseGpuCsv(fixture('query-gpu.idle.csv')).gpus.map((g) => ({ ...g, index: g.index + 2 }));
    return [...s, ...idle];
  };
  it('prefers the most free memory, then the least busy', () => {
    const sel = selectGpus(gpus(), { count: 2, minFreeBytes: null, maxUtilPercent: null, candidates: null });
    expect(sel.chosen.map((g) => g.index)).toEqual([2, 3]);
    expect(visibleDevicesValue(sel.chosen, 'index')).toBe('2,3');
  });
  it('applies --min-free and --max-util and says why GPUs were rejected', () => {
    const sel = selectGpus(gpus(), { count: 3, minFreeBytes: 140_000 * MIB, maxUtilPercent: 10, candidates: null });
    expect(sel.satisfied).toBe(false);
    expect(sel.chosen.map((g) => g.index)).toEqual([2, 3]);
    expect(sel.rejected.map((r) => [r.gpu.index, r.reason])).toEqual([
      [0, 'too little free memory'],
      [1, 'too little free memory'],
    ]);
  });
  it('never picks lost GPUs or GPUs outside the candidates; unknown figures only matter when limited', () => {
    const list = gpus();
    list[2]!.lost = true;
    list[3]!.utilizationGpuPercent = null;
    const sel = selectGpus(list, { count: 4, minFreeBytes: null, maxUtilPercent: 50, candidates: new Set([0, 2, 3]) });
    expect(sel.chosen).toEqual([]);
    expect(sel.rejected.map((r) => r.reason)).toEqual([
      'too busy',
      'not in CUDA_VISIBLE_DEVICES',
      'lost (fell off the bus)',
      'utilisation not available',
    ]);
    expect(selectGpus(list, { count: 1, minFreeBytes: null, maxUtilPercent: null, candidates: null }).chosen[0]!.index).toBe(3);
  });
  it('a GPU at or near 100% is not free: busy GPUs are left out unless --max-util takes them, and an idle GPU ranks before a busier one with more free memory (issue 47 item 7)', () => {
    // The shipped H200 host under load: both GPUs at 100 %, GPU 0 with the most free memory.
    const loaded = busy().gpus;
    const none = selectGpus(loaded, { count: 1, minFreeBytes: null, maxUtilPercent: null, candidates: null });
    expect(none.chosen).toEqual([]);
    expect(none.satisfied).toBe(false);
    expect(none.rejected.map((r) => [r.gpu.index, r.reason])).toEqual([
      [0, 'busy (100% utilisation; --max-util 100 accepts it)'],
      [1, 'busy (100% utilisation; --max-util 100 accepts it)'],
    ]);
    // Asked for, a busy GPU is taken (the user's limit rules).
    expect(selectGpus(loaded, { count: 1, minFreeBytes: null, maxUtilPercent: 100, candidates: null }).chosen.map((g) => g.index)).toEqual([0]);
    // GPU 0 of the loaded host beside an idle GPU with less free memory (the idle host's GPU 1, 20 GiB in use).
    const idle = { ...parseGpuCsv(fixture('query-gpu.idle.csv')).gpus[1]!, index: 1 };
    idle.memoryFreeBytes = idle.memoryFreeBytes! - 20 * 1024 * MIB;
    const half = { ...loaded[1]!, index: 2, utilizationGpuPercent: 60, memoryFreeBytes: loaded[0]!.memoryFreeBytes };
    expect(idle.memoryFreeBytes).toBeLessThan(loaded[0]!.memoryFreeBytes!);
    const mixed = [loaded[0]!, idle, half];
    expect(selectGpus(mixed, { count: 3, minFreeBytes: null, maxUtilPercent: 100, candidates: null }).chosen.map((g) => g.index)).toEqual([1, 2, 0]);
    expect(selectGpus(mixed, { count: 1, minFreeBytes: null, maxUtilPercent: null, candidates: null }).chosen.map((g) => g.index)).toEqual([1]);
  });
  it('prints uuids in index order', () => {
    const s = busy().gpus;
    expect(visibleDevicesValue([s[1]!, s[0]!], 'uuid')).toBe(`${s[0]!.uuid},${s[1]!.uuid}`);
  });
  it('property: chosen are qualified, distinct, at most count, never busy, idle first and best-first by free memory', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ free: fc.option(fc.nat(1000)), util: fc.option(fc.nat(100)), lost: fc.boolean() }), { maxLength: 8 }),
        fc.integer({ min: 1, max: 8 }),
        fc.option(fc.nat(1000)),
        (specs, count, minFree) => {
          const list = specs.map((sp, i) => ({
            ...emptyGpu(i, `GPU-${i}`, 'x'),
            memoryFreeBytes: sp.free,
            utilizationGpuPercent: sp.util,
            lost: sp.lost,
          }));
          const sel = selectGpus(list, { count, minFreeBytes: minFree, maxUtilPercent: null, candidates: null });
          expect(sel.chosen.length).toBeLessThanOrEqual(count);
          expect(new Set(sel.chosen.map((g) => g.index)).size).toBe(sel.chosen.length);
          for (const g of sel.chosen) {
            expect(g.lost).toBe(false);
            if (minFree !== null) expect(g.memoryFreeBytes!).toBeGreaterThanOrEqual(minFree);
            expect(g.utilizationGpuPercent ?? 0).toBeLessThan(BUSY_PERCENT);
          }
          const idle = (g: (typeof list)[number]) => g.utilizationGpuPercent !== null && g.utilizationGpuPercent <= IDLE_PERCENT;
          for (let i = 1; i < sel.chosen.length; i++) {
            const [a, b] = [sel.chosen[i - 1]!, sel.chosen[i]!];
            expect(Number(idle(a))).toBeGreaterThanOrEqual(Number(idle(b)));
            if (idle(a) === idle(b)) expect(a.memoryFreeBytes ?? -1).toBeGreaterThanOrEqual(b.memoryFreeBytes ?? -1);
          }
          expect(sel.chosen.length + sel.rejected.length).toBeLessThanOrEqual(list.length);
        },
      ),
    );
  });
});

describe('CUDA_VISIBLE_DEVICES', () => {
  const gpus = [0, 1, 2, 3].map((i) => ({ index: i, uuid: `GPU-${i}abc-${i}` }));
  it('maps indices and uuid prefixes to CUDA ordinals', () => {
    expect([...resolveCudaVisibleDevices(undefined, gpus).ordinalOf]).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    expect([...resolveCudaVisibleDevices('2,0', gpus).ordinalOf]).toEqual([
      [2, 0],
      [0, 1],
    ]);
    expect([...resolveCudaVisibleDevices('GPU-3abc, 1', gpus).ordinalOf]).toEqual([
      [3, 0],
      [1, 1],
    ]);
  });
  it('stops at the first invalid or repeated entry, as CUDA does', () => {
    const r = resolveCudaVisibleDevices('1,7,0', gpus);
    expect([...r.ordinalOf]).toEqual([[1, 0]]);
    expect(r.notes[0]).toMatch(/'7' names no GPU/);
    expect([...resolveCudaVisibleDevices('1,1,2', gpus).ordinalOf]).toEqual([[1, 0]]);
    expect(resolveCudaVisibleDevices('', gpus).ordinalOf.size).toBe(0);
    expect(resolveCudaVisibleDevices('MIG-abc', gpus).notes[0]).toMatch(/MIG/);
  });
});

describe('Prometheus exposition', () => {
  it('uses dcgm-exporter names, units and labels on the real busy sample', () => {
    const s = busy();
    s.gpus[0]!.processes[0]!.command = 'python train.py --name "a\\b"';
    s.gpus[0]!.processes[0]!.rank = 0;
    s.gpus[0]!.processes[0]!.worldSize = 2;
    const text = renderExposition(s, 'node1');
    const labels0 =
      'gpu="0",UUID="GPU-0f176bdc-3405-3276-cdfa-544f010a401d",pci_bus_id="00000000:00:06.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node1"';
    expect(text).toContain(`DCGM_FI_DEV_FB_USED{${labels0}} 6735\n`);
    expect(text).toContain(`DCGM_FI_DEV_FB_FREE{${labels0}} 136422\n`);
    expect(text).toContain(`DCGM_FI_DEV_FB_RESERVED{${labels0}} 616\n`);
    expect(text).toContain(`DCGM_FI_DEV_GPU_UTIL{${labels0}} 100\n`);
    expect(text).toContain(`DCGM_FI_DEV_POWER_USAGE{${labels0}} 690.52\n`);
    expect(text).toContain('# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n');
    expect(text).toContain(
      `gpuwise_process_gpu_memory_bytes{${labels0},pid="620",user="",command="python train.py --name \\"a\\\\b\\"",rank="0",local_rank="",world_size="2",slurm_job_id=""} ${6726 * MIB}\n`,
    );
    // Not available is no series at all: the busy CSV has no fan column.
    expect(text).not.toContain('DCGM_FI_DEV_FAN_SPEED');
    expect(text).toContain(`gpuwise_gpu_lost{${labels0}} 0\n`);
  });
  it('is well-formed: every sample line has a HELP and TYPE before it, names and values are valid', () => {
    const text = renderExposition(parseSmiXml(fixture('nvidia-smi-q.busy.xml.gz')), 'h');
    const declared = new Set<string>();
    for (const line of text.trimEnd().split('\n')) {
      if (line.startsWith('# TYPE ')) declared.add(line.split(' ')[2]!);
      else if (!line.startsWith('# HELP ')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (-?[0-9.e+]+|NaN)$/.exec(line);
        expect(m, line).not.toBeNull();
        expect(declared.has(m![1]!)).toBe(true);
      }
    }
  });
  it('marks a lost GPU and leaves out its figures', () => {
    const s = busy();
    s.gpus[1]!.lost = true;
    const text = renderExposition(s, 'h');
    expect(text).toMatch(/gpuwise_gpu_lost\{gpu="1",[^}]*\} 1\n/);
    expect(text).not.toMatch(/DCGM_FI_DEV_GPU_UTIL\{gpu="1"/);
  });
  it('property: escaped label values never contain a raw quote, newline or lone backslash', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const e = escapeLabelValue(s);
        expect(e).not.toMatch(/\n/);
        expect(e.replace(/\\\\|\\"|\\n/g, '')).not.toMatch(/["\\]/);
      }),
    );
  });
});

describe('terminal rendering', () => {
  it('sparklines scale, keep gaps and right-align', () => {
    expect(sparkline([0, 50, 100], 3, 100)).toBe('▁▅█');
    expect(sparkline([null, 100], 4, 100)).toBe('   █');
    expect(sparkline([1, 2, 3, 4, 5], 2, 5)).toBe('▇█');
  });
  it('tables align columns', () => {
    expect(
      table(
        [
          ['a', 'bb'],
          ['ccc', 'd'],
        ],
        [false, true],
      ),
    ).toEqual(['a    bb', 'ccc   d']);
  });
  it('the smi table shows the fixture GPUs, processes and N/A as "-"', () => {
    const text = renderSmi(busy(), 200);
    expect(text).toContain('6.58 GiB / 139.8 GiB');
    expect(text).toMatch(/\n\s+0\s+620\s+-\s+6\.57 GiB/);
  });
  it('shows CUDA ordinals in the smi table only when they differ from the index', () => {
    const s = busy();
    s.source = 'nvml';
    s.gpus[0]!.cudaIndex = null;
    s.gpus[1]!.cudaIndex = 0;
    expect(renderSmi(s, 200)).toMatch(/GPU\s+CUDA\s+Name[^\n]*\n\s+0\s+hidden\s+NVIDIA H200[^\n]*\n\s+1\s+0\s+NVIDIA H200/);
    s.gpus[0]!.cudaIndex = 0;
    s.gpus[1]!.cudaIndex = 1;
    expect(renderSmi(s, 200)).not.toContain('CUDA');
  });
  it('monitor frames fit any terminal size exactly', () => {
    const history = new History();
    const s = busy();
    for (let i = 0; i < 50; i++) history.push(s);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 80 }),
        fc.constantFrom('memory', 'sm', 'cpu', 'pid', 'gpu'),
        (cols, rows, sort) => {
          const lines = renderMonitor({ snapshot: s, history, sort, intervalMs: 100, cols, rows });
          expect(lines).toHaveLength(rows);
          for (const l of lines) expect(textWidth(l)).toBe(cols);
          const nogpu = renderNoGpu('cannot load libnvidia-ml.so.1', cols, rows);
          expect(nogpu).toHaveLength(rows);
        },
      ),
    );
    const wide = renderMonitor({ snapshot: s, history, sort: 'memory', intervalMs: 100, cols: 160, rows: 20 });
    expect(wide.join('\n')).toMatch(/█{10}/); // 100 % utilisation history
    expect(wide.some((l) => l.includes('620'))).toBe(true);
  });
  it('fitFrame pads and clips', () => {
    expect(fitFrame(['abcdef'], 3, 2)).toEqual(['ab…', '   ']);
  });
  it('sorts processes', () => {
    const ps = [
      { ...emptyProcess(3, 0), usedMemoryBytes: 10, cpuPercent: 5 },
      { ...emptyProcess(1, 1), usedMemoryBytes: 30, cpuPercent: null },
      { ...emptyProcess(2, 0), usedMemoryBytes: null, cpuPercent: 50 },
    ];
    expect(sortProcesses(ps, 'memory').map((p) => p.pid)).toEqual([1, 3, 2]);
    expect(sortProcesses(ps, 'cpu').map((p) => p.pid)).toEqual([2, 3, 1]);
    expect(sortProcesses(ps, 'pid').map((p) => p.pid)).toEqual([1, 2, 3]);
  });
});

describe('/proc parsing', () => {
  it('reads stat with spaces and parentheses in the name', () => {
    const stat = '1234 (pt_main (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 999 1000 100 18446744073709551615';
    expect(parseProcStat(stat)).toEqual({ comm: 'pt_main (x) y', cpuTicks: 300, rssPages: 100 });
    expect(parseProcStat('garbage')).toBeNull();
  });
  it('reads stat fields exactly as splitting the text after the name on white space would', () => {
    // The per-sample parser walks to fields 14, 15 and 24 instead of splitting; this is the reading it replaced.
    const bySplit = (text: string) => {
      const close = text.lastIndexOf(')');
      if (text.indexOf('(') < 0 || close < text.indexOf('(')) return null;
      const f = text
        .slice(close + 2)
        .trim()
        .split(/\s+/);
      const [utime, stime, rss] = [Number(f[11]), Number(f[12]), Number(f[21])];
      if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
      return { comm: text.slice(text.indexOf('(') + 1, close), cpuTicks: utime + stime, rssPages: Number.isFinite(rss) ? rss : 0 };
    };
    const token = fc.oneof(fc.nat().map(String), fc.constantFrom('S', '-1', '1e3', '0x1f', 'x', ''));
    const space = fc.constantFrom(' ', '  ', '\t', '\n', '\u00a0', '\u2003', '\ufeff');
    const tail = fc
      .array(fc.tuple(token, space), { minLength: 10, maxLength: 30, size: 'max' })
      .map((ts) => ts.map(([t, sp]) => t + sp).join(''));
    fc.assert(
      fc.property(fc.string({ maxLength: 8 }), tail, fc.constantFrom(' ', '', '  ', ')'), (comm, rest, gap) => {
        const text = `42 (${comm})${gap}${rest}`;
        expect(parseProcStat(text)).toEqual(bySplit(text));
      }),
      { numRuns: 2000 },
    );
  });
  it('reads status, cmdline, environ and passwd', () => {
    expect(parseProcStatus('Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nVmRSS:\t  2048 kB\nNSpid:\t4242\t7\n')).toEqual({
      uid: 1000,
      rssBytes: 2048 * 1024,
      nsPid: 7,
    });
    expect(parseCmdline('torchrun\0--nproc-per-node=2\0train.py\0')).toBe('torchrun --nproc-per-node=2 train.py');
    expect(parseCmdline('')).toBeNull();
    expect(parseJobEnv('PATH=/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0SLURM_JOB_ID=778\0')).toEqual({
      rank: 3,
      localRank: 1,
      worldSize: 8,
      slurmJobId: '778',
    });
    expect(parseJobEnv('SLURM_PROCID=5\0SLURM_NTASKS=16\0').rank).toBe(5);
    expect(parseJobEnv('HOME=/root\0')).toEqual({ rank: null, localRank: null, worldSize: null, slurmJobId: null });
    expect(parsePasswd('root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n').get(1000)).toBe('alice');
    expect(cpuPercent(100, 0, 150, 1000)).toBe(50);
    expect(cpuPercent(100, 0, 90, 1000)).toBeNull();
  });
});

describe('recording summary', () => {
  it('averages only available figures and counts lost samples', () => {
    const a = busy();
    const b = busy();
    b.gpus[0]!.utilizationGpuPercent = null;
    b.gpus[1]!.lost = true;
    b.gpus[1]!.utilizationGpuPercent = 20;
    const [g0, g1] = summarizeRecording([a, b]);
    expect(g0!.utilizationGpuMeanPercent).toBe(100);
    expect(g0!.samples).toBe(2);
    expect(g1!.lostSamples).toBe(1);
    expect(g1!.utilizationGpuMeanPercent).toBe(60);
    expect(g1!.memoryUsedMaxBytes).toBe(8641 * MIB);
  });
});

describe('parsers never fail unclearly', () => {
  it('property: random text gives a snapshot or a TelemetryParseError', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        for (const parse of [parseGpuCsv, parseSmiXml, parseAppsCsv]) {
          try {
            parse(text);
          } catch (e) {
            expect(e).toBeInstanceOf(TelemetryParseError);
          }
        }
      }),
    );
  });
  it('property: mangled real XML gives a snapshot or a TelemetryParseError', () => {
    const xml = fixture('nvidia-smi-q.busy.xml.gz');
    fc.assert(
      fc.property(fc.nat(xml.length - 1), fc.nat(200), fc.string({ maxLength: 5 }), (at, del, ins) => {
        try {
          parseSmiXml(xml.slice(0, at) + ins + xml.slice(at + del));
        } catch (e) {
          expect(e).toBeInstanceOf(TelemetryParseError);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('NVML struct decoding', () => {
  it('reads a u64 as the number Number(BigInt) gives, and the not-available marker as null', async () => {
    const { readU64 } = await import('../../src/telemetry/nvmlStructs.js');
    const v = new DataView(new ArrayBuffer(8));
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 2n }), (x) => {
        v.setBigUint64(0, x, true);
        expect(readU64(v, 0)).toBe(Number(x));
      }),
      { numRuns: 2000 },
    );
    v.setBigUint64(0, 2n ** 64n - 1n, true);
    expect(readU64(v, 0)).toBeNull();
  });
  it('decodes only the process entries the buffer holds', async () => {
    const { decodeProcessInfos, processInfoCount } = await import('../../src/telemetry/nvmlStructs.js');
    const v = new DataView(new ArrayBuffer(24 * 2 + 20)); // two whole 24-byte entries, then pid and memory of a third
    for (const [i, pid] of [7, 8, 9].entries()) v.setUint32(i * 24, pid, true);
    expect(processInfoCount(v, 5, 24)).toBe(3);
    expect(processInfoCount(v, 5, 32)).toBe(2);
    expect(processInfoCount(v, -1, 24)).toBe(0);
    expect(decodeProcessInfos(v, 5, 24).map((p) => p.pid)).toEqual([7, 8, 9]);
  });
  it('decodes memory v2, field values and falls back to the other process-info layout when pids are impossible', async () => {
    const { decodeMemoryV2, decodeFieldValues, decodeProcessInfosChecked, MEMORY_V2_VERSION, counterRate } = await import(
      '../../src/telemetry/nvmlStructs.js'
    );
    expect(MEMORY_V2_VERSION).toBe(0x02000028);
    const m = new DataView(new ArrayBuffer(40));
    m.setBigUint64(8, 150754820096n, true);
    m.setBigUint64(16, 644939776n, true);
    m.setBigUint64(24, 143047852032n, true);
    m.setBigUint64(32, 0xffffffffffffffffn, true);
    // Values nvml-from-node.busy.txt read on the H200 host; used = NVML_VALUE_NOT_AVAILABLE here.
    expect(decodeMemoryV2(m)).toEqual({ totalBytes: 150754820096, reservedBytes: 644939776, freeBytes: 143047852032, usedBytes: null });
    const fv = new DataView(new ArrayBuffer(80));
    fv.setUint32(0, 197, true);
    fv.setBigInt64(8, 5_000_000n, true);
    fv.setInt32(24, 3, true);
    fv.setBigUint64(32, 123456789n, true);
    fv.setUint32(40, 82, true);
    fv.setInt32(64, 1, true);
    fv.setInt32(68, 3, true); // NOT_SUPPORTED
    expect(decodeFieldValues(fv, 2)).toEqual([
      { fieldId: 197, timestampUs: 5_000_000, nvmlReturn: 0, value: 123456789 },
      { fieldId: 82, timestampUs: 0, nvmlReturn: 3, value: null },
    ]);
    expect(counterRate({ value: 100, timeUs: 0 }, 2100, 1_000_000)).toBe(2000);
    expect(counterRate({ value: 100, timeUs: 0 }, 50, 1_000_000)).toBeNull(); // wrapped
    // Three processes written with the 32-byte layout, read by a caller that expected 24.
    const buf = new DataView(new ArrayBuffer(32 * 3));
    [620, 621, 700].forEach((pid, i) => {
      buf.setUint32(i * 32, pid, true);
      buf.setBigUint64(i * 32 + 8, BigInt((i + 1) * 2 ** 20), true);
    });
    const got = decodeProcessInfosChecked(buf, 3, 24);
    expect(got.structSize).toBe(32);
    expect(got.processes.map((p) => [p.pid, p.usedMemoryBytes])).toEqual([
      [620, 2 ** 20],
      [621, 2 * 2 ** 20],
      [700, 3 * 2 ** 20],
    ]);
  });
});

describe('LiveSampler', () => {
  it('works CUDA ordinals out again when the GPUs change between samples', async () => {
    const { LiveSampler } = await import('../../src/live/sampler.js');
    const snap = (gpus: [number, string][]): Snapshot => ({
      schemaVersion: 1,
      source: 'nvml',
      timestampMs: 0,
      hostname: null,
      driverVersion: null,
      cudaVersion: null,
      gpus: gpus.map(([i, uuid]) => emptyGpu(i, uuid, 'x')),
      notes: [],
    });
    const shown = [
      snap([
        [0, 'GPU-a'],
        [1, 'GPU-b'],
      ]),
      snap([
        [0, 'GPU-a'],
        [1, 'GPU-b'],
      ]),
      snap([
        [0, 'GPU-a'],
        [1, 'GPU-c'],
      ]),
      snap([[0, 'GPU-a']]),
    ];
    let next = 0;
    const sampler = new LiveSampler(
      { kind: 'nvml', sample: () => shown[next++]!, close: () => undefined },
      { procfs: false, cudaVisibleDevices: 'GPU-b' },
    );
    const ordinals = async () => {
      const s = await sampler.sample();
      return { cuda: s.gpus.map((g) => g.cudaIndex), notes: s.notes.length };
    };
    expect(await ordinals()).toEqual({ cuda: [null, 0], notes: 0 });
    expect(await ordinals()).toEqual({ cuda: [null, 0], notes: 0 });
    // Another board in slot 1 (same index, new uuid): CUDA_VISIBLE_DEVICES=GPU-b names nothing now.
    expect(await ordinals()).toEqual({ cuda: [null, null], notes: 1 });
    expect(await ordinals()).toEqual({ cuda: [null], notes: 1 });
  });
});
