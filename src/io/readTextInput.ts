/** Reads a user-named file, or `defaultName` inside it when it is a directory; one InputError line on failure. */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from './inputError.js';
import { readFileLimited } from './readLimited.js';

/** Configs, model summaries and doctor reports are kilobytes to a few MB: /dev/zero or a wrong file stops here. */
const DEFAULT_MAX_BYTES = 64 << 20;

/** `missingHint` completes "no such file" for the file looked for (e.g. "expected a Hugging Face config.json"). */
export function readTextInput(
  path: string,
  defaultName: string,
  missingHint: string,
  maxBytes = DEFAULT_MAX_BYTES,
): { file: string; text: string } {
  let file = path;
  try {
    if (statSync(path).isDirectory()) file = join(path, defaultName);
  } catch (e) {
    throw new InputError(path, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message);
  }
  try {
    return { file, text: readFileLimited(file, maxBytes, 'this input').toString('utf8') };
  } catch (e) {
    if (e instanceof InputError && /no such file/.test(e.message)) throw new InputError(file, `no such file (${missingHint})`);
    throw e;
  }
}
