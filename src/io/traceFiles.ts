/**
 * The trace files a path names (shell): a file as is, a directory as the traces it and its subfolders hold (sorted).
 * analyze's arguments and serve's "open a path" read paths the same way.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from './inputError.js';
import { describeFsError } from './readTrace.js';

const TRACE_FILE = /\.json(\.gz)?$/i;
/** How deep under a directory traces are looked for (a run's folder of rank folders is 2). */
const MAX_TRACE_DEPTH = 4;

/** Expands directories into the trace files they hold, subfolders included (sorted), checking every path. */
export async function collectTraceFiles(paths: string[]): Promise<string[]> {
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
    const traces = await tracesUnder(p, MAX_TRACE_DEPTH, true);
    if (traces.length === 0) throw new InputError(p, `directory holds no trace files (*.json, *.json.gz), in it or ${MAX_TRACE_DEPTH - 1} levels of subfolders`);
    out.push(...traces);
  }
  return out;
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
  const files = entries.filter((e) => !e.isDirectory() && TRACE_FILE.test(e.name) && !e.name.endsWith('.meta.json')).map((e) => join(dir, e.name));
  const subs = depth > 1 ? entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')) : [];
  const nested = await Promise.all(subs.map((e) => tracesUnder(join(dir, e.name), depth - 1, false)));
  return [...files, ...nested.flat()].sort();
}
