/**
 * Shell: reads a model config (config.json, a folder holding one, or a gpuwise-model/1 summary) and
 * describes it; every problem becomes one InputError line naming the file.
 */
import { ConfigError } from '../planner/errors.js';
import type { ModelDescription } from '../planner/model.js';
import { describeModel } from '../planner/modelSummary.js';
import { InputError } from './inputError.js';
import { readTextInput } from './readTextInput.js';

export function readModelConfig(path: string): { file: string; model: ModelDescription } {
  const { file, text } = readTextInput(path, 'config.json', 'expected a Hugging Face config.json');
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
