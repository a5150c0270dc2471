/** Reads a user-named file, or `defaultName` inside it when it is a directory; one InputError line on failure. */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from './inputError.js';

/** `missingHint` completes "no such file" for the file looked for (e.g. "expected a Hugging Face config.json"). */
export function readTextInput(path: string, defaultName: string, missingHint: string): { file: string; text: string } {
  let file = path;
  try {
    if (statSync(path).isDirectory()) file = join(path, defaultName);
  } catch (e) {
    throw new InputError(path, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message);
  }
  try {
    return { file, text: readFileSync(file, 'utf8') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InputError(file, code === 'ENOENT' ? `no such file (${missingHint})` : `cannot read: ${code ?? (e as Error).message}`);
  }
}
