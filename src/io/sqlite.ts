/**
 * The slice of node-sqlite3-wasm's API gpuwise uses (`record` and doctor's run history), typed once. The package is
 * CommonJS and about 1 MB of wasm glue, so it is required lazily: commands that never open a database never load it.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';

export interface Statement {
  run(values?: unknown[]): unknown;
  finalize(): void;
}

export interface Database {
  exec(sql: string): void;
  run(sql: string, values?: unknown[]): unknown;
  all(sql: string, values?: unknown[]): Record<string, unknown>[];
  get(sql: string, values?: unknown[]): Record<string, unknown> | null;
  prepare(sql: string): Statement;
  close(): void;
}

export type DatabaseCtor = new (path: string, opts?: { readOnly?: boolean; fileMustExist?: boolean }) => Database;

/**
 * The package compiles its 1 MB WebAssembly module as it loads. V8 would also compile it with its optimising compiler
 * on background threads, and node waits for that work before it exits: about 100 ms (more on a busy machine) on every
 * `runs` and `compare`, whose queries are a few rows (bench/history/bench.mjs). The baseline compiler's code serves
 * them, so the module is compiled with it alone; the flag is restored at once, so the trace scanner's WebAssembly,
 * compiled later, keeps the optimising compiler.
 */
export function sqlite(): DatabaseCtor {
  setFlagsFromString('--liftoff-only');
  try {
    return (createRequire(import.meta.url)('node-sqlite3-wasm') as { Database: DatabaseCtor }).Database;
  } finally {
    setFlagsFromString('--no-liftoff-only');
  }
}
