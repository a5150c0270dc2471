/**
 * The plain `nvidia-smi` table (what bug reports usually paste) into the sample model. It carries less
 * than `-q -x` XML: per GPU the name, bus id, persistence, fan, temperature, performance state, power
 * and its cap, memory used and total, GPU-Util, compute and MIG mode, volatile uncorrected ECC; per
 * process the GPU, PID, type, name and memory. No UUIDs (they are made up from the bus id), clocks,
 * PCIe or memory utilisation: those stay null. Table layouts of drivers 450 to 580 are read (cells
 * are split on `|`, so column widths do not matter). Pure.
 */
import { emptyGpu, emptyProcess, type GpuSample, type ProcessSample, SNAPSHOT_SCHEMA_VERSION, type Snapshot, TelemetryParseError } from './sample.js';
import { isNotAvailable, parseQuantity } from './smiValues.js';

/** Whether the text looks like the plain table (its header line and box rules). */
export function isSmiTable(text: string): boolean {
  return /\|\s*NVIDIA-SMI\s+\S+/.test(text) && /^\+[-=+]+\+\s*$/m.test(text);
}

const GPU_FIRST = /^\s*(\d+)\s+(.*?)\s+(On|Off)\s*$/;
const GPU_SECOND = /^\s*(\S+)\s+(\S+)\s+(P\d+|\S+)\s+(\S+)\s*\/\s*(\S+)\s*$/;
const PROCESS = /^\s*(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|C|G)\s+(.*?)\s+(\d+\s*MiB|N\/A)\s*$/;

function cells(line: string): string[] | null {
  const t = line.trimEnd();
  if (!t.startsWith('|') || !t.endsWith('|')) return null;
  return t.slice(1, -1).split('|');
}

function num(text: string, unit: string): number | null {
  const v = parseQuantity(text, unit);
  return v === undefined ? null : v;
}

export function parseSmiTable(text: string): Snapshot {
  const lines = text.split(/\r?\n/);
  const gpus: GpuSample[] = [];
  const processes: ProcessSample[] = [];
  const notes: string[] = ['read from the plain nvidia-smi table: no UUIDs, clocks, PCIe or memory utilisation (nvidia-smi -q -x has them)'];
  let driverVersion: string | null = null;
  let cudaVersion: string | null = null;
  let seenTime = false;
  let section: 'gpus' | 'processes' | 'mig' | 'other' = 'other';
  let pending: GpuSample | null = null;
  let lineInBlock = 0;
  for (const line of lines) {
    const head = /NVIDIA-SMI\s+(\S+)\s+Driver Version:\s+(\S+)(?:\s+CUDA Version:\s+(\S+))?/.exec(line);
    if (head) {
      driverVersion = head[2]!;
      cudaVersion = head[3] ?? null;
      continue;
    }
    if (!seenTime && /^\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4}\s*$/.test(line.trim())) {
      // Host-local time without a zone: kept as text (as for the XML), timestampMs stays null.
      notes.push(`taken at ${line.trim()} (host-local time)`);
      seenTime = true;
      continue;
    }
    if (/^\|\s*Processes:/.test(line)) {
      section = 'processes';
      continue;
    }
    if (/^\|\s*MIG devices:/.test(line)) {
      section = 'mig';
      notes.push('MIG devices are listed in the table but not read: use nvidia-smi -q -x for them');
      continue;
    }
    if (/^\|\s*GPU\s+Name\b/.test(line)) {
      section = 'gpus';
      continue;
    }
    if (/^\+[-+]+\+\s*$/.test(line.trim())) {
      // A rule between GPU blocks (or the end of a table): the next row starts a GPU.
      lineInBlock = 0;
      continue;
    }
    if (/^\|=+/.test(line)) {
      lineInBlock = 0;
      continue;
    }
    const c = cells(line);
    if (c === null) continue;
    if (section === 'gpus' && c.length >= 3) {
      if (lineInBlock === 0) {
        const m = GPU_FIRST.exec(c[0]!);
        if (!m) continue;
        const busCell = c[1]!.trim().split(/\s+/);
        pending = emptyGpu(Number(m[1]), '', m[2]!.trim());
        pending.pciBusId = busCell[0] ?? null;
        pending.uuid = `table-${pending.pciBusId ?? m[1]}`;
        pending.eccErrorsUncorrectedVolatile = isNotAvailable(c[2]) || /off/i.test(c[2]!) ? null : num(c[2]!.trim(), '');
        gpus.push(pending);
        lineInBlock = 1;
      } else if (lineInBlock === 1 && pending !== null) {
        const m = GPU_SECOND.exec(c[0]!);
        if (m) {
          pending.fanPercent = num(m[1]!, '%');
          pending.temperatureC = num(m[2]!.replace(/C$/, ''), 'C');
          pending.performanceState = isNotAvailable(m[3]) ? null : m[3]!;
          pending.powerWatts = num(m[4]!, 'W');
          pending.powerLimitWatts = num(m[5]!, 'W');
        }
        const mem = /(\d+)\s*MiB\s*\/\s*(\d+)\s*MiB/.exec(c[1]!);
        if (mem) {
          pending.memoryUsedBytes = num(`${mem[1]}MiB`, 'MiB');
          pending.memoryTotalBytes = num(`${mem[2]}MiB`, 'MiB');
          pending.memoryFreeBytes = pending.memoryTotalBytes! - pending.memoryUsedBytes!;
        }
        const util = /^\s*(\S+)\s+(.*?)\s*$/.exec(c[2]!);
        if (util) {
          pending.utilizationGpuPercent = num(util[1]!, '%');
          pending.computeMode = util[2]!.trim() || null;
        }
        lineInBlock = 2;
      } else if (lineInBlock === 2 && pending !== null) {
        const mig = c[2]!.trim();
        if (/^(Enabled|Disabled)$/i.test(mig)) pending.migMode = mig.toLowerCase() as 'enabled' | 'disabled';
        lineInBlock = 3;
      }
      continue;
    }
    if (section === 'processes' && c.length === 1) {
      const m = PROCESS.exec(c[0]!);
      if (!m) continue;
      const p = emptyProcess(Number(m[4]), Number(m[1]));
      p.type = m[5] as ProcessSample['type'];
      p.name = m[6]!.trim() || null;
      p.usedMemoryBytes = m[7] === 'N/A' ? null : num(m[7]!.replace(/\s+/g, ''), 'MiB');
      processes.push(p);
    }
  }
  if (gpus.length === 0) throw new TelemetryParseError('an nvidia-smi table without a GPU row that can be read');
  for (const p of processes) gpus.find((g) => g.index === p.gpuIndex)?.processes.push(p);
  const lost = processes.filter((p) => !gpus.some((g) => g.index === p.gpuIndex));
  if (lost.length) notes.push(`${lost.length} process rows name a GPU the table does not list`);
  if (gpus.some((g) => g.name.endsWith('...'))) notes.push('GPU names are cut short in the table');
  return { schemaVersion: SNAPSHOT_SCHEMA_VERSION, source: 'smi-table', timestampMs: null, hostname: null, driverVersion, cudaVersion, gpus, notes };
}
