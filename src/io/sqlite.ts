/**
 * The slice of node-sqlite3-wasm's API gpuwise uses (`record` and doctor's run history), typed once. The package is
 * CommonJS and about 1 MB of wasm glue, so it is required lazily: commands that never open a database never load it.
 */
import { createRequire } from 'node:module';

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

export function sqlite(): DatabaseCtor {
  return (createRequire(import.meta.url)('node-sqlite3-wasm') as { Database: DatabaseCtor }).Database;
}
