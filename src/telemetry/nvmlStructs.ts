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

/** u64 "not available" marker (NVML_VALUE_NOT_AVAILABLE = -1 stored in an unsigned field). */
const U64_NA = 0xffffffffffffffffn;

function u64(v: DataView, off: number): number | null {
  const b = v.getBigUint64(off, true);
  return b === U64_NA ? null : Number(b);
}

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
  for (let i = 0; i < count; i++) {
    const base = i * structSize;
    if (base + 16 > v.byteLength) break;
    out.push({ pid: v.getUint32(base, true), usedMemoryBytes: u64(v, base + 8) });
  }
  return out;
}

const PID_MAX = 4_194_304; // Linux PID_MAX_LIMIT

/**
 * Decodes with the preferred struct size, but if that yields an impossible pid (0 or above Linux's
 * limit) while the other known size (24 or 32) does not, uses the other: a wrong layout guess on an
 * unusual driver then costs nothing instead of scrambling the process list (nvitop#75, gpustat#161).
 * Returns the size that decoded, so the caller can keep it.
 */
export function decodeProcessInfosChecked(v: DataView, count: number, preferred: number): { processes: NvmlProcess[]; structSize: number } {
  const plausible = (ps: NvmlProcess[]) => ps.length === count && ps.every((p) => p.pid > 0 && p.pid <= PID_MAX);
  const first = decodeProcessInfos(v, count, preferred);
  if (count < 2 || plausible(first)) return { processes: first, structSize: preferred };
  const otherSize = preferred === 24 ? 32 : 24;
  const other = decodeProcessInfos(v, count, otherSize);
  return plausible(other) ? { processes: other, structSize: otherSize } : { processes: first, structSize: preferred };
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
