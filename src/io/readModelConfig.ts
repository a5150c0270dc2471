/**
 * Shell: reads a model config (config.json, a folder holding one, or a gpuwise-model/1 summary) and
 * describes it; every problem becomes one InputError line naming the file.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../planner/errors.js';
import type { ModelDescription } from '../planner/model.js';
import { describeModel } from '../planner/modelSummary.js';
import { InputError } from './inputError.js';

export function readModelConfig(path: string): { file: string; model: ModelDescription } {
  let file = path;
  try {
    if (statSync(path).isDirectory()) file = join(path, 'config.json');
  } catch (e) {
    throw new InputError(path, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InputError(file, code === 'ENOENT' ? 'no such file (expected a Hugging Face config.json)' : (e as Error).message);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError(file, `not valid JSON (${(e as Error).message})`);
  }
  try {
    return { file, model: describeModel(json) };
  } catch (e) {
    if (e instanceof ConfigError) throw new InputError(file, e.message);
    throw e;
  }
}
