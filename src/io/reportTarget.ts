/**
 * Where an HTML report may be written (shell): never over an input, never over a file that is not
 * an earlier gpuwise HTML report (the same rule as `analyze --html`), never over a directory.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InputError } from './inputError.js';

export function checkHtmlTarget(path: string, inputs: string[], flag = '--html'): void {
  const target = resolve(path);
  if (inputs.some((i) => resolve(i) === target)) throw new InputError(path, `is one of the inputs: choose another ${flag} file`);
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    return; // does not exist yet
  }
  if (isDir) throw new InputError(path, `is a directory: ${flag} takes a file name`);
  let head = '';
  try {
    head = readFileSync(path).subarray(0, 4096).toString('utf8');
  } catch (e) {
    throw new InputError(path, `exists and cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): refusing to overwrite it`);
  }
  if (!head.startsWith('<!doctype html>') || !head.includes('gpuwise')) throw new InputError(path, 'exists and is not a gpuwise report: refusing to overwrite it');
}
