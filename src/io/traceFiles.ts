/**
 * The trace files a path names (shell): a file as is, a directory as the traces it holds (one level, sorted).
 * analyze's arguments and serve's "open a path" read paths the same way.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from './inputError.js';
import { describeFsError } from './readTrace.js';

const TRACE_FILE = /\.json(\.gz)?$/i;

/** Expands directories into the trace files they hold (one level, sorted), checking every path. */
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
    let entries: string[];
    try {
      entries = await readdir(p);
    } catch (e) {
      throw new InputError(p, describeFsError(e));
    }
    const traces = entries.filter((e) => TRACE_FILE.test(e) && !e.endsWith('.meta.json')).sort();
    if (traces.length === 0) throw new InputError(p, 'directory holds no trace files (*.json, *.json.gz)');
    out.push(...traces.map((e) => join(p, e)));
  }
  return out;
}
