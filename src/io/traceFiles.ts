/**
 * The trace files a path names (shell): a file as is, a directory as the traces it holds (its subfolders' where it
 * has none at its top).
 * analyze's arguments and serve's "open a path" read paths the same way.
 */
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { InputError } from './inputError.js';
import { describeFsError } from './readTrace.js';

const TRACE_FILE = /\.json(\.gz)?$/i;
/** A JSON file in a directory below this size is read whole to tell a trace from another JSON file (notes, configs). */
const SNIFF_MAX_BYTES = 1 << 20;
/** How deep under a directory traces are looked for (a run's folder of rank folders is 2). */
const MAX_TRACE_DEPTH = 4;

/**
 * Expands directories into the trace files they hold (sorted), checking every path. A directory with traces of its own
 * is read at its top only, and `onNote` names its subfolders that hold more (a folder of unrelated runs stays that);
 * one with none at its top is read down its subfolders (a run's folder of rank folders).
 */
export async function collectTraceFiles(paths: string[], onNote: (line: string) => void = () => {}): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(p);
    } catch (e) {
      throw new InputError(p, describeFsError(e));
    }
    if (!st.isDirectory()) {
      out.push(p);
      continue;
    }
    const top = await tracesOnly(p, await tracesUnder(p, 1, true), onNote);
    if (top.length > 0) {
      out.push(...top);
      const more = await subfoldersWithTraces(p);
      if (more.length) onNote(`${p}: read at its top only; subfolders with traces too: ${more.join(', ')} (name them to analyze them)`);
      continue;
    }
    const traces = await tracesOnly(p, await tracesUnder(p, MAX_TRACE_DEPTH, true), onNote);
    if (traces.length === 0)
      throw new InputError(p, `directory holds no trace files (*.json, *.json.gz), in it or ${MAX_TRACE_DEPTH - 1} levels of subfolders`);
    out.push(...traces);
  }
  return out;
}

/**
 * The files of a directory that are traces: a small JSON file that parses and holds no `traceEvents` (a notes.json,
 * a config) is left out and named, not taken for a damaged trace that stops the whole folder. A file named on the
 * command line is not sniffed: it is read as a trace, and refused with its reason if it is none.
 */
async function tracesOnly(dir: string, files: string[], onNote: (line: string) => void): Promise<string[]> {
  const isOther = await Promise.all(files.map(notATrace));
  const others = files.filter((_, i) => isOther[i]);
  if (others.length)
    onNote(`${dir}: left out ${others.map((f) => relative(dir, f)).join(', ')}: JSON, but not a profiler trace (no traceEvents)`);
  return files.filter((_, i) => !isOther[i]);
}

/** Whether a small JSON file is something else than a trace; a large or unreadable one is left to the trace reader. */
async function notATrace(path: string): Promise<boolean> {
  try {
    const st = await stat(path);
    if (st.size > SNIFF_MAX_BYTES) return false;
    const raw = await readFile(path);
    const text = (/\.gz$/i.test(path) ? gunzipSync(raw) : raw).toString('utf8');
    const v: unknown = JSON.parse(text);
    if (Array.isArray(v)) return false; // a bare array of events is a trace
    return typeof v !== 'object' || v === null || !('traceEvents' in v);
  } catch {
    return false;
  }
}

/** The subfolders of `dir` that hold traces (down to MAX_TRACE_DEPTH), each as "NAME/ (N traces)". */
async function subfoldersWithTraces(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
  const subs = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).sort((a, b) => a.name.localeCompare(b.name));
  const tracesIn = async (sub: string) => {
    const files = await tracesUnder(sub, MAX_TRACE_DEPTH - 1, false);
    const other = await Promise.all(files.map(notATrace));
    return other.filter((x) => !x).length;
  };
  const counts = await Promise.all(subs.map(async (e) => [e.name, await tracesIn(join(dir, e.name))] as const));
  return counts.filter(([, n]) => n > 0).map(([name, n]) => `${name}/ (${n} trace${n === 1 ? '' : 's'})`);
}

/** The trace files in `dir` and its subfolders down to `depth` levels, sorted by path; an unreadable subfolder is skipped. */
async function tracesUnder(dir: string, depth: number, top: boolean): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    if (top) throw new InputError(dir, describeFsError(e));
    return [];
  }
  const files = entries
    .filter((e) => !e.isDirectory() && TRACE_FILE.test(e.name) && !e.name.endsWith('.meta.json'))
    .map((e) => join(dir, e.name));
  const subs = depth > 1 ? entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')) : [];
  const nested = await Promise.all(subs.map((e) => tracesUnder(join(dir, e.name), depth - 1, false)));
  return [...files, ...nested.flat()].sort();
}
