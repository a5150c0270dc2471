#!/usr/bin/env node
// Writes a synthetic memory snapshot of about TARGET_MB megabytes, shaped like the real ones:
// `node makeBigSnapshot.mjs OUT.pickle TARGET_MB`. Training steps of a 48-layer model allocate
// and free activations, gradients and optimizer state; stacks (~30 frames each, from a pool
// of a few hundred) are memoised the way CPython's pickler shares them. Protocol 4.
import { writeFileSync } from 'node:fs';

const [out, targetMb] = process.argv.slice(2);
if (!out || !targetMb) {
  console.error('usage: makeBigSnapshot.mjs OUT.pickle TARGET_MB');
  process.exit(2);
}

class Writer {
  constructor() {
    this.chunks = [];
    this.buf = Buffer.alloc(1 << 20);
    this.pos = 0;
    this.memo = new Map();
    this.size = 0;
  }
  byte(b) {
    if (this.pos >= this.buf.length) this.flush();
    this.buf[this.pos++] = b;
  }
  bytes(b) {
    for (const x of b) this.byte(x);
  }
  flush() {
    this.chunks.push(Buffer.from(this.buf.subarray(0, this.pos)));
    this.size += this.pos;
    this.pos = 0;
  }
  u32(v) {
    this.byte(v & 255);
    this.byte((v >>> 8) & 255);
    this.byte((v >>> 16) & 255);
    this.byte((v >>> 24) & 255);
  }
  /** MEMOIZE the value just pushed under `key`. */
  memoize(key) {
    this.memo.set(key, this.memo.size);
    this.byte(0x94);
  }
  get(key) {
    const i = this.memo.get(key);
    if (i === undefined) return false;
    if (i < 256) this.bytes([0x68, i]);
    else {
      this.byte(0x6a);
      this.u32(i);
    }
    return true;
  }
  int(v) {
    if (v >= 0 && v < 256) this.bytes([0x4b, v]);
    else if (v >= 0 && v < 65536) this.bytes([0x4d, v & 255, v >> 8]);
    else if (v >= -(2 ** 31) && v < 2 ** 31) {
      this.byte(0x4a);
      this.u32(v >>> 0);
    } else {
      let x = BigInt(v);
      const b = [];
      while (x !== 0n && x !== -1n) {
        b.push(Number(x & 255n));
        x >>= 8n;
      }
      if (b.length === 0 || (v > 0 && b[b.length - 1] & 0x80)) b.push(0);
      this.bytes([0x8a, b.length, ...b]);
    }
  }
  str(s) {
    if (this.get(`s:${s}`)) return;
    const b = Buffer.from(s, 'utf8');
    if (b.length < 256) this.bytes([0x8c, b.length]);
    else {
      this.byte(0x58);
      this.u32(b.length);
    }
    this.bytes(b);
    this.memoize(`s:${s}`);
  }
  value(v) {
    if (v === null) this.byte(0x4e);
    else if (v === true) this.byte(0x88);
    else if (v === false) this.byte(0x89);
    else if (typeof v === 'number') this.int(v);
    else if (typeof v === 'string') this.str(v);
    else if (Array.isArray(v)) this.list(v);
    else this.dict(v);
  }
  /** Shared objects (frames) are written once and referenced after. */
  list(xs) {
    if (this.memo.has(xs)) return void this.get(xs);
    this.byte(0x5d);
    this.memoize(xs);
    if (xs.length === 0) return;
    this.byte(0x28);
    for (const x of xs) this.value(x);
    this.byte(0x65);
  }
  dict(d) {
    if (this.memo.has(d)) return void this.get(d);
    this.byte(0x7d);
    this.memoize(d);
    const keys = Object.keys(d);
    if (keys.length === 0) return;
    this.byte(0x28);
    for (const k of keys) {
      this.str(k);
      this.value(d[k]);
    }
    this.byte(0x75);
  }
}

const SITE = '/venv/lib/python3.12/site-packages';
const frame = (name, filename, line) => ({ name, filename, line });
const cpp = Array.from({ length: 400 }, (_, i) => frame(`c10::some::cpp::function_${i}(at::Tensor const&, c10::ScalarType)`, '??', 0));
function stack(kind, i) {
  const c = Array.from({ length: 18 }, (_, k) => cpp[(i * 7 + k * 13) % cpp.length]);
  const py =
    kind === 'fwd'
      ? [frame('forward', `${SITE}/torch/nn/modules/linear.py`, 125), frame('_call_impl', `${SITE}/torch/nn/modules/module.py`, 1762), frame('forward', '/home/u/model.py', 30 + (i % 40)), frame('train', '/home/u/train.py', 80)]
      : kind === 'bwd'
        ? [frame(`torch::autograd::generated::MmBackward0::apply`, '??', 0), frame('torch::autograd::Engine::evaluate_function', '??', 0)]
        : kind === 'opt'
          ? [frame('_init_group', `${SITE}/torch/optim/adamw.py`, 170), frame('step', `${SITE}/torch/optim/adamw.py`, 220), frame('train', '/home/u/train.py', 85)]
          : [frame('__init__', `${SITE}/torch/nn/modules/linear.py`, 106), frame('__init__', '/home/u/model.py', 12), frame('<module>', '/home/u/train.py', 10)];
  return [...c, ...py];
}
const stacks = { fwd: [], bwd: [], opt: [], setup: [] };
for (const k of Object.keys(stacks)) for (let i = 0; i < 100; i++) stacks[k].push(stack(k, i));

// Simulate steps with a trivial bump allocator in one huge segment: every block is its own
// slice, so the final state is easy to write consistently.
const BASE = 0x7f0000000000;
let next = BASE;
let t = 1_700_000_000_000_000;
const trace = [];
// Each entry gets its own list of shared frame dicts, as in real snapshots (lists distinct, frames memoised).
const entry = (action, addr, size, frames) =>
  trace.push({ action, addr, size, stream: 0, time_us: (t += 3), frames: frames.slice(), compile_context: 'N/A', user_metadata: '' });
const live = new Map();
const alloc = (size, frames) => {
  const a = next;
  next += Math.ceil(size / 512) * 512;
  entry('alloc', a, size, frames);
  live.set(a, { size, frames });
  return a;
};
const free = (a, frames) => {
  const b = live.get(a);
  entry('free_requested', a, b.size, frames);
  entry('free_completed', a, b.size, frames);
  live.delete(a);
};
const LAYERS = 48;
const params = Array.from({ length: LAYERS }, (_, i) => alloc(4 << 20, stacks.setup[i % 100]));
let state = null;
const perStepBytes = 405_000; // pickle bytes one step adds (measured)
const steps = Math.max(1, Math.round((Number(targetMb) * 1e6) / perStepBytes));
for (let s = 0; s < steps; s++) {
  const acts = [];
  for (let l = 0; l < LAYERS * 8; l++) acts.push(alloc((1 << 20) + l * 4096, stacks.fwd[l % 100]));
  const grads = [];
  for (let l = acts.length - 1; l >= 0; l--) {
    const tmp = alloc(1 << 20, stacks.bwd[l % 100]);
    free(acts[l], stacks.bwd[l % 100]);
    free(tmp, stacks.bwd[(l + 1) % 100]);
    if (l % 8 === 0) grads.push(alloc(4 << 20, stacks.bwd[l % 100]));
  }
  if (!state) state = params.flatMap((_, i) => [alloc(4 << 20, stacks.opt[i % 100]), alloc(4 << 20, stacks.opt[(i + 1) % 100])]);
  for (const g of grads) free(g, stacks.opt[0]);
}
const total = next - BASE;
const blocks = [];
let cursor = BASE;
for (const [a, b] of [...live].sort((x, y) => x[0] - y[0])) {
  if (a > cursor) blocks.push({ address: cursor, size: a - cursor, requested_size: 0, state: 'inactive', frames: [] });
  const size = Math.ceil(b.size / 512) * 512;
  blocks.push({ address: a, size, requested_size: b.size, state: 'active_allocated', frames: b.frames });
  cursor = a + size;
}
if (cursor < BASE + total) blocks.push({ address: cursor, size: BASE + total - cursor, requested_size: 0, state: 'inactive', frames: [] });
const snapshot = {
  segments: [
    {
      device: 0,
      address: BASE,
      total_size: total,
      allocated_size: 0,
      active_size: 0,
      requested_size: 0,
      stream: 0,
      segment_type: 'large',
      segment_pool_id: [0, 0],
      is_expandable: false,
      frames: [],
      blocks,
    },
  ],
  device_traces: [trace],
  allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: '', max_split_size: -1, expandable_segments: false },
};
// The one segment is allocated before the history starts.
const w = new Writer();
w.bytes([0x80, 4]);
w.value(snapshot);
w.byte(0x2e);
w.flush();
writeFileSync(out, Buffer.concat(w.chunks));
console.log(`${out}: ${(w.size / 1e6).toFixed(1)} MB, ${trace.length} history entries, ${steps} steps`);
