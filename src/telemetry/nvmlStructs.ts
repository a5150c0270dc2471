/**
 * NVML return codes, constants and struct layouts (LP64, from nvml.h of NVML 13; see
 * ../shared/reference/monitoring.md section 5), decoded from raw bytes. Pure: the koffi shell fills
 * byte buffers and these functions read them, so the layouts are tested without a GPU.
 */

export const NVML = {
  SUCCESS: 0,
  UNINITIALIZED: 1,
  INVALID_ARGUMENT: 2,
  NOT_SUPPORTED: 3,
  NO_PERMISSION: 4,
  NOT_FOUND: 6,
  INSUFFICIENT_SIZE: 7,
  DRIVER_NOT_LOADED: 9,
  FUNCTION_NOT_FOUND: 13,
  GPU_IS_LOST: 15,
  LIB_RM_VERSION_MISMATCH: 18,
  NO_DATA: 21,
  ARGUMENT_VERSION_MISMATCH: 25,
} as const;

export const CLOCK_SM = 1;
export const CLOCK_MEM = 2;
export const TEMPERATURE_GPU = 0;
export const ECC_CORRECTED = 0;
export const ECC_UNCORRECTED = 1;
export const ECC_VOLATILE = 0;

/** nvmlMemory_v2_t: version word = sizeof | 2 << 24. */
export const MEMORY_V2_SIZE = 40;
export const MEMORY_V2_VERSION = MEMORY_V2_SIZE | (2 << 24);
/** nvmlTemperature_v1_t */
export const TEMPERATURE_V1_SIZE = 12;
export const TEMPERATURE_V1_VERSION = TEMPERATURE_V1_SIZE | (1 << 24);

/** Field ids for nvmlDeviceGetFieldValues. */
export const FI = { MEMORY_TEMP: 82, TOTAL_ENERGY_CONSUMPTION: 83, PCIE_COUNT_TX_BYTES: 197, PCIE_COUNT_RX_BYTES: 198 } as const;
export const FIELD_VALUE_SIZE = 40;

export const TWO_POW_32 = 2 ** 32;

/**
 * A little-endian u64 as a number; null for NVML_VALUE_NOT_AVAILABLE (-1 stored unsigned). Read as two
 * u32 halves: a BigInt per field cost more than the rest of the decoding. hi * 2^32 is exact and the one
 * addition rounds once, so the result equals Number(getBigUint64()) for every value.
 */
export function readU64(v: DataView, off: number): number | null {
  const lo = v.getUint32(off, true);
  const hi = v.getUint32(off + 4, true);
  if (lo === 0xffffffff && hi === 0xffffffff) return null;
  return hi * TWO_POW_32 + lo;
}

const u64 = readU64;

export interface MemoryInfo {
  totalBytes: number | null;
  reservedBytes: number | null;
  freeBytes: number | null;
  usedBytes: number | null;
}

/** nvmlMemory_v2_t: 0 version u32, 8 total, 16 reserved, 24 free, 32 used. */
export function decodeMemoryV2(v: DataView): MemoryInfo {
  return { totalBytes: u64(v, 8), reservedBytes: u64(v, 16), freeBytes: u64(v, 24), usedBytes: u64(v, 32) };
}

/** nvmlMemory_t (v1): 0 total, 8 free, 16 used (= reserved + allocated). */
export function decodeMemoryV1(v: DataView): MemoryInfo {
  return { totalBytes: u64(v, 0), reservedBytes: null, freeBytes: u64(v, 8), usedBytes: u64(v, 16) };
}

export interface NvmlProcess {
  pid: number;
  usedMemoryBytes: number | null;
}

/**
 * nvmlProcessInfo_t arrays. `structSize` is 24 (v2 layout: pid, usedGpuMemory, gpuInstanceId,
 * computeInstanceId; what `_v3` functions take on current drivers) or 32 (the R535-era layout with
 * usedGpuCcProtectedMemory) or 16 (v1). pid at 0 and usedGpuMemory at 8 in all of them.
 */
export function decodeProcessInfos(v: DataView, count: number, structSize: number): NvmlProcess[] {
  const out: NvmlProcess[] = [];
  const n = processInfoCount(v, count, structSize);
  for (let i = 0; i < n; i++) out.push({ pid: processInfoPid(v, i, structSize), usedMemoryBytes: processInfoUsedBytes(v, i, structSize) });
  return out;
}

/** How many of `count` entries of `structSize` bytes the buffer holds (pid and memory of each: 16 bytes). */
export function processInfoCount(v: DataView, count: number, structSize: number): number {
  // Entry i fits when i * structSize + 16 <= byteLength.
  const fit = v.byteLength < 16 ? 0 : Math.floor((v.byteLength - 16) / structSize) + 1;
  return Math.max(0, Math.min(count, fit));
}

/** pid of entry `i` (offset 0 in every layout). */
export function processInfoPid(v: DataView, i: number, structSize: number): number {
  return v.getUint32(i * structSize, true);
}

/** usedGpuMemory of entry `i` (offset 8 in every layout); null when not available. */
export function processInfoUsedBytes(v: DataView, i: number, structSize: number): number | null {
  return u64(v, i * structSize + 8);
}

const PID_MAX = 4_194_304; // Linux PID_MAX_LIMIT

function plausibleLayout(v: DataView, count: number, structSize: number): boolean {
  if (processInfoCount(v, count, structSize) !== count) return false;
  for (let i = 0; i < count; i++) {
    const pid = processInfoPid(v, i, structSize);
    if (pid <= 0 || pid > PID_MAX) return false;
  }
  return true;
}

/**
 * The struct size to decode `count` process infos with: the preferred one, unless that yields an
 * impossible pid (0 or above Linux's limit) while the other known size (24 or 32) does not; a wrong
 * layout guess on an unusual driver then costs nothing instead of scrambling the process list
 * (nvitop#75, gpustat#161). Allocates nothing (it runs for every sample).
 */
export function processInfoLayout(v: DataView, count: number, preferred: number): number {
  if (count < 2 || plausibleLayout(v, count, preferred)) return preferred;
  const otherSize = preferred === 24 ? 32 : 24;
  return plausibleLayout(v, count, otherSize) ? otherSize : preferred;
}

/** processInfoLayout, then the entries decoded with it; returns the size used, so the caller can keep it. */
export function decodeProcessInfosChecked(v: DataView, count: number, preferred: number): { processes: NvmlProcess[]; structSize: number } {
  const structSize = processInfoLayout(v, count, preferred);
  return { processes: decodeProcessInfos(v, count, structSize), structSize };
}

export interface ProcessUtilSample {
  pid: number;
  timeStampUs: number;
  smUtil: number;
  memUtil: number;
}

/** nvmlProcessUtilizationSample_t (32 bytes): 0 pid, 8 timeStamp us, 16 smUtil, 20 memUtil, 24 encUtil, 28 decUtil. */
export function decodeProcessUtilSamples(v: DataView, count: number): ProcessUtilSample[] {
  const out: ProcessUtilSample[] = [];
  for (let i = 0; i < count && (i + 1) * 32 <= v.byteLength; i++) {
    const b = i * 32;
    out.push({
      pid: v.getUint32(b, true),
      timeStampUs: Number(v.getBigUint64(b + 8, true)),
      smUtil: v.getUint32(b + 16, true),
      memUtil: v.getUint32(b + 20, true),
    });
  }
  return out;
}

/**
 * Latest sample per pid. Values above 100 are driver glitches (seen by nvtop) and read as not available.
 */
export function latestUtilByPid(samples: readonly ProcessUtilSample[]): Map<number, { smUtil: number | null; memUtil: number | null }> {
  const best = new Map<number, ProcessUtilSample>();
  for (const s of samples) {
    const cur = best.get(s.pid);
    if (cur === undefined || s.timeStampUs > cur.timeStampUs) best.set(s.pid, s);
  }
  const out = new Map<number, { smUtil: number | null; memUtil: number | null }>();
  for (const [pid, s] of best) out.set(pid, { smUtil: s.smUtil <= 100 ? s.smUtil : null, memUtil: s.memUtil <= 100 ? s.memUtil : null });
  return out;
}

export interface FieldValue {
  fieldId: number;
  timestampUs: number;
  nvmlReturn: number;
  value: number | null;
}

/** nvmlFieldValue_t (40 bytes): 0 fieldId, 4 scopeId, 8 timestamp, 16 latencyUsec, 24 valueType, 28 nvmlReturn, 32 value. */
export function decodeFieldValues(v: DataView, count: number): FieldValue[] {
  const out: FieldValue[] = [];
  for (let i = 0; i < count; i++) {
    const b = i * FIELD_VALUE_SIZE;
    const type = v.getInt32(b + 24, true);
    const ret = v.getInt32(b + 28, true);
    let value: number | null = null;
    if (ret === NVML.SUCCESS) {
      // nvmlValueType_t: DOUBLE 0, UINT 1, ULONG 2, ULONGLONG 3, SLONGLONG 4, SINT 5, USHORT 6
      if (type === 0) value = v.getFloat64(b + 32, true);
      else if (type === 1) value = v.getUint32(b + 32, true);
      else if (type === 2 || type === 3) value = Number(v.getBigUint64(b + 32, true));
      else if (type === 4) value = Number(v.getBigInt64(b + 32, true));
      else if (type === 5) value = v.getInt32(b + 32, true);
      else if (type === 6) value = v.getUint16(b + 32, true);
    }
    out.push({ fieldId: v.getUint32(b, true), timestampUs: Number(v.getBigInt64(b + 8, true)), nvmlReturn: ret, value });
  }
  return out;
}

/** Writes the request part (fieldId, scopeId) of an nvmlFieldValue_t array. */
export function encodeFieldRequests(v: DataView, fieldIds: readonly number[]): void {
  fieldIds.forEach((id, i) => {
    v.setUint32(i * FIELD_VALUE_SIZE, id, true);
    v.setUint32(i * FIELD_VALUE_SIZE + 4, 0, true);
  });
}

/** Reads a NUL-terminated C string from a byte buffer. */
export function cString(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}

/** Rate from two readings of a byte counter; null across a wrap or reset, or when time did not advance. */
export function counterRate(prev: { value: number; timeUs: number } | null, value: number, timeUs: number): number | null {
  if (prev === null) return null;
  const dt = (timeUs - prev.timeUs) / 1e6;
  if (dt <= 0 || value < prev.value) return null;
  return (value - prev.value) / dt;
}
