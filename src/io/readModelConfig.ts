/**
 * Shell: reads a model config (config.json, a folder holding one, or a gpuwise-model/1 summary) and
 * describes it; every problem becomes one InputError line naming the file. `readModel` does the same for
 * any source `--model` resolves to (hfModelId.ts), the configs shipped with gpuwise included.
 */
import { ConfigError } from '../planner/errors.js';
import type { ModelDescription } from '../planner/model.js';
import { describeModel } from '../planner/modelSummary.js';
import type { ModelSource } from './hfModelId.js';
import { InputError } from './inputError.js';
import { readTextInput } from './readTextInput.js';
import { asOtherInput } from './otherInput.js';

export function readModelConfig(path: string): { file: string; model: ModelDescription } {
  const { file, text } = readTextInput(path, 'config.json', 'expected a Hugging Face config.json');
  try {
    return { file, model: describeConfig(file, text) };
  } catch (e) {
    throw asOtherInput(e, file, 'model-config'); // a trace, a snapshot, a report...: said as what it is
  }
}

function describeConfig(file: string, text: string): ModelDescription {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError(file, `not valid JSON (${(e as Error).message})`);
  }
  try {
    return describeModel(json);
  } catch (e) {
    if (e instanceof ConfigError) throw new InputError(file, e.message);
    throw e;
  }
}

/** The model a source describes; `file` is the file read (null for a shipped config), never to be overwritten. */
export function readModel(source: ModelSource): { file: string | null; model: ModelDescription } {
  if (source.kind !== 'shipped') return readModelConfig(source.path);
  try {
    // The hub id names the model in the report, as `_name_or_path` does in a config saved by transformers.
    return { file: null, model: describeModel({ ...source.config, _name_or_path: source.hubId }) };
  } catch (e) {
    if (e instanceof ConfigError) throw new InputError(`${source.hubId} (the config shipped with gpuwise)`, e.message);
    throw e;
  }
}
